"""``MessageCountCache``: a cache the caller owns, bounded in bytes, one per purpose.

Exercised through ``trim(..., cache=...)`` and the cache's public figures only. Whatever the
cache holds, the answer is the uncached one.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from context_manager import trim
from context_manager.counting import CharEstimator, MessageCountCache, SafeEstimator
from context_manager.errors import ConfigurationError


def _history(n: int, size: int = 1_000, tag: str = "") -> list[Any]:
    return [
        {"role": "user" if i % 2 else "assistant", "content": f"{tag}{i} " + "x" * size}
        for i in range(n)
    ]


def test_the_bound_holds_and_the_oldest_entries_go_first() -> None:
    cache = MessageCountCache(max_bytes=60_000)
    counter = SafeEstimator()  # no fast lane: every message goes through the cache
    history = _history(200)
    assert trim(history, 10**9, counter=counter, cache=cache) == history
    assert 0 < cache.bytes <= 60_000 and 0 < len(cache) < 200
    # The newest messages were read first, so the oldest entries are the newest messages:
    # reading the history again misses them and hits what was read last.
    misses = cache.misses
    assert trim(copy.deepcopy(history), 10**9, counter=counter, cache=cache) == history
    assert cache.misses > misses and cache.hits > 0
    assert cache.bytes <= 60_000


def test_a_message_larger_than_the_cache_is_never_stored() -> None:
    cache = MessageCountCache(max_bytes=10_000)
    history = _history(3, size=20_000)
    trim(history, 10**9, counter=SafeEstimator(), cache=cache)
    assert len(cache) == 0 and cache.bytes == 0


def test_counters_keep_their_counts_apart() -> None:
    """One cache, several counters: estimators by settings (``get_counter`` builds new ones),
    other counters by instance; each answers as it would without the cache."""
    cache = MessageCountCache()
    history = _history(50, size=400)
    counters = [CharEstimator(), CharEstimator(), CharEstimator(2.0), SafeEstimator()]
    for budget in (2_000, 5_000):
        for counter in counters:
            for _ in range(2):
                got = trim(history, budget, counter=counter, cache=cache)
                assert got == trim(history, budget, counter=counter)


def test_many_counter_instances_do_not_grow_it_without_bound() -> None:
    cache = MessageCountCache()
    history = _history(5, size=100)
    for _ in range(100):  # a new counter instance a call
        trim(history, 10**9, counter=SafeEstimator(), cache=cache)
    assert len(cache) <= 16 * 5
    assert cache.bytes <= 16 * 5 * 1_000  # 16 counters of 5 short messages each


def test_clear_forgets_everything() -> None:
    cache = MessageCountCache()
    trim(_history(10), 10**9, counter=SafeEstimator(), cache=cache)
    assert len(cache) and cache.bytes
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "64MB", None])
def test_max_bytes_must_be_a_non_negative_int(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_bytes"):
        MessageCountCache(max_bytes=bad)


def test_threads_of_a_worker_may_share_one() -> None:
    cache = MessageCountCache(max_bytes=200_000)
    counter = SafeEstimator()
    histories = [_history(60, size=300, tag=f"t{t}-") for t in range(4)]
    expected = [trim(h, 3_000, counter=counter) for h in histories]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(20):
                assert (
                    trim(copy.deepcopy(histories[k]), 3_000, counter=counter, cache=cache)
                    == (expected[k])
                )
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert 0 < cache.bytes <= 200_000
