"""What the provider restriction reads of the groups ``trim()``'s scan keeps.

The ledger answers :class:`~context_manager.budget.restrict.GroupRoles` from its own lists;
the scan's groups are spans of message indices read through its ``rec``, so this adapter answers
the same questions for them, by local group id.
"""

from __future__ import annotations

from collections.abc import Callable

from ..messages import Message
from ..providers import ProviderRules
from .fit import opening
from .restrict import opens_context

__all__ = ["SpanRoles", "lead_span"]

Span = tuple[int, int]


def lead_span(
    rules: ProviderRules | None,
    protected: Span | None,
    pinned: dict[int, int],
    lo: int,
    rec: Callable[[int], Message],
    before: Callable[[int], int],
    span: Callable[[int], Span],
) -> Span | None:
    """The group a context opens with when the latest user turn (``protected``) cannot: the
    nearest one before it a context may open with, when the provider wants a user turn first
    and that turn's group opens with the assistant (:func:`~context_manager.budget.fit.opening`,
    as ``plan.lead_group``); None when nothing is added, or when a pin comes first (it opens
    the context itself). ``before(i)``: the start of the group before the one starting at
    message ``i``; ``span(i)``: the group starting at ``i``."""
    if rules is None or protected is None:
        return None

    def opens(i: int) -> bool:
        return opens_context(rules, rec(i))

    # A pin before the turn opens the context itself when a context may open with it.
    pinned_before = any(start < protected[0] and opens(start) for start in pinned)

    start = opening(protected[0], lo, opens, before, pinned_before=pinned_before)
    return span(start) if start < protected[0] else None


class SpanRoles:
    """The :class:`~context_manager.budget.restrict.GroupRoles` of spans ``[start, end)``, by id."""

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

    def touches(self, g: int, h: int) -> bool:
        return self.groups[g][1] == self.groups[h][0]

    def compaction(self, g: int) -> str:
        return self.rec(self.groups[g][0]).compaction
