"""Per-role message and token totals (``stats()``, ``len()``) after adds, evictions, compactions.

The ledger tallies roles only when read: an add or a drop leaves the per-role dicts alone and a
read catches up. The oracle shares nothing with that bookkeeping: it keeps every message the
caller added (with the tokens ``add`` returned) and removes what ``on_evict`` reported, so the
held set is what the manager said it kept, and the totals are plain sums over it. Compaction of
the ledger's storage (every few thousand adds in real use) is brought down to a few groups so
that the examples cross it many times.
"""

from __future__ import annotations

import threading
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import ContextOverflowError, MessageContextManager
from context_manager.budget import _ledger
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
    compact_at=st.sampled_from([1, 2, 5, 4096]),
)
def test_stats_count_what_the_manager_holds(
    messages: list[Any],
    budget: int,
    strategy: str,
    pins: set[int],
    reads: set[int],
    compact_at: int,
) -> None:
    held: dict[int, tuple[Any, int]] = {}

    def evicted(gone: list[Any]) -> None:
        for message in gone:
            del held[id(message)]

    manager = MessageContextManager(
        budget, reserve_tokens=0, strategy=strategy, counter="chars", on_evict=evicted
    )
    with mock.patch.object(_ledger, "_COMPACT_MIN", compact_at):
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
                counts, role_tokens = totals(held)
                stats = manager.stats()
                system = 1 if manager.system_message is not None else 0
                counts["system"] += system
                if system:
                    role_tokens["system"] += manager.count_message(manager.system_message)
                assert (stats.counts_by_role, stats.tokens_by_role) == (counts, role_tokens)
                assert len(manager) == len(held) + system
        assert len(manager) - (1 if manager.system_message is not None else 0) == len(held)
        assert totals(held) == manager._ledger.role_totals()


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
