"""One contract, every strategy: the built-ins and a toy written only from the public API.

Like cachetools' one test mixin for every cache policy: :class:`StrategyContract` states what any
:class:`~context_manager.Strategy` must do (keep the latest user turn, stay within the room,
return sorted runs inside the sendable groups, never change the ledger, evict only forward), and
each subclass names a strategy to run it against.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any, ClassVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_manager import (
    FIFO,
    ContextOverflowError,
    MessageContextManager,
    Priority,
    SlidingWindow,
    Strategy,
)
from context_manager.budget import LedgerView, Selection

from ..conversations import conversation
from ..naive import NaiveCounter, naive_read
from .scattering import scattered_everywhere


class OldestFirst(Strategy):
    """Toy policy from the public API only: the latest user turn, then the *oldest* groups that
    fit (the opposite of a sliding window), skipping any group too big for what is left."""

    name = "oldest_first"

    def select(self, view: LedgerView, room: int, protected: int) -> Selection:
        kept: list[int] = []
        left = room
        if protected >= 0:
            kept.append(protected)
            left -= view.trimmable(protected, protected + 1)
        for g in range(view.floor, view.complete):
            cost = view.trimmable(g, g + 1)
            if g != protected and cost <= left:
                kept.append(g)
                left -= cost
        kept.sort()
        return Selection(kept, [g + 1 for g in kept], room - left)


class _Recording(Strategy):
    """Wraps a strategy, recording what it saw and decided, and that the view did not change."""

    def __init__(self, inner: Strategy) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[tuple[int, int, int, int, Selection]] = []
        self.evictions: list[tuple[int, int, int]] = []

    def select(self, view: LedgerView, room: int, protected: int) -> Selection:
        before = list(view.cum)
        selection = self.inner.select(view, room, protected)
        assert list(view.cum) == before, "select changed the ledger"
        self.calls.append((view.floor, view.complete, room, protected, selection))
        return selection

    def evict(self, view: LedgerView, room: int) -> int:
        before = list(view.cum)
        floor = self.inner.evict(view, room)
        assert list(view.cum) == before, "evict changed the ledger"
        self.evictions.append((view.floor, view.group_count, floor))
        return floor


# One mixin method runs under several subclasses (the cachetools pattern): hypothesis sees
# "differing executors", which is exactly the intent here.
EXAMPLES = settings(
    max_examples=150,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.differing_executors,
    ],
)


class StrategyContract:
    """Mixin: subclasses set ``make`` to build the strategy under test."""

    make: ClassVar[Any]

    @EXAMPLES
    @given(messages=conversation(), budget=st.integers(1, 400), pins=st.sets(st.integers(0, 60)))
    def test_contract(self, messages: list[dict[str, Any]], budget: int, pins: set[int]) -> None:
        strategy = _Recording(self.make())
        manager = MessageContextManager(
            budget, reserve_tokens=0, strategy=strategy, counter="chars"
        )
        for i, message in enumerate(messages):
            manager.add(message, pinned=i in pins)
        try:
            context = manager.get_context()
        except ContextOverflowError as exc:
            assert exc.shortfall > 0
            return
        floor, complete, room, protected, selection = strategy.calls[-1]
        runs = list(zip(selection.starts, selection.stops, strict=True))
        # runs lie in the held groups; FIFO may keep the latest user turn below its floor
        inside = [(a, b) for a, b in runs if (a, b) != (protected, protected + 1)]
        assert all(floor <= a < b <= complete for a, b in inside), "runs outside the held groups"
        assert all(b <= c for (_, b), (c, _) in pairwise(runs)), "not sorted and disjoint"
        if protected >= 0:
            assert any(a <= protected < b for a, b in runs), "latest user turn dropped"
        assert selection.trimmable_tokens <= room
        counter = NaiveCounter()
        assert counter.count_prompt(context) <= budget  # an independent recount
        issued: set[str] = set()
        for message in context:  # tool calls travel with all their results
            read = naive_read(message)
            assert set(read.result_ids) <= issued
            issued |= set(read.call_ids)
        assert issued == {r for m in context for r in naive_read(m).result_ids}
        for old_floor, groups, new_floor in strategy.evictions:
            assert old_floor <= new_floor <= groups, "eviction moved backwards or past the end"
        where = {id(m): i for i, m in enumerate(messages)}
        # The caller's objects in order; a result cut to fit (the newest exchange) is a copy.
        positions = [where[id(m)] for m in context if id(m) in where]
        assert positions == sorted(positions)
        assert len(positions) >= len(context) - sum(bool(naive_read(m).result_ids) for m in context)


class TestSlidingWindow(StrategyContract):
    make = SlidingWindow


class TestSlidingWindowRetention(StrategyContract):
    make = staticmethod(lambda: SlidingWindow(retention_ratio=0.7))


class TestFIFO(StrategyContract):
    make = FIFO


class TestPriority(StrategyContract):
    make = Priority


class TestPriorityScattered(StrategyContract):
    """Every cut held as its rule: the runs a wrapper reads are built from it on demand."""

    make = Priority

    def test_contract(self, *args: Any, **kwargs: Any) -> None:
        with scattered_everywhere():
            super().test_contract(*args, **kwargs)


class TestToyStrategy(StrategyContract):
    make = OldestFirst
