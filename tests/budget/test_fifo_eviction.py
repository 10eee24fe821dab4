"""FIFO eviction as a caller sees it: what is held after each add, who is told, and when.

The oracle is the naive add-by-add replay of ``tests/naive.py`` (no library code), read at
random points through every reader, across changes of what the history may take (a system
prompt, a usage report with calibration on, a summary, a clear). Long runs (tens of thousands
of adds, so that the storage of what was evicted is reclaimed many times over) are checked
against the same replay at every add.
"""

from __future__ import annotations

import math
import random
import threading
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import ContextOverflowError, MessageContextManager
from context_manager.budget import calibration
from context_manager.events import Evicted

from ..conversations import conversation
from ..naive import naive_fifo_held, naive_read
from ..test_properties import COUNTER, EXAMPLES, positions, scenario
from .test_scattered import history

READERS = ["messages", "len", "token_count", "history", "stats", "context"]


def plain(n: int) -> dict[str, str]:
    return {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} " * 10}


@EXAMPLES
@given(data=scenario(), reads=st.lists(st.sampled_from(READERS), min_size=1, max_size=200))
def test_fifo_holds_what_the_naive_replay_holds_through_every_reader(
    data: Any, reads: list[str]
) -> None:
    """``reads[i]`` reads after add ``i`` (past its end: nothing)."""
    _check_reads(data, reads)


def _check_reads(data: Any, reads: list[str]) -> None:
    messages, pinned, _, budget, _ = data
    manager = MessageContextManager(budget, reserve_tokens=0, strategy="fifo", counter="chars")
    expected = naive_fifo_held(messages, pinned, budget)
    for i, message in enumerate(messages):
        manager.add(message, pinned=i in pinned)
        reader = reads[i] if i < len(reads) else None
        if reader is None or (reader == "context" and i % 3):
            continue  # most adds: nothing reads
        want = expected[i]
        head = [messages[0]] if manager.system_prompt is not None else []
        if reader == "messages":
            assert positions(head + manager.messages, messages) == want
        elif reader == "len":
            assert len(manager) == len(want)
        elif reader == "token_count":
            assert manager.token_count == sum(COUNTER.count(messages[j]) for j in want)
        elif reader == "history":
            held = head + [item.message for item in manager.history()]
            assert positions(held, messages) == want
        elif reader == "stats":
            assert manager.stats().message_count == len(want)
        else:
            try:
                kept = manager.get_context()
            except ContextOverflowError:
                continue
            assert set(positions(kept, messages)) <= set(want)
    head = [messages[0]] if manager.system_prompt is not None else []
    assert positions(head + manager.messages, messages) == (expected[-1] if messages else [])


# Changes between adds to what the history may take.
CAP_CHANGES = st.one_of(
    st.tuples(st.just("system"), st.integers(0, 400)),  # a system prompt of that many chars
    st.tuples(st.just("usage"), st.sampled_from([75, 150, 250])),  # billed, % of our count
    st.tuples(st.just("summary"), st.integers(0, 400)),
    st.tuples(st.just("clear"), st.booleans()),  # keep_system_prompt
)


