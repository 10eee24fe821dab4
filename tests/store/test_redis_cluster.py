"""Sessions on a real three-node Redis Cluster (``redis-cli --cluster create``), a node restart
included: every script touches only its session's hash-tagged keys, declared as keys, and the
sessions index (another slot) is written apart."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreConflictError, StoreError
from context_manager.store import open_store, retrying

from .servers import RedisCluster

pytest.importorskip("redis")

# A three-node cluster takes seconds to start: these run with the slow suite (.ci/run runs it).
pytestmark = pytest.mark.slow


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def open_session(url: str, session: str, prefix: str, **options: Any) -> MessageContextManager:
    return MessageContextManager.open(
        url,
        session=session,
        max_tokens=100_000,
        store_options={"cluster": True, "prefix": prefix, **options},
    )


def slot_owners(cluster: RedisCluster, prefix: str, sessions: list[str]) -> set[int]:
    """The ports of the nodes that own the sessions' slots (asked of the cluster itself)."""
    from redis.cluster import RedisCluster as Client

    client = Client.from_url(cluster.url)
    try:
        owners = set()
        for session in sessions:
            node = client.get_node_from_key(f"{prefix}{{{session}}}:gen")
            owners.add(int(node.port))
        return owners
    finally:
        client.close()


def test_sessions_spread_over_every_node_work_end_to_end(
    redis_cluster_nodes: RedisCluster,
) -> None:
    url, prefix = redis_cluster_nodes.url, f"t{uuid.uuid4().hex[:8]}:"
    sessions = [f"user-{i}" for i in range(24)]
    assert slot_owners(redis_cluster_nodes, prefix, sessions) == set(redis_cluster_nodes.ports)
    for session in sessions:
        manager = open_session(url, session, prefix)
        manager.set_system_prompt("be brief")
        manager.add(user(f"{session}: one"))
        checkpoint = manager.checkpoint()
        manager.add(user(f"{session}: two"))
        manager.revert_to(checkpoint)
        manager.add(user(f"{session}: three"))
        manager.store.close()
    for session in sessions:
        reopened = open_session(url, session, prefix)
        assert reopened.system_prompt == "be brief"
        assert [m["content"] for m in reopened.messages] == [
            f"{session}: one",
            f"{session}: three",
        ]
        reopened.store.close()
    store = open_store(url, session="user-0", cluster=True, prefix=prefix)
    assert store.sessions() == sorted(sessions)
    store.close()


def test_stale_writers_conflict_and_retrying_converges_on_a_cluster(
    redis_cluster_nodes: RedisCluster,
) -> None:
    url, prefix = redis_cluster_nodes.url, f"t{uuid.uuid4().hex[:8]}:"
    one, two = open_session(url, "shared", prefix), open_session(url, "shared", prefix)
    one.add(user("from one"))
    with pytest.raises(StoreConflictError):
        two.add(user("from two"))
    retrying(two, lambda m: m.add(user("from two")))
    assert [m["content"] for m in two.messages] == ["from one", "from two"]
    one.store.close()
    two.store.close()


def test_a_node_restart_keeps_the_acknowledged_records_of_its_sessions(
    redis_cluster_nodes: RedisCluster,
) -> None:
    url, prefix = redis_cluster_nodes.url, f"t{uuid.uuid4().hex[:8]}:"
    sessions = [f"restart-{i}" for i in range(12)]
    for session in sessions:
        manager = open_session(url, session, prefix)
        for i in range(5):
            manager.add(user(f"{session} {i}"))
        manager.store.close()
    victim = redis_cluster_nodes.ports[1]
    redis_cluster_nodes.kill(victim)  # SIGKILL; appendfsync always on every node
    on_victim = [s for s in sessions if slot_owners(redis_cluster_nodes, prefix, [s]) == {victim}]
    assert on_victim, "no session landed on the killed node: use more sessions"
    with pytest.raises(StoreError):  # its slots are unreachable while it is down
        open_session(url, on_victim[0], prefix)
    redis_cluster_nodes.start(victim)
    redis_cluster_nodes.wait_ok()
    for session in sessions:
        reopened = open_session(url, session, prefix)
        assert [m["content"] for m in reopened.messages] == [f"{session} {i}" for i in range(5)]
        reopened.add(user("after the restart"))
        reopened.store.close()


def test_long_sessions_open_from_their_newest_records_on_every_node(
    redis_cluster_nodes: RedisCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The reads of an open that leaves the older records in Redis run on the session's node;
    a record damaged there is reported only when the history first needs it."""
    import logging

    from redis.cluster import RedisCluster as Client

    url, prefix = redis_cluster_nodes.url, f"t{uuid.uuid4().hex[:8]}:"
    sessions = [f"long-{i}" for i in range(12)]
    assert slot_owners(redis_cluster_nodes, prefix, sessions) == set(redis_cluster_nodes.ports)
    options = {"max_tokens": 2_000, "store_options": {"cluster": True, "prefix": prefix}}
    for session in sessions:
        writer = MessageContextManager.open(url, session=session, **options)
        writer.extend(user(f"{session} turn {i} " + "word " * 40) for i in range(300))
        writer.store.close()
    client = Client.from_url(url)
    for session in sessions:
        client.lset(f"{prefix}{{{session}}}:g:0", 5, '{"role":"user","content":"cut sho')
    client.close()
    for session in sessions:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="context_manager.store"):
            reopened = MessageContextManager.open(url, session=session, **options)
            assert reopened.get_context()[-1] == user(f"{session} turn 299 " + "word " * 40)
            assert "corrupt" not in caplog.text  # left on its node by the open
            history = reopened.history()
        assert "corrupt" in caplog.text
        assert len(history) == 299
        reopened.store.close()


def test_async_sessions_spread_over_every_node_work_end_to_end(
    redis_cluster_nodes: RedisCluster,
) -> None:
    """``aconnect(..., cluster=True)``: the same scripts on ``redis.asyncio.cluster``."""
    import asyncio

    from context_manager.store import aconnect

    url, prefix = redis_cluster_nodes.url, f"t{uuid.uuid4().hex[:8]}:"
    sessions = [f"user-{i}" for i in range(24)]
    assert slot_owners(redis_cluster_nodes, prefix, sessions) == set(redis_cluster_nodes.ports)

    async def serve(handle: Any, session: str) -> None:
        manager = await MessageContextManager.aopen(handle, session=session, max_tokens=100_000)
        async with manager.store.batch():
            manager.add(user(f"{session}: one"))
        checkpoint = await manager.store.acheckpoint()
        async with manager.store.batch():
            manager.add(user(f"{session}: two"))
        await manager.store.arevert_to(checkpoint)
        await manager.store.aclose()

    async def scenario() -> list[str]:
        handle = await aconnect(url, cluster=True, prefix=prefix)
        await asyncio.gather(*(serve(handle, session) for session in sessions))
        store = await handle.session(sessions[0])
        listed = await store.sessions()
        await store.aclose()
        await handle.aclose()
        return listed

    assert asyncio.run(scenario()) == sorted(sessions)
    for session in sessions:
        reopened = open_session(url, session, prefix)
        assert [m["content"] for m in reopened.messages] == [f"{session}: one"]
        reopened.store.close()
