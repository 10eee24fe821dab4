"""The read-only view of the ledger that strategies decide on.

A strategy sees groups (a tool call with its results, or a single message), numbered in order,
with prefix sums of their *trimmable* tokens (pinned groups count 0, since they are always sent).
It answers "which groups to keep" and "below which group to evict" from this view alone; only the
manager changes the ledger. Sequences handed out here are the ledger's own storage typed as
read-only, so a decision costs no copies (``bisect`` runs on them directly).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import Protocol

from ._ledger import Ledger

__all__ = ["LedgerView", "LevelView"]


class LevelView(Protocol):
    """The groups of one priority, in order, with prefix sums of their trimmable tokens."""

    @property
    def groups(self) -> Sequence[int]: ...
    @property
    def cum(self) -> Sequence[int]: ...
    def span(self, lo_group: int, hi_group: int) -> tuple[int, int]: ...


class LedgerView:
    """What a :class:`~context_manager.budget.strategies.Strategy` may read.

    Groups ``[floor, complete)`` are held and sendable; a group at ``complete`` (if any) still
    awaits tool results. ``protected`` is the group of the latest user turn (-1 when none), which
    every strategy must keep.
    """

    __slots__ = ("_ledger",)

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    @property
    def floor(self) -> int:
        """First group still held (FIFO moves it forward)."""
        return self._ledger.floor

    @property
    def complete(self) -> int:
        """End of the sendable groups (an open tool-call group is not sendable)."""
        return self._ledger.complete

    @property
    def group_count(self) -> int:
        return self._ledger.group_count

    @property
    def open(self) -> bool:
        """True while the newest group awaits tool results."""
        return self._ledger.open

    @property
    def protected(self) -> int:
        """Group of the latest user turn, or -1."""
        return self._ledger.protected

    @property
    def cum(self) -> Sequence[int]:
        """``cum[g]``: trimmable tokens of groups ``[0, g)``; ``cum[b] - cum[a]`` is a range."""
        return self._ledger.cum

    @property
    def group_start(self) -> Sequence[int]:
        """Index of each group's first message."""
        return self._ledger.group_start

    @property
    def group_pinned(self) -> Sequence[bool]:
        return self._ledger.group_pinned

    @property
    def turns(self) -> Sequence[int]:
        """Groups holding a user turn, ascending."""
        return self._ledger.turns

    @property
    def levels(self) -> Mapping[int, LevelView]:
        """Per-priority groups and prefix sums."""
        return self._ledger.levels

    @property
    def message_count(self) -> int:
        """Messages stored (groups ``[0, group_count)``)."""
        return len(self._ledger.originals)

    def group_end(self, g: int) -> int:
        """Index one past the last message of group ``g``."""
        return self._ledger.group_end(g)

    def tokens(self, lo: int, hi: int) -> int:
        """Trimmable tokens of groups ``[lo, hi)``."""
        cum = self._ledger.cum
        return cum[hi] - cum[lo]

    def start_fitting(self, room: int, lo: int, hi: int) -> int:
        """Smallest ``s`` in ``[lo, hi]`` whose groups ``[s, hi)`` fit in ``room`` tokens."""
        cum = self._ledger.cum
        return bisect_left(cum, cum[hi] - room, lo, hi)

    def start_within_messages(self, max_messages: int, lo: int, hi: int) -> int:
        """Smallest group start so that groups ``[s, hi)`` hold at most ``max_messages``."""
        ledger = self._ledger
        end = ledger.group_start[hi] if hi < ledger.group_count else len(ledger.originals)
        return bisect_left(ledger.group_start, end - max_messages, lo, hi)
