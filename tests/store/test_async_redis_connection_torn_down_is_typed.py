"""A ``redis.asyncio`` connection torn down under a command fails with a typed store error.

When a Redis Cluster node restarts, redis-py's asyncio cluster client disconnects that node's
connections while other tasks are mid-command on them, and redis-py then raises
``AttributeError: 'NoneType' object has no attribute 'writelines'`` from inside its connection
code instead of its ``ConnectionError``. The store must report that as what it is, a broken
connection: ``StoreOutcomeUnknownError`` for a write (its records carry ids, so a redo cannot
store it twice), "unreachable" for a read; never the raw ``AttributeError``.

Real redis-server and a real ``redis.asyncio`` client (the caller's, through ``client=``); a
task disconnects connections other tasks are using, as the cluster client does on a restart
(the connection class only records the connections it made, so that task can reach them).
"""

from __future__ import annotations

import asyncio
import collections
import random
import uuid
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import (
    ContextManagerError,
    StoreConflictError,
    StoreError,
    StoreOutcomeUnknownError,
)
from context_manager.store import aconnect, aretrying

from .aio import run
from .backends import user

redis = pytest.importorskip("redis")


def test_commands_on_connections_torn_down_under_them_fail_typed(redis_url: str) -> None:
    import redis.asyncio as aredis

    made: list[Any] = []

    class Recorded(aredis.Connection):  # type: ignore[misc]
        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            made.append(self)

    prefix = f"t{uuid.uuid4().hex[:8]}:"
    shuffle = random.Random(3)
    acked: dict[str, list[str]] = collections.defaultdict(list)
    failures: list[str] = []
    untyped: list[BaseException] = []
    kinds: collections.Counter[type] = collections.Counter()

    async def scenario() -> None:
        pool = aredis.ConnectionPool.from_url(
            redis_url, connection_class=Recorded, client_name="cm-test", socket_timeout=0.5
        )
        client = aredis.Redis(connection_pool=pool)
        handle = await aconnect(redis_url, client=client, prefix=prefix)
        stop = asyncio.Event()

        async def worker(task: int) -> None:
            turn = 0
            while not stop.is_set():
                session, text = f"s{task % 4}", f"w{task}-{turn}"
                turn += 1
                try:
                    manager = await MessageContextManager.aopen(
                        handle, session=session, max_tokens=1_000_000
                    )
                    try:
                        await aretrying(manager, lambda m, t=text: m.add(user(t)), attempts=1)
                        acked[session].append(text)
                    finally:
                        await manager.store.aclose()
                except ContextManagerError as exc:
                    failures.append(f"{type(exc).__name__}: {exc}")
                    kinds[type(exc)] += 1
                except Exception as exc:  # what the test is about: nothing untyped escapes
                    untyped.append(exc)
                await asyncio.sleep(0)  # a failure that never awaits must not starve the others

        async def tear_down() -> None:  # what the cluster client does on a node restart
            while not stop.is_set():
                for connection in list(made):
                    if shuffle.random() < 0.5:
                        await connection.disconnect(nowait=True)
                for _ in range(shuffle.randint(0, 4)):
                    await asyncio.sleep(0)

        tasks = [asyncio.create_task(worker(t)) for t in range(12)]
        tearer = asyncio.create_task(tear_down())
        await asyncio.sleep(1.5)
        stop.set()
        await asyncio.gather(*tasks, tearer)
        stored: dict[str, list[str]] = {}
        for session in acked:
            reader = await MessageContextManager.aopen(
                handle, session=session, max_tokens=1_000_000
            )
            stored[session] = [m["content"] for m in reader.messages]
            await reader.store.aclose()
        await handle.aclose()
        await client.aclose()
        for session, texts in acked.items():
            counts = collections.Counter(stored[session])
            assert all(counts[text] == 1 for text in texts), session  # acked: stored once
            assert max(counts.values()) == 1  # nothing stored twice

    run(scenario())
    assert untyped == []
    assert any("writelines" in failure for failure in failures)  # the redis-py failure happened
    # a lost connection (a write's outcome unknown, a read unreachable), or a plain conflict
    assert set(kinds) <= {StoreError, StoreOutcomeUnknownError, StoreConflictError}, kinds
    assert sum(map(len, acked.values())) > 0
