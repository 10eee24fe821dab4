"""Where the tokens of one request go: the context's tokens by section, for ``stats().sections``.

Sections, in request order: ``system`` (the system prompt), ``tools`` (tool definitions),
``summary`` (a compaction summary), ``pinned`` (pinned messages), ``history`` (every other
message), ``tool_results`` (messages answering tool calls, as sent: pruned or cut copies count
at their pruned size), ``media`` (the part of a message's tokens its images, documents, audio or
video cost) and ``overhead`` (reply priming). They add up to ``context_tokens``.

The walk reads the counts kept on add; only pruned copies and messages with media are counted
again, so it costs a pass over the context's positions.

:class:`SectionCaps` caps sections: ``tool_results_share`` is enforced by tool-result pruning
(``ToolResultPruning(caps=...)`` clears the oldest results first, the same machinery as its
other triggers); ``tool_schemas_tokens`` cannot be enforced (a schema is never cut), so it is
checked and raises :class:`~context_manager.errors.SectionCapError` or warns.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any, Literal

from .._config import check_int
from ..counting import TokenCounter
from ..errors import ConfigurationError, SectionCapError
from ..messages import Message, normalize
from ._ledger import Ledger

__all__ = ["SECTIONS", "SectionCapWarning", "SectionCaps", "context_sections"]


class SectionCapWarning(UserWarning):
    """A section is over its cap and ``SectionCaps(on_exceed="warn")`` asked for a warning."""


@dataclass(frozen=True, slots=True)
class SectionCaps:
    """Optional caps per section of the context (None: no cap).

    ``tool_results_share``: tool results (as sent, pruned copies at their pruned size) may hold
    at most this share of the window; pruning clears the oldest ones first while they hold more
    (the protected newest ones are never cleared, so this is a target, not a guarantee).
    ``tool_schemas_tokens``: the tool definitions may cost at most this many tokens; over it,
    ``on_exceed="error"`` raises :class:`SectionCapError` and ``"warn"`` warns
    (:class:`SectionCapWarning`).
    """

    tool_results_share: float | None = None
    tool_schemas_tokens: int | None = None
    on_exceed: Literal["error", "warn"] = "error"

    def __post_init__(self) -> None:
        share = self.tool_results_share
        if share is not None and (
            isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1
        ):
            raise ConfigurationError(f"tool_results_share must be in (0, 1] or None, got {share!r}")
        if self.tool_schemas_tokens is not None:
            check_int("tool_schemas_tokens", self.tool_schemas_tokens)
        if self.on_exceed not in ("error", "warn"):
            raise ConfigurationError(
                f"on_exceed must be 'error' or 'warn', got {self.on_exceed!r:.40}"
            )

    def results_cap(self, window: int) -> int | None:
        """Most tokens tool results may hold in a ``window``-token context (None: no cap)."""
        share = self.tool_results_share
        return None if share is None else int(share * window)

    def check_tools(self, tokens: int) -> None:
        """Raise or warn when tool definitions of ``tokens`` tokens are over the cap."""
        cap = self.tool_schemas_tokens
        if cap is None or tokens <= cap:
            return
        message = (
            f"the tool definitions cost {tokens:,} tokens, over the {cap:,}-token cap "
            "(SectionCaps.tool_schemas_tokens); schemas are never cut: send fewer tools or "
            "shorter descriptions, or raise the cap"
        )
        if self.on_exceed == "warn":
            warnings.warn(message, SectionCapWarning, stacklevel=4)  # the manager's caller
            return
        raise SectionCapError(message, "tools", tokens, cap)


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
