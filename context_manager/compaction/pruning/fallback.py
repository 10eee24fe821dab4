"""When the history is too short to summarize: clear old tool results in the view instead.

A long history of a few huge tool results leaves a summarizer nothing to do (the kept recent
part already holds everything) while the request still overflows. Rather than fail exactly when
help is needed, ``compact()`` and overflow recovery switch the manager's view to
:func:`emergency_pruning` (every tool result but the newest becomes a placeholder; the newest is
cut head+tail to fit by the manager's ``truncate_newest`` rule). History and log keep everything.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import NothingToCompactError
from ...host import ManagerHost
from ...offload.area import OffloadArea
from .config import ToolResultPruning

__all__ = ["PruningFallback", "emergency_pruning", "prune_instead"]


@dataclass(frozen=True, slots=True)
class PruningFallback:
    """What ``compact()`` returns when it pruned the view instead of summarizing.

    ``cause`` is why nothing could be summarized; ``results`` how many older tool results the
    view now clears; ``pruning`` the configuration installed (``manager.pruning``).
    """

    reason: str
    cause: str
    results: int
    tokens_before: int
    pruning: ToolResultPruning


def emergency_pruning(offload: OffloadArea | None = None) -> ToolResultPruning:
    """Clear every tool result but the newest one, at any usage (no soft trim, no gate);
    with ``offload``, the cleared results stay recallable from it."""
    return ToolResultPruning(
        offload=offload,
        max_chars=None,
        soft_ratio=None,
        hard_ratio=0.0,
        min_prunable_chars=0,
        clear_until="all",
        keep_last=1,
    )


def prune_instead(
    manager: ManagerHost, error: NothingToCompactError, reason: str
) -> PruningFallback:
    """Install :func:`emergency_pruning` on ``manager``; re-raise ``error`` when it is not needed
    or cannot help: the held history fits the budget (and the provider did not report an
    overflow), or fewer than two tool results are held (nothing older than the newest)."""
    results = sum(len(item.record.result_ids) for item in manager.history())
    fits = manager.used_tokens <= manager.budget_tokens and reason != "overflow"
    if fits or results < 2:
        raise error
    area = getattr(getattr(manager, "pruning", None), "offload", None)  # an attached area stays
    pruning = emergency_pruning(area)
    tokens = int(manager.used_tokens)
    manager.use_pruning(pruning)
    return PruningFallback(reason, str(error), results - 1, tokens, pruning)
