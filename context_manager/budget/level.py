"""One priority's groups, for the ledger's per-priority prefix sums (``Ledger.levels``).

Priority trimming walks these levels instead of sorting the history: each holds the groups of
one priority in order with the running sum of their trimmable tokens, so "drop the cheapest
groups of this priority until ``need`` is met" is one ``bisect``.
"""

from __future__ import annotations

from bisect import bisect_left

__all__ = ["Level"]


class Level:
    """The groups of one priority, in order, with prefix sums of their trimmable tokens."""

    __slots__ = ("cum", "groups")

    def __init__(self) -> None:
        self.groups: list[int] = []
        self.cum: list[int] = [0]

    def span(self, lo_group: int, hi_group: int) -> tuple[int, int]:
        """Positions in this level of the groups in ``[lo_group, hi_group)``."""
        groups = self.groups
        return bisect_left(groups, lo_group), bisect_left(groups, hi_group)
