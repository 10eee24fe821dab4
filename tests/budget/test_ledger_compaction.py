"""Compacting a long history: what is held afterwards, and every decision made on it.

``apply_compaction`` drops the history before its cut (pinned messages and the latest user turn
stay); once thousands of messages are gone, the manager also reclaims the storage they took.
After that, what ``history()`` lists, what each strategy sends (sliding window, priority, the
retention rule) and what later adds change must be exactly what the rules say of the messages
still held. The expected held set is derived here from the documented rule by plain loops over
the naive grouping (``tests/naive.py``), and the contexts from the naive oracles, which share no
code with the library.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import ContextOverflowError, MessageContextManager, SlidingWindow

from ..conversations import conversation
from ..naive import NaiveCounter, build_groups, naive_read, naive_select
from ..test_properties import positions
from .naive_retention import naive_retained

COUNTER = NaiveCounter()
#: Plain turns added before the conversation drawn: a cut among their last ones drops over 4,096
#: groups, enough for the manager to reclaim their storage.
PREFIX = [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "w" * (i % 13)}
    for i in range(4_300)
]


def naive_held_after_compaction(
    messages: list[Any], pinned: set[int], split: int, cut: int
) -> list[int]:
    """Indices held after adding ``messages[:split]``, compacting before message ``cut`` and
    adding the rest. The cut moves back to the start of its group and never past a group still
    awaiting results; pinned groups before it stay, and so does the latest user turn's group until
    a newer user turn arrives."""
    groups = build_groups(messages[:split], COUNTER, pinned, [0] * split)
    where = next((g for g, group in enumerate(groups) if group.indices[-1] >= cut), len(groups))
    complete = len(groups) - (1 if groups and groups[-1].pending else 0)
    floor = min(where, complete)
    users = [i for i in range(split) if naive_read(messages[i]).is_user_turn]
    turn = next((g for g, group in enumerate(groups) if users and users[-1] in group.indices), None)
    kept = {g for g in range(floor) if groups[g].pinned}
    newer_turn = any(naive_read(m).is_user_turn for m in messages[split:])
    if turn is not None and turn < floor and not groups[turn].pinned and not newer_turn:
        kept.add(turn)
    held = [i for g in sorted(kept) for i in groups[g].indices]
    held += [i for group in groups[floor:] for i in group.indices]
    return held + list(range(split, len(messages)))


@settings(max_examples=40, deadline=None)
@given(
    tail=conversation(max_turns=25),
    strategy=st.sampled_from(["sliding_window", "priority", "retention"]),
    data=st.data(),
)
def test_decisions_after_compacting_a_long_history_match_the_oracle(
    tail: list[Any], strategy: str, data: Any
) -> None:
    tail = [m for m in tail if m["role"] != "system"]
    messages = PREFIX + tail
    n = len(messages)
    split = data.draw(st.integers(len(PREFIX), n), label="added before compacting")
    lowest = len(PREFIX) - 150
    if data.draw(st.booleans(), label="cut after the latest user turn"):
        lowest = 1 + max(i for i in range(split) if naive_read(messages[i]).is_user_turn)
    cut = data.draw(st.integers(min(lowest, split), split), label="first kept index")
    reads = data.draw(st.sets(st.integers(len(PREFIX) - 10, n), max_size=6), label="reads")
    pinned = set(data.draw(st.lists(st.integers(len(PREFIX) - 300, n - 1), max_size=4)))
    pinned |= set(data.draw(st.lists(st.integers(0, n - 1), max_size=2)))
    rng = random.Random(data.draw(st.integers(0, 2**16), label="seed"))
    priorities = [i % 3 for i in range(len(PREFIX))] + [rng.randint(0, 3) for _ in tail]
    budget = data.draw(st.integers(40, 1_500), label="budget")
    ratio = 0.5
    chosen: Any = SlidingWindow(retention_ratio=ratio) if strategy == "retention" else strategy
    manager = MessageContextManager(budget, reserve_tokens=0, strategy=chosen, counter="chars")

    def add(i: int) -> None:
        manager.add(messages[i], priority=priorities[i], pinned=i in pinned)
        if i in reads:  # a request between adds (decisions made before the compaction too)
            with contextlib.suppress(ContextOverflowError):
                manager.get_context()

    for i in range(split):
        add(i)
    summary = {"role": "user", "content": "summary of the earlier turns"}
    manager.apply_compaction(summary, cut)
    for i in range(split, n):
        add(i)

    held = naive_held_after_compaction(messages, pinned, split, cut)
    assert [item.index for item in manager.history()] == held
    assert [item.message for item in manager.history()] == [messages[i] for i in held]
    assert manager.token_count == COUNTER.count(summary) + sum(
        COUNTER.count(messages[i]) for i in held
    )

    sent = [summary, *(messages[i] for i in held)]  # the summary goes first, always
    sent_pins = {0} | {k + 1 for k, i in enumerate(held) if i in pinned}
    sent_priorities = [0, *(priorities[i] for i in held)]
    if strategy == "retention":
        answer = naive_retained(sent, counter=COUNTER, budget=budget, ratio=ratio, pinned=sent_pins)
        expected = answer if answer == "overflow" else answer[0]
    else:
        expected = naive_select(
            sent,
            counter=COUNTER,
            budget=budget,
            strategy=strategy,
            pinned=sent_pins,
            priorities=sent_priorities,
        )
    if expected == "overflow":
        try:
            manager.get_context()
        except ContextOverflowError:
            return
        raise AssertionError("the oracle overflows, the manager does not")
    assert positions(manager.get_context(), sent) == expected


def test_storage_of_what_compaction_dropped_is_released() -> None:
    """After compacting away 20,000 messages of 1 KB, the manager keeps a fraction of them in
    memory (their records, counts and groups go too, not only the caller's objects)."""
    import gc
    import tracemalloc

    manager = MessageContextManager(10**9, counter="chars")
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(20_000):
            manager.add({"role": "user" if i % 2 == 0 else "assistant", "content": "x" * 1_000})
        manager.apply_compaction({"role": "user", "content": "summary"}, 19_990)
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert [item.index for item in manager.history()] == list(range(19_990, 20_000))
    assert retained < 5_000_000, f"{retained:,} bytes retained of about 20 MB added"
