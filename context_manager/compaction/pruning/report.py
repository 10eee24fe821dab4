"""``PruningReport``: what one request's pruning did (a module of its own so the engine and
the configuration do not import each other)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PruningReport"]


@dataclass(frozen=True, slots=True)
class PruningReport:
    """What one request's pruning did (like Anthropic's ``applied_edits``); plain data."""

    results_trimmed: int = 0
    results_cleared: int = 0
    inputs_cleared: int = 0
    thinking_cleared: int = 0
    images_cleared: int = 0
    images_kept: int = 0
    tokens_freed: int = 0
    new_trimmed: int = 0
    new_cleared: int = 0
    skipped_unsupported: int = 0
    clear_skipped_below_at_least: bool = False
