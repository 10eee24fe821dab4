"""``connect(url, client=...)`` / ``aconnect(url, client=...)`` use the caller's Redis client, as
docs/guide/stores.md says, and closing the handle leaves that client open (it is the caller's).

Real redis-server. The caller's client is pointed at another database than the URL's, so where
the messages land shows whose client wrote them; the server's CLIENT LIST shows whether the
caller's named connection is still open after the handle is closed.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import ConfigurationError
from context_manager.store import aconnect, connect

from .aio import run
from .backends import user

redis = pytest.importorskip("redis")


def other_db(redis_url: str) -> str:
    assert redis_url.endswith("/0")
    return redis_url[:-1] + "7"


def connected_names(redis_url: str) -> set[str]:
    admin = redis.Redis.from_url(redis_url)
    try:
        return {str(entry.get("name")) for entry in admin.client_list()}
    finally:
        admin.close()


def said(manager: MessageContextManager) -> list[Any]:
    return [m["content"] for m in manager.messages]


def test_connect_uses_the_callers_client_and_leaves_it_open(redis_url: str) -> None:
    name, prefix = f"mine-{uuid.uuid4().hex[:8]}", f"t{uuid.uuid4().hex[:8]}:"
    mine = redis.Redis.from_url(other_db(redis_url), client_name=name)
    handle = connect(redis_url, client=mine, prefix=prefix)
    manager = MessageContextManager.open(handle, session="s", max_tokens=100_000)
    manager.add(user("hello"))
    manager.store.close()
    handle.close()
    assert name in connected_names(redis_url)  # the caller's connection is still open
    assert mine.dbsize() > 0  # the session was written through the caller's client (db 7)
    in_db7 = MessageContextManager.open(
        other_db(redis_url), session="s", max_tokens=100_000, store_options={"prefix": prefix}
    )
    in_db0 = MessageContextManager.open(
        redis_url, session="s", max_tokens=100_000, store_options={"prefix": prefix}
    )
    assert (said(in_db7), said(in_db0)) == (["hello"], [])
    for reader in (in_db7, in_db0):
        reader.store.close()
    mine.close()


def test_aconnect_uses_the_callers_client_and_leaves_it_open(redis_url: str) -> None:
    import redis.asyncio

    name, prefix = f"amine-{uuid.uuid4().hex[:8]}", f"t{uuid.uuid4().hex[:8]}:"

    async def scenario() -> list[Any]:
        mine = redis.asyncio.Redis.from_url(other_db(redis_url), client_name=name)
        handle = await aconnect(redis_url, client=mine, prefix=prefix)
        manager = await MessageContextManager.aopen(handle, session="s", max_tokens=100_000)
        async with manager.store.batch():
            manager.add(user("hello"))
        await manager.store.aclose()
        await handle.aclose()
        assert name in connected_names(redis_url)  # the caller's connection is still open
        assert await mine.ping() is True
        await mine.aclose()
        reader = MessageContextManager.open(
            other_db(redis_url), session="s", max_tokens=100_000, store_options={"prefix": prefix}
        )
        try:
            return said(reader)
        finally:
            reader.store.close()

    assert run(scenario()) == ["hello"]


@pytest.mark.parametrize("wrong", ["redis://localhost", object(), 42])
def test_something_that_is_no_redis_client_is_refused_when_the_store_opens(
    redis_url: str, wrong: object
) -> None:
    """A client is checked where it is given (its first command would otherwise fail with a
    raw ``AttributeError`` deep inside a write)."""
    handle = connect(redis_url, client=wrong)
    with pytest.raises(ConfigurationError, match="redis-py client"):
        MessageContextManager.open(handle, session="s")
    handle.close()


@pytest.mark.parametrize("how", ["pipeline", "decoding"])
def test_a_pipeline_or_a_decoding_client_is_refused_when_the_store_opens(
    redis_url: str, how: str
) -> None:
    """Both have every method a client has, and fail deep inside a write (replies as text, or
    commands queued and never sent): refused where they are given, saying why."""
    client = (
        redis.Redis.from_url(redis_url).pipeline()
        if how == "pipeline"
        else redis.Redis.from_url(redis_url, decode_responses=True)
    )
    handle = connect(redis_url, client=client)
    with pytest.raises(ConfigurationError, match=r"redis-py client|bytes"):
        MessageContextManager.open(handle, session="s")
    handle.close()
