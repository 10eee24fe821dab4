"""FIFO cuts deferred over runs of plain adds (``MessageContextManager._settle``).

An add to a full FIFO manager that nobody watches leaves its cut to whatever reads the history
next. The oracles: the naive add-by-add replay of ``test_properties`` (no library code), read
at random points through every reader; FIFO asked on every add (a subclass whose ``evict`` only
calls the parent's: never deferred) across changes of the cap and watchers arriving mid-run;
and the bounds the deferral promises (held tokens, released messages).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import ContextOverflowError, InvalidMessageError, MessageContextManager
from context_manager.budget import FIFO, _ledger, calibration

from ..conversations import conversation
from ..test_properties import COUNTER, EXAMPLES, naive_fifo_held, positions, scenario
from .test_evict_shortcut import CAP_CHANGES, AlwaysAskedFIFO, change_cap

READERS = ["messages", "len", "token_count", "history", "stats", "context"]


@EXAMPLES
@given(data=scenario(), reads=st.lists(st.sampled_from(READERS), min_size=1, max_size=200))
def test_deferred_cuts_match_the_naive_replay(data: Any, reads: list[str]) -> None:
    """``reads[i]`` reads after add ``i`` (past its end: nothing), so runs of unread adds
    of every length meet every reader."""
    with mock.patch.object(_ledger, "_COMPACT_MIN", 4):  # compactions between reads too
        _check_reads(data, reads)


def _check_reads(data: Any, reads: list[str]) -> None:
    messages, pinned, _, budget, _ = data
    manager = MessageContextManager(budget, reserve_tokens=0, strategy="fifo")
    expected = naive_fifo_held(messages, pinned, budget)
    for i, message in enumerate(messages):
        manager.add(message, pinned=i in pinned)
        reader = reads[i] if i < len(reads) else None
        if reader is None or (reader == "context" and i % 3):
            continue  # most adds: nothing reads
        want = expected[i]
        if reader == "messages":
            head = [messages[0]] if manager.system_prompt is not None else []
            assert positions(head + manager.messages, messages) == want
        elif reader == "len":
            assert len(manager) == len(want)
        elif reader == "token_count":
            assert manager.token_count == sum(COUNTER.count(messages[j]) for j in want)
        elif reader == "history":
            head = [messages[0]] if manager.system_prompt is not None else []
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


# Changes between adds that move the cap or add a watcher: a deferred cut is taken with the
# room of its adds, and a watcher hears of the evictions of the adds after it arrives only.
_OPS = st.lists(
    st.one_of(
        *CAP_CHANGES,
        st.tuples(st.just("listen"), st.booleans()),  # on_evict, or subscribe
        st.tuples(st.just("read"), st.just(0)),
    ),
    max_size=8,
)


def replay(
    strategy: FIFO, messages: list[Any], ops: list[tuple[str, Any]], at: list[int], budget: int
) -> list[Any]:
    manager = MessageContextManager(budget, reserve_tokens=0, strategy=strategy, calibrate=True)
    told: list[Any] = []
    pending = sorted(zip(at, ops, strict=False), key=lambda pair: pair[0])
    trace: list[Any] = []
    for i, message in enumerate(messages):
        while pending and pending[0][0] <= i:
            _, (op, value) = pending.pop(0)
            try:
                if op == "listen" and value:
                    manager.on_evict = lambda gone: told.append([id(m) for m in gone])
                elif op == "listen":
                    manager.subscribe(lambda event: told.append(type(event).__name__))
                elif op == "read":
                    trace.append([id(m) for m in manager.messages])
                else:
                    change_cap(manager, op, value)
            except ContextOverflowError as exc:
                trace.append((op, "overflow", exc.required))
        try:
            manager.add(message, pinned=i % 7 == 3)
        except ContextOverflowError as exc:
            trace.append(("overflow", exc.required))
        except InvalidMessageError:  # a clear between a call and its result
            trace.append("invalid")
    trace.append(list(told))
    trace.append([id(m) for m in manager.messages])
    return trace


@settings(max_examples=150, deadline=None)
@given(
    messages=conversation(max_turns=30),
    budget=st.integers(60, 3_000),
    ops=_OPS,
    at=st.lists(st.integers(0, 80), max_size=8),
)
def test_deferred_cuts_match_cuts_add_by_add_across_changes(
    messages: list[Any], budget: int, ops: list[tuple[str, Any]], at: list[int]
) -> None:
    with (
        mock.patch.object(calibration, "MIN_COUNTED", 0),  # learn from small contexts too
        mock.patch.object(_ledger, "_COMPACT_MIN", 4),  # and compact the ledger often
    ):
        deferred = replay(FIFO(), messages, ops, at, budget)
        asked = replay(AlwaysAskedFIFO(), messages, ops, at, budget)
    assert deferred == asked


def plain(n: int) -> dict[str, str]:
    return {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} " * 10}


def test_adds_leave_the_cut_to_the_next_read_and_hold_at_most_twice_the_cap() -> None:
    manager = MessageContextManager(400, reserve_tokens=0, strategy="fifo")
    cap = manager._cap
    floors, totals = [], []
    for n in range(300):
        manager.add(plain(n))
        floors.append(manager._held.floor)
        totals.append(manager._held.total)
    assert 1.5 * cap < max(totals) <= 2 * cap  # the bound is reached, never passed
    assert sum(a != b for a, b in itertools.pairwise(floors)) < 30  # cuts in bulk
    assert manager.token_count <= cap  # the read took the cut
    eager = MessageContextManager(400, reserve_tokens=0, strategy=AlwaysAskedFIFO())
    eager.extend(plain(n) for n in range(300))
    assert manager.messages == eager.messages


def test_a_read_releases_what_deferred_cuts_dropped() -> None:
    class Tracked(dict[str, str]):
        pass

    manager = MessageContextManager(300, reserve_tokens=0, strategy="fifo")
    watched = []
    for n in range(200):
        message = Tracked(plain(n))
        watched.append(weakref.ref(message))
        manager.add(message)
        del message
    alive = sum(ref() is not None for ref in watched)
    assert alive < 2 * len(manager)  # deferred: never more than the 2x bound allows
    held = len(manager)  # a read: the cut is taken and the dropped messages released
    assert sum(ref() is not None for ref in watched) == held < alive


def test_readers_in_other_threads_see_the_cuts_taken() -> None:
    """Readers take deferred cuts under the manager's lock, so none races an add."""
    manager = MessageContextManager(600, reserve_tokens=0, strategy="fifo")
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                assert manager.token_count <= 2 * manager._cap
                len(manager)
                manager.get_context()
        except BaseException as exc:  # reported below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    for n in range(5_000):
        manager.add(plain(n))
    done.set()
    for thread in readers:
        thread.join()
    assert not errors
    eager = MessageContextManager(600, reserve_tokens=0, strategy=AlwaysAskedFIFO())
    eager.extend(plain(n) for n in range(5_000))
    assert manager.messages == eager.messages and len(manager) == len(eager)


