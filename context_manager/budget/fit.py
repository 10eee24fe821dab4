"""The fit rule, once: which newest groups are sent, for the manager and for ``trim()`` alike.

Two callers hold the history differently. The manager's ledger has prefix sums over every group
held, so "the oldest group from which the rest fits" is a bisection; ``trim()``'s backward scan
reads from the newest message back and stops a few messages past that same group. Both answer
that one question through :class:`Fits`, and everything decided from the answer (keep the latest
user turn when the window leaves it out, protect the newest exchange under a provider, the
shortfall when the protected parts cannot fit) is decided here, so the two cannot drift.

Positions are whatever the caller's groups are indexed by (ledger groups, or message indices of
group starts in the scan); a span ``(start, end)`` is one group. Both callers keep their groups
in order, so "kept" is a suffix ``[start, top)`` plus the spans set apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

__all__ = ["Fits", "Span", "overflows", "protect_newest", "window"]

Span = tuple[int, int]
S = TypeVar("S")


class Fits(Protocol):
    def start(self, room: int, cap: int | None, lo: int) -> int:
        """The smallest group start ``s >= lo`` whose groups from ``s`` to the top cost at most
        ``room`` tokens and, with ``cap``, hold at most ``cap`` messages; the top when even the
        newest group does not fit."""


def window(
    fits: Fits,
    room: int,
    cap: int | None,
    lo: int,
    protected: Span | None,
    p_tokens: int,
    p_messages: int,
) -> tuple[int, bool]:
    """The sliding window: where its run of newest groups starts, and whether the latest user
    turn (``protected``, costing ``p_tokens`` / ``p_messages``) is kept apart before that run.

    The user must always see their latest turn answered: when the plain window starts after it,
    the turn is kept on its own and the run after it gets what is left of the room and the cap.
    """
    start = fits.start(room, cap, lo)
    if protected is None or protected[0] >= start:
        return start, False
    left_cap = None if cap is None else max(cap - p_messages, 0)
    return fits.start(room - p_tokens, left_cap, max(start, protected[1])), True


def protect_newest(
    select: Callable[[int], S], covers: Callable[[S], bool], room: int, newest_tokens: int
) -> tuple[S, bool]:
    """Under a provider's rules the newest complete exchange is sent too (the model answers it).

    ``select(room)`` is the strategy's choice; when it leaves the exchange out, the choice is made
    again with the exchange's tokens set aside, so adding the exchange still fits. Returns the
    choice and whether the exchange must be added to it.
    """
    chosen = select(room)
    if covers(chosen):
        return chosen, False
    chosen = select(room - newest_tokens)
    return chosen, not covers(chosen)


def overflows(p_tokens: int, newest_tokens: int, room: int) -> bool:
    """The protected parts alone (latest user turn, newest exchange) do not fit the room."""
    return p_tokens + newest_tokens > room
