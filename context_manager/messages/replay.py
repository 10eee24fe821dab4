"""A quick replay of the tool-call protocol over OpenAI chat records, for one-shot trimming.

``trim()`` checks the protocol over everything it keeps, and :class:`~.groups.ToolProtocol` pays a
few calls per message for rules only Responses items and Anthropic result blocks need (parallel
call items, reasoning glue, results inside user turns, legacy ``~name`` ids). For OpenAI chat
records the rules reduce to: a message with calls starts a group while nothing is pending and
with ids never used before; each ``tool`` result answers a pending call and joins its group;
anything else starts a group and needs nothing pending.

:func:`replay_chat` applies exactly that and returns None (let ``ToolProtocol`` decide) on
anything else: an item, embedded results, a repeated or unknown id, a missing record. So when it
answers, ``ToolProtocol`` would have accepted the same messages with the same groups.
"""

from __future__ import annotations

from .record import Message


def replay_chat(recs: dict[int, Message], spans: list[tuple[int, int]]) -> bool | None:
    """Whether calls are still pending after the last span, if every span is a clean group.

    ``spans`` are ``[start, end)`` groups in order; the replay starts afresh where two spans do
    not touch (as a run read from the history would). None: not decided here (an unusual
    record, a protocol error, or a span that is not exactly one group).
    """
    pending: set[str] = set()
    issued: set[str] = set()
    last = -1
    get = recs.get
    for start, end in spans:
        if start != last:
            pending = set()
            issued = set()
        for i in range(start, end):
            rec = get(i)
            if rec is None or rec.item or rec.tool_results:
                return None
            call_id = rec.tool_call_id
            if call_id is not None:
                if i == start or call_id not in pending or rec.tool_calls:
                    return None
                pending.discard(call_id)
            elif pending or i != start:
                return None  # a message while results are missing, or a group split
            elif rec.tool_calls:
                for call in rec.tool_calls:
                    if call.id in issued:
                        return None
                    issued.add(call.id)
                    pending.add(call.id)
        last = end
    return bool(pending)


def is_glue(rec: Message) -> bool:
    """A reasoning-only Responses item: the calls that follow it join its group."""
    return (
        rec.item
        and rec.role == "assistant"
        and bool(rec.thinking)
        and not rec.text
        and not rec.tool_calls
        and not rec.result_ids
    )
