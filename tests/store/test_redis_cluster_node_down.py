"""A Redis Cluster with one primary down (``cluster-require-full-coverage no``) keeps serving
the sessions whose slots live on the other primaries, even when their scripts are gone from the
server's cache (a restart, ``SCRIPT FLUSH``, a new node): the store reloads a script on the
session's own node only (issue 38). A session on the dead node fails with a typed error."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreError

from .servers import RedisCluster, Unavailable, redis_cluster

pytest.importorskip("redis")

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster() -> Iterator[RedisCluster]:
    """A fresh three-node cluster that keeps serving the covered slots when a primary is down
    (one per test: each test kills a node for good)."""
    from redis import Redis

    try:
        with redis_cluster() as nodes:
            for port in nodes.ports:
                with Redis(port=port) as node:
                    node.config_set("cluster-require-full-coverage", "no")
            yield nodes
    except Unavailable as exc:
        pytest.skip(f"REDIS CLUSTER TESTS SKIPPED: {exc}")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def owner(cluster: RedisCluster, key: str) -> int:
    """The port of the primary that owns ``key``'s slot, as the cluster itself says."""
    from redis import Redis

    with Redis(port=cluster.ports[0]) as node:
        slot = node.cluster("keyslot", key)
        for start, end, primary, *_ in node.cluster("slots"):
            if start <= slot <= end:
                return int(primary[1])
    raise AssertionError(f"no node owns {key!r}")


def owners(cluster: RedisCluster, prefix: str, sessions: list[str]) -> dict[str, int]:
    return {s: owner(cluster, f"{prefix}{{{s}}}:gen") for s in sessions}


def take_a_primary_down(cluster: RedisCluster, prefix: str, sessions: list[str]) -> int:
    """Kill a primary (neither the URL's node, which clients start from, nor the one holding
    the sessions index), wait until the others mark it failed, and flush the live ones'
    scripts."""
    from redis import Redis

    spared = {cluster.ports[0], owner(cluster, f"{prefix}sessions")}
    victim = next(port for port in cluster.ports if port not in spared)
    cluster.kill(victim)
    live = [port for port in cluster.ports if port != victim]
    deadline = time.monotonic() + 30
    while True:
        failed = []
        for port in live:
            with Redis(port=port) as node:
                nodes = node.cluster("nodes")
                flags = [str(v.get("flags", "")).split(",") for v in nodes.values()]
                failed.append(any("fail" in f for f in flags))  # agreed, not "fail?"
        if all(failed):
            break
        assert time.monotonic() < deadline, "the live primaries never marked the node failed"
        time.sleep(0.1)
    for port in live:
        with Redis(port=port) as node:
            assert node.cluster("info")["cluster_state"] == "ok"  # full coverage not required
            node.script_flush()
    return victim


def spread(cluster: RedisCluster) -> tuple[str, str, list[str]]:
    """The URL, a fresh prefix and 12 sessions whose keys live on every node."""
    prefix, sessions = f"t{uuid.uuid4().hex[:8]}:", [f"user-{i}" for i in range(12)]
    assert set(owners(cluster, prefix, sessions).values()) == set(cluster.ports)
    return cluster.url, prefix, sessions


def split_by_a_node_down(
    cluster: RedisCluster, prefix: str, sessions: list[str]
) -> tuple[list[str], list[str]]:
    """Take a primary down; the sessions on the live nodes, and those on the one down."""
    where = owners(cluster, prefix, sessions)
    victim = take_a_primary_down(cluster, prefix, sessions)
    alive = [s for s in sessions if where[s] != victim]
    down = [s for s in sessions if where[s] == victim]
    assert alive and down
    return alive, down


def test_sessions_on_live_nodes_reload_their_scripts_while_a_primary_is_down(
    cluster: RedisCluster,
) -> None:
    url, prefix, sessions = spread(cluster)

    def open_session(session: str) -> MessageContextManager:
        return MessageContextManager.open(
            url,
            session=session,
            max_tokens=100_000,
            store_options={"cluster": True, "prefix": prefix},
        )

    for session in sessions:
        manager = open_session(session)
        manager.add(user(f"{session} before"))
        manager.store.close()

    alive, down = split_by_a_node_down(cluster, prefix, sessions)

    for session in alive:
        manager = open_session(session)
        assert [m["content"] for m in manager.messages] == [f"{session} before"]
        manager.add(user(f"{session} after"))
        assert [m["content"] for m in manager.get_context()] == [
            f"{session} before",
            f"{session} after",
        ]
        manager.store.close()
        reopened = open_session(session)
        assert [m["content"] for m in reopened.messages] == [
            f"{session} before",
            f"{session} after",
        ]
        reopened.store.close()
    for session in down:
        with pytest.raises(StoreError):
            open_session(session)


def test_async_sessions_on_live_nodes_reload_their_scripts_while_a_primary_is_down(
    cluster: RedisCluster,
) -> None:
    from context_manager.store import aconnect

    url, prefix, sessions = spread(cluster)

    async def write(handle: Any, session: str, text: str) -> list[str]:
        manager = await MessageContextManager.aopen(handle, session=session, max_tokens=100_000)
        try:
            async with manager.store.batch():
                manager.add(user(text))
            return [m["content"] for m in manager.get_context()]
        finally:
            await manager.store.aclose()

    async def read(handle: Any, session: str) -> list[str]:
        manager = await MessageContextManager.aopen(handle, session=session, max_tokens=100_000)
        await manager.store.aclose()
        return [m["content"] for m in manager.messages]

    async def before() -> None:
        handle = await aconnect(url, cluster=True, prefix=prefix)
        try:
            await asyncio.gather(*(write(handle, s, f"{s} before") for s in sessions))
        finally:
            await handle.aclose()

    asyncio.run(before())
    alive, down = split_by_a_node_down(cluster, prefix, sessions)

    async def after() -> None:
        handle = await aconnect(url, cluster=True, prefix=prefix)
        try:
            for session in alive:
                assert await write(handle, session, f"{session} after") == [
                    f"{session} before",
                    f"{session} after",
                ]
                assert await read(handle, session) == [f"{session} before", f"{session} after"]
            for session in down:
                with pytest.raises(StoreError):
                    await read(handle, session)
        finally:
            await handle.aclose()

    asyncio.run(after())
