"""One priority's groups, for the ledger's per-priority prefix sums (``Ledger.levels``).

Priority trimming walks these levels instead of sorting the history: each holds the groups of
one priority in order with the running sum of their trimmable tokens, so "drop the cheapest
groups of this priority until ``need`` is met" is one ``bisect``.
"""

from __future__ import annotations

from bisect import bisect_left

__all__ = ["Level", "file_groups"]


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


def file_groups(
    levels: dict[int, Level],
    lo: int,
    hi: int,
    pinned: list[bool],
    priority: list[int],
    cum: list[int],
) -> None:
    """File groups ``[lo, hi)`` (pinned ones aside) in the level of their priority, in order,
    with their trimmable tokens from the ledger's prefix sums ``cum``."""
    for g in range(lo, hi):
        if pinned[g]:
            continue
        level = levels.get(priority[g])
        if level is None:
            level = levels[priority[g]] = Level()
        level.groups.append(g)
        level.cum.append(level.cum[-1] + cum[g + 1] - cum[g])
