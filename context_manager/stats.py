"""The budget snapshot ``MessageContextManager.stats()`` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ContextStats"]


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
