"""Files replaced or linked under a store: nothing acknowledged may land where no reader looks.

- A SQLite database removed (a cleanup job) or replaced (a restore, another process recreating
  it) while a connection has it open: SQLite keeps committing into the old, unlinked file (or,
  with the -wal left at the path, into the new file's log). A replacement between operations
  reconnects first (a write then conflicts: its head names the old file); a removal raises
  ``StoreError``; the next use works on the file now at the path.
- A JSONL session directory (``<root>/<session>``) that is a symbolic link is refused like a
  linked log or lock file, so a planted link cannot send a session's data outside the root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreConflictError, StoreError
from context_manager.store import connect, copy_session, open_store

from .backends import contents

USER = "user"


def _remove_database(db: Path) -> None:
    for name in (db.name, db.name + "-wal", db.name + "-shm"):
        (db.parent / name).unlink(missing_ok=True)


def _other_process_writes(url: str, content: str) -> None:
    """Another process opens the session (creating the database anew) and adds a message."""
    code = textwrap.dedent(
        f"""
        from context_manager import MessageContextManager
        m = MessageContextManager.open({url!r}, session="s", max_tokens=8000)
        m.add({{"role": "user", "content": {content!r}}})
        m.store.close()
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def _one_message_then_removed(target: Any, db: Path) -> MessageContextManager:
    """A session holding one message, whose database files are then removed."""
    manager = MessageContextManager.open(target, session="s", max_tokens=8000)
    manager.add({"role": USER, "content": "before"})
    _remove_database(db)
    return manager


def test_sqlite_replaced_under_a_handle_raises_a_conflict_and_retry_writes_the_new_file(
    tmp_path: Path,
) -> None:
    db = tmp_path / "app.db"
    url = f"sqlite:///{db}"
    handle = connect(url)
    try:
        manager = _one_message_then_removed(handle, db)
        _other_process_writes(url, "other")

        with pytest.raises(StoreConflictError, match="replaced"):
            manager.add({"role": USER, "content": "mine"})
        manager.store.reload(manager)
        manager.add({"role": USER, "content": "mine"})
        assert [m["content"] for m in manager.messages] == ["other", "mine"]
        manager.store.close()

        # a later request on the same handle (same thread: same connection) sees the new file
        again = MessageContextManager.open(handle, session="s", max_tokens=8000)
        assert [m["content"] for m in again.messages] == ["other", "mine"]
        again.add({"role": USER, "content": "next-request"})
        again.store.close()
    finally:
        handle.close()
    assert contents(url) == ["other", "mine", "next-request"]


