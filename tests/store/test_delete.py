"""Deleting a session for good on every backend (JSONL, SQLite, real Redis, real PostgreSQL):
every generation and offloaded result goes, other sessions stay, a stale writer conflicts,
the handle's session cache forgets it, and the CLI asks before deleting."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.cli import main
from context_manager.errors import OffloadNotFoundError, StoreConflictError, StoreError
from context_manager.offload import recall
from context_manager.store import (
    SessionCache,
    aconnect,
    adelete_session,
    connect,
    delete_session,
    open_store,
)
from context_manager.store.offload import attach_store_offload, offload_area

from .backends import Backend, user
from .servers import RedisCluster


def contents(manager: MessageContextManager) -> list[str]:
    return [m["content"] for m in manager.messages]


def build(backend: Backend, session: str) -> tuple[MessageContextManager, str]:
    """A session with three generations (a revert, a clear) and one offloaded result; its
    manager and the result's handle."""
    manager = backend.manager(session)
    area = attach_store_offload(manager)
    manager.add(user(f"{session} one"))
    checkpoint = manager.checkpoint()
    manager.add(user(f"{session} two"))
    manager.revert_to(checkpoint)
    manager.add(user(f"{session} three"))
    manager.clear()
    manager.add(user(f"{session} four"))
    handle = area.put(f"{session} tool output " * 50)
    return manager, handle


def generations(backend: Backend, session: str) -> int:
    store = backend.store(session)
    try:
        if backend.name == "jsonl":
            return len(list(Path(backend.target, session).glob("context*.jsonl")))
        return len(store.generations())  # type: ignore[attr-defined]
    finally:
        store.close()


def test_delete_removes_every_generation_and_offloaded_result(backend: Backend) -> None:
    doomed, handle = build(backend, "s1")
    kept, kept_handle = build(backend, "s2")
    doomed.store.close()
    kept.store.close()
    assert generations(backend, "s1") == 3
    old_area = offload_area(backend.store("s1"))

    assert delete_session(backend.target, session="s1", **backend.options) is True
    if backend.name == "jsonl":  # nothing left on disk under the session's name
        assert sorted(os.listdir(backend.target)) == ["s2"]

    assert generations(backend, "s1") == 0
    with pytest.raises(OffloadNotFoundError):
        recall(old_area, handle)
    with pytest.raises(OffloadNotFoundError):
        offload_area(backend.store("s1")).get(handle)
    store = backend.store("s2")
    assert store.sessions() == ["s2"]
    store.close()
    # the other session is untouched: its history and its offloaded result
    again = backend.manager("s2")
    assert contents(again) == ["s2 four"]
    assert "s2 tool output" in offload_area(backend.store("s2")).get(kept_handle).text
    assert generations(backend, "s2") == 3
    again.store.close()


def test_delete_then_reopen_is_an_empty_session_that_works(backend: Backend) -> None:
    first, _ = build(backend, "s1")
    first.store.close()
    assert delete_session(backend.target, session="s1", **backend.options) is True
    reopened = backend.manager("s1")
    assert reopened.messages == []
    reopened.add(user("a new start"))
    reopened.store.close()
    assert contents(backend.manager("s1")) == ["a new start"]
    assert generations(backend, "s1") == 1


def test_the_deleting_store_may_start_the_session_again(backend: Backend) -> None:
    store = backend.store("s1")
    store.load()
    store.append([user("before")])
    assert store.delete() is True  # type: ignore[attr-defined]
    assert store.load().lines == []
    assert store.append([user("after")]) == [0]
    store.close()
    assert contents(backend.manager("s1")) == ["after"]


def test_deleting_a_missing_session_returns_false(backend: Backend) -> None:
    build(backend, "s2")[0].store.close()
    assert delete_session(backend.target, session="nobody", **backend.options) is False
    store = backend.store("s2")
    assert store.sessions() == ["s2"]
    store.close()
    if backend.name == "jsonl":
        assert sorted(os.listdir(backend.target)) == ["s2"]


def test_a_stale_writer_gets_a_conflict_not_half_a_session(backend: Backend) -> None:
    stale, _ = build(backend, "s1")
    assert delete_session(backend.target, session="s1", **backend.options) is True
    with pytest.raises(StoreConflictError):
        stale.add(user("written after the delete"))
    with pytest.raises(StoreConflictError):
        stale.checkpoint()
    fresh = backend.manager("s1")
    assert fresh.messages == []  # the stale writes left nothing behind
    fresh.store.close()
    # a stale store object (not a manager) conflicts the same way
    store = backend.store("s3")
    store.load()
    store.append([user("x")])
    delete_session(backend.target, session="s3", **backend.options)
    with pytest.raises(StoreConflictError):
        store.append([user("y")])
    store.close()


def test_the_handle_cache_forgets_the_deleted_session(backend: Backend) -> None:
    cache = SessionCache()
    stores = connect(backend.target, cache=cache, **backend.options)
    manager = MessageContextManager.open(stores, session="s1", max_tokens=100_000)
    manager.add(user("remember me"))
    manager.store.close()  # parks the manager in the cache
    assert len(cache) == 1
    assert delete_session(stores, session="s1") is True
    assert len(cache) == 0
    reopened = MessageContextManager.open(stores, session="s1", max_tokens=100_000)
    assert reopened.messages == []
    reopened.store.close()
    stores.close()


