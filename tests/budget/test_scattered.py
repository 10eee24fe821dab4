"""Scattered priority cuts: the byte-mask gather against the naive oracle and the group runs.

A cut that keeps or drops hundreds of groups scattered through the history is held as its rule
and gathered with a byte mask (``budget/scattered.py``). These histories are long enough to take
that path unforced; the oracle (``tests/naive.py``) shares no code with the library.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from context_manager import MessageContextManager, ToolResultPruning

from ..naive import NaiveCounter, naive_select
from ..test_properties import positions
from .scattering import mask_gathers, scattered_everywhere, scattered_nowhere

COUNTER = NaiveCounter()


def history(seed: int, turns: int) -> list[dict[str, Any]]:
    """A system prompt, then user turns, replies and (parallel) tool-call groups of mixed size."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "δέλτα", "中文", "😀", "x" * 40, "\n", "  "]

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))

    out: list[dict[str, Any]] = [{"role": "system", "content": text()}]
    for n in range(turns):
        kind = rng.random()
        if kind < 0.35:
            out.append({"role": "user", "content": text()})
        elif kind < 0.6:
            out.append({"role": "assistant", "content": text()})
        else:
            ids = [f"c{n}_{j}" for j in range(rng.randint(1, 3))]
            calls = [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
                for i in ids
            ]
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
            out += [{"role": "tool", "tool_call_id": i, "content": text()} for i in ids]
    return out


def filled(
    messages: list[dict[str, Any]], budget: int, priorities: list[int], pinned: set[int], **kw: Any
) -> MessageContextManager:
    kw.setdefault("counter", "chars")  # the naive oracle counts chars/4
    manager = MessageContextManager(budget, reserve_tokens=0, strategy="priority", **kw)
    for i, message in enumerate(messages):
        manager.add(message, priority=priorities[i], pinned=i in pinned)
    return manager


@pytest.mark.parametrize("forced", [False, True])
@pytest.mark.parametrize("share", [0.45, 0.76])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_priority_cut_keeping_scattered_groups_matches_the_oracle(
    seed: int, share: float, forced: bool
) -> None:
    if forced:
        with scattered_everywhere():
            _matches_the_oracle(seed, share)
    else:
        _matches_the_oracle(seed, share)


def _matches_the_oracle(seed: int, share: float) -> None:
    messages = history(seed, 1500)
    rng = random.Random(seed)
    levels = [-(10**30), -1, 0, 7, 10**30]  # any ints: ranks, not values, go in the bytes
    priorities = [rng.choice(levels) for _ in messages]
    pinned = set(rng.sample(range(1, len(messages)), 12))
    total = COUNTER.count_prompt(messages)
    budget = int(total * share)
    manager = filled(messages, budget, priorities, pinned)
    with mask_gathers() as gathers:
        kept = manager.get_context()
    assert gathers, "the cut should take the mask path"
    expected = naive_select(
        messages,
        counter=COUNTER,
        budget=budget,
        strategy="priority",
        pinned=pinned,
        priorities=priorities,
    )
    assert positions(kept, messages) == expected
    assert manager.stats().context_message_count == len(kept)
    assert COUNTER.count_prompt(kept) <= budget


def test_priorities_first_used_after_the_first_request_keep_the_context_right() -> None:
    """Ranks are built once and extended: new priorities below, between and above the ones
    seen renumber the bytes already held; every context equals the group-run answer."""
    messages = history(3, 700)
    total = COUNTER.count_prompt(messages)
    manager = MessageContextManager(total // 2, reserve_tokens=0, strategy="priority")
    schedule = [5, 10] * 200 + [7, 1, 12, 5] * 1000
    for i, message in enumerate(messages):
        manager.add(message, priority=schedule[i])
        if i % 37 == 0 or i > len(messages) - 40:
            with scattered_everywhere():
                fast = manager.get_context()
            with scattered_nowhere():
                slow = manager.get_context()
            assert [id(m) for m in fast] == [id(m) for m in slow], f"after message {i}"


def test_more_than_256_priorities_match_the_oracle() -> None:
    messages = history(4, 600)
    priorities = [i % 300 for i in range(len(messages))]
    budget = COUNTER.count_prompt(messages) // 2
    manager = filled(messages, budget, priorities, set())
    with scattered_everywhere(), mask_gathers() as gathers:
        kept = manager.get_context()
    assert not gathers, "a rank per message fits in a byte: over 256 levels take the runs"
    expected = naive_select(
        messages, counter=COUNTER, budget=budget, strategy="priority", priorities=priorities
    )
    assert positions(kept, messages) == expected


@pytest.mark.parametrize("provider", [None, "anthropic"])
def test_pruned_copies_and_provider_rules_give_the_same_context_either_way(
    provider: str | None,
) -> None:
    """Pruned copies are swapped in by position; with provider rules the runs path is taken.
    Both give what the group runs give, object for object or equal copy for copy."""
    messages = history(5, 800)
    rng = random.Random(5)
    priorities = [rng.randint(0, 3) for _ in messages]
    budget = COUNTER.count_prompt(messages) // 4
    pruning = ToolResultPruning(soft_ratio=0.1, hard_ratio=0.2, min_prunable_chars=0, keep_last=1)
    manager = filled(messages, budget, priorities, {3, 40}, pruning=pruning, provider=provider)
    with scattered_everywhere(), mask_gathers() as gathers:
        fast = manager.get_context()
    assert bool(gathers) == (provider is None)
    with scattered_nowhere():
        slow = manager.get_context()
    assert fast == slow
    replaced = [a for a, b in zip(fast, slow, strict=True) if a is not b]
    originals = {id(m) for m in messages}
    assert len({id(m) for m in fast} - originals) > 0, "pruning should have swapped copies in"
    assert not replaced or all(id(m) not in originals for m in replaced)
