"""What to send: the strategy's choice, the protected parts, pins and provider rules combined.

A pure function of the ledger, the strategy, the room and the provider's rules, so the manager
and any other host compute a context the same way.
"""

from __future__ import annotations

from bisect import bisect_left

from ..errors import ContextOverflowError
from ..providers import ProviderRules
from ._ledger import Ledger
from .compacted import after_compaction, compaction_group, foreign_compaction
from .fit import merged, opening, overflows, protect
from .restrict import opens_context, restrict
from .scattered import mask_ready
from .strategies import Selection, Strategy

__all__ = ["Shortfall", "lead_group", "plan_context"]


class Shortfall(Exception):
    """The protected parts alone need ``needed`` trimmable tokens, more than the room."""

    def __init__(self, needed: int, user: bool, exchange: bool) -> None:
        super().__init__(needed)
        self.needed = needed
        self.user = user
        self.exchange = exchange

    def overflow(self, fixed: int, budget: int) -> ContextOverflowError:
        """The typed error a host raises: ``fixed`` tokens are spent before trimmable groups."""
        what = "the pinned messages" + (" and the latest user turn" if self.user else "")
        what += " and the newest exchange" if self.exchange else ""
        need = fixed + self.needed
        return ContextOverflowError(
            f"{what} need {need} tokens but the budget is {budget} "
            f"(short by {need - budget}); raise max_tokens, lower the "
            "reserve, unpin messages or compact",
            required=need,
            budget=budget,
        )


def _covers(starts: list[int], stops: list[int], g: int) -> bool:
    return any(a <= g < b for a, b in zip(starts, stops, strict=True))


def _with_run(
    ledger: Ledger, starts: list[int], stops: list[int], lo: int, hi: int
) -> tuple[list[int], list[int], int]:
    """Runs with groups ``[lo, hi)`` merged in, and the trimmable tokens that adds."""
    runs = list(zip(starts, stops, strict=True))
    added = ledger.trimmable(lo, hi)
    added -= sum(ledger.trimmable(max(a, lo), min(b, hi)) for a, b in runs if a < hi and lo < b)
    runs = merged([*runs, (lo, hi)])
    return [a for a, _ in runs], [b for _, b in runs], added


def lead_group(ledger: Ledger, protected: int, provider: ProviderRules | None) -> int:
    """The group a context opens with when the protected latest user turn cannot
    (:func:`~.fit.opening`, whose rule this reads from the ledger): itself, or the nearest group
    before it that opens a context when the provider needs one and the turn's own group does
    not. Only that group is protected with the turn, not the groups between them.

    The walk steps over the ledger's ``openers`` (groups that may open one), found by
    bisection, not over every group: a tool loop of thousands of steps costs one step. Below
    the floor only a lead FIFO kept (``kept_lead``) is held; a pin before the turn opens the
    context itself when a context may open with it (a pinned system message does not).
    """
    if provider is None or protected < 0:
        return protected
    records, group_start, pins = ledger.records, ledger.group_start, ledger.pinned_groups
    floor, kept, openers = ledger.floor, ledger.kept_lead, ledger.openers
    lo = kept if 0 <= kept < floor else floor

    def opens(g: int) -> bool:
        return opens_context(provider, records[group_start[g]])

    def previous(g: int) -> int:
        i = bisect_left(openers, g) - 1
        return openers[i] if i >= 0 and openers[i] >= floor else lo

    pinned_before = any(opens(g) for g in pins[: bisect_left(pins, protected)])
    return opening(protected, lo, opens, previous, pinned_before=pinned_before)


def _opened(ledger: Ledger, provider: ProviderRules | None, chosen: Selection, lead: int) -> bool:
    """Whether ``chosen`` already opens with a group a context may start with, at or before
    ``lead`` (what the provider restriction then keeps first): a contiguous window does when it
    reaches ``lead``, a scattered choice also when an earlier run holds such a group."""
    records, group_start = ledger.records, ledger.group_start
    for a, b in zip(chosen.starts, chosen.stops, strict=True):
        if a > lead:
            return False
        if b > lead:
            return True
        if provider is not None and any(
            opens_context(provider, records[group_start[g]]) for g in range(a, b)
        ):
            return True
    return False


def plan_context(
    ledger: Ledger, strategy: Strategy, room: int, provider: ProviderRules | None
) -> Selection:
    """Runs of groups to send (pins merged, provider rules kept) and their trimmable tokens.

    The latest user turn is always protected. With a provider the newest complete exchange is
    protected too: if the strategy dropped it, the strategy runs again with that exchange's
    tokens set aside, so the answer still fits; so is the nearest group before the latest user
    turn that a context may open with, when the provider requires a user turn first and that
    turn's group opens with the assistant (:func:`lead_group`). Raises :class:`Shortfall` when
    the protected parts cannot fit. A native compaction in the history is a floor: nothing
    before the latest one is sent but the pins
    (:func:`~context_manager.budget.compacted.after_compaction`).

    A scattered priority cut comes back as its rule when no provider rule needs the groups
    one by one: :func:`~context_manager.budget.scattered.gather` then merges the pins.
    """
    ledger = after_compaction(ledger, provider)
    protected = ledger.protected_group()
    newest = -1
    if provider is not None:
        q = ledger.complete - 1
        if q >= ledger.floor and q != protected and not ledger.group_pinned[q]:
            newest = q
    lead = lead_group(ledger, protected, provider) if protected >= 0 else -1
    needed = ledger.trimmable(protected, protected + 1) if protected >= 0 else 0
    lead_tokens = ledger.trimmable(lead, lead + 1) if 0 <= lead < protected else 0
    newest_tokens = ledger.trimmable(newest, newest + 1) if newest >= 0 else 0
    if overflows(needed + lead_tokens, newest_tokens, room):
        raise Shortfall(needed + lead_tokens + newest_tokens, protected >= 0, newest >= 0)
    parts = [(lead, lead_tokens)] if 0 <= lead < protected else []
    if newest >= 0:
        parts.append((newest, newest_tokens))
    if not parts:
        selection = strategy.select(ledger, room, protected)
        if provider is None and selection.scattered is not None and mask_ready(ledger):
            return selection
        added: list[int] = []
    else:
        selection, added = protect(
            lambda r: strategy.select(ledger, r, protected),
            lambda chosen, g: (
                _covers(chosen.starts, chosen.stops, g)
                if g == newest
                else _opened(ledger, provider, chosen, g)
            ),
            room,
            parts,
        )
    starts, stops, tokens = selection.starts, selection.stops, selection.trimmable_tokens
    for g in added:
        starts, stops, more = _with_run(ledger, starts, stops, g, g + 1)
        tokens += more
    starts, stops = ledger.with_pins(starts, stops)
    if provider is not None:
        pins = (g for g in ledger.pinned_groups if g < ledger.complete)
        keep = frozenset([protected, newest, compaction_group(ledger, provider), *pins])
        foreign = foreign_compaction(ledger, provider)
        starts, stops, dropped = restrict(provider, ledger, starts, stops, keep, foreign)
        tokens -= sum(ledger.trimmable(g, g + 1) for g in dropped)
    return Selection(starts, stops, tokens)
