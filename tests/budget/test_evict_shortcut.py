"""Adds skip a strategy's ``evict`` when it cannot evict anything (``budget.pruned``/manager).

A strategy that keeps the base ``Strategy.evict`` is never asked; FIFO is not asked while what it
may evict (everything held but the pinned groups) fits its room, the first check of its own
``evict`` (with pruning on, always asked: a placeholder can outweigh a short result, which this
test found). The oracle is FIFO itself, reached through a subclass whose ``evict`` only calls
the parent's: the shortcut never applies to it, so every add asks the strategy.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import (
    ContextOverflowError,
    InvalidMessageError,
    MessageContextManager,
    ToolResultPruning,
)
from context_manager.budget import FIFO, calibration
from context_manager.budget.view import LedgerView

from ..conversations import conversation


class AlwaysAskedFIFO(FIFO):
    def evict(self, view: LedgerView, room: int) -> int:
        return super().evict(view, room)


def replay(
    strategy: FIFO, messages: list[Any], pins: set[int], options: dict[str, Any]
) -> list[Any]:
    evicted: list[Any] = []
    manager = MessageContextManager(strategy=strategy, on_evict=evicted.extend, **options)
    trace: list[Any] = []
    for i, message in enumerate(messages):
        try:
            manager.add(message, pinned=i in pins, priority=i % 3)
        except ContextOverflowError as exc:
            trace.append(("overflow", exc.required))
            continue
        trace.append((len(evicted), [id(m) for m in manager.messages]))
    try:
        trace.append(manager.get_context())  # by value: pruning sends fresh copies
    except ContextOverflowError as exc:
        trace.append(("overflow", exc.required))
    return trace


@settings(max_examples=150, deadline=None)
@given(
    messages=conversation(max_turns=40),
    budget=st.integers(60, 3_000),
    ratio=st.none() | st.sampled_from([0.5, 0.7]),
    pins=st.sets(st.integers(0, 80), max_size=4),
    prune=st.booleans(),
)
def test_fifo_evicts_the_same_with_and_without_the_shortcut(
    messages: list[Any], budget: int, ratio: float | None, pins: set[int], prune: bool
) -> None:
    pruning = ToolResultPruning(soft_ratio=0.1, hard_ratio=0.2, min_prunable_chars=0)
    options: dict[str, Any] = {
        "max_tokens": budget,
        "reserve_tokens": 0,
        "pruning": pruning if prune else None,
    }
    fast = replay(FIFO(retention_ratio=ratio), messages, pins, options)
    asked = replay(AlwaysAskedFIFO(retention_ratio=ratio), messages, pins, options)
    assert fast == asked


def test_the_shortcut_is_taken_and_evicts_when_over() -> None:
    """Through the shortcut, a FIFO manager still evicts the moment what it holds is over."""
    manager = MessageContextManager(100, reserve_tokens=0, strategy="fifo")
    asked: list[int] = []
    original = FIFO.evict

    def counting(self: FIFO, view: LedgerView, room: int) -> int:
        asked.append(room)
        return original(self, view, room)

    FIFO.evict = counting  # type: ignore[method-assign]
    try:
        manager.add({"role": "user", "content": "x" * 40})
        assert asked == []  # fits: the strategy is not asked (and the shortcut saw FIFO.evict)
    finally:
        FIFO.evict = original  # type: ignore[method-assign]
    for i in range(20):
        manager.add({"role": "user" if i % 2 else "assistant", "content": "y" * 40})
    assert len(manager) < 21 and manager.token_count <= 100


# Changes to what held messages may take between adds: a new system prompt, a usage report
# (with calibration on), a summary, a clear. The shortcut reads a kept cap that each refreshes;
# the always-asked strategy reads it too (through the room), so the cap is also recomputed.
CAP_CHANGES = (
    st.tuples(st.just("system"), st.integers(0, 400)),
    st.tuples(st.just("usage"), st.integers(60, 250)),  # billed, % of our count
    st.tuples(st.just("summary"), st.integers(0, 400)),
    st.tuples(st.just("clear"), st.booleans()),
)
_OPS = st.lists(st.one_of(*CAP_CHANGES), max_size=6)


def change_cap(manager: MessageContextManager, op: str, value: Any) -> None:
    """Apply one of ``CAP_CHANGES``."""
    if op == "system":
        manager.set_system_prompt("s" * value)
    elif op == "usage":
        manager.record_usage(max(1, manager.context_tokens() * value // 100))
    elif op == "summary":
        held = manager.history()
        if held:
            manager.apply_compaction({"role": "user", "content": "u" * value}, held[-1].index)
    else:
        manager.clear(keep_system_prompt=value)


def fresh_cap(manager: MessageContextManager) -> int:
    """What held messages may take, recomputed from the parts (the manager keeps it)."""
    parts = [manager.system_message, manager.summary]
    taken = sum(manager.count_message(m) for m in parts if m is not None)
    budget = manager._calibration.budget(manager.budget_tokens)
    return budget - manager.counter.prompt_overhead - taken


def replay_with_changes(
    strategy: FIFO, messages: list[Any], ops: list[tuple[str, Any]], at: list[int], budget: int
) -> list[Any]:
    evicted: list[Any] = []
    manager = MessageContextManager(
        budget, reserve_tokens=0, strategy=strategy, calibrate=True, on_evict=evicted.extend
    )
    pending = sorted(zip(at, ops, strict=False), key=lambda pair: pair[0])
    trace: list[Any] = []
    for i, message in enumerate(messages):
        while pending and pending[0][0] <= i:
            _, (op, value) = pending.pop(0)
            try:
                change_cap(manager, op, value)
            except ContextOverflowError as exc:
                trace.append((op, "overflow", exc.required))
            trace.append((op, len(evicted), [id(m) for m in manager.messages]))
            assert manager._cap == fresh_cap(manager), f"stale after {op}"
        try:
            manager.add(message)
        except ContextOverflowError as exc:
            trace.append(("overflow", exc.required))
            continue
        except InvalidMessageError:  # a clear between a call and its result
            trace.append("invalid")
            continue
        trace.append((len(evicted), [id(m) for m in manager.messages]))
    return trace


@settings(max_examples=150, deadline=None)
@given(
    messages=conversation(max_turns=30),
    budget=st.integers(60, 3_000),
    ops=_OPS,
    at=st.lists(st.integers(0, 80), max_size=6),
)
def test_the_cap_follows_the_system_prompt_usage_summary_and_clear(
    messages: list[Any], budget: int, ops: list[tuple[str, Any]], at: list[int]
) -> None:
    with mock.patch.object(calibration, "MIN_COUNTED", 0):  # learn from small contexts too
        fast = replay_with_changes(FIFO(), messages, ops, at, budget)
        asked = replay_with_changes(AlwaysAskedFIFO(), messages, ops, at, budget)
    assert fast == asked
