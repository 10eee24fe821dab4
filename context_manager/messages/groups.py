"""Tool-call protocol: which messages belong together, and repairing histories that break it.

An assistant message with tool calls opens a *group*; the messages carrying its results join it;
the group closes when every call has a result. Groups are the atomic unit of trimming: a call is
never sent without all its results, nor a result without its call. Only the newest group can be
open, because any other message arriving while results are missing is a protocol error (the
provider APIs reject such a history) unless the caller asked for repair.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidMessageError
from .normalize import normalize
from .record import Message

#: Text of the result inserted for a call whose result never arrived.
MISSING_RESULT_TEXT = "Error: no result was recorded for this tool call."


class ToolProtocol:
    """Incremental checker: ``accept`` says whether a message joins the open group."""

    __slots__ = ("_answered", "_issued", "_issuing", "glue", "pending")

    def __init__(self) -> None:
        self.pending: dict[str, None] = {}  # ids of the open group still awaiting results
        self._issued: set[str] = set()
        self._answered: set[str] = set()
        # True while the open group has only received calls (Responses items arrive one call
        # per item, so the next call item still belongs to it).
        self._issuing = False
        #: True after a reasoning-only item: the calls that follow join its group.
        self.glue = False

    def outside(self, rec: Message) -> bool:
        """True when ``rec`` takes no part in any tool exchange (nothing to check or commit)."""
        return (
            not self.pending
            and not self.glue
            and not rec.thinking
            and not rec.tool_calls
            and rec.tool_call_id is None
            and not rec.tool_results
        )

    def problem(self, rec: Message) -> str | None:
        """Why ``rec`` cannot come next, or None when it can (nothing is changed)."""
        result_ids = rec.result_ids
        for k, rid in enumerate(result_ids):
            if rid in result_ids[:k]:
                return f"duplicate result for tool call {rid!r}"
            if rid in self.pending:
                continue
            if rid in self._answered and not rid.startswith("~"):
                return f"duplicate result for tool call {rid!r}"
            if rid in self._issued:
                return f"result for tool call {rid!r} arrives after other messages"
            return f"tool result references unknown tool call id {rid!r}"
        if self.pending and not result_ids and not self._more_calls(rec):
            waiting = ", ".join(self.pending)
            return f"tool call(s) {waiting} still await results"
        seen: set[str] = set()
        for call in rec.tool_calls:
            if call.id in seen:
                return f"tool call id {call.id!r} appears twice in one message"
            seen.add(call.id)
            if call.id in self._issued and not call.id.startswith("~"):
                return f"tool call id {call.id!r} was already used"
        return None

    def check(self, rec: Message, index: int | None = None) -> bool:
        """True when ``rec`` would join the open group; raises on protocol errors. Changes
        nothing, so a write-ahead journal can refuse the message before :meth:`commit`."""
        if (
            not self.pending
            and not self.glue
            and not rec.tool_calls
            and rec.tool_call_id is None
            and not rec.tool_results
        ):
            return False  # the common case: a plain message outside any tool exchange
        reason = self.problem(rec)
        if reason is not None:
            raise InvalidMessageError(
                reason,
                index=index,
                hint="add every tool result right after its call, or pass repair=True",
            )
        if self.pending:
            return bool(rec.result_ids) or self._more_calls(rec)
        return self.glue and bool(rec.tool_calls)

    def _more_calls(self, rec: Message) -> bool:
        """A call-only item while the open group has had only calls: a parallel call."""
        return self._issuing and rec.item and bool(rec.tool_calls) and not rec.result_ids

    def accept(self, rec: Message, index: int | None = None) -> bool:
        """Record ``rec``; True when it joins the open group. Raises on protocol errors."""
        joins = self.check(rec, index)
        self.commit(rec)
        return joins

    def commit(self, rec: Message) -> None:
        """Record a message :meth:`check` accepted."""
        for rid in rec.result_ids:
            del self.pending[rid]
            self._answered.add(rid)
        for call in rec.tool_calls:
            self._issued.add(call.id)
            self.pending[call.id] = None
        self._issuing = bool(self.pending) and not rec.result_ids
        self.glue = (
            rec.item
            and rec.role == "assistant"
            and bool(rec.thinking)
            and not rec.text
            and not rec.tool_calls
            and not rec.result_ids
        )

    def copy(self) -> ToolProtocol:
        twin = ToolProtocol()
        twin.pending = dict(self.pending)
        twin._issued = set(self._issued)
        twin._answered = set(self._answered)
        twin._issuing, twin.glue = self._issuing, self.glue
        return twin

    def reset(self) -> None:
        self.pending.clear()
        self._issued.clear()
        self._answered.clear()
        self._issuing = self.glue = False


#: Text of the result that closes a call a new user turn interrupted.
INTERRUPTED_RESULT = "Error: the tool call was interrupted before it returned a result."


def missing_results(
    call_message: Any, call_ids: Iterable[str], text: str = MISSING_RESULT_TEXT
) -> list[Any]:
    """Synthetic error results in the caller's shape: Anthropic blocks, Responses
    ``function_call_output`` items, or OpenAI tool messages."""
    ids = list(call_ids)
    if isinstance(call_message, Mapping) and call_message.get("type") in (
        "function_call",
        "custom_tool_call",
    ):
        kind = f"{call_message['type']}_output"
        return [{"type": kind, "call_id": i, "output": text} for i in ids]
    anthropic = (
        isinstance(call_message, Mapping)
        and "tool_calls" not in call_message
        and any(
            isinstance(p, Mapping) and p.get("type") == "tool_use"
            for p in (call_message.get("content") or ())
            if not isinstance(call_message.get("content"), str)
        )
    )
    if anthropic:
        blocks = [
            {
                "type": "tool_result",
                "tool_use_id": i,
                "content": text,
                "is_error": True,
            }
            for i in ids
        ]
        return [{"role": "user", "content": blocks}]
    return [{"role": "tool", "tool_call_id": i, "content": text} for i in ids]


def _without_stale_results(original: Any, rec: Message, stale: set[str]) -> Any | None:
    """A copy of a mixed message without the result blocks that answer nothing (None: drop it)."""
    keeps_content = rec.text or rec.images or rec.tool_calls
    if rec.tool_call_id is not None or not keeps_content or not isinstance(original, Mapping):
        return None
    content = [
        p
        for p in original.get("content") or ()
        if not (
            isinstance(p, Mapping)
            and p.get("type") == "tool_result"
            and p.get("tool_use_id") in stale
        )
    ]
    return {**original, "content": content}


class Repairer:
    """Streams messages and yields a history that satisfies the tool-call protocol.

    Orphan, duplicate and late results are dropped (a mixed user turn keeps its other content);
    calls whose results never arrived get a synthetic error result right before the next
    unrelated message (or at the end, via ``finish``).
    """

    def __init__(self) -> None:
        self.protocol = ToolProtocol()
        self._last_call: Any = None
        self.dropped = 0
        self.inserted = 0

    @classmethod
    def resuming(cls, protocol: ToolProtocol, last_call: Any) -> Repairer:
        """A repairer that continues a stream ``protocol`` has followed so far (repair switched
        on mid-conversation): open calls are closed with synthetic results on the next message.
        ``last_call`` is the message that issued the open calls (it decides the results' shape)."""
        fixer = cls()
        fixer.protocol = protocol.copy()
        fixer._last_call = last_call
        return fixer

    def feed(
        self, original: Any, index: int | None = None, rec: Message | None = None
    ) -> list[tuple[Any, Message]]:
        """What to store for ``original``, as (message, record) pairs: records are reused, so a
        caller that already normalized ``original`` passes ``rec`` and nothing is parsed twice."""
        if rec is None:
            rec = normalize(original, index)
        out: list[tuple[Any, Message]] = []
        if self.protocol.pending and not rec.result_ids:
            out.extend(self.finish())
        stale = {r for r in rec.result_ids if r not in self.protocol.pending}
        if stale:
            self.dropped += 1
            fixed = _without_stale_results(original, rec, stale)
            if fixed is None:
                return out
            if self.protocol.pending:
                out.extend(self.finish())
            original, rec = fixed, normalize(fixed, index)
        if self.protocol.problem(rec) is not None:  # e.g. a reused call id: drop the message
            self.dropped += 1
            return out
        self.protocol.accept(rec, index)
        if rec.tool_calls:
            self._last_call = original
        out.append((original, rec))
        return out

    def finish(self) -> list[tuple[Any, Message]]:
        """Close the open group with synthetic results (if any are missing)."""
        if not self.protocol.pending:
            return []
        fillers = missing_results(self._last_call, list(self.protocol.pending))
        self.inserted += len(self.protocol.pending)
        out = []
        for filler in fillers:
            rec = normalize(filler)
            self.protocol.accept(rec)
            out.append((filler, rec))
        return out


def repair(messages: Iterable[Any]) -> list[Any]:
    """Return a protocol-valid copy of ``messages`` (input untouched; see :class:`Repairer`)."""
    fixer = Repairer()
    out: list[Any] = []
    for i, message in enumerate(messages):
        out.extend(original for original, _ in fixer.feed(message, i))
    out.extend(original for original, _ in fixer.finish())
    return out
