"""The read-only view of the ledger that strategies decide on.

A strategy sees groups (a tool call with its results, or a single message), numbered in order,
with prefix sums of their *trimmable* tokens (pinned groups count 0, since they are always sent).
It answers "which groups to keep" and "below which group to evict" from this view alone; only the
manager changes the ledger.

The view is a :class:`typing.Protocol` that the ledger satisfies: it exposes nothing that
mutates, and its sequences are typed read-only, so a type checker rejects a strategy that tries
to change anything, while at run time a decision reads the ledger directly (adds stay a few
microseconds; the contract tests check that no strategy changes it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

__all__ = ["LedgerView", "LevelView"]


class LevelView(Protocol):
    """The groups of one priority, in order, with prefix sums of their trimmable tokens."""

    @property
    def groups(self) -> Sequence[int]: ...
    @property
    def cum(self) -> Sequence[int]: ...
    def span(self, lo_group: int, hi_group: int) -> tuple[int, int]: ...


class LedgerView(Protocol):
    """What a :class:`~context_manager.budget.strategies.Strategy` may read.

    Groups ``[floor, complete)`` are held and sendable; a group at ``complete`` (if any) still
    awaits tool results. ``protected`` is the group of the latest user turn (-1 when none), which
    every strategy must keep.
    """

    @property
    def floor(self) -> int:
        """First group still held (FIFO moves it forward)."""

    @property
    def complete(self) -> int:
        """End of the sendable groups (an open tool-call group is not sendable)."""

    @property
    def group_count(self) -> int: ...
    @property
    def open(self) -> bool:
        """True while the newest group awaits tool results."""

    @property
    def protected(self) -> int:
        """Group of the latest user turn, or -1."""

    @property
    def cum(self) -> Sequence[int]:
        """``cum[g]``: trimmable tokens of groups ``[0, g)``; ``cum[b] - cum[a]`` is a range."""

    @property
    def group_start(self) -> Sequence[int]:
        """Index of each group's first message."""

    @property
    def group_pinned(self) -> Sequence[bool]: ...
    @property
    def turns(self) -> Sequence[int]:
        """Groups holding a user turn, ascending."""

    @property
    def levels(self) -> Mapping[int, LevelView]:
        """Per-priority groups and prefix sums."""

    @property
    def message_count(self) -> int:
        """Messages stored (groups ``[0, group_count)``)."""

    def group_end(self, g: int) -> int:
        """Index one past the last message of group ``g``."""

    def has_results(self, g: int) -> bool:
        """Whether group ``g`` ends with a tool result (a complete tool exchange)."""

    def trimmable(self, lo: int, hi: int) -> int:
        """Trimmable tokens of groups ``[lo, hi)``."""

    def start_fitting(self, room: int, lo: int, hi: int) -> int:
        """Smallest ``s`` in ``[lo, hi]`` whose groups ``[s, hi)`` fit in ``room`` tokens."""

    def start_within_messages(self, max_messages: int, lo: int, hi: int) -> int:
        """Smallest group start so that groups ``[s, hi)`` hold at most ``max_messages``."""
