"""``trim()`` with tiktoken reads under an upper bound first: same answers, tokenizing less.

The scan charges each message its UTF-8 bound until a budget check fails, then counts exactly
what it read and selects again. The answer must be the manager's (which always counts exactly)
on every budget, in particular between the exact total and the bound total, where the first
pass fails and the exact one keeps everything.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("tiktoken")

from context_manager import trim
from context_manager.counting import MessageCountCache
from context_manager.counting.tiktoken_counter import TiktokenCounter
from context_manager.messages import normalize

from ..conversations import conversation
from .test_oneshot import manager_context, same, trim_context

EXAMPLES = settings(
    max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
SAMPLE = Path(__file__).parents[2] / "context_manager" / "data" / "sample_conversation.json"


def _tokenized(counter: TiktokenCounter) -> int:
    """Texts the counter has tokenized so far (its text cache's misses: with ``cache_size=0``
    every text it encodes is one)."""
    return counter.cache_info().misses


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[Any], set[int], list[int], int, int | None]:
    messages = draw(conversation())
    if messages and draw(st.booleans()) and messages[-1].get("role") == "tool":
        messages = messages[:-1]  # an open tail now and then
    n = len(messages)
    counter = TiktokenCounter("gpt-4o")
    bound = counter.message_bound()
    assert bound is not None
    recs = [normalize(m) for m in messages]
    exact = sum(counter.count_message(r) for r in recs) + 3
    loose = sum(bound(r) for r in recs) + 3
    # Budgets all over, and often in the gap where only the exact counts fit everything.
    budget = draw(st.integers(1, loose + 20) | st.integers(max(exact - 5, 1), loose + 1))
    pinned = set(draw(st.lists(st.integers(-1, n), max_size=3)))
    priorities = [draw(st.integers(0, 3)) for _ in range(n)]
    cap = draw(st.none() | st.integers(0, n + 1))
    return messages, pinned, priorities, budget, cap


@pytest.mark.parametrize("provider", [None, "anthropic"])
@pytest.mark.parametrize("cached", [True, False])
@EXAMPLES
@given(data=scenario())
def test_trim_with_tiktoken_equals_the_manager(provider: Any, cached: bool, data: Any) -> None:
    messages, pinned, priorities, budget, cap = data
    counter = TiktokenCounter("gpt-4o", cache_size=0 if not cached else 64)
    options = {
        "max_tokens": budget,
        "max_messages": cap,
        "pinned": pinned,
        "priorities": priorities,
        "counter": counter,
        "provider": provider,
    }
    expected = manager_context(messages, "sliding_window", **dict(options))
    before = copy.deepcopy(messages)
    cache = MessageCountCache() if cached else None
    for _ in range(2):  # the second call reads the content cache (exact counts only)
        got = trim_context(messages, "sliding_window", cache=cache, **dict(options))
        assert same(got, expected), (got, expected)
    got = trim_context(copy.deepcopy(messages), "sliding_window", cache=cache, **options)
    assert got == expected if isinstance(expected, tuple) else len(got) == len(expected)
    assert messages == before


def _history() -> list[Any]:
    sample: list[Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return sample


def test_a_history_that_fits_by_its_bytes_is_not_tokenized() -> None:
    counter = TiktokenCounter("gpt-4o", cache_size=0)
    history = _history()
    size = sum(len(json.dumps(m, ensure_ascii=False).encode()) for m in history)
    kept = trim(history, size + 1_000, counter=counter)
    assert kept == history
    assert _tokenized(counter) == 0


def test_a_cut_is_decided_on_exact_counts() -> None:
    counter = TiktokenCounter("gpt-4o", cache_size=0)
    history = _history()
    exact = counter.count_prompt([normalize(m) for m in history])
    before = _tokenized(counter)
    budget = exact - 1  # one token short: the oldest group must go
    kept = trim(history, budget, counter=counter)
    expected = manager_context(
        history,
        "sliding_window",
        max_tokens=budget,
        counter=counter,
        pinned=set(),
        priorities=[0] * len(history),
    )
    assert same(kept, expected) and len(kept) < len(history)
    assert _tokenized(counter) > before, "the cut was decided on exact counts"
