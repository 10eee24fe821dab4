"""Adding one message: normalize, count once, update the ledger (and evict, FIFO).

Spec: < 1 ms per add with the estimator and with tiktoken, for ~200- and ~2K-character messages
(20K reported too). Our own bar: estimator adds in a few microseconds. Every timed add is a
distinct text (tiktoken's LRU never hits) into a manager that already holds a 1k-message
session, with the default strategy (FIFO, so adds also evict in steady state).
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import MessageContextManager

from . import corpus
from .common import QUICK, WINDOW

#: (iterations per round, rounds) per message size; quick mode takes a quarter of the rounds.
PLAN = {200: (50, 200), 2_000: (20, 100), 20_000: (4, 50)}


@pytest.mark.parametrize("chars", sorted(PLAN))
@pytest.mark.parametrize("counter", ["chars", "tiktoken"])
def test_add(benchmark: Any, counter: str, chars: int) -> None:
    iterations, rounds = PLAN[chars]
    if QUICK:
        rounds = max(10, rounds // 4)
    warmup = 2
    pool = corpus.text_pool(chars, iterations * (rounds + warmup) + 1)  # +1: the result call
    manager = MessageContextManager(WINDOW, counter=counter)
    for message in corpus.conversation(1_000):
        manager.add(message)
    feed = iter(pool)

    def add_next() -> int:
        return manager.add(next(feed))

    benchmark.pedantic(add_next, rounds=rounds, iterations=iterations, warmup_rounds=warmup)
    benchmark.extra_info["chars"] = round(sum(len(m["content"]) for m in pool) / len(pool))
    benchmark.extra_info["held_messages"] = len(manager)
