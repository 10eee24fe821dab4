"""Each held message's group priority as one byte, for priority cuts done in C.

A priority cut keeps every group above one priority and, of that priority, the groups from one
on. With the priorities as bytes (each message's rank among the priorities seen), that cut over a
100k-message history is two ``bytes.translate`` calls rather than a Python step per group (see
:mod:`~context_manager.budget.scattered`).

Built on first use, so only priority managers that hit a scattered cut pay for it, and brought up
to date incrementally: only the newest group of a ledger ever grows or changes priority, so a
refresh redoes the newest group it saw and appends the groups added since. A compaction renumbers
everything and resets it.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import chain
from operator import sub

__all__ = ["MessageRanks"]

_BYTE = [bytes([i]) for i in range(256)]
_MAX_LEVELS = 256  # ranks are bytes; more distinct priorities fall back to group runs


class MessageRanks:
    """``data[i]`` is the rank in ``order`` of message ``i``'s group priority."""

    __slots__ = ("data", "groups", "order", "rank")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.data = bytearray()
        self.order: list[int] = []  # the priorities seen, ascending
        self.rank: dict[int, int] = {}
        self.groups = 0  # groups covered; the last of them may have grown since

    def current(
        self, group_start: list[int], group_priority: list[int], size: int
    ) -> tuple[bytearray, list[int]] | None:
        """The ranks of all ``size`` messages and the priority order, or None past 256 levels."""
        n = len(group_start)
        g0 = max(self.groups - 1, 0)
        if g0 < n:
            del self.data[group_start[g0] :]
        new = group_priority[g0:]
        missing = set(new).difference(self.rank)
        if missing:
            order = sorted(missing.union(self.order))
            if len(order) > _MAX_LEVELS:
                self.reset()
                return None
            # Old ranks move up past the priorities inserted below them: one translate.
            moved = bytes(bisect_left(order, p) for p in self.order)
            self.data = self.data.translate(moved.ljust(256, b"\0"))
            self.order = order
            self.rank = {p: i for i, p in enumerate(order)}
        sizes = map(sub, chain(group_start[g0 + 1 :], (size,)), group_start[g0:])
        ranks = map(_BYTE.__getitem__, map(self.rank.__getitem__, new))
        self.data += b"".join(map(bytes.__mul__, ranks, sizes))
        self.groups = n
        return self.data, self.order
