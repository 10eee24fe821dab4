"""What to send: the strategy's choice, the protected parts, pins and provider rules combined.

A pure function of the ledger, the strategy, the room and the provider's rules, so the manager
and any other host compute a context the same way.
"""

from __future__ import annotations

from ..errors import ContextOverflowError
from ..providers import ProviderRules, restrict
from ._ledger import Ledger
from .compacted import after_compaction, compaction_group, foreign_compaction
from .fit import overflows, protect_newest
from .scattered import mask_ready
from .strategies import Selection, Strategy

__all__ = ["Shortfall", "plan_context"]


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


def plan_context(
    ledger: Ledger, strategy: Strategy, room: int, provider: ProviderRules | None
) -> Selection:
    """Runs of groups to send (pins merged, provider rules kept) and their trimmable tokens.

    The latest user turn is always protected. With a provider the newest complete exchange is
    protected too: if the strategy dropped it, the strategy runs again with that exchange's
    tokens set aside, so the answer still fits. Raises :class:`Shortfall` when the protected
    parts cannot fit. A native compaction in the history is a floor: nothing before the latest
    one is sent but the pins (:func:`~context_manager.budget.compacted.after_compaction`).

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
    needed = ledger.trimmable(protected, protected + 1) if protected >= 0 else 0
    newest_tokens = ledger.trimmable(newest, newest + 1) if newest >= 0 else 0
    if overflows(needed, newest_tokens, room):
        raise Shortfall(needed + newest_tokens, protected >= 0, newest >= 0)
    if newest < 0:
        selection = strategy.select(ledger, room, protected)
        if provider is None and selection.scattered is not None and mask_ready(ledger):
            return selection
        add_newest = False
    else:
        selection, add_newest = protect_newest(
            lambda r: strategy.select(ledger, r, protected),
            lambda chosen: _covers(chosen.starts, chosen.stops, newest),
            room,
            newest_tokens,
        )
    starts, stops, tokens = selection.starts, selection.stops, selection.trimmable_tokens
    if add_newest:
        starts, stops = [*starts, newest], [*stops, newest + 1]
        tokens += newest_tokens
    starts, stops = ledger.with_pins(starts, stops)
    if provider is not None:
        pins = (g for g in ledger.pinned_groups if g < ledger.complete)
        keep = frozenset([protected, newest, compaction_group(ledger, provider), *pins])
        foreign = foreign_compaction(ledger, provider)
        starts, stops, dropped = restrict(provider, ledger, starts, stops, keep, foreign)
        tokens -= sum(ledger.trimmable(g, g + 1) for g in dropped)
    return Selection(starts, stops, tokens)
