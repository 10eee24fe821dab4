"""Where the tokens of one request go: the context's tokens by section, for ``stats().sections``.

Sections, in request order: ``system`` (the system prompt), ``tools`` (tool definitions),
``summary`` (a compaction summary), ``pinned`` (pinned messages), ``history`` (every other
message), ``tool_results`` (messages answering tool calls, as sent: pruned or cut copies count
at their pruned size), ``media`` (the part of a message's tokens its images, documents, audio or
video cost) and ``overhead`` (reply priming). They add up to ``context_tokens``.

The walk reads the counts kept on add; only pruned copies and messages with media are counted
again, so it costs a pass over the context's positions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..counting import TokenCounter
from ..messages import Message, normalize
from ._ledger import Ledger

__all__ = ["SECTIONS", "context_sections"]

SECTIONS = ("system", "tools", "summary", "pinned", "history", "tool_results", "media", "overhead")


def context_sections(
    ledger: Ledger,
    plan: Any,
    counter: TokenCounter,
    *,
    system: int = 0,
    summary: int = 0,
    tools: int = 0,
) -> dict[str, int]:
    """Tokens of the context ``plan`` (a ``ViewPlan``) sends, by section (see module docs).

    ``system``, ``summary`` and ``tools`` are the tokens of what the manager sends besides
    the held messages.
    """
    out = dict.fromkeys(SECTIONS, 0)
    out.update(system=system, summary=summary, tools=tools, overhead=counter.prompt_overhead)
    if plan.scattered is not None:
        starts, stops = ledger.with_pins(*plan.scattered.runs())
    else:
        starts, stops = plan.starts, plan.stops
    swap = plan.replacements
    seq, records, tokens = ledger.seq, ledger.records, ledger.tokens
    group_start, pinned = ledger.group_start, ledger.group_pinned
    for a, b in zip(starts, stops, strict=True):
        for g in range(a, b):
            for i in range(group_start[g], ledger.group_end(g)):
                copy = swap.get(seq[i]) if swap else None
                rec: Message = records[i] if copy is None else normalize(copy)
                cost = tokens[i] if copy is None else counter.count_message(rec)
                if rec.images or rec.media:
                    plain = counter.count_message(replace(rec, images=(), media=()))
                    out["media"] += cost - plain
                    cost = plain
                if pinned[g]:
                    out["pinned"] += cost
                elif rec.result_ids:
                    out["tool_results"] += cost
                else:
                    out["history"] += cost
    return out
