"""Redis keys that an edit, a restored backup or damage left holding what this store never writes.

A session's ``<prefix>{s}:gen`` names the list its history is in and bounds the keys a delete
removes: a value that is no generation number (``0.5``, ``abc``, a list) must be reported as
corruption naming the key, never read as another generation (an empty history that conflicts
forever) and never drive a loop on the server (one delete stalled every client of the server).
Listings skip a name they cannot use with a warning, as a restore skips a damaged line
(docs/security.md), rather than failing for every other entry.

Real redis-server (``conftest.redis_url``); the damage is written with a plain redis-py client.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreCorruptionError
from context_manager.store import delete_session, open_store, retrying

from .aio import run
from .backends import user

redis = pytest.importorskip("redis")


def _session(redis_url: str, session: str = "s", n: int = 3) -> tuple[str, dict[str, Any]]:
    """A session of ``n`` messages under a prefix of its own: (that prefix, store options)."""
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    manager = MessageContextManager.open(
        redis_url, session=session, max_tokens=100_000, store_options={"prefix": prefix}
    )
    manager.extend(user(f"m{i}") for i in range(n))
    manager.store.close()
    return prefix, {"prefix": prefix}


def _raw(redis_url: str) -> Any:
    return redis.Redis.from_url(redis_url)


def _keys(redis_url: str, prefix: str, session: str = "s") -> list[bytes]:
    return list(_raw(redis_url).scan_iter(match=f"{prefix}{{{session}}}:*", count=1000))


@pytest.mark.parametrize("value", [b"0.5", b"abc", b"1e12", b"-1", b"", b"\xff"])
def test_a_damaged_generation_is_corruption_for_reads_and_writes(
    redis_url: str, value: bytes
) -> None:
    prefix, options = _session(redis_url)
    writer = MessageContextManager.open(
        redis_url, session="s", max_tokens=100_000, store_options=options
    )
    key = f"{prefix}{{s}}:gen"
    _raw(redis_url).set(key, value)
    with pytest.raises(StoreCorruptionError, match=re.escape(key)) as caught:
        MessageContextManager.open(
            redis_url, session="s", max_tokens=100_000, store_options=options
        )
    assert caught.value.path == key
    attempts: list[int] = []

    def add(manager: MessageContextManager) -> None:
        attempts.append(1)
        manager.add(user("new"))

    with pytest.raises(StoreCorruptionError):  # not a conflict that every retry hits again
        retrying(writer, add, attempts=5)
    assert len(attempts) == 1
    store = open_store(redis_url, session="s", **options)
    writes: list[Callable[[], object]] = [store.clear, store.checkpoint, lambda: store.revert_to(0)]
    for write in writes:
        with pytest.raises(StoreCorruptionError):
            write()
    store.close()
    _raw(redis_url).set(key, b"0")  # repaired: the history is back, and writable
    writer.store.reload(writer)
    assert [m["content"] for m in writer.messages] == ["m0", "m1", "m2"]
    writer.add(user("m3"))
    writer.store.close()


def test_the_async_store_reports_a_damaged_generation_too(redis_url: str) -> None:
    prefix, options = _session(redis_url)
    _raw(redis_url).set(f"{prefix}{{s}}:gen", b"0.5")
    with pytest.raises(StoreCorruptionError):
        run(
            MessageContextManager.aopen(
                redis_url, session="s", max_tokens=1000, store_options=options
            )
        )


def test_a_generation_key_of_another_type_is_corruption(redis_url: str) -> None:
    prefix, options = _session(redis_url)
    client = _raw(redis_url)
    client.delete(f"{prefix}{{s}}:gen")
    client.rpush(f"{prefix}{{s}}:gen", b"0")
    with pytest.raises(StoreCorruptionError):
        open_store(redis_url, session="s", **options).load()


def test_a_damaged_checkpoint_position_is_corruption_not_a_loop(redis_url: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    store = open_store(redis_url, session="s", prefix=prefix)
    store.append([user("a")])
    checkpoint = store.checkpoint()
    store.append([user("b")])
    for position in (b"1e12", b"99999999999999", b"x"):
        _raw(redis_url).hset(f"{prefix}{{s}}:ck:0", str(checkpoint), position)
        with pytest.raises(StoreCorruptionError):
            store.revert_to(checkpoint)
    store.close()


def test_deleting_a_session_whose_generation_is_huge_does_not_stall_the_server(
    redis_url: str,
) -> None:
    """One delete used to build 3 key names per generation up to the stored one inside a script:
    a generation of 1,000,000 kept the server busy for every client for about 18 s."""
    prefix, options = _session(redis_url)
    _raw(redis_url).set(f"{prefix}{{s}}:gen", b"1000000")
    started = time.monotonic()
    assert delete_session(redis_url, session="s", **options) is True
    assert time.monotonic() - started < 5
    assert _keys(redis_url, prefix) == []


@pytest.mark.parametrize("damage", ["abc", "list", "1e12"])
def test_a_session_with_a_damaged_generation_can_still_be_deleted(
    redis_url: str, damage: str
) -> None:
    prefix, options = _session(redis_url)
    store = open_store(redis_url, session="s", **options)
    store.clear()
    store.append([user("after a clear")])
    store.close()
    client, key = _raw(redis_url), f"{prefix}{{s}}:gen"
    if damage == "list":
        client.delete(key)
        client.rpush(key, b"1")
    else:
        client.set(key, damage.encode())
    assert delete_session(redis_url, session="s", **options) is True
    assert _keys(redis_url, prefix) == []  # every generation, the epoch, the damaged key
    assert "s" not in open_store(redis_url, session="other", **options).sessions()


def test_a_delete_leaves_nothing_of_a_session_with_many_generations(redis_url: str) -> None:
    prefix, options = _session(redis_url)
    store = open_store(redis_url, session="s", **options)
    for i in range(30):
        store.clear()
        if i % 3:
            store.append([user(f"g{i}")])
    store.close()
    _raw(redis_url).rpush(f"{prefix}{{s}}:g:old", b"{}")  # a stray key in the session's space
    _session_in(redis_url, prefix, "keep")
    assert delete_session(redis_url, session="s", **options) is True
    assert _keys(redis_url, prefix) == []
    assert _keys(redis_url, prefix, "keep") != []  # another session is untouched
    assert open_store(redis_url, session="keep", **options).sessions() == ["keep"]


def _session_in(redis_url: str, prefix: str, session: str) -> None:
    store = open_store(redis_url, session=session, prefix=prefix)
    store.append([user("kept")])
    store.close()


@pytest.mark.parametrize(
    "member",
    [b"\xff\xfe", b"not a session id", b"", b"x" * 300],
    ids=["utf8", "id", "empty", "long"],
)
def test_sessions_skips_an_index_member_that_is_no_session_id(
    redis_url: str, member: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    prefix, options = _session(redis_url)
    _raw(redis_url).zadd(f"{prefix}sessions", {member: 1})
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        assert open_store(redis_url, session="s", **options).sessions() == ["s"]
    assert any("not a session id" in r.getMessage() for r in caplog.records)


def test_generations_skips_a_key_that_is_no_generation(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    prefix, options = _session(redis_url)
    store = open_store(redis_url, session="s", **options)
    store.clear()
    store.append([user("second generation")])
    client = _raw(redis_url)
    for stray in ("old", "01", "1.5", "-2", "123456789012345"):
        client.rpush(f"{prefix}{{s}}:g:{stray}", b"{}")
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        assert store.generations() == [0, 1]  # type: ignore[attr-defined]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "g:old" in warned and "not a generation" in warned
    store.close()


def test_a_glob_character_in_the_prefix_matches_no_other_session(redis_url: str) -> None:
    """Scans match key names by glob: the keys of a prefix holding ``*`` are not those of
    another prefix it would match (``t*:`` matches ``tX:``)."""
    tag = uuid.uuid4().hex[:8]
    _session_in(redis_url, f"{tag}X:", "s")
    _session_in(redis_url, f"{tag}*:", "s")
    starred = open_store(redis_url, session="s", prefix=f"{tag}*:")
    assert starred.generations() == [0]  # type: ignore[attr-defined]
    assert starred.delete() is True  # type: ignore[attr-defined]
    starred.close()
    assert _keys(redis_url, f"{tag}X:") != []
