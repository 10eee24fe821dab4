"""Per-role message and token totals (``stats()``, ``len()``) after adds, evictions, compactions.

The ledger tallies roles only when read: an add or a drop leaves the per-role dicts alone and a
read catches up. The oracle shares nothing with that bookkeeping: it keeps every message the
caller added (with the tokens ``add`` returned) and removes what ``on_evict`` reported, so the
held set is what the manager said it kept, and the totals are plain sums over it. A long FIFO run
crosses the reclamation of evicted storage (every few thousand evictions) many times.
"""

from __future__ import annotations

import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import ContextOverflowError, MessageContextManager
from context_manager.messages import normalize

from ..conversations import conversation

ROLES = ("system", "user", "assistant", "tool")


def totals(held: dict[int, tuple[Any, int]]) -> tuple[dict[str, int], dict[str, int]]:
    counts = dict.fromkeys(ROLES, 0)
    tokens = dict.fromkeys(ROLES, 0)
    for message, n in held.values():
        role = normalize(message).role
        role = "system" if role == "developer" else role
        counts[role] += 1
        tokens[role] += n
    return counts, tokens


@settings(max_examples=150, deadline=None)
@given(
    messages=conversation(max_turns=40),
    budget=st.integers(60, 3_000),
    strategy=st.sampled_from(["fifo", "sliding_window", "priority"]),
    pins=st.sets(st.integers(0, 80), max_size=4),
    reads=st.sets(st.integers(0, 80), max_size=12),
)
def test_stats_count_what_the_manager_holds(
    messages: list[Any],
    budget: int,
    strategy: str,
    pins: set[int],
    reads: set[int],
) -> None:
    held: dict[int, tuple[Any, int]] = {}

    def evicted(gone: list[Any]) -> None:
        for message in gone:
            del held[id(message)]

    manager = MessageContextManager(
        budget, reserve_tokens=0, strategy=strategy, counter="chars", on_evict=evicted
    )
    for i, given_message in enumerate(messages):
        message = dict(given_message)  # one object per add: the oracle keys on identity
        if i == 0 and message["role"] == "system":
            manager.add(message)  # the first message becomes the system prompt
            continue
        held[id(message)] = (message, 0)  # FIFO may evict it before add returns
        try:
            tokens = manager.add(message, pinned=i in pins, priority=i % 3)
        except ContextOverflowError:
            del held[id(message)]
            continue
        if id(message) in held:
            held[id(message)] = (message, tokens)
        if i in reads:
            assert_stats_match(manager, held)
    assert_stats_match(manager, held)


def assert_stats_match(manager: MessageContextManager, held: dict[int, tuple[Any, int]]) -> None:
    counts, role_tokens = totals(held)
    stats = manager.stats()
    system = 1 if manager.system_message is not None else 0
    counts["system"] += system
    if system:
        role_tokens["system"] += manager.count_message(manager.system_message)
    assert (stats.counts_by_role, stats.tokens_by_role) == (counts, role_tokens)
    assert len(manager) == len(held) + system


def test_stats_count_what_a_long_fifo_run_holds() -> None:
    """Tens of thousands of adds through a small FIFO window: the per-role totals stay right
    while the storage of evicted messages is reclaimed (every few thousand evictions)."""
    held: dict[int, tuple[Any, int]] = {}

    def evicted(gone: list[Any]) -> None:
        for message in gone:
            del held[id(message)]

    manager = MessageContextManager(
        600, reserve_tokens=0, strategy="fifo", counter="chars", on_evict=evicted
    )
    manager.add({"role": "system", "content": "be brief"})
    for n in range(14_000):
        call = f"c{n}"
        turn = [
            {"role": "user", "content": f"question {n} " * (1 + n % 5)},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call, "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": call, "content": "result " * (n % 7)},
            {"role": "assistant", "content": f"answer {n}"},
        ]
        for message in turn[: (1, 3, 4)[n % 3]]:  # a call is always answered
            held[id(message)] = (message, 0)
            tokens = manager.add(message, pinned=n % 4_999 == 0 and message["role"] == "user")
            if id(message) in held:
                held[id(message)] = (message, tokens)
        if n % 501 == 0:
            assert_stats_match(manager, held)
    assert_stats_match(manager, held)
    assert len(held) < 200  # most went: the run crossed many reclamations


def test_len_waits_for_an_add_in_progress() -> None:
    """``len()`` catches the per-role tallies up, so it takes the manager's lock: unlocked, it
    could count a position twice (two catch-ups at once) or read one an add is still writing."""
    manager = MessageContextManager(10**9, counter="chars")
    manager.add({"role": "user", "content": "hello"})
    got: list[int] = []
    with manager.locked():  # as an add in another thread would hold it
        reader = threading.Thread(target=lambda: got.append(len(manager)))
        reader.start()
        reader.join(timeout=0.5)
        assert reader.is_alive() and got == []  # still waiting for the lock
        manager.add({"role": "assistant", "content": "hi"})
    reader.join(timeout=5)
    assert got == [2]
