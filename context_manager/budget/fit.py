"""The fit rule, once: which newest groups are sent, for the manager and for ``trim()`` alike.

Two callers hold the history differently. The manager's ledger has prefix sums over every group
held, so "the oldest group from which the rest fits" is a bisection; ``trim()``'s backward scan
reads from the newest message back and stops a few messages past that same group. Both answer
that one question through :class:`Fits`, and everything decided from the answer (keep the latest
user turn when the window leaves it out, protect the newest exchange under a provider, the
shortfall when the protected parts cannot fit, the turn a provider's context must open with) is
decided here, so the two cannot drift.

Positions are whatever the caller's groups are indexed by (ledger groups, or message indices of
group starts in the scan); a span ``(start, end)`` is one group. Both callers keep their groups
in order, so "kept" is a suffix ``[start, top)`` plus the spans set apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

__all__ = ["Fits", "Span", "merged", "opening", "overflows", "protect", "window"]

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


def opening(
    p: int,
    lo: int,
    opens: Callable[[int], bool],
    previous: Callable[[int], int],
    *,
    pinned_before: bool = False,
) -> int:
    """The group a context opens with when the protected latest user turn (the group starting
    at ``p``) cannot open it, under a provider whose context must open with a user turn
    (``ProviderRules.first_user``).

    That group can open with the assistant: a tool call whose results carry the user's words
    (Bedrock ``toolResult`` + text, Anthropic ``tool_result`` + text). Sent alone it would be
    the first turn, which the API rejects, so the nearest group before it that ``opens`` a
    context (the user turn the tool loop started from) is protected with it: that group alone,
    not the groups between, which the strategy keeps or drops like any other (a tool result
    larger than the window in between must not make every request overflow). Returns that
    group's start (``p`` when it opens one itself, or when none does down to ``lo``: the
    history itself opens with the assistant, which :func:`~context_manager.providers.validate`
    reports). ``previous(q)``: the start of the group before the one starting at ``q``. A
    pinned group before it (``pinned_before``) is sent anyway and opens the context itself
    (pins are the caller's choice: a rule one breaks is left to ``validate()``): nothing is
    added then.
    """
    if pinned_before:
        return p
    q = p
    while not opens(q):
        if q <= lo:
            return p
        q = previous(q)
    return q


def protect(
    select: Callable[[int], S],
    covers: Callable[[S, int], bool],
    room: int,
    parts: Sequence[tuple[int, int]],
) -> tuple[S, list[int]]:
    """Under a provider's rules some spans are sent whatever the strategy chooses: the newest
    complete exchange (the model answers it) and the turns a context must open with
    (:func:`opening`). ``parts``: each one's position and tokens, oldest first.

    ``select(room)`` is the strategy's choice; when it leaves a part out, the choice is made
    again with that part's tokens set aside, so adding the part still fits (the newest part is
    settled last, around the choices made for the older ones). Returns the choice and the
    positions of the parts that must be added to it.
    """
    if not parts:
        return select(room), []
    *older, (position, tokens) = parts

    def choose(r: int) -> tuple[S, list[int]]:
        return protect(select, covers, r, older)

    chosen, added = choose(room)
    if covers(chosen, position):
        return chosen, added
    chosen, added = choose(room - tokens)
    return chosen, added if covers(chosen, position) else [*added, position]


def overflows(p_tokens: int, newest_tokens: int, room: int) -> bool:
    """The protected parts alone (latest user turn with the turn it must be sent from, newest
    exchange) do not fit the room."""
    return p_tokens + newest_tokens > room


def merged(spans: Iterable[Span]) -> list[Span]:
    """Sorted runs covering ``spans`` (touching or overlapping spans joined; empty ones gone):
    how a choice, the spans set apart from it and the pins become the runs that are sent."""
    out: list[Span] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        elif start < end:
            out.append((start, end))
    return out
