"""Cache-aware clearing: a clear happens when it pays for the prompt cache it breaks, and freely
once the cache has expired.

Expected decisions are worked out here from the providers' published prices (not from the
library's constants) and from token counts by the chars/4 rule (``counter="chars"``: each
message costs ``ceil(chars / 4) + 3``), with a fake clock for the cache's age.
"""

from __future__ import annotations

import math

import pytest

from context_manager import MessageContextManager
from context_manager.compaction.pruning import ANTHROPIC_PLACEHOLDER, ToolResultPruning
from context_manager.errors import ConfigurationError
from context_manager.prompt_cache import cache_rules
from context_manager.prompt_cache.economics import cache_expired, min_worthwhile_saving

# (provider, model, ttl) -> (read price, write price, lifetime in seconds), from the providers'
# pricing and prompt-caching pages; OpenAI bills uncached input at the plain price (1.0).
PRICES = {
    ("anthropic", "claude-sonnet-4-5", "5m"): (0.10, 1.25, 300.0),
    ("anthropic", "claude-sonnet-4-5", "1h"): (0.10, 2.00, 3600.0),
    ("openai", "gpt-5", "in_memory"): (0.10, 1.00, 300.0),
    ("openai", "gpt-4o", "in_memory"): (0.50, 1.00, 300.0),
}
PAYBACK = 10  # the default payback horizon, in requests


def tokens(text: str) -> int:
    """The chars/4 rule for a plain text message."""
    return math.ceil(len(text) / 4) + 3


def call(i: int) -> dict[str, object]:
    fn = {"name": "read", "arguments": "{}"}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "function": fn}]}


def result(i: int, chars: int) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": f"c{i}", "content": "x" * chars}


CALL_TOKENS = math.ceil(len("read{}") / 4) + 3


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def pays(suffix: int, freed: int, read: float, write: float, payback: int = PAYBACK) -> bool:
    """Clearing now vs keeping: this request writes ``suffix - freed`` instead of reading
    ``suffix``; each of the next ``payback`` requests reads ``freed`` fewer tokens."""
    extra_now = (suffix - freed) * write - suffix * read
    saved_later = payback * freed * read
    return extra_now <= saved_later


def session(
    key: tuple[str, str, str], small: int, gap: float, clock: Clock
) -> tuple[list[object], MessageContextManager, int, int]:
    """Three requests: [go, c0, t0(small)] -> [.., c1, t1(big)] -> [.., c2, t2]. The trigger
    fires at the third only; then t0 is the one old result (``keep_last=2``). Returns the
    third context, the manager, and (suffix, freed) as the independent model sees them."""
    provider, model, ttl = key
    rules = cache_rules(provider, model, ttl=ttl)
    big, last = 40_000, 400
    held_third = (
        3 + tokens("go") + 3 * CALL_TOKENS + tokens("x" * small) + tokens("x" * big)
    ) + tokens("x" * last)
    pruning = ToolResultPruning.anthropic(
        trigger_tokens=held_third - 1, keep_last=2, cache=rules, clock=clock
    )
    manager = MessageContextManager(1_000_000, reserve_tokens=0, counter="chars", pruning=pruning)
    manager.add({"role": "user", "content": "go"})
    manager.extend([call(0), result(0, small)])
    manager.get_context()
    clock.now += 10
    manager.extend([call(1), result(1, big)])
    manager.get_context()
    clock.now += gap
    manager.extend([call(2), result(2, last)])
    context = manager.get_context()
    # The previous request ended with t1: a clear of t0 rewrites t0, c1 and t1.
    suffix = tokens("x" * small) + CALL_TOKENS + tokens("x" * big)
    freed = tokens("x" * small) - tokens(ANTHROPIC_PLACEHOLDER)
    return context, manager, suffix, freed


@pytest.mark.parametrize("key", list(PRICES))
@pytest.mark.parametrize("small", [400, 12_000, 30_000, 80_000, 200_000])
def test_a_warm_cache_is_broken_only_when_the_clear_pays(
    key: tuple[str, str, str], small: int
) -> None:
    read, write, _ttl = PRICES[key]
    context, manager, suffix, freed = session(key, small, 10.0, Clock())
    cleared = context[2]["content"] == ANTHROPIC_PLACEHOLDER
    assert cleared == pays(suffix, freed, read, write), (suffix, freed)
    report = manager.stats().pruning
    assert report.results_cleared == (1 if cleared else 0)
    assert report.clear_skipped_below_at_least == (not cleared)


