"""Keeping a selection valid under a provider's rules (``providers.ProviderRules``): which
groups a context may open with, and the groups a selection drops to obey, never adds.

The rules themselves and ``validate()`` live in ``providers.py``; this is the side the fit
reads while it decides (``plan.py`` for the manager, ``backscan.py`` for ``trim()``), so both
apply one restriction.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from ..messages import Message
from ..providers import ProviderRules, reads_compaction

#: Roles a provider reads apart from the conversation (the system prompt and its kin).
_SYSTEM = ("system", "developer")

__all__ = ["GroupRoles", "after_head", "opens_context", "restrict"]


def after_head(rules: ProviderRules | None, head: Message | None) -> ProviderRules | None:
    """The rules for the groups sent after ``head`` (the compaction summary, which the manager
    sends first). A user turn there already opens the context: the first-user rule is met, and
    must not drop the first kept turn when the cut landed on an assistant message (a cut Pi's
    rules allow, inside a turn)."""
    if rules is None or head is None or not rules.first_user or not head.is_user_turn:
        return rules
    return replace(rules, first_user=False)


def opens_context(rules: ProviderRules, rec: Message) -> bool:
    """Whether a context under ``rules`` may start with ``rec``: anything, unless the provider
    wants a user turn first (``first_user``, the system prompt aside); then a user turn, or a
    native compaction it reads (it stands for the turns before it). Tool results alone are no
    user turn (:attr:`Message.is_user_turn`), and neither is a tool call: the fit rule sends
    such a group with the nearest one before it that opens (``budget.fit.opening``)."""
    return _opens(rules, rec.is_user_turn, rec.compaction)


def _opens(rules: ProviderRules, user_turn: bool, compaction: str) -> bool:
    """:func:`opens_context` from what the restriction reads of a group (``GroupRoles``)."""
    if not rules.first_user or user_turn:
        return True
    return bool(compaction) and reads_compaction(rules, compaction)


class GroupRoles(Protocol):
    """What the restriction reads of the ledger: each group's first and last turn roles."""

    def first_role(self, g: int) -> str: ...
    def last_role(self, g: int) -> str: ...
    def first_is_user_turn(self, g: int) -> bool: ...
    def touches(self, g: int, h: int) -> bool:
        """Whether group ``h`` comes right after group ``g`` in the history (no message
        between them: one evicted, compacted away or never read counts)."""

    def compaction(self, g: int) -> str:
        """The maker of a native compaction that group ``g`` starts with, else ``""``."""


def restrict(
    rules: ProviderRules,
    roles: GroupRoles,
    starts: list[int],
    stops: list[int],
    keep: frozenset[int],
    foreign: bool = False,
) -> tuple[list[int], list[int], list[int]]:
    """Runs with the groups that break ``rules`` dropped (never added); also the dropped groups.

    ``keep`` holds groups that must stay (latest user turn, newest exchange, pins): a violation
    they cause is left for ``providers.validate`` to report, never resolved by dropping them.
    ``foreign``: the selection may hold native compactions another provider made (a model
    switch); they are dropped, kept or not, since only their maker can read them.
    """
    groups = [g for a, b in zip(starts, stops, strict=True) for g in range(a, b)]
    dropped: list[int] = []
    if foreign:
        unreadable = [  # kept or not: the provider would reject the request
            g
            for g in groups
            if roles.compaction(g) and not reads_compaction(rules, roles.compaction(g))
        ]
        if unreadable:
            gone = set(unreadable)
            groups = [g for g in groups if g not in gone]
            dropped += unreadable
    if rules.first_user:
        # The first turn after the system messages must open a context (a user turn, or a
        # native compaction the provider reads: opens_context). A kept (pinned)
        # system message is read apart by the provider, as validate() reads it: it does not
        # shield the turn after it. Any other group that must be sent stops the drop.
        k = 0
        while k < len(groups) and groups[k] in keep and roles.first_role(groups[k]) in _SYSTEM:
            k += 1
        while k < len(groups) and groups[k] not in keep:
            g = groups[k]
            if _opens(rules, roles.first_is_user_turn(g), roles.compaction(g)):
                break
            dropped.append(groups.pop(k))
    if rules.alternate:
        k = 1
        while k < len(groups):
            prev, cur = groups[k - 1], groups[k]
            if not roles.touches(prev, cur) and roles.last_role(prev) == roles.first_role(cur):
                victim = prev if prev not in keep else (cur if cur not in keep else -1)
                if victim >= 0:
                    groups.remove(victim)
                    dropped.append(victim)
                    k = max(k - 1, 1)
                    continue
            k += 1
    if not dropped:
        return starts, stops, dropped
    out_starts: list[int] = []
    out_stops: list[int] = []
    for g in groups:
        if out_stops and out_stops[-1] == g:
            out_stops[-1] = g + 1
        else:
            out_starts.append(g)
            out_stops.append(g + 1)
    return out_starts, out_stops, dropped
