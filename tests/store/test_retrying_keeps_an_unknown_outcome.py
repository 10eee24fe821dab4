"""``retrying`` / ``aretrying`` never turn "this write may have landed" into a plain error.

The failure is real: the test Redis server is frozen with SIGSTOP (a stalled server) while a
write is in flight. The write reaches the server's socket, the reply times out, and every
catch-up after it times out too. The caller must get ``StoreOutcomeUnknownError`` with the
write's record ids (so a later redo with the same ids stores nothing twice), not a plain
"unreachable" error that hides a write which lands as soon as the server resumes.
"""

from __future__ import annotations

import os
import random
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreOutcomeUnknownError
from context_manager.store import aretrying, retrying

from .aio import run
from .backends import user


@contextmanager
def frozen(redis_url: str) -> Iterator[None]:
    """The server stops (SIGSTOP) until the block ends: connections stay open, nothing answers."""
    import redis

    client = redis.Redis.from_url(redis_url)
    pid = int(client.info("server")["process_id"])
    client.close()
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def said(manager: MessageContextManager) -> list[Any]:
    return [m["content"] for m in manager.messages]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_write_stalled_on_a_frozen_server_stays_outcome_unknown_with_its_ids(
    redis_url: str, mode: str
) -> None:
    target = f"{redis_url}?socket_timeout=0.3"
    options = {"prefix": f"t{uuid.uuid4().hex[:8]}:"}
    change = lambda m: m.add(user("second"))  # noqa: E731

    async def stalled() -> MessageContextManager:
        manager = await MessageContextManager.aopen(
            target, session="s", max_tokens=100_000, store_options=options
        )
        async with manager.store.batch():
            manager.add(user("first"))
        with frozen(redis_url), pytest.raises(StoreOutcomeUnknownError) as caught:
            await aretrying(manager, change, attempts=3, rng=random.Random(1))
        assert len(caught.value.record_ids) == 1
        # (memory may hold the batch's change: the journal is stale and rebuilds on its next
        # turn.) Once the server answers, the ids settle it: the write had landed.
        assert await manager.store.alanded(caught.value.record_ids) is True
        await manager.store.aclose()
        return manager

    if mode == "sync":
        manager = MessageContextManager.open(
            target, session="s", max_tokens=100_000, store_options=options
        )
        manager.add(user("first"))
        with frozen(redis_url), pytest.raises(StoreOutcomeUnknownError) as caught:
            retrying(manager, change, attempts=3, rng=random.Random(1))
        assert len(caught.value.record_ids) == 1
        assert said(manager) == ["first"]  # write-ahead: not in memory until known
        # once the server answers, the ids settle it: the write had landed, memory catches up
        assert manager.store.landed(manager, caught.value.record_ids) is True
        manager.store.close()
    else:
        manager = run(stalled())
    assert said(manager) == ["first", "second"]
    fresh = MessageContextManager.open(
        redis_url, session="s", max_tokens=100_000, store_options=options
    )
    assert said(fresh) == ["first", "second"]  # stored once
    fresh.store.close()
