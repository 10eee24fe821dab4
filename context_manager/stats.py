"""The budget snapshot ``MessageContextManager.stats()`` returns, and how it is taken."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .budget.sections import context_sections

if TYPE_CHECKING:
    from .budget._ledger import Ledger
    from .budget.allowance import Allowance, Entry
    from .budget.pruned import ViewPlan
    from .counting import TokenCounter

__all__ = ["ContextStats", "snapshot"]


@dataclass(frozen=True, slots=True)
class ContextStats:
    """A snapshot of the budget. ``used_tokens`` is what sending the whole history would cost."""

    max_tokens: int
    reserve_tokens: int
    budget_tokens: int
    used_tokens: int
    remaining_tokens: int
    message_count: int
    counts_by_role: dict[str, int]
    tokens_by_role: dict[str, int]
    context_tokens: int
    context_message_count: int
    near_limit: bool
    strategy: str
    counter: str
    calibrated: bool = False
    #: Real tokens per counted token learned from usage (1.0: none learned, or not calibrating).
    calibration: float = 1.0
    #: What tool-result pruning did to the current view (a ``PruningReport``; None: off).
    pruning: Any = None
    #: Tokens of the context by section (system, tools, summary, pinned, history, tool_results,
    #: media, overhead); they add up to ``context_tokens``. Empty when the context overflows.
    sections: dict[str, int] = field(default_factory=dict)
    #: The prompt-cache report of the latest ``get_context`` (a ``prompt_cache.CacheReport``;
    #: None until ``prompt_cache.track_cache`` is on and a context was built).
    cache: Any = None

    @property
    def usage_ratio(self) -> float:
        return self.used_tokens / self.budget_tokens if self.budget_tokens else 1.0


def snapshot(
    allowance: Allowance,
    ledger: Ledger,
    plan: ViewPlan | None,
    summary: Entry | None,
    counter: TokenCounter,
    *,
    used: int,
    warn_ratio: float,
    strategy: str,
    cache: Any,
) -> ContextStats:
    """The stats of a manager whose request would send ``plan`` (None: nothing fits) with
    ``summary`` in front: every held message tallied by role, the context by section."""
    system = allowance.system
    counts, tokens = ledger.role_totals()
    if system:
        counts["system"] += 1
        tokens["system"] += system[2]
    context_count = context_tokens = 0
    sections: dict[str, int] = {}
    if plan is not None:
        context_count = (1 if system else 0) + (1 if summary else 0) + plan.message_count(ledger)
        context_tokens = allowance.sent(ledger, plan.tokens)
        sections = context_sections(
            ledger,
            plan,
            counter,
            system=system[2] if system else 0,
            summary=summary[2] if summary else 0,
            tools=allowance.tools,
        )
    calibration = allowance.calibration
    return ContextStats(
        max_tokens=allowance.window,
        reserve_tokens=allowance.reserve,
        budget_tokens=allowance.budget,
        used_tokens=used,
        remaining_tokens=max(0, allowance.budget - used),
        message_count=sum(counts.values()),
        counts_by_role=counts,
        tokens_by_role=tokens,
        context_tokens=context_tokens,
        context_message_count=context_count,
        near_limit=allowance.near(used, warn_ratio),
        strategy=strategy,
        counter=counter.name,
        calibrated=calibration.anchor is not None,
        calibration=calibration.factor,
        pruning=plan.report if plan is not None else None,
        sections=sections,
        cache=cache,
    )
