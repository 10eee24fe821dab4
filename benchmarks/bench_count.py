"""Counting throughput, per 1K characters (estimator) and per 1K tokens (tiktoken).

Spec: estimator < 0.1 ms per 1K characters; precise counting (tiktoken) < 1 ms per 1K tokens.
``extra_info`` carries the size (``kchars`` / ``ktokens``) the enforcer divides the median by.
The estimator is timed on a 1K-character message, where its fixed per-message cost weighs most,
and on 10K/100K ones; tiktoken on distinct texts so its LRU never hits.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager.counting import CharEstimator, get_counter
from context_manager.messages import normalize

from . import corpus
from .common import QUICK


@pytest.mark.parametrize("chars", [1_000, 10_000, 100_000])
def test_estimator_count(benchmark: Any, chars: int) -> None:
    message = normalize(corpus.text_pool(chars, 1)[0])
    counter = CharEstimator()
    benchmark(counter.count_message, message)
    benchmark.extra_info["kchars"] = len(message.text) / 1000


def test_estimator_count_ascii(benchmark: Any) -> None:
    """Pure-ASCII text takes the fast path (no UTF-16 encoding)."""
    text = " ".join(corpus.WORDS * 60)[:10_000]
    message = normalize({"role": "user", "content": text})
    benchmark(CharEstimator().count_message, message)
    benchmark.extra_info["kchars"] = len(text) / 1000


@pytest.mark.parametrize("chars", [4_000, 40_000])
def test_tiktoken_count(benchmark: Any, chars: int) -> None:
    counter = get_counter("tiktoken")
    iterations, rounds = (5, 40) if chars < 10_000 else (1, 30)
    if QUICK:
        rounds = max(8, rounds // 4)
    texts = [m["content"] for m in corpus.text_pool(chars, iterations * (rounds + 1) + 1, seed=7)]
    tokens = [len(counter.encoding.encode_ordinary(t)) for t in texts]  # type: ignore[attr-defined]
    feed = iter(texts)

    def count_next() -> int:
        return counter.count_text(next(feed))

    benchmark.pedantic(count_next, rounds=rounds, iterations=iterations, warmup_rounds=1)
    benchmark.extra_info["ktokens"] = sum(tokens) / len(tokens) / 1000
    benchmark.extra_info["kchars"] = sum(map(len, texts)) / len(texts) / 1000
