"""One behavioural suite for every store backend: JSONL, SQLite, Redis, PostgreSQL.

Redis and PostgreSQL are real servers started by ``conftest.py``. Each test gets its own
namespace (a directory, a database file, a Redis key prefix, a table prefix), so tests do not
see each other's sessions.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import (
    CheckpointNotFoundError,
    ConfigurationError,
    ContextManagerError,
    StoreConflictError,
    StoreError,
)
from context_manager.store.protocol import Store
from context_manager.store.targets import open_store

from .backends import FORK, Backend, user


def parsed(store: Store, start: int = 0) -> list[tuple[int, dict[str, Any]]]:
    """The records from ``start`` on. A JSONL line of a batch also holds its place in the batch
    (``_cm.batch``: how a reader tells a batch a killed writer left unfinished); that place is
    the file format's, not the record's, so it is dropped here."""
    out = []
    for pos, line in store.load(start).lines:
        record = json.loads(line)
        attrs = record.get("_cm")
        if isinstance(attrs, dict) and attrs.pop("batch", None) is not None and not attrs:
            del record["_cm"]
        out.append((pos, record))
    return out


# ---------------------------------------------------------------------- record level
def test_append_returns_positions_and_load_reads_from_a_position(backend: Backend) -> None:
    store = backend.store()
    assert store.load().lines == [] and store.sessions() == []
    assert store.append([user("a"), user("b")]) == [0, 1]
    assert store.append([user("c")]) == [2]
    assert parsed(store) == [(0, user("a")), (1, user("b")), (2, user("c"))]
    assert parsed(store, 2) == [(2, user("c"))]
    assert store.head is not None and store.head.position == 3
    text = "é😀 \u2028 " * 1000 + " " * 10_000
    assert store.append([user(text)]) == [3]
    assert parsed(backend.store(), 3) == [(3, user(text))]
    store.close()


def test_checkpoint_revert_and_clear_rotate_keeping_old_generations(backend: Backend) -> None:
    store = backend.store()
    store.append([user("a")])
    assert store.checkpoint() == 0
    store.append([user("b")])
    assert store.checkpoint() == 1
    store.append([user("c")])
    store.revert_to(1)
    assert [r.get("content") for _, r in parsed(store)] == ["a", None, "b"]
    assert parsed(store)[1][1] == {"role": "_checkpoint", "id": 0}
    assert store.checkpoint() == 1  # ids from the reverted one are reused
    assert backend.generations(store) == 2
    with pytest.raises(CheckpointNotFoundError):
        store.revert_to(7)
    store.clear()
    assert store.load().lines == []
    assert store.checkpoint() == 0
    assert backend.generations(store) == 3
    store.close()


def test_sessions_are_isolated_and_listed(backend: Backend) -> None:
    a, b = backend.store("alpha"), backend.store("beta")
    a.append([user("in a")])
    b.append([user("in b"), user("b2")])
    assert [r["content"] for _, r in parsed(a)] == ["in a"]
    assert [r["content"] for _, r in parsed(b)] == ["in b", "b2"]
    assert a.sessions() == ["alpha", "beta"] == b.sessions()
    b.clear()
    assert [r["content"] for _, r in parsed(a)] == ["in a"]
    for bad in ("", "../x", "a/b", ".hidden", "x" * 201, "\ud800", 5):
        with pytest.raises(ConfigurationError):
            backend.store(bad)  # type: ignore[arg-type]


def test_a_stale_writer_gets_a_conflict_and_writes_nothing(backend: Backend) -> None:
    first, second = backend.store(), backend.store()
    first.load()
    second.load()
    first.append([user("first")])
    with pytest.raises(StoreConflictError):
        second.append([user("second")])
    with pytest.raises(StoreConflictError):
        second.checkpoint()
    second.load()
    assert second.append([user("second")]) == [1]
    first.clear()  # a clear moves the other writer's view out of date too
    with pytest.raises(StoreConflictError):
        second.append([user("third")])
    assert [r["content"] for _, r in parsed(backend.store())] == []


# ---------------------------------------------------------------------- manager level
def test_manager_round_trip_through_every_backend(backend: Backend) -> None:
    manager = backend.manager(system_prompt="be brief")
    manager.add(user("hi"), pinned=True)
    manager.add(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }
    )
    manager.add({"role": "tool", "tool_call_id": "c1", "content": "42 é😀"}, priority=3)
    manager.record_usage(1234)
    checkpoint = manager.checkpoint()
    manager.add(user("later"))
    reopened = backend.manager()
    assert reopened.messages == manager.messages
    assert reopened.system_prompt == "be brief"
    assert reopened.get_context() == manager.get_context()
    reopened.revert_to(checkpoint)
    assert reopened.messages == manager.messages[:3]
    assert backend.manager().messages == manager.messages[:3]
    with pytest.raises(ContextManagerError):  # write-ahead: a value with no lossless JSON form
        reopened.add(user("\ud800"))
    assert len(reopened.messages) == 3
    reopened.clear()
    assert backend.manager().messages == []


def test_a_stale_manager_reloads_and_retries(backend: Backend) -> None:
    one, two = backend.manager(), backend.manager()
    one.add(user("from one"))
    with pytest.raises(StoreConflictError):
        two.add(user("from two"))
    assert two.messages == []  # nothing changed in memory either
    two.store.reload(two)
    two.add(user("from two"))
    assert [m["content"] for m in backend.manager().messages] == ["from one", "from two"]


def _per_request_worker(backend: Backend, worker: int, count: int) -> None:
    for i in range(count):
        while True:
            manager = backend.manager("shared")
            try:
                manager.add(user(f"w{worker}-{i}"))
                break
            except StoreConflictError:
                continue
            finally:
                manager.store.close()
    os._exit(0)


def test_several_processes_append_without_loss_duplication_or_reordering(
    backend: Backend,
) -> None:
    workers, count = 4, 12
    backend.manager("shared").store.close()  # tables / directories exist before the race
    processes = [
        FORK.Process(target=_per_request_worker, args=(backend, w, count)) for w in range(workers)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
        assert process.exitcode == 0
    texts = [m["content"] for m in backend.manager("shared").messages]
    assert sorted(texts) == sorted(f"w{w}-{i}" for w in range(workers) for i in range(count))
    for w in range(workers):
        mine = [t for t in texts if t.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}" for i in range(count)]


def _endless_writer(backend: Backend, acks: Any) -> None:
    manager = backend.manager("victim")
    i = 0
    while True:
        manager.add(user(f"m{i}" + "x" * (i % 50)))
        os.write(acks, f"{i}\n".encode())
        i += 1


@pytest.mark.parametrize("after", [3, 40])
def test_kill_9_mid_append_loses_no_acknowledged_record(backend: Backend, after: int) -> None:
    backend.manager("victim").store.close()
    read_end, write_end = os.pipe()
    process = FORK.Process(target=_endless_writer, args=(backend, write_end))
    process.start()
    os.close(write_end)
    # Kill once the writer has acknowledged `after` records (not after a fixed delay: a loaded
    # CI machine may take a second to start it), while it is busy appending the next ones.
    received = b""
    deadline = time.monotonic() + 60
    while received.count(b"\n") < after and time.monotonic() < deadline:
        chunk = os.read(read_end, 4096)
        if not chunk:
            break
        received += chunk
    assert process.pid is not None
    os.kill(process.pid, signal.SIGKILL)
    process.join(10)
    with os.fdopen(read_end, "rb") as pipe:
        received += pipe.read()
    acked = [int(line) for line in received.split(b"\n") if line]
    assert len(acked) >= after, "the writer acknowledged too little before it was killed"
    # Read the store itself: the manager's memory may evict old messages past its budget.
    texts = [json.loads(line)["content"] for _, line in backend.store("victim").load().lines]
    stored = [int(t[1:].rstrip("x")) for t in texts]
    assert stored == list(range(len(stored)))  # in order, no gaps, no duplicates
    assert len(stored) >= len(acked)  # every acknowledged record is there
    backend.manager("victim").add(user("after the crash"))  # and the store still works


def test_redis_ttl_expires_a_session(redis_url: str) -> None:
    prefix = "ttl" + uuid.uuid4().hex[:6] + ":"
    store = open_store(redis_url, session="brief", prefix=prefix, ttl=1)
    store.append([user("gone soon")])
    assert store.sessions() == ["brief"]
    time.sleep(2.1)
    assert store.sessions() == []
    assert open_store(redis_url, session="brief", prefix=prefix).load().lines == []
    with pytest.raises(ConfigurationError):
        open_store(redis_url, session="x", ttl=0)


def test_unreachable_servers_and_bad_targets_are_typed_errors(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError):
        open_store("redis://127.0.0.1:1/0").load()
    with pytest.raises(StoreError):
        open_store("postgresql://nobody@127.0.0.1:1/x", connect_timeout=1)
    with pytest.raises(ConfigurationError):
        open_store("mysql://host/db")
    with pytest.raises(ConfigurationError):
        open_store("sqlite://relative.db")
    with pytest.raises(ConfigurationError):
        open_store(42)  # type: ignore[arg-type]


def test_copy_between_backends_and_the_sessions_cli(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from context_manager.cli import main

    manager = backend.manager("src", system_prompt="sys")
    manager.add(user("one"))
    manager.checkpoint()
    manager.add(user("two"), pinned=True)
    target = f"sqlite:///{tmp_path}/copy.db"
    from context_manager.store import copy_session

    if backend.options:  # prefixes are store options, so copy through the API
        assert copy_session(backend.store("src"), target, session="src") == 4
    else:
        assert main(["sessions", "copy", backend.target, target, "--session", "src"]) == 0
    copied = MessageContextManager.open(target, session="src", max_tokens=1_000_000)
    assert copied.messages == manager.messages and copied.system_prompt == "sys"
    back = copy_session(target, backend.store("back"), session="src")
    assert back == len(backend.store("src").load().lines)
    assert backend.manager("back").messages == manager.messages
    capsys.readouterr()
    assert main(["sessions", "list", target]) == 0
    assert capsys.readouterr().out == "src\n"
    with pytest.raises(ConfigurationError):
        copy_session(target, backend.store("back"), session="src")  # never merges histories


def test_a_priority_every_store_reads_back_is_the_only_one_accepted(backend: Backend) -> None:
    """A priority is stored as a JSON number, which readers take exactly up to 2**53: the
    largest ones round-trip, a larger one is refused on add (it used to be written, then
    skipped on reopen as a corrupt line: an acknowledged message lost)."""
    manager = backend.manager()
    manager.add(user("low"), priority=-(2**53))
    manager.add(user("high"), priority=2**53)
    with pytest.raises(ConfigurationError, match="2\\*\\*53"):
        manager.add(user("too high"), priority=2**63)
    reopened = backend.manager(strategy="priority")
    assert reopened.messages == [user("low"), user("high")]
    assert [item.priority for item in reopened.history()] == [-(2**53), 2**53]