def test_a_run_ends_with_its_own_cut_before_an_add_that_cannot_wait() -> None:
    """The cut due is taken on the groups before the add that ends the run: a user turn over
    the room alone (FIFO evicts nothing for it), or a reply that pushes the latest user turn
    out of the room (FIFO keeps that turn below the floor)."""
    oversized = {"role": "user", "content": "big " * 500}
    crossing = {"role": "assistant", "content": "big " * 370}
    for last in (oversized, crossing):
        deferred = MessageContextManager(400, reserve_tokens=0, strategy="fifo")
        eager = MessageContextManager(400, reserve_tokens=0, strategy=AlwaysAskedFIFO())
        for manager in (deferred, eager):
            for n in range(60):
                manager.add(plain(n), pinned=n == 0)
            manager.add(last)
        assert deferred._cut is not None and not deferred._cut.due  # the run ended
        assert deferred.messages == eager.messages


def test_a_watcher_hears_of_each_eviction_from_the_add_that_makes_it() -> None:
    """Nobody hears of the cuts made before anyone listened; from then on, adds cut at once."""
    for listen in ("on_evict", "subscribe"):
        heard: dict[str, list[Any]] = {"deferred": [], "eager": []}
        for name, strategy in (("deferred", FIFO()), ("eager", AlwaysAskedFIFO())):
            manager = MessageContextManager(400, reserve_tokens=0, strategy=strategy)
            manager.extend(plain(n) for n in range(60))
            told = heard[name]
            if listen == "on_evict":
                manager.on_evict = lambda gone, told=told: told.append([m["content"] for m in gone])
            else:
                manager.subscribe(lambda event, told=told: told.append(repr(event)))
            for n in range(60, 80):
                manager.add(plain(n))
                told.append(len(manager._held.originals) - manager._held.originals.count(None))
        assert heard["deferred"] == heard["eager"] and len(heard["eager"]) > 30


def test_a_new_cap_or_a_compaction_clears_the_limit_of_the_cuts_to_come() -> None:
    """The limit is in tokens of the room and positions of the time: a new cap (here a system
    prompt, then a usage report) or a compaction of the ledger starts it over."""
    traces: list[list[Any]] = []
    for strategy in (FIFO(), AlwaysAskedFIFO()):
        manager = MessageContextManager(400, reserve_tokens=0, strategy=strategy, calibrate=True)
        trace: list[Any] = []
        with mock.patch.object(_ledger, "_COMPACT_MIN", 8):
            for n in range(200):
                big = {"role": "assistant", "content": "big " * 250}  # pushes the turn out
                manager.add(big if n % 50 == 25 else plain(n))
                assert manager._held.total <= 2 * manager._cap  # what a cut may wait for
                if n == 40:
                    manager.set_system_prompt("s " * 300)
                if n == 80:
                    manager.record_usage(manager.context_tokens() * 2)
                if n % 3 == 0:  # a read: the cut, and now and then a compaction of the ledger
                    trace.append([m["content"] for m in manager.messages])
        traces.append(trace)
    assert traces[0] == traces[1]


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
        assert (
            len(collect) + len(manager._held.originals) - manager._held.originals.count(None)
            == n + 1
        )
    assert len(collect) + len(manager) == 100
