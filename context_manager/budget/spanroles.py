"""What the provider restriction reads of the groups ``trim()``'s scan keeps.

The ledger answers :class:`~context_manager.providers.GroupRoles` from its own lists; the scan's
groups are spans of message indices read through its ``rec``, so this adapter answers the same
questions for them, by local group id.
"""

from __future__ import annotations

from collections.abc import Callable

from ..messages import Message

__all__ = ["SpanRoles"]


class SpanRoles:
    """The :class:`~context_manager.providers.GroupRoles` of spans ``[start, end)``, by id."""

    __slots__ = ("groups", "rec")

    def __init__(self, rec: Callable[[int], Message], groups: dict[int, tuple[int, int]]) -> None:
        self.rec = rec
        self.groups = groups

    def first_role(self, g: int) -> str:
        role = self.rec(self.groups[g][0]).role
        return "user" if role == "tool" else role

    def last_role(self, g: int) -> str:
        role = self.rec(self.groups[g][1] - 1).role
        return "user" if role == "tool" else role

    def first_is_user_turn(self, g: int) -> bool:
        return self.rec(self.groups[g][0]).is_user_turn

    def compaction(self, g: int) -> str:
        return self.rec(self.groups[g][0]).compaction
