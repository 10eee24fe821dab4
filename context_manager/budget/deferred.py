"""FIFO cuts left to the next read: adds to a full FIFO manager without asking the strategy.

A full FIFO manager evicts on nearly every add. Asking the strategy and dropping one group at a
time cost a third of such an add (0.6 of 2.4 us with the estimator), though most adds end in
the same plain cut: the oldest groups go until the rest fits. :meth:`FIFO.defer_limit` says how
far the history may grow while that stays true; meanwhile an add only compares two numbers, and
whatever reads the history next takes the cut of the whole run at once (one bisect, one slice
per run of dropped groups). The run ends early at an add whose cut is not plain, at held tokens
of twice the cap (memory stays proportional to the budget), or when someone must be told of
evictions (they are told by the add that evicts, so runs happen only while nobody listens).
"""

from __future__ import annotations

from ._ledger import Ledger
from .strategies import FIFO

__all__ = ["DeferredCut"]


class DeferredCut:
    """The cut due over a run of adds: its room (None: nothing due) and how far it may grow."""

    __slots__ = ("fifo", "limit", "room")

    def __init__(self, fifo: FIFO) -> None:
        self.fifo = fifo
        self.room: int | None = None
        self.limit = 0  # how far ``cum[-1]`` may grow before the run is checked again

    def defer(self, ledger: Ledger, cap: int) -> bool:
        """After an add of an unpinned one-message group outside any tool exchange: True when
        its cut may wait, else the cut due before it is taken (the caller then evicts)."""
        room, end = cap - ledger.pinned_total, ledger.cum[-1]
        limit = min(self.fifo.defer_limit(ledger, room), 2 * cap - ledger.total + end)
        if end <= limit:
            self.room, self.limit = room, limit
            return True
        self.settle(ledger, len(ledger.group_start) - 1)  # the groups before this add
        return False

    def settle(self, ledger: Ledger, hi: int | None = None) -> None:
        """Take the cut due, on groups ``[0, hi)`` (default: all)."""
        room, self.room = self.room, None
        if room is not None:
            ledger.evict_before(self.fifo.deferred_cut(ledger, room, hi))