@pytest.mark.parametrize("key", list(PRICES))
def test_an_expired_cache_is_cleared_freely(key: tuple[str, str, str]) -> None:
    read, write, ttl = PRICES[key]
    small = 400  # never worth it while the cache is warm (asserted below)
    context, _, suffix, freed = session(key, small, ttl + 1, Clock())
    assert not pays(suffix, freed, read, write)
    assert context[2]["content"] == ANTHROPIC_PLACEHOLDER
    # One second inside the lifetime, the cache is warm: nothing is cleared.
    context, _, _, _ = session(key, small, ttl - 11, Clock())
    assert context[2]["content"] == "x" * small


def test_without_cache_rules_the_same_clear_happens_at_once() -> None:
    pruning = ToolResultPruning.anthropic(trigger_tokens=1_000, keep_last=1)
    manager = MessageContextManager(1_000_000, reserve_tokens=0, counter="chars", pruning=pruning)
    manager.add({"role": "user", "content": "go"})
    manager.extend([call(0), result(0, 400), call(1), result(1, 40_000)])
    assert manager.get_context()[2]["content"] == ANTHROPIC_PLACEHOLDER


def test_a_cut_history_is_not_cleared_while_warm() -> None:
    """Past the budget the window refills the freed room with older messages: a clear that
    cannot bring the history under the budget saves no sent token, so with a warm cache it never
    pays (long user turns, short results); the plain rule clears."""
    clock = Clock()
    rules = cache_rules("anthropic", "claude-sonnet-4-5")

    def run(cache: bool) -> list[object]:
        extra = {"cache": rules, "clock": clock} if cache else {}
        pruning = ToolResultPruning.anthropic(trigger_tokens=3_000, keep_last=1, **extra)
        manager = MessageContextManager(3_000, reserve_tokens=0, counter="chars", pruning=pruning)
        context: list[object] = []
        for i in range(12):
            manager.add({"role": "user", "content": f"step {i} " + "y" * 2_000})
            manager.extend([call(i), result(i, 400)])
            context = manager.get_context()
            clock.now += 5
        return context

    plain, aware = run(False), run(True)
    assert any(m.get("content") == ANTHROPIC_PLACEHOLDER for m in plain)  # type: ignore[attr-defined]
    assert not any(m.get("content") == ANTHROPIC_PLACEHOLDER for m in aware)  # type: ignore[attr-defined]


def brute_force(suffix: int, read: float, write: float, payback: int) -> int:
    """The smallest saving for which clearing is no dearer, by trying every value."""
    return next(f for f in range(suffix + 2) if pays(suffix, f, read, write, payback))


@pytest.mark.parametrize("key", list(PRICES))
@pytest.mark.parametrize("payback", [0, 1, 10, 50])
def test_the_minimum_worthwhile_saving_is_the_break_even(
    key: tuple[str, str, str], payback: int
) -> None:
    read, write, _ = PRICES[key]
    rules = cache_rules(key[0], key[1], ttl=key[2])
    for suffix in (0, 1, 7, 100, 1_024, 33_333):
        expected = brute_force(suffix, read, write, payback)
        assert min_worthwhile_saving(suffix, rules, payback) == expected, (suffix, payback)


@pytest.mark.parametrize("key", list(PRICES))
def test_expiry_follows_the_provider_lifetime(key: tuple[str, str, str]) -> None:
    _, _, ttl = PRICES[key]
    rules = cache_rules(key[0], key[1], ttl=key[2])
    assert cache_expired(rules, None)  # no previous request: nothing cached
    assert not cache_expired(rules, ttl)
    assert cache_expired(rules, ttl + 0.5)
    assert not cache_expired(cache_rules("gemini", "gemini-2.5-pro"), 1e9)  # no lifetime


@pytest.mark.parametrize(
    "bad",
    [
        {"cache": "anthropic"},
        {"payback_requests": -1},
        {"payback_requests": True},
        {"clock": 3.0},
    ],
)
def test_bad_options_are_typed_errors(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        ToolResultPruning(**bad)  # type: ignore[arg-type]


def test_a_plan_of_the_same_history_does_not_refresh_the_age() -> None:
    """stats() between requests is not a request: the age runs from the last get_context."""
    clock = Clock()
    key = ("anthropic", "claude-sonnet-4-5", "5m")
    rules = cache_rules(*key[:2], ttl=key[2])
    pruning = ToolResultPruning.anthropic(
        trigger_tokens=10_000, keep_last=2, cache=rules, clock=clock
    )
    manager = MessageContextManager(1_000_000, reserve_tokens=0, counter="chars", pruning=pruning)
    manager.add({"role": "user", "content": "go"})
    manager.extend([call(0), result(0, 400), call(1), result(1, 40_000)])
    manager.get_context()
    for _ in range(10):  # idle, asking for stats: 10 x 40 s > the 300 s lifetime
        clock.now += 40
        manager.stats()
    manager.extend([call(2), result(2, 400)])
    assert manager.get_context()[2]["content"] == ANTHROPIC_PLACEHOLDER
