"""Trimming policies: tiny classes that only decide which groups go first.

Bookkeeping lives once, in :class:`~context_manager.budget._ledger.Ledger`; a strategy reads it
through a :class:`~context_manager.budget.view.LedgerView` and never changes it. It receives
the token room left for trimmable groups (budget minus system prompt, pinned groups, reply priming
and tool definitions) and the protected group (latest user message), and returns the groups to keep
as sorted runs of groups ``[starts[i], stops[i])``. Pinned groups are merged in by the manager.

Semantics (also stated by the TypeScript reference in ``compat_fixtures/reference``):

- ``sliding_window``: keep the longest run of most recent complete groups that fits; if the
  latest user turn falls outside it, keep that turn and the longest run after it that fits in
  what is left. Optional ``max_messages`` caps the messages returned (system prompt excluded).
  With ``retention_ratio`` the cut is rounded forward to a cache-stable position (see
  :class:`SlidingWindow`), so successive requests share their prefix.
- ``fifo``: the same view, but on every add the oldest groups are evicted from the history for
  good (reported to ``on_evict``) until everything held fits.
- ``priority``: drop the lowest priority first, oldest first among equals, until the rest fits;
  a group's priority is the highest of its members'.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from bisect import bisect_left
from typing import ClassVar

from .._config import check_int
from ..errors import ConfigurationError
from ..messages.nesting import short_repr
from .fit import window
from .scattered import Scattered, Slices, group_runs, is_scattered
from .view import LedgerView


class Selection:
    """Kept groups as sorted, disjoint runs ``[starts[i], stops[i])``.

    Two int lists rather than a list of tuples: ints are not tracked by CPython's cyclic GC, so a
    scattered selection of 50k runs does not trigger full collections over the whole history.
    A priority cut that keeps thousands of scattered runs is held as its rule instead
    (``scattered``): the runs are then built only if something reads them.
    """

    __slots__ = ("_starts", "_stops", "scattered", "trimmable_tokens")

    def __init__(
        self,
        starts: list[int],
        stops: list[int],
        trimmable_tokens: int,
        scattered: Scattered | None = None,
    ) -> None:
        self._starts = starts if scattered is None else None  # None: built from the rule
        self._stops = stops
        self.trimmable_tokens = trimmable_tokens
        self.scattered = scattered

    @classmethod
    def rule(cls, trimmable_tokens: int, scattered: Scattered) -> Selection:
        """A selection held as a priority rule; its runs are built on first read."""
        return cls([], [], trimmable_tokens, scattered)

    @property
    def starts(self) -> list[int]:
        return self._runs()[0]

    @property
    def stops(self) -> list[int]:
        return self._runs()[1]

    def _runs(self) -> tuple[list[int], list[int]]:
        if self._starts is None:
            assert self.scattered is not None
            self._starts, self._stops = self.scattered.runs()
        return self._starts, self._stops

    def __repr__(self) -> str:
        return f"Selection({self.starts!r}, {self.stops!r}, {self.trimmable_tokens!r})"


class Strategy(ABC):
    """Base policy. Subclasses implement :meth:`select`; a destructive one also :meth:`evict`.

    Both only read the view and return a decision: the manager applies it. A new strategy needs
    nothing else (see ``tests/budget/test_strategy_contract.py`` for one written from this API).
    """

    name: ClassVar[str] = "strategy"

    @abstractmethod
    def select(self, view: LedgerView, room: int, protected: int) -> Selection:
        """Groups to send within ``room`` trimmable tokens, as sorted runs within
        ``[view.floor, view.complete)``; ``protected`` (>= 0) must be kept."""

    def evict(self, view: LedgerView, room: int) -> int:
        """After each add: the group below which held groups are dropped for good.

        ``room`` counts everything held. Return ``view.floor`` to keep everything (the default:
        non-destructive). Pinned groups and the latest user turn survive eviction regardless.
        """
        return view.floor


def destructive(strategy: Strategy) -> bool:
    """Whether ``strategy`` drops held messages on add (its own :meth:`Strategy.evict`)."""
    return type(strategy).evict is not Strategy.evict


def _step(room: int, ratio: float) -> int:
    """Grid spacing of the retention rule: ``max(1, floor(room * (1 - ratio)))`` tokens."""
    return max(1, math.floor(room * (1.0 - ratio)))


def _turn_anchor(view: LedgerView, lo: int, hi: int, s: int, step: int) -> int:
    """Smallest turn anchor ``>= s`` (``lo`` itself when ``s <= lo``), or -1 when there is none.

    Candidates are ``lo`` and the groups in ``(lo, hi)`` holding a user turn; a candidate is an
    anchor when its grid cell (``(cum[g] - cum[lo]) // step``) is above the previous candidate's.
    """
    if s <= lo:
        return lo
    turns, cum = view.turns, view.cum
    i = bisect_left(turns, s)
    end = bisect_left(turns, hi, i)
    if i >= end:
        return -1
    prev = turns[i - 1] if i > 0 and turns[i - 1] > lo else lo
    base = cum[lo]
    line = base + ((cum[prev] - base) // step + 1) * step  # first grid line above prev's cell
    j = bisect_left(turns, line, i, end, key=cum.__getitem__)
    return turns[j] if j < end else -1


def _group_anchor(view: LedgerView, lo: int, first: int, hi: int, s: int, step: int) -> int:
    """Smallest anchor ``>= s`` among the groups ``[first, hi)`` (grid based at ``lo``), or -1.

    Here every group is a candidate: ``first`` is an anchor, and so is any group whose cell is
    above the cell of the group before it.
    """
    if s <= first:
        return first
    if s >= hi:
        return -1
    cum = view.cum
    base = cum[lo]
    line = base + ((cum[s - 1] - base) // step + 1) * step
    j = bisect_left(cum, line, s, hi)
    return j if j < hi else -1


class SlidingWindow(Strategy):
    """Non-destructive: the most recent groups that fit; history keeps everything.

    ``retention_ratio=r`` (``0 < r < 1``) makes the window cache-friendly: when the history no
    longer fits, the window is cut to about ``r`` x the room at a user-turn boundary in one step,
    and that cut holds (requests share their prefix) until what follows it no longer fits.
    The cut is a pure function of the history, so a stateless caller running
    ``trim(history, ..., retention_ratio=r)`` on each request gets the manager's cut. The rule:

    * ``room`` is the token room for trimmable groups (budget minus system prompt, pins, reply
      priming and tools); ``step = max(1, floor(room * (1 - r)))``; a group's *offset* is the
      trimmable tokens before it, counted from the first group held; its *cell* is
      ``offset // step``.
    * ``s0`` is the plain sliding-window start: the smallest group such that it and every later
      complete group fit in ``room`` (and in ``max_messages``). If ``s0`` is the first group held,
      everything is sent.
    * Otherwise the cut is the smallest *turn anchor* ``>= s0``: candidates are the first group
      held and every group holding a user turn; an anchor is a candidate whose cell is above the
      previous candidate's. Send ``[cut, end)``.
    * If there is no such anchor (the latest turn alone is larger than about ``r`` x room), keep
      the latest user turn ``p`` and, after it, the groups from the smallest *group anchor* at or
      after the plain start ``s1`` for the room left (every group after ``p`` is a candidate,
      ``p + 1`` always an anchor), or from ``s1`` itself if none exists.

    A cut depends only on offsets, which grow with the history, so it never moves back, and it
    stays put while what follows it fits. After a move about ``room - step = r x room`` tokens are
    kept (more when turns are long: cuts only fall on turn boundaries).
    """

    name = "sliding_window"

    def __init__(
        self, max_messages: int | None = None, *, retention_ratio: float | None = None
    ) -> None:
        if max_messages is not None:
            max_messages = check_int("max_messages", max_messages)
        self.max_messages = max_messages
        self.retention_ratio = _check_ratio(retention_ratio)

    def select(self, view: LedgerView, room: int, protected: int) -> Selection:
        if self.retention_ratio is not None:
            return self._select_retained(view, room, protected, self.retention_ratio)
        lo, hi, cum = view.floor, view.complete, view.cum
        span, p_tokens, p_messages = None, 0, 0
        if protected >= 0:
            span, p_tokens = (protected, protected + 1), cum[protected + 1] - cum[protected]
            p_messages = view.group_end(protected) - view.group_start[protected]
        fits = GroupFits(view, hi)
        start, apart = window(fits, room, self.max_messages, lo, span, p_tokens, p_messages)
        starts, stops = ([protected], [protected + 1]) if apart else ([], [])
        if start < hi:
            starts.append(start)
            stops.append(hi)
        return Selection(starts, stops, (p_tokens if apart else 0) + cum[hi] - cum[start])

    def _select_retained(
        self, view: LedgerView, room: int, protected: int, ratio: float
    ) -> Selection:
        """The retention rule of the class docstring, step by step."""
        lo, hi, cum = view.floor, view.complete, view.cum
        cap = self.max_messages
        step = _step(room, ratio)
        start = GroupFits(view, hi).start(room, cap, lo)
        cut = _turn_anchor(view, lo, hi, start, step)
        if cut >= 0 and (protected < 0 or protected >= cut):
            return _tail(view, cut, hi)
        if protected < 0:  # no user turn to keep: anchor on any group
            cut = _group_anchor(view, lo, lo, hi, start, step)
            return _tail(view, start if cut < 0 else cut, hi)
        # Keep the latest user turn, then an anchored tail after it.
        first = max(lo, protected + 1)
        p_tokens = cum[protected + 1] - cum[protected]
        if cap is not None:
            cap = max(cap - (view.group_end(protected) - view.group_start[protected]), 0)
        start = GroupFits(view, hi).start(room - p_tokens, cap, first)
        cut = _group_anchor(view, lo, first, hi, start, step)
        if cut < 0:
            cut = start
        if cut == protected + 1:
            return _tail(view, protected, hi)
        starts, stops = [protected], [protected + 1]
        if cut < hi:
            starts.append(cut)
            stops.append(hi)
        return Selection(starts, stops, p_tokens + cum[hi] - cum[cut])


class GroupFits:
    """The fit question (:class:`~context_manager.budget.fit.Fits`) asked of the ledger's prefix
    sums: groups up to ``hi``, a bisection each for tokens and for messages."""

    __slots__ = ("hi", "view")

    def __init__(self, view: LedgerView, hi: int) -> None:
        self.view = view
        self.hi = hi

    def start(self, room: int, cap: int | None, lo: int) -> int:
        view, hi = self.view, self.hi
        start = view.start_fitting(room, lo, hi)
        if cap is not None:
            start = max(start, view.start_within_messages(cap, lo, hi))
        return start


def _tail(view: LedgerView, start: int, hi: int) -> Selection:
    spans = ([start], [hi]) if start < hi else ([], [])
    return Selection(*spans, view.cum[hi] - view.cum[start])


def _check_ratio(ratio: float | None) -> float | None:
    if ratio is None:
        return None
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio < 1:
        raise ConfigurationError(
            f"retention_ratio must be a number strictly between 0 and 1, got {short_repr(ratio)}"
        )
    return float(ratio)


class FIFO(SlidingWindow):
    """Destructive: evicts the oldest groups on add so the history itself stays in budget.

    With ``retention_ratio`` an eviction goes down to about ``r`` x room at once, at a user turn
    (the same anchors as :class:`SlidingWindow`, on a grid based at the oldest group held), so
    the held history, which is what is sent, keeps its prefix for many adds. Unlike the sliding
    window this is stateful: it depends on when earlier evictions happened.
    """

    name = "fifo"

    def evict(self, view: LedgerView, room: int) -> int:
        lo, hi, cum = view.floor, len(view.group_start), view.cum
        p = view.protected
        if p >= 0 and view.group_pinned[p]:
            p = -1
        p_tokens = cum[p + 1] - cum[p] if p >= 0 else 0
        below = p_tokens if 0 <= p < lo else 0  # the latest user turn, kept below the floor
        over = cum[hi] - cum[lo] + below - room
        if over <= 0 or room - p_tokens < 0:
            return lo  # fits already, or cannot fit whatever we evict
        start = view.start_fitting(room - below, lo, hi)  # less a latest turn kept below lo
        if lo <= p < start:
            start = view.start_fitting(room - p_tokens, start, hi)
        elif self.retention_ratio is not None:  # evict to about r x room, at a user turn
            anchor = _turn_anchor(view, lo, hi, start, _step(room, self.retention_ratio))
            start = max(start, anchor)
        last = hi - 1
        if view.open:  # never evict a group awaiting results
            start = min(start, last)
            last -= 1
        if lo <= last < start and view.has_results(last):
            # The newest exchange alone is too big: keep it (the view cuts its results to fit)
            # rather than lose the result the model is waiting for.
            start = last
        return start if start > lo else lo


class Priority(Strategy):
    """Drops the lowest-priority groups first (oldest first among equals)."""

    name = "priority"

    def select(self, view: LedgerView, room: int, protected: int) -> Selection:
        lo, hi = view.floor, view.complete
        total = view.cum[hi] - view.cum[lo]
        p_tokens = 0
        if protected >= 0:
            p_tokens = view.cum[protected + 1] - view.cum[protected]
            if protected < lo:
                total += p_tokens
        if total <= room:  # everything fits: one run, no per-group work
            starts, stops = ([lo], [hi]) if lo < hi else ([], [])
            if 0 <= protected < lo:
                starts.insert(0, protected)
                stops.insert(0, protected + 1)
            return Selection(starts, stops, total)
        need = total - room
        kept: Slices = []
        dropped: Slices = []
        dropped_tokens = 0
        cut_at: tuple[int, int] | None = None  # (priority, first kept group) of the last cut
        spare = -1
        levels = view.levels  # filed up to date on read: read it once
        for priority in sorted(levels):
            level = levels[priority]
            a, b = level.span(lo, hi)
            if a == b:
                continue
            if need <= 0:
                kept.append((level.groups, a, b))
                continue
            cum = level.cum
            p_pos = bisect_left(level.groups, protected, a, b) if protected >= lo else b
            has_p = p_pos < b and level.groups[p_pos] == protected
            if cum[b] - cum[a] - (p_tokens if has_p else 0) < need:
                cut = b  # the whole level goes (but the latest user turn)
            else:
                cut = bisect_left(cum, cum[a] + need, a, b + 1)
                if has_p and cut > p_pos:  # the latest user turn is never dropped: skip it
                    cut = bisect_left(cum, cum[a] + need + p_tokens, a, b + 1)
            spared = has_p and cut > p_pos
            gone = cum[cut] - cum[a] - (p_tokens if spared else 0)
            need -= gone
            dropped_tokens += gone
            cut_at = (priority, level.groups[cut] if cut < b else hi)
            if spared:
                spare = protected
                dropped += [(level.groups, a, p_pos), (level.groups, p_pos + 1, cut)]
                kept.append((level.groups, p_pos, p_pos + 1))
            else:
                dropped.append((level.groups, a, cut))
            kept.append((level.groups, cut, b))
        below = protected if 0 <= protected < lo else -1
        tokens = total - dropped_tokens
        few = min(sum(b - a for _, a, b in dropped), sum(b - a for _, a, b in kept))
        if cut_at is not None and is_scattered(few, view.message_count - view.group_start[lo]):
            # Thousands of runs: hold the rule, and let the ledger gather with a byte mask.
            rule = Scattered(*cut_at, lo, hi, spare, below, kept, dropped)
            return Selection.rule(tokens, rule)
        return Selection(*group_runs(kept, dropped, lo, hi, below), tokens)


STRATEGIES: dict[str, type[Strategy]] = {cls.name: cls for cls in (FIFO, SlidingWindow, Priority)}
_ALIASES = {"sliding": "sliding_window", "window": "sliding_window", "last": "sliding_window"}


def get_strategy(
    spec: str | Strategy,
    *,
    max_messages: int | None = None,
    retention_ratio: float | None = None,
) -> Strategy:
    """Resolve a strategy name (``fifo``, ``sliding_window``, ``priority``) or pass one through.

    ``retention_ratio`` applies to ``sliding_window`` and ``fifo`` (see :class:`SlidingWindow`).
    """
    if isinstance(spec, Strategy):
        if retention_ratio is not None:
            raise ConfigurationError(
                "retention_ratio goes to the strategy's constructor when you pass a Strategy "
                "instance, e.g. SlidingWindow(retention_ratio=0.7)"
            )
        return spec
    if not isinstance(spec, str):
        raise ConfigurationError(
            f"strategy must be a name ({', '.join(STRATEGIES)}) or a Strategy instance, "
            f"got {type(spec).__name__}"
        )
    name = _ALIASES.get(spec, spec)
    cls = STRATEGIES.get(name)
    if cls is None:
        raise ConfigurationError(
            f"unknown strategy {spec!r}: use one of {', '.join(STRATEGIES)} or a Strategy instance"
        )
    if issubclass(cls, SlidingWindow):
        return cls(max_messages=max_messages, retention_ratio=retention_ratio)
    if max_messages is not None:
        raise ConfigurationError("max_messages applies to the fifo and sliding_window strategies")
    if retention_ratio is not None:
        raise ConfigurationError(
            "retention_ratio applies to the fifo and sliding_window strategies"
        )
    return cls()