def test_sqlite_replaced_under_an_open_store_without_a_handle(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    url = f"sqlite:///{db}"
    manager = _one_message_then_removed(url, db)
    _other_process_writes(url, "other")
    with pytest.raises(StoreConflictError):
        manager.add({"role": USER, "content": "lost?"})
    manager.store.reload(manager)
    manager.add({"role": USER, "content": "kept"})
    manager.store.close()
    assert contents(url) == ["other", "kept"]


def test_sqlite_removed_under_an_open_store_is_a_typed_error(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    url = f"sqlite:///{db}"
    handle = connect(url)
    try:
        manager = _one_message_then_removed(handle, db)
        with pytest.raises(StoreError, match="removed") as raised:
            manager.add({"role": USER, "content": "into the void"})
        assert not isinstance(raised.value, StoreConflictError)
        manager.store.close()
        # the next request starts a new database at the path
        again = MessageContextManager.open(handle, session="s", max_tokens=8000)
        assert again.messages == []
        again.add({"role": USER, "content": "fresh"})
        again.store.close()
    finally:
        handle.close()
    assert contents(url) == ["fresh"]


def test_sqlite_read_after_the_file_was_replaced_reads_the_new_file(tmp_path: Path) -> None:
    """The old connection would read the old, unlinked file (or the new file's -wal laid over
    it): the store reconnects before reading."""
    db = tmp_path / "app.db"
    url = f"sqlite:///{db}"
    store = open_store(url, session="s")
    store.append([{"role": USER, "content": "before"}])
    _remove_database(db)
    _other_process_writes(url, "other")
    assert [json.loads(raw)["content"] for _, raw in store.load().lines] == ["other"]
    store.close()


def test_sqlite_restored_as_the_guide_says_between_requests_takes_each_write_once(
    tmp_path: Path,
) -> None:
    """A backup renamed over the database (its -wal and -shm removed with it, as an operator
    restores one) between two requests of a live worker: the worker's next write goes to the
    restored file once, after a conflict and a reload; the restored file stays sound."""
    import sqlite3

    from context_manager.store import retrying

    db = tmp_path / "app.db"
    url = f"sqlite:///{db}"
    worker = MessageContextManager.open(url, session="s", max_tokens=8000)
    worker.add({"role": USER, "content": "m1"})
    backup = tmp_path / "backup.db"
    with sqlite3.connect(db) as source, sqlite3.connect(backup) as target:
        source.backup(target)
    worker.add({"role": USER, "content": "after the backup"})
    _restore(db, backup)
    retrying(worker, lambda m: m.add({"role": USER, "content": "m2"}))
    worker.store.close()
    assert contents(url) == ["m1", "m2"]
    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def _linked_session(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "user-1")
    return root, outside


def _said(manager: MessageContextManager) -> list[str]:
    return [m["content"] for m in manager.messages]


def _restore(db: Path, backup: Path) -> None:
    """A restore from a backup file as an operator does it: a copy renamed over the database."""
    copy = db.with_name("restore.tmp")
    copy.write_bytes(backup.read_bytes())
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    os.replace(copy, db)


def test_sqlite_restored_from_a_backup_is_read_again_whole(tmp_path: Path) -> None:
    """The restored file holds the session's old epoch and generation; another worker then
    writes past the position a worker's memory (and a parked manager) had reached. Catching
    up from that position would keep the two rows the restore rolled back and miss the rows
    written in their place: both must read the restored file whole instead."""
    import sqlite3

    from context_manager.store import SessionCache, retrying

    db, backup = tmp_path / "chat.db", tmp_path / "backup.db"
    url, options = f"sqlite:///{db}", {"session": "s", "max_tokens": 8_000}
    cached = connect(url, cache=SessionCache())
    worker = MessageContextManager.open(url, **options)
    worker.extend({"role": USER, "content": f"m{i}"} for i in range(3))
    with sqlite3.connect(db) as source, sqlite3.connect(backup) as target:
        source.backup(target)
    worker.extend({"role": USER, "content": f"m{i}"} for i in range(3, 5))  # not in the backup
    parked = MessageContextManager.open(cached, **options)
    assert _said(parked) == [f"m{i}" for i in range(5)]
    parked.store.close()
    _restore(db, backup)
    other = MessageContextManager.open(url, **options)
    other.extend({"role": USER, "content": f"b{i}"} for i in range(4))
    other.store.close()
    retrying(worker, lambda m: m.add({"role": USER, "content": "after the restore"}))
    expected = ["m0", "m1", "m2", "b0", "b1", "b2", "b3", "after the restore"]
    assert contents(url, "s") == expected
    assert _said(worker) == expected
    assert _said(MessageContextManager.open(cached, **options)) == expected


def test_jsonl_session_directory_link_is_refused_on_open(tmp_path: Path) -> None:
    root, outside = _linked_session(tmp_path)
    with pytest.raises(StoreError, match="symbolic link"):
        MessageContextManager.open(f"{root}/", session="user-1", max_tokens=8000)
    assert os.listdir(outside) == []


def test_jsonl_session_directory_link_is_refused_as_a_copy_target(tmp_path: Path) -> None:
    root, outside = _linked_session(tmp_path)
    source = tmp_path / "source.jsonl"
    manager = MessageContextManager.open(source, max_tokens=8000)
    manager.add({"role": USER, "content": "secret"})
    manager.store.close()
    with pytest.raises(StoreError, match="symbolic link"):
        copy_session(source, f"{root}/", to_session="user-1")
    assert os.listdir(outside) == []


def test_jsonl_session_directory_linked_after_open_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    manager = MessageContextManager.open(f"{root}/", session="user-1", max_tokens=8000)
    manager.add({"role": USER, "content": "first"})
    (root / "user-1").rename(tmp_path / "moved")
    os.symlink(outside, root / "user-1")
    with pytest.raises(StoreError):
        manager.add({"role": USER, "content": "secret"})
    with pytest.raises(StoreError, match="symbolic link"):
        manager.store.reload(manager)
    with pytest.raises(StoreError):
        manager.add({"role": USER, "content": "secret"})
    assert os.listdir(outside) == []


def test_a_linked_root_is_the_callers_choice(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "root")
    manager = MessageContextManager.open(f"{tmp_path / 'root'}/", session="s", max_tokens=8000)
    manager.add({"role": USER, "content": "kept"})
    manager.store.close()
    assert (real / "s" / "context.jsonl").is_file()


def test_jsonl_offload_directory_linked_after_open_is_refused(tmp_path: Path) -> None:
    from context_manager.store.offload import offload_area

    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "theirs.meta").write_text('{"key": null, "live": true}')
    area = offload_area(open_store(f"{root}/", session="s"))
    handle = area.put("a big tool result " * 100)
    area_dir = root / "s" / "context.jsonl.offload"
    for name in os.listdir(area_dir):
        os.remove(area_dir / name)
    area_dir.rmdir()
    area_dir.symlink_to(elsewhere)  # planted after the area was opened
    with pytest.raises(StoreError, match="symbolic link"):
        area.put("another result " * 100)
    with pytest.raises(StoreError, match="symbolic link"):
        area.get(handle)
    with pytest.raises(StoreError, match="symbolic link"):
        area.delete_entries()
    assert sorted(os.listdir(elsewhere)) == ["theirs.meta"]  # nothing written or removed there
