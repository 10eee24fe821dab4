"""``connect()``: a target's connections opened once per process, a session per request.

Against real servers: the handle's sessions share a PostgreSQL pool, one Redis client and one
SQLite connection per thread; closing a session leaves them open, closing the handle closes
them; threads serving per-request sessions lose nothing.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import ConfigurationError, StoreError
from context_manager.store import StoreHandle, connect

from .backends import Backend, in_threads, user


def handle_for(backend: Backend) -> StoreHandle:
    return connect(backend.target, **backend.options)


def server_connections(backend: Backend) -> int | None:
    """How many client connections the server holds now (None for the file backends)."""
    if backend.name == "redis":
        import redis

        probe = redis.Redis.from_url(backend.target)
        try:
            return len(probe.client_list()) - 1  # minus the probe itself
        finally:
            probe.close()
    if backend.name == "postgres":
        import psycopg

        # Named, so a probe's connection still exiting on a loaded machine is never counted.
        with psycopg.connect(
            backend.target, autocommit=True, application_name="connection-probe"
        ) as probe:
            row = probe.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND backend_type = 'client backend' "
                "AND application_name <> 'connection-probe'"
            ).fetchone()
            assert row is not None
            return int(row[0])
    return None


def test_per_request_sessions_reuse_the_handle_s_connections(backend: Backend) -> None:
    before = server_connections(backend)
    stores = handle_for(backend)
    for request in range(40):
        manager = MessageContextManager.open(stores, session=f"s{request % 4}", max_tokens=10_000)
        manager.add(user(f"request {request}"))
        manager.store.close()  # the session's store: the handle's connections stay open
    during = server_connections(backend)
    for session in range(4):
        reopened = MessageContextManager.open(stores, session=f"s{session}", max_tokens=10_000)
        assert [m["content"] for m in reopened.messages] == [
            f"request {r}" for r in range(session, 40, 4)
        ]
        reopened.store.close()
    if before is not None and during is not None:
        assert during - before <= 2  # 40 requests, one or two connections
    stores.close()
    if before is not None:
        after = server_connections(backend)
        assert after is not None and after <= before
    with pytest.raises(StoreError, match="closed"):
        stores.session("s0")


def test_threads_serving_sessions_through_one_handle_lose_nothing(backend: Backend) -> None:
    stores = handle_for(backend)

    def serve(worker: int) -> None:
        for request in range(15):
            manager = MessageContextManager.open(stores, session=f"w{worker}", max_tokens=10_000)
            manager.add(user(f"w{worker} r{request}"))
            manager.store.close()

    assert in_threads(serve, 6) == []
    for worker in range(6):
        store = stores.session(f"w{worker}")
        contents = [line for _, line in store.load().lines]
        assert len(contents) == 15
        store.close()
    stores.close()


def test_a_handle_takes_its_options_once(backend: Backend) -> None:
    stores = handle_for(backend)
    with pytest.raises(ConfigurationError, match="connect"):
        MessageContextManager.open(
            stores, session="s", max_tokens=1000, store_options={"prefix": "other_"}
        )
    assert connect(stores) is stores
    stores.close()
    stores.close()  # idempotent


@pytest.mark.parametrize(
    ("target", "match"),
    [("mysql://u:hunter2@h/db", "unknown scheme"), (42, "path or a URL")],
)
def test_connect_refuses_what_it_cannot_open(target: Any, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match) as caught:
        connect(target)
    assert "hunter2" not in str(caught.value)


def test_a_redis_handle_lists_a_session_once_and_again_once_it_was_rebuilt(
    redis_url: str,
) -> None:
    """Per-request stores of one handle (sync or async) skip the sessions-index write their
    session already had, unless the session expired or was deleted and came back."""
    import asyncio
    import time
    import uuid

    import redis

    from context_manager.store import aconnect

    probe = redis.Redis.from_url(redis_url)

    def index_writes() -> int:
        return int(probe.info("commandstats").get("cmdstat_zadd", {}).get("calls", 0))

    prefix = f"t{uuid.uuid4().hex[:8]}:"
    stores = connect(redis_url, prefix=prefix, ttl=1)
    before = index_writes()
    for request in range(5):
        store = stores.session("s")
        store.append([user(f"request {request}")])
        store.close()
    assert index_writes() - before == 1
    time.sleep(2.2)  # the session expires; the index still names it until sessions() runs
    assert stores.session("s").sessions() == []
    store = stores.session("s")
    store.append([user("rebuilt")])  # a new epoch: listed again
    assert store.sessions() == ["s"]
    stores.close()

    async def scenario() -> None:
        handle = await aconnect(redis_url, prefix=f"{prefix[:-1]}a:")
        for request in range(5):
            store = await handle.session("s")
            await store.append([user(f"request {request}")])
            await store.aclose()
        assert await (await handle.session("s")).sessions() == ["s"]
        await handle.aclose()

    before = index_writes()
    asyncio.run(scenario())
    assert index_writes() - before == 1
    probe.close()


@pytest.mark.parametrize("target", ["sqlite:///chat.db", "sessions/"])
def test_a_handle_made_with_a_relative_target_survives_a_chdir(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server connects once at start-up and may change directory later; a request served
    after that (on a new thread, as SQLite connects per thread) used to open a new, empty
    database or directory at the relative path, splitting the session in two."""
    (tmp_path / "app").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "app")
    handle = connect(target)
    first = MessageContextManager.open(handle, session="u", max_tokens=8_000)
    first.add({"role": "user", "content": "first request"})
    first.store.close()
    monkeypatch.chdir(tmp_path / "elsewhere")
    seen: list[object] = []

    def request() -> None:
        manager = MessageContextManager.open(handle, session="u", max_tokens=8_000)
        seen.append([m["content"] for m in manager.messages])
        manager.add({"role": "user", "content": "second request"})
        manager.store.close()

    worker = threading.Thread(target=request)
    worker.start()
    worker.join()
    handle.close()
    assert seen == [["first request"]]
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize("value", ["no", "false", 0, None])
def test_a_flag_given_as_a_string_or_number_is_refused(
    value: object, redis_url: str, postgres_url: str
) -> None:
    """``cluster="no"`` read as a truth value switched Redis Cluster mode on (then failed as a
    StoreError about the server), and ``create="no"`` created the tables."""
    with pytest.raises(ConfigurationError, match="cluster must be True or False"):
        connect(redis_url, cluster=value)
    with pytest.raises(ConfigurationError, match="create must be True or False"):
        MessageContextManager.open(
            postgres_url, session="s", max_tokens=1_000, store_options={"create": value}
        )


