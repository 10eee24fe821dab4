"""Property tests: the fast manager equals the naive oracle and keeps every invariant.

Invariants (ARCHITECTURE.md): pinned kept; tool groups atomic; latest user message kept or a
typed overflow error; order preserved and input untouched; never over budget; running total
equals a full recount.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_manager import ContextOverflowError, MessageContextManager

from .budget.scattering import scattered_everywhere
from .conversations import conversation
from .naive import NaiveCounter, build_groups, naive_fifo_held, naive_read, naive_select

COUNTER = NaiveCounter()  # the oracle's own estimate: no library code
EXAMPLES = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def positions(kept: list[Any], messages: list[Any]) -> list[int]:
    ids = {id(m): i for i, m in enumerate(messages)}
    return [ids[id(m)] for m in kept]


def assert_protocol_valid(kept: list[Any]) -> None:
    """No result without its call before it; no call without all its results."""
    issued: set[str] = set()
    answered: set[str] = set()
    for m in kept:
        rec = naive_read(m)
        for rid in rec.result_ids:
            assert rid in issued, f"orphan result {rid}"
            answered.add(rid)
        issued |= set(rec.call_ids)
    assert issued == answered, f"calls without results: {issued - answered}"


def check_invariants(
    manager: MessageContextManager, messages: list[Any], kept: list[Any], pinned: set[int]
) -> None:
    idx = positions(kept, messages)
    assert idx == sorted(idx), "order changed"
    assert_protocol_valid(kept)
    assert COUNTER.count_prompt(kept) <= manager.budget_tokens
    assert manager.context_tokens() == COUNTER.count_prompt(kept)
    held = manager.messages + ([] if manager.system_prompt is None else [None])
    assert manager.token_count == sum(COUNTER.count(m) for m in manager.messages) + (
        COUNTER.count(messages[0]) if manager.system_prompt is not None else 0
    )
    assert len(held) == len(manager)
    for p in pinned:
        if any(m is messages[p] for m in manager.messages):
            assert p in idx or _in_open_group(manager, messages[p]), "pinned message dropped"
    users = [
        i
        for i, m in enumerate(messages)
        if naive_read(m).is_user_turn and any(h is m for h in manager.messages)
    ]
    if users and not _in_open_group(manager, messages[users[-1]]):
        assert users[-1] in idx, "latest user message dropped"


def _in_open_group(manager: MessageContextManager, message: Any) -> bool:
    """Whether ``message`` belongs to the newest held group while it still awaits tool results
    (such a group is never sent), grouped by the oracle from what the manager holds."""
    held = manager.messages
    groups = build_groups(held, COUNTER, set(), [0] * len(held))
    if not groups or not groups[-1].pending:
        return False
    return any(held[i] is message for i in groups[-1].indices)


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[Any], set[int], list[int], int, int | None]:
    messages = draw(conversation())
    n = len(messages)
    pinned = set(draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=3))) if n else set()
    priorities = [draw(st.integers(0, 3)) for _ in range(n)]
    total = sum(COUNTER.count(m) for m in messages) + 3
    budget = draw(st.integers(1, total + 20))
    cap = draw(st.none() | st.integers(0, n + 1))
    return messages, pinned, priorities, budget, cap


@pytest.mark.parametrize("strategy", ["sliding_window", "priority", "priority-scattered"])
@EXAMPLES
@given(data=scenario())
def test_matches_naive_oracle(strategy: str, data: Any) -> None:
    """``priority-scattered``: every priority cut goes through the byte-mask gather, which
    otherwise only starts at hundreds of scattered runs."""
    if strategy == "priority-scattered":
        with scattered_everywhere():
            _check_oracle("priority", data)
    else:
        _check_oracle(strategy, data)


def _check_oracle(strategy: str, data: Any) -> None:
    messages, pinned, priorities, budget, cap = data
    if strategy == "priority":
        cap = None
    before = copy.deepcopy(messages)
    manager = MessageContextManager(
        budget, reserve_tokens=0, strategy=strategy, max_messages=cap, counter="chars"
    )
    for i, m in enumerate(messages):
        manager.add(m, priority=priorities[i], pinned=i in pinned)
        if strategy == "priority" and i % 2:
            # A read files the groups so far in their priority levels; a later message may
            # still join (and raise the priority of) the newest group.
            with contextlib.suppress(ContextOverflowError):
                manager.get_context()
    expected = naive_select(
        messages,
        counter=COUNTER,
        budget=budget,
        strategy=strategy,
        pinned=pinned,
        priorities=priorities,
        max_messages=cap,
    )
    if expected == "overflow":
        with pytest.raises(ContextOverflowError) as info:
            manager.get_context()
        assert info.value.shortfall > 0
        return
    kept = manager.get_context()
    assert positions(kept, messages) == expected
    check_invariants(manager, messages, kept, pinned)
    assert messages == before, "input mutated"


@EXAMPLES
@given(data=scenario())
def test_fifo_matches_naive_replay(data: Any) -> None:
    messages, pinned, _, budget, _ = data
    evicted: list[Any] = []
    manager = MessageContextManager(
        budget, reserve_tokens=0, strategy="fifo", on_evict=evicted.extend, counter="chars"
    )
    expected = naive_fifo_held(messages, pinned, budget)
    for i, m in enumerate(messages):
        manager.add(m, pinned=i in pinned)
        held = ([messages[0]] if manager.system_prompt is not None else []) + manager.messages
        assert positions(held, messages) == expected[i]
    held_ids = {id(m) for m in manager.messages}
    assert all(id(m) not in held_ids for m in evicted)
    assert len(evicted) + len(manager) == len(messages)
    held = ([messages[0]] if manager.system_prompt is not None else []) + manager.messages
    oracle = naive_select(
        held,
        counter=COUNTER,
        budget=budget,
        strategy="sliding_window",
        pinned={i for i, m in enumerate(held) if any(m is messages[p] for p in pinned)},
    )
    if oracle == "overflow":
        with pytest.raises(ContextOverflowError):
            manager.get_context()
        return
    kept = manager.get_context()
    assert positions(kept, held) == oracle
    check_invariants(manager, messages, kept, pinned)
