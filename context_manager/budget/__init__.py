"""The budget core: the ledger (private storage, prefix sums), its read-only view, strategies."""

from __future__ import annotations

from .strategies import FIFO, Priority, Selection, SlidingWindow, Strategy, get_strategy
from .view import LedgerView, LevelView

__all__ = [
    "FIFO",
    "LedgerView",
    "LevelView",
    "Priority",
    "Selection",
    "SlidingWindow",
    "Strategy",
    "get_strategy",
]