def test_a_session_open_when_its_handle_closes_refuses_work(backend: Backend) -> None:
    """Closing the handle (at shutdown) stops the sessions made from it on every backend that
    shares connections: a Redis client reconnects by itself, and a PostgreSQL session keeps the
    connection it borrowed, so a session kept past the close went on writing there while
    SQLite's refused. (A JSONL handle shares nothing: its sessions are files.)"""
    if backend.name == "jsonl":
        pytest.skip("a JSONL handle shares nothing to close")
    stores = handle_for(backend)
    manager = MessageContextManager.open(stores, session="late", max_tokens=10_000)
    manager.add(user("before"))
    stores.close()
    with pytest.raises(StoreError, match="closed"):
        manager.add(user("after"))
    assert [m["content"] for m in manager.messages] == ["before"]
    reader = MessageContextManager.open(
        backend.target, session="late", max_tokens=10_000, store_options=backend.options
    )
    assert [m["content"] for m in reader.messages] == ["before"]
    reader.store.close()


def test_an_async_redis_session_refuses_work_once_its_handle_closed(redis_url: str) -> None:
    import asyncio

    from context_manager.store import aconnect

    async def scenario() -> None:
        stores = await aconnect(redis_url, prefix="aclosed:")
        manager = await MessageContextManager.aopen(stores, session="s", max_tokens=10_000)
        async with manager.store.batch():
            manager.add(user("before"))
        await stores.aclose()
        with pytest.raises(StoreError, match="closed"):
            async with manager.store.batch():
                manager.add(user("after"))

    asyncio.run(scenario())