def test_a_store_passed_in_must_be_the_session_named(backend: Backend) -> None:
    from context_manager.errors import ConfigurationError

    store = backend.store("s1")
    store.load()
    store.append([user("x")])
    with pytest.raises(ConfigurationError, match="not 's2'"):
        delete_session(store, session="s2")
    assert delete_session(store) is True  # the caller's store: used, left open
    assert store.load().lines == []
    store.close()


async def add(manager: MessageContextManager, text: str) -> None:
    async with manager.store.batch():  # type: ignore[attr-defined]
        manager.add(user(text))


def test_async_delete(backend: Backend) -> None:
    async def scenario() -> None:
        cache = SessionCache()
        stores = await aconnect(backend.target, cache=cache, **backend.options)
        manager = await MessageContextManager.aopen(stores, session="s1", max_tokens=100_000)
        await add(manager, "one")
        stale = await MessageContextManager.aopen(stores, session="s1", max_tokens=100_000)
        other = await MessageContextManager.aopen(stores, session="s2", max_tokens=100_000)
        await add(other, "kept")
        await other.store.aclose()  # type: ignore[attr-defined]
        await manager.store.aclose()  # type: ignore[attr-defined]
        assert await adelete_session(stores, session="s1") is True
        assert await adelete_session(stores, session="s1") is False
        assert len(cache) <= 1  # s2 may stay parked; s1 is gone
        with pytest.raises(StoreConflictError):
            await add(stale, "late")
        session = await stores.session("s1")
        assert (await session.load()).lines == []
        assert await session.sessions() == ["s2"]
        await session.aclose()
        await stale.store.aclose()  # type: ignore[attr-defined]
        await stores.aclose()

    asyncio.run(scenario())


def test_async_delete_by_url(backend: Backend) -> None:
    build(backend, "s1")[0].store.close()

    async def scenario() -> bool:
        return await adelete_session(backend.target, session="s1", **backend.options)

    assert asyncio.run(scenario()) is True
    assert backend.manager("s1").messages == []


def test_a_symlink_in_a_jsonl_session_is_removed_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    (outside / "nested").mkdir()
    (outside / "nested" / "deep.txt").write_text("keep me too")
    manager = MessageContextManager.open(str(root), session="s1", max_tokens=10_000)
    manager.add(user("hi"))
    manager.store.close()
    session = root / "s1"
    (session / "context_7.jsonl").symlink_to(outside / "precious.txt")
    (session / "context.jsonl.offload").symlink_to(outside)

    assert delete_session(str(root), session="s1") is True

    assert not session.exists() and os.listdir(root) == []
    assert (outside / "precious.txt").read_text() == "keep me"
    assert (outside / "nested" / "deep.txt").read_text() == "keep me too"


def test_a_jsonl_session_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    elsewhere = tmp_path / "elsewhere"
    MessageContextManager.open(str(elsewhere), session="real", max_tokens=10_000).add(user("x"))
    root.mkdir()
    (root / "s1").symlink_to(elsewhere / "real", target_is_directory=True)
    with pytest.raises(StoreError, match="symbolic link"):
        delete_session(str(root), session="s1")
    assert (elsewhere / "real" / "context.jsonl").exists()


def test_a_single_jsonl_log_is_deleted_with_its_generations(tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    manager = MessageContextManager.open(str(log), max_tokens=10_000)
    manager.add(user("one"))
    manager.clear()
    manager.add(user("two"))
    area = attach_store_offload(manager)
    handle = area.put("output " * 100)
    (tmp_path / "unrelated.jsonl").write_text("{}\n")
    manager.store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "chat.jsonl",
        "chat.jsonl.lock",
        "chat.jsonl.offload",
        "chat_1.jsonl",
        "unrelated.jsonl",
    ]
    assert delete_session(str(log)) is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unrelated.jsonl"]
    with pytest.raises(OffloadNotFoundError):
        recall(area, handle)


def test_a_jsonl_writer_waiting_on_the_lock_sees_the_delete(tmp_path: Path) -> None:
    """A second process holding the session open: its next write conflicts, and it takes the
    new lock file (not the removed one), so writers that come after still exclude it."""
    root = str(tmp_path / "sessions")
    writer = open_store(root, session="s1")
    writer.load()
    writer.append([user("a")])
    assert delete_session(root, session="s1") is True
    with pytest.raises(StoreConflictError):
        writer.append([user("b")])
    fresh = open_store(root, session="s1")
    fresh.load()
    fresh.append([user("c")])
    writer.load()  # catches up, on the same lock file as ``fresh``
    assert writer.append([user("d")]) == [1]
    with pytest.raises(StoreConflictError):
        fresh.append([user("e")])
    writer.close()
    fresh.close()