class Replay:
    """A FIFO manager given the changes, with what the oracle needs to know of them."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.manager = MessageContextManager(
            budget, reserve_tokens=0, strategy="fifo", calibrate=True, counter="chars"
        )
        self.system = self.summary = 0  # tokens sent besides the history

    def cap(self) -> int:
        """What the history may take now: the budget (divided by the learned correction, as
        ``budget/calibration.py`` states) less priming, system prompt and summary."""
        factor = self.manager.stats().calibration
        budget = self.budget  # 1.0 means nothing learned: the usage values below never give it
        if factor != 1.0:
            budget = math.floor(budget / (factor * (1 + calibration.MARGIN)))
        return budget - 3 - self.system - self.summary

    def change(self, op: str, value: Any) -> None:
        manager = self.manager
        if op == "system":
            prompt = {"role": "system", "content": "s" * value}
            manager.set_system_prompt(prompt)
            self.system = COUNTER.count(prompt)
        elif op == "usage":
            try:
                sent = manager.context_tokens()
            except ContextOverflowError:
                return  # the system prompt alone overflows: no request, so no usage to report
            manager.record_usage(max(1, sent * value // 100))
        elif op == "summary":
            held = manager.history()
            if held:  # keeps every held message: only the summary's tokens change the cap
                summary = {"role": "user", "content": "u" * value}
                manager.apply_compaction(summary, held[0].index)
                self.summary = COUNTER.count(summary)
        else:
            manager.clear(keep_system_prompt=value)
            self.summary = 0
            self.system = self.system if value else 0


@settings(max_examples=150, deadline=None)
@given(
    messages=conversation(max_turns=30),
    budget=st.integers(60, 3_000),
    ops=st.lists(CAP_CHANGES, max_size=6),
    at=st.lists(st.integers(0, 80), max_size=6),
    pins=st.sets(st.integers(0, 80), max_size=3),
)
def test_the_cap_follows_the_system_prompt_usage_summary_and_clear(
    messages: list[Any],
    budget: int,
    ops: list[tuple[str, Any]],
    at: list[int],
    pins: set[int],
) -> None:
    messages = [m for m in messages if m["role"] != "system"]  # system prompts come from ops
    with mock.patch.object(calibration, "MIN_COUNTED", 0):  # learn from small contexts too
        replay = Replay(budget)
        due = sorted(zip(at, ops, strict=False), key=lambda pair: pair[0])
        first, caps, held = 0, [], []  # since the last clear
        for i, message in enumerate(messages):
            while due and due[0][0] <= i:
                _, (op, value) = due.pop(0)
                if op == "clear" and naive_read(message).result_ids:
                    continue  # not between a call and its results
                replay.change(op, value)
                if op == "clear":
                    _check_segment(messages[first:i], pins, first, caps, held)
                    first, caps, held = i, [], []
            caps.append(replay.cap())
            replay.manager.add(message, pinned=i in pins)
            held.append(positions(replay.manager.messages, messages[first:]))
        _check_segment(messages[first:], pins, first, caps, held)


def _check_segment(
    segment: list[Any], pins: set[int], first: int, caps: list[int], held: list[list[int]]
) -> None:
    pinned = {p - first for p in pins if 0 <= p - first < len(segment)}
    assert held == naive_fifo_held(segment, pinned, 0, caps)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_long_fifo_run_holds_what_the_naive_replay_holds_at_every_add(seed: int) -> None:
    """Ten thousand turns (tool calls with parallel results, pins, a system prompt) through a
    small window: thousands of groups are evicted, so the storage they took is reclaimed several
    times over, and after every add what is held still equals the replay, as do the count, the
    per-role totals and what is sent."""
    messages = history(seed, 10_000)
    rng = random.Random(seed)
    pinned = set(rng.sample(range(1, len(messages)), 3))
    budget = 3_000
    manager = MessageContextManager(budget, reserve_tokens=0, strategy="fifo", counter="chars")
    expected = naive_fifo_held(messages, pinned, budget)
    where = {id(m): i for i, m in enumerate(messages)}
    evicted = 0
    for i, message in enumerate(messages):
        manager.add(message, pinned=i in pinned)
        want = expected[i]
        assert [0, *(where[id(m)] for m in manager.messages)] == want, f"after add {i}"
        if i % 97 and i < len(messages) - 50:
            continue
        assert len(manager) == len(want)
        assert manager.token_count == sum(COUNTER.count(messages[j]) for j in want)
        stats = manager.stats()
        roles = [messages[j]["role"] for j in want]
        assert stats.counts_by_role == {r: roles.count(r) for r in stats.counts_by_role}
        kept = manager.get_context()
        assert kept[0] is messages[0] and {where[id(m)] for m in kept} <= set(want)
        evicted = i + 1 - len(want)
    assert evicted > 3 * 4096  # the storage of evicted groups was reclaimed several times


def test_each_eviction_is_told_by_the_add_that_makes_it() -> None:
    """``on_evict`` and subscribers hear of every message evicted, from the add that evicts it:
    after each add, what was told and what is held add up to everything added."""
    told: list[Any] = []
    events: list[Evicted] = []
    manager = MessageContextManager(400, reserve_tokens=0, strategy="fifo", on_evict=told.extend)
    manager.subscribe(lambda event: events.append(event) if isinstance(event, Evicted) else None)
    for n in range(200):
        manager.add(plain(n), pinned=n == 0)
        assert len(told) + len(manager) == n + 1
        assert [m for event in events for m in event.messages] == told
    assert len(told) > 150 and manager.messages[0] == plain(0)  # the pin stays


def test_a_hook_that_is_falsy_is_still_told() -> None:
    """``on_evict`` is compared with None, not tested for truth: a callable collection that is
    empty at first (falsy) still hears of every eviction on the add that makes it."""

    class Collect(list[Any]):
        def __call__(self, gone: list[Any]) -> None:
            self.extend(gone)

    collect = Collect()
    manager = MessageContextManager(400, reserve_tokens=0, strategy="fifo", on_evict=collect)
    for n in range(100):
        manager.add(plain(n))
        assert len(collect) + len(manager) == n + 1
    assert len(collect) > 50


def test_a_full_fifo_manager_stays_within_its_budget_after_every_add() -> None:
    manager = MessageContextManager(400, reserve_tokens=0, strategy="fifo")
    for n in range(300):
        manager.add(plain(n))
        assert manager.token_count + manager.counter.prompt_overhead <= 400
        assert manager.get_context() == manager.messages  # everything held is sent


def test_readers_in_other_threads_see_every_add_in_order() -> None:
    """Adds and reads take the manager's lock: readers in other threads never see a half-made
    change, and the history ends as one thread alone would have left it."""
    manager = MessageContextManager(600, reserve_tokens=0, strategy="fifo")
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                assert manager.token_count + manager.counter.prompt_overhead <= 600
                with manager.locked():  # two reads, no add between them
                    assert len(manager.get_context()) == len(manager)
        except BaseException as exc:  # reported below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    for n in range(3_000):
        manager.add(plain(n))
    done.set()
    for thread in readers:
        thread.join()
    assert not errors
    alone = MessageContextManager(600, reserve_tokens=0, strategy="fifo")
    alone.extend(plain(n) for n in range(3_000))
    assert manager.messages == alone.messages
