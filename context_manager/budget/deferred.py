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
    """Whether cuts are due, the room they were deferred at, and how far they may grow.

    The limit outlives a cut: taking the cut keeps every assumption it rests on (the cut stops
    short of the latest user turn; fewer tokens are held after it), so after a read the next
    add compares two numbers again. The manager clears it (``limit = -1``) when the room or the
    history changes otherwise: a new cap, a pin, a tool exchange or any add that cuts at once.
    """

    __slots__ = ("due", "fifo", "limit", "room")

    def __init__(self, fifo: FIFO) -> None:
        self.fifo = fifo
        self.due = False  # adds since the last cut left theirs to the next read
        self.room = 0  # the room those cuts are taken in
        self.limit = -1  # how far ``cum[-1]`` may grow while they stay plain (-1: check again)

    def defer(self, ledger: Ledger, cap: int) -> bool:
        """After an add of an unpinned one-message group outside any tool exchange: True when
        its cut may wait, else the cut due before it is taken (the caller then evicts)."""
        room, end = cap - ledger.pinned_total, ledger.cum[-1]
        limit = min(self.fifo.defer_limit(ledger, room), 2 * cap - ledger.total + end)
        if end <= limit:
            self.room, self.limit, self.due = room, limit, True
            return True
        self.settle(ledger, len(ledger.group_start) - 1)  # the groups before this add
        self.limit = -1
        return False

    def settle(self, ledger: Ledger, hi: int | None = None) -> None:
        """Take the cut due, on groups ``[0, hi)`` (default: all)."""
        if self.due:  # cleared after the cut: a reader that takes no lock waits on it meanwhile
            cum = ledger.cum
            ledger.evict_before(self.fifo.deferred_cut(ledger, self.room, hi))
            self.due = False
            if ledger.cum is not cum:  # compacted: the limit was in the old positions' sums
                self.limit = -1