@pytest.mark.slow
def test_delete_on_a_redis_cluster(redis_cluster_nodes: RedisCluster) -> None:
    url, prefix = redis_cluster_nodes.url, f"t{uuid.uuid4().hex[:8]}:"
    options: dict[str, Any] = {"cluster": True, "prefix": prefix}
    sessions = [f"user-{i}" for i in range(6)]
    handles = {}
    for session in sessions:
        manager = MessageContextManager.open(
            url, session=session, max_tokens=100_000, store_options=options
        )
        manager.add(user(f"{session} one"))
        manager.clear()
        manager.add(user(f"{session} two"))
        handles[session] = attach_store_offload(manager).put("out " * 100)
        manager.store.close()
    stale = MessageContextManager.open(
        url, session="user-0", max_tokens=100_000, store_options=options
    )
    for session in sessions[::2]:
        assert delete_session(url, session=session, **options) is True
    with pytest.raises(StoreConflictError):
        stale.add(user("late"))
    stale.store.close()
    store = open_store(url, session="user-1", **options)
    assert store.sessions() == sessions[1::2]
    for session in sessions:
        area = offload_area(open_store(url, session=session, **options))
        if session in sessions[::2]:
            with pytest.raises(OffloadNotFoundError):
                area.get(handles[session])
            assert open_store(url, session=session, **options).generations() == []  # type: ignore[attr-defined]
        else:
            assert area.get(handles[session]).text.startswith("out ")
    store.close()


def test_a_postgres_writer_waiting_for_the_row_a_delete_removes_conflicts(
    postgres_url: str,
) -> None:
    """The writer is blocked on the session's row lock when a delete commits: it finds no row
    and reports a conflict (it wrote nothing), rather than failing untyped or writing."""
    import psycopg

    prefix = f"t{uuid.uuid4().hex[:8]}_"
    writer = open_store(postgres_url, session="s1", prefix=prefix)
    writer.load()
    writer.append([user("a")])
    outcome: list[BaseException | None] = []
    with psycopg.connect(postgres_url, autocommit=False) as deleter:
        deleter.execute(f"SELECT 1 FROM {prefix}sessions WHERE session = 's1' FOR UPDATE")
        thread = threading.Thread(target=lambda: outcome.append(attempt(writer)))
        thread.start()
        with psycopg.connect(postgres_url, autocommit=True) as watcher:
            for _ in range(500):  # until the writer waits for the row lock
                query = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                row = watcher.execute(query).fetchone()
                if row is not None and row[0]:
                    break
                time.sleep(0.01)
        deleter.execute(f"DELETE FROM {prefix}records WHERE session = 's1'")
        deleter.execute(f"DELETE FROM {prefix}sessions WHERE session = 's1'")
        deleter.commit()
        thread.join(30)
    assert isinstance(outcome[0], StoreConflictError)
    assert "deleted while this write waited" in str(outcome[0])
    assert open_store(postgres_url, session="s1", prefix=prefix).load().lines == []
    writer.close()


def attempt(store: Any) -> BaseException | None:
    try:
        store.append([user("b")])
    except BaseException as exc:
        return exc
    return None


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_cli_asks_before_deleting(backend: Backend, capsys: pytest.CaptureFixture[str]) -> None:
    plain = Backend(backend.name, backend.target)  # the CLI's default table / key prefix
    session = f"cli-{uuid.uuid4().hex[:8]}"
    build(plain, session)[0].store.close()
    status, said = cli("sessions", "delete", plain.target, session, capsys=capsys)
    assert status == 1
    assert f"would delete session {session!r}" in said and "--yes" in said
    assert "1 records" in said
    assert contents(plain.manager(session)) == [f"{session} four"]  # nothing deleted

    status, said = cli("sessions", "delete", plain.target, session, "--yes", capsys=capsys)
    assert status == 0 and f"deleted session {session!r}" in said
    assert plain.manager(session).messages == []
    status, said = cli("sessions", "delete", plain.target, session, "--yes", capsys=capsys)
    assert status == 1 and f"no session {session!r}" in said


def test_cli_never_prints_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("redis")
    url = "redis://:hunter2-secret@127.0.0.1:1/0"
    for extra in ((), ("--yes",)):
        status, said = cli("sessions", "delete", url, "s1", *extra, capsys=capsys)
        assert status == 2
        assert "hunter2" not in said and "127.0.0.1:1" in said


def test_a_directory_holding_other_files_is_not_deleted(tmp_path: Path) -> None:
    """A wrong root or session id (``delete_session(home, session="Documents")``) must not
    remove someone's files: only a directory of a session's own files is deleted."""
    root = tmp_path / "home"
    documents = root / "Documents"
    documents.mkdir(parents=True)
    (documents / "thesis.txt").write_text("years of work")
    with pytest.raises(StoreError, match="not a session's"):
        delete_session(str(root), session="Documents")
    assert (documents / "thesis.txt").read_text() == "years of work"
    manager = MessageContextManager.open(str(root), session="s1", max_tokens=10_000)
    manager.add(user("hi"))
    manager.store.close()
    (root / "s1" / "notes.md").write_text("mine")
    with pytest.raises(StoreError):
        delete_session(str(root), session="s1")
    assert (root / "s1" / "notes.md").read_text() == "mine"
    assert (root / "s1" / "context.jsonl").exists()
