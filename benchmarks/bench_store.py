"""Persistence: appending one message to a session log, and restoring a session from it.

Reported, not enforced (the spec sets no target). ``MessageContextManager.open`` writes one JSONL
line per add before ``add`` returns; the default ``fsync="checkpoint"`` does not fsync plain
appends, ``fsync="always"`` does (so it measures the disk, not the library).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager

from . import corpus
from .common import QUICK


@pytest.mark.parametrize("fsync", ["checkpoint", "always"])
def test_store_append(benchmark: Any, tmp_path: Path, fsync: str) -> None:
    iterations, rounds = (20, 50) if fsync == "checkpoint" else (5, 20)
    if QUICK:
        rounds = max(5, rounds // 4)
    pool = corpus.text_pool(2_000, iterations * (rounds + 1) + 1, seed=3)
    manager = MessageContextManager.open(tmp_path / "context.jsonl", fsync=fsync)
    feed = iter(pool)

    def add_next() -> int:
        return manager.add(next(feed))

    try:
        benchmark.pedantic(add_next, rounds=rounds, iterations=iterations, warmup_rounds=1)
    finally:
        manager.store.close()
    benchmark.extra_info["chars"] = 2_000


@pytest.mark.parametrize("n", [1_000, 10_000])
def test_store_restore(benchmark: Any, tmp_path: Path, n: int) -> None:
    path = tmp_path / "context.jsonl"
    keep_all: dict[str, Any] = {"strategy": "sliding_window", "max_tokens": 10**9}
    writer = MessageContextManager.open(path, fsync="never", **keep_all)
    writer.extend(corpus.conversation(n))
    writer.store.close()

    def restore() -> int:
        manager = MessageContextManager.open(path, **keep_all)
        held = len(manager)
        manager.store.close()
        return held

    held = benchmark.pedantic(restore, rounds=3 if QUICK else 5, iterations=1)
    assert held == len(corpus.conversation(n))
    benchmark.extra_info["messages"] = n
    benchmark.extra_info["log_bytes"] = path.stat().st_size
