"""Exactly-once appends, heads that never repeat (no ABA), and the retry helper, on every backend.

The failures are real: a TCP proxy that forwards a write and drops the server's reply (the
server committed, the client's connection breaks), a torn last line cut by another writer, a
Redis session that expires and is rebuilt, 16 processes racing on one session.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from context_manager import MessageContextManager
from context_manager.errors import (
    ConfigurationError,
    StoreConflictError,
    StoreOutcomeUnknownError,
)
from context_manager.store import retrying
from context_manager.store.records import dump_record, new_record_id
from context_manager.store.targets import open_store

from .backends import FORK, Backend, user
from .proxy import reply_dropping_proxy


def with_id(record: dict[str, Any], rid: str) -> dict[str, Any]:
    return {**record, "_cm": {"id": rid}}


def contents(backend: Backend, session: str = "s1") -> list[str]:
    store = backend.store(session)
    try:
        return [json.loads(line)["content"] for _, line in store.load().lines]
    finally:
        store.close()


# ---------------------------------------------------------------------- store level, every backend
def test_an_append_whose_id_is_stored_writes_nothing_and_returns_its_positions(
    backend: Backend,
) -> None:
    store = backend.store()
    store.append([user("zero")])
    batch = [with_id(user("one"), new_record_id()), with_id(user("two"), new_record_id())]
    assert store.append(batch) == [1, 2]
    assert store.append(batch) == [1, 2]  # the retry of a write whose reply was lost
    assert contents(backend) == ["zero", "one", "two"]
    store.close()


def test_a_retry_after_other_writes_is_not_stored_twice_and_the_next_write_conflicts(
    backend: Backend,
) -> None:
    mine, other = backend.store(), backend.store()
    mine.load()
    batch = [with_id(user("mine"), new_record_id())]
    assert mine.append(batch) == [0]
    other.load()
    other.append([user("other")])
    # mine resends the same write (it never saw the reply): stored once, at its first place
    assert mine.append(batch) == [0]
    assert contents(backend) == ["mine", "other"]
    with pytest.raises(StoreConflictError):  # mine has not seen "other": still stale
        mine.append([with_id(user("next"), new_record_id())])
    assert contents(backend) == ["mine", "other"]
    mine.close()
    other.close()


def test_the_same_message_added_twice_is_stored_twice(backend: Backend) -> None:
    """Ids are per write, not per content: a user who says "ok" twice is heard twice."""
    manager = backend.manager()
    manager.add(user("ok"))
    manager.add(user("ok"))
    assert contents(backend) == ["ok", "ok"]
    manager.store.close()


def test_a_message_with_its_own_cm_key_is_stored_and_restored_exactly(backend: Backend) -> None:
    message = {"role": "user", "content": "hi", "_cm": {"mine": [1, 2], "id": "not ours"}}
    manager = backend.manager()
    manager.add(message)
    manager.store.close()
    reopened = backend.manager()
    assert reopened.messages == [message]
    reopened.store.close()


# ---------------------------------------------------------------------- ABA: heads never repeat
def test_jsonl_a_torn_tail_replaced_by_a_line_of_the_same_length_is_a_conflict(
    tmp_path: Path,
) -> None:
    root = tmp_path / "sessions"
    first = open_store(root, session="s")
    first.append([user("kept")])
    first.close()
    log = root / "s" / "context.jsonl"
    torn = b'{"role":"user","content":"a killed writer was here'
    with log.open("ab") as handle:
        handle.write(torn)  # no newline: a writer killed mid-line
    stale = open_store(root, session="s")
    stale.load()
    other = open_store(root, session="s")
    other.load()
    record = user("")
    record["content"] = "x" * (len(torn) + 1 - len(dump_record(record)))
    assert len(dump_record(record)) == len(torn) + 1  # the torn bytes plus their newline...
    record["content"] = record["content"][:-1]
    assert len(dump_record(record)) == len(torn)  # ...no: exactly the torn line's length
    other.append([record])  # cuts the torn tail, appends a line of the same byte length
    assert log.stat().st_size == len(log.read_bytes())
    with pytest.raises(StoreConflictError):
        stale.append([user("stale")])
    assert [json.loads(line)["content"] for line in log.read_bytes().splitlines()] == [
        "kept",
        record["content"],
    ]


def test_redis_a_session_that_expired_and_was_rebuilt_is_a_conflict(redis_url: str) -> None:
    options = {"prefix": f"t{uuid.uuid4().hex[:8]}:", "ttl": 1}
    stale = open_store(redis_url, session="s", **options)
    stale.append([user("a"), user("b")])
    stale.load()
    time.sleep(2.2)  # the session's keys expire
    rebuilt = open_store(redis_url, session="s", **options)
    assert rebuilt.load().lines == []
    rebuilt.append([user("c"), user("d")])  # the same generation and position again
    with pytest.raises(StoreConflictError):
        stale.append([user("stale")])
    assert [json.loads(line)["content"] for _, line in rebuilt.load().lines] == ["c", "d"]
    stale.close()
    rebuilt.close()


def test_sqlite_a_session_deleted_and_rebuilt_is_a_conflict(tmp_path: Path) -> None:
    target = f"sqlite:///{tmp_path}/db.sqlite"
    stale = open_store(target, session="s")
    stale.append([user("a")])
    stale.load()
    with sqlite3.connect(tmp_path / "db.sqlite") as db:  # an operator restores / deletes
        db.execute("DELETE FROM context_records WHERE session = 's'")
        db.execute("DELETE FROM context_sessions WHERE session = 's'")
    rebuilt = open_store(target, session="s")
    rebuilt.load()
    rebuilt.append([user("b")])
    with pytest.raises(StoreConflictError):
        stale.append([user("stale")])
    stale.close()
    rebuilt.close()


# ---------------------------------------------------------------------- a lost reply, for real
def _via(url: str, port: int) -> str:
    real = urlsplit(url).port
    return url.replace(f":{real}/", f":{port}/")


@pytest.mark.parametrize("server", ["postgres", "redis"])
def test_a_write_whose_reply_is_lost_is_stored_exactly_once(
    server: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(f"{server}_url")
    tag = f"t{uuid.uuid4().hex[:8]}"
    options = {"prefix": f"{tag}_" if server == "postgres" else f"{tag}:"}
    marker = b"COMMIT" if server == "postgres" else b"$6\r\nappend\r\n"
    with reply_dropping_proxy(urlsplit(url).port or 0, marker) as proxy:
        manager = MessageContextManager.open(
            _via(url, proxy.port), session="s", max_tokens=100_000, store_options=options
        )
        manager.add(user("one"))
        proxy.drop_next()
        manager.add(user("two"))  # committed, reply lost, sent again: found by its id
        assert proxy.dropped == 1
        manager.add(user("three"))
        manager.store.close()
    direct = Backend(server, url, options)
    assert contents(direct, "s") == ["one", "two", "three"]


@pytest.mark.parametrize("server", ["postgres", "redis"])
def test_a_lost_reply_during_a_partition_is_resolved_by_retrying(
    server: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(f"{server}_url")
    tag = f"t{uuid.uuid4().hex[:8]}"
    options: dict[str, Any] = {"prefix": f"{tag}_" if server == "postgres" else f"{tag}:"}
    marker = b"COMMIT" if server == "postgres" else b"$6\r\nappend\r\n"
    with reply_dropping_proxy(urlsplit(url).port or 0, marker) as proxy:
        target = _via(url, proxy.port)
        manager = MessageContextManager.open(
            target, session="s", max_tokens=100_000, store_options=options
        )
        manager.add(user("one"))
        proxy.drop_next(10)  # the reply is lost, and so is every resend...
        proxy.down = True  # ...and no new connection gets through for a while

        def heal() -> None:
            time.sleep(0.5)
            proxy.down = False
            proxy.drop_next(0)

        healer = threading.Thread(target=heal)
        healer.start()
        outcome = retrying(
            manager,
            lambda m: m.add(user("two")),
            attempts=30,
            first_delay=0.05,
            max_delay=0.2,
            rng=random.Random(7),
        )
        healer.join()
        assert outcome is None  # it had landed: the catch-up brought it into memory
        assert [m["content"] for m in manager.messages] == ["one", "two"]
        manager.add(user("three"))
        manager.store.close()
    assert contents(Backend(server, url, options), "s") == ["one", "two", "three"]


def test_an_unknown_outcome_names_the_records_it_may_have_written(postgres_url: str) -> None:
    options = {"prefix": f"t{uuid.uuid4().hex[:8]}_"}
    with reply_dropping_proxy(urlsplit(postgres_url).port or 0, b"COMMIT") as proxy:
        manager = MessageContextManager.open(
            _via(postgres_url, proxy.port), session="s", max_tokens=100_000, store_options=options
        )
        proxy.drop_next()
        proxy.down = True
        with pytest.raises(StoreOutcomeUnknownError, match="may have been applied") as caught:
            manager.add(user("lost?"))
        assert len(caught.value.record_ids) == 1
        assert manager.messages == []  # write-ahead: memory unchanged
        proxy.down = False
        assert manager.store.landed(manager, caught.value.record_ids) is True
        assert [m["content"] for m in manager.messages] == ["lost?"]
        manager.store.close()


# ---------------------------------------------------------------------- contention
def _contending_worker(backend: Backend, worker: int, count: int, out: Any) -> None:
    latencies = []
    for i in range(count):
        started = time.monotonic()
        manager = backend.manager("hot")  # a per-request open, as a web worker does
        retrying(manager, lambda m, i=i: m.add(user(f"w{worker}-{i}")), attempts=200)
        manager.store.close()
        latencies.append(time.monotonic() - started)
    out.put((worker, latencies))


@pytest.mark.slow  # sixteen processes racing on every backend
@pytest.mark.parametrize("workers", [16])
def test_sixteen_workers_on_one_session_converge_with_retrying(
    backend: Backend, workers: int
) -> None:
    count = 6
    out = FORK.Queue()
    procs = [
        FORK.Process(target=_contending_worker, args=(backend, w, count, out))
        for w in range(workers)
    ]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    stored = contents(backend, "hot")
    assert sorted(stored) == sorted(f"w{w}-{i}" for w in range(workers) for i in range(count))
    for w in range(workers):  # each worker's own adds in its order
        mine = [s for s in stored if s.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}" for i in range(count)]
    latencies = sorted(t for _, times in results for t in times)
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    print(f"{backend.name}: {len(latencies)} requests, p99 {p99 * 1000:.0f} ms")


# ---------------------------------------------------------------------- session ids, one to one
@pytest.mark.parametrize(
    "hostile", ["../x", "a/b", "a\x00b", ".hidden", "x" * 201, "", "é", "a b", "{tag}", 7, b"bytes"]
)
def test_a_hostile_session_id_is_refused_on_every_backend(backend: Backend, hostile: Any) -> None:
    with pytest.raises(ConfigurationError, match="session id"):
        backend.store(hostile)


def test_ids_that_differ_only_in_punctuation_stay_distinct_on_every_backend(
    backend: Backend,
) -> None:
    ids = ["alice@example.com", "alice_example.com", "alice.example.com", "alice-example.com"]
    for session in ids:
        store = backend.store(session)
        store.append([user(f"for {session}")])
        store.close()
    for session in ids:
        assert contents(backend, session) == [f"for {session}"]
