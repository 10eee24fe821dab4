"""Hostile files and several writers: permissions, symlink attacks, tampered indexes, stale
temporary files, per-line CRC, bad ``_cm`` fields, NaN, replayed callbacks, per-request opens
from several processes."""

from __future__ import annotations

import json
import logging
import math
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from context_manager.errors import (
    InvalidMessageError,
    SessionNotFoundError,
    StoreConflictError,
    StoreCorruptionError,
    StoreError,
)
from context_manager.manager import MessageContextManager
from context_manager.store import JsonlLog, SessionIndex
from context_manager.store.records import encode_message

ROOT = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def open_manager(path: Path | str, **options: Any) -> MessageContextManager:
    return MessageContextManager.open(path, max_tokens=100_000, **options)


# --- permissions --------------------------------------------------------------------------------
def test_logs_rotations_locks_and_index_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)  # the usual umask: 0644 files unless we ask for less
    try:
        directory = tmp_path / "new" / "dir"
        manager = open_manager(directory / "context.jsonl")
        manager.add({"role": "user", "content": "secret"})
        manager.checkpoint()
        manager.add({"role": "user", "content": "more"})
        manager.revert_to(0)
        manager.clear()
        index = SessionIndex(directory / "sessions.json")
        index.resolve("k")
    finally:
        os.umask(old)
    files = sorted(p for p in directory.iterdir())
    assert {p.name for p in files} >= {
        "context.jsonl",
        "context.jsonl.lock",
        "context_1.jsonl",
        "context_2.jsonl",
        "sessions.json",
        "sessions.json.lock",
    }
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
    assert mode(directory) == 0o700 and mode(directory.parent) == 0o700


def test_sqlite_database_and_its_wal_files_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        manager = open_manager(f"sqlite:///{tmp_path}/db/chat.db")
        manager.add({"role": "user", "content": "secret"})
        files = sorted((tmp_path / "db").iterdir())
        modes = {p.name: mode(p) for p in files}
        manager.store.close()
    finally:
        os.umask(old)
    assert {"chat.db", "chat.db-wal"} <= set(modes)
    assert modes == {name: 0o600 for name in modes}
    assert mode(tmp_path / "db") == 0o700


def test_symlinked_sqlite_database_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real.db").write_bytes(b"")
    (tmp_path / "link.db").symlink_to(tmp_path / "real.db")
    with pytest.raises(StoreError, match="symbolic link"):
        open_manager(f"sqlite:///{tmp_path}/link.db")


# --- symlinks: refused with a typed error -------------------------------------------------------
def test_symlinked_log_is_refused_not_followed_or_replaced(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("precious\n")
    link = tmp_path / "context.jsonl"
    link.symlink_to(target)
    with pytest.raises(StoreError, match="symbolic link"):
        open_manager(link)
    log = JsonlLog(link)
    with pytest.raises(StoreError, match="symbolic link"):
        log.append_message({"role": "user", "content": "x"})
    with pytest.raises(StoreError, match="symbolic link"):
        log.clear()
    assert link.is_symlink() and target.read_text() == "precious\n"


def test_planted_temp_symlink_is_never_written_through(tmp_path: Path) -> None:
    """The old temp name was predictable (.<name>.<pid>.tmp): a planted link redirected revert."""
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch\n")
    path = tmp_path / "context.jsonl"
    manager = open_manager(path)
    manager.add({"role": "user", "content": "a"})
    manager.checkpoint()
    manager.add({"role": "user", "content": "b"})
    for guess in (os.getpid(), os.getpid() + 1):
        (tmp_path / f".context.jsonl.{guess}.tmp").symlink_to(victim)
    manager.revert_to(0)
    assert victim.read_text() == "do not touch\n"
    assert [m["content"] for m in open_manager(path).messages] == ["a"]


def test_symlinked_lock_file_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("x")
    (tmp_path / "context.jsonl.lock").symlink_to(victim)
    with pytest.raises(StoreError, match="symbolic link"):
        JsonlLog(tmp_path / "context.jsonl").append_message({"role": "user", "content": "x"})


def test_stale_temp_files_are_removed_on_the_next_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "context.jsonl"
    open_manager(path).add({"role": "user", "content": "a"})
    stale = [tmp_path / ".context.jsonl.12345.tmp", tmp_path / ".context.jsonl.abcdef0123.tmp"]
    for p in stale:
        p.write_text("half a rewrite")
    (tmp_path / ".sessions.json.999.tmp").write_text("{")
    unrelated = tmp_path / ".other.jsonl.1.tmp"
    unrelated.write_text("not ours")
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        assert [m["content"] for m in open_manager(path).messages] == ["a"]
    SessionIndex(tmp_path / "sessions.json").load()
    assert not any(p.exists() for p in stale)
    assert not (tmp_path / ".sessions.json.999.tmp").exists()
    assert unrelated.exists()
    assert "stale temporary file" in caplog.text


# --- sessions.json: tampered paths stay inside the directory -------------------------------------
@pytest.mark.parametrize(
    "entry",
    [
        {"sessionId": "../../etc/passwd"},
        {"sessionId": ".."},
        {"sessionId": "a/b"},
        {"sessionId": "ok", "sessionFile": "/etc/passwd"},
        {"sessionId": "ok", "sessionFile": "../outside.jsonl"},
        {"sessionId": "ok", "sessionFile": "sub/../../outside.jsonl"},
    ],
)
def test_tampered_session_paths_are_refused(tmp_path: Path, entry: dict[str, str]) -> None:
    home = tmp_path / "index"
    home.mkdir()
    (home / "sessions.json").write_text(json.dumps({"k": entry}))
    index = SessionIndex(home / "sessions.json")
    found = index.get("k")
    assert found is not None
    with pytest.raises(StoreCorruptionError, match=r"outside|plain file name"):
        index.session_path(found)


@pytest.mark.parametrize("entry", ["s1", {"sessionId": "s1"}, None, 7])
def test_session_path_of_something_not_an_entry_is_a_configuration_error(
    tmp_path: Path, entry: object
) -> None:
    from context_manager.errors import ConfigurationError

    index = SessionIndex(tmp_path / "sessions.json")
    with pytest.raises(ConfigurationError, match="SessionEntry"):
        index.session_path(entry)  # type: ignore[arg-type]


def test_session_file_link_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "index"
    home.mkdir()
    (home / "s.jsonl").symlink_to(tmp_path / "outside.jsonl")
    (home / "sessions.json").write_text(json.dumps({"k": {"sessionId": "s"}}))
    index = SessionIndex(home / "sessions.json")
    entry = index.get("k")
    assert entry is not None
    with pytest.raises(StoreCorruptionError, match="outside"):
        index.session_path(entry)


def test_valid_session_paths_resolve_inside(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "sessions.json", new_id=lambda: "abc")
    entry = index.resolve("k")
    assert index.session_path(entry) == (tmp_path / "abc.jsonl").resolve()
    with pytest.raises(SessionNotFoundError, match="resolve"):
        index.record_usage("nobody", input_tokens=1)


@pytest.mark.parametrize(
    "content", [b"\xff\xfe{}", b"[" * 100_000, b'{"k": {"sessionId": "a", "updatedAt": "x"}}']
)
def test_bad_index_files_give_typed_errors(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "sessions.json").write_bytes(content)
    with pytest.raises(StoreCorruptionError):
        SessionIndex(tmp_path / "sessions.json").load()


# --- several writers ------------------------------------------------------------------------------
def test_second_manager_on_a_stale_view_is_refused_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    first, second = open_manager(path), open_manager(path)
    first.add({"role": "user", "content": "from first"})
    with pytest.raises(StoreConflictError, match="another writer"):
        second.add({"role": "user", "content": "from second"})
    assert second.messages == []  # write-ahead: memory unchanged
    second = open_manager(path)  # reopen sees the other writer's line, then writes
    second.add({"role": "user", "content": "from second"})
    assert [m["content"] for m in open_manager(path).messages] == ["from first", "from second"]


WORKER = textwrap.dedent(
    """
    import sys, time
    from context_manager.errors import StoreConflictError
    from context_manager.manager import MessageContextManager
    path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(count):
        while True:  # one request: open, add, close; retry when another request won the race
            manager = MessageContextManager.open(path, max_tokens=10_000_000)
            try:
                manager.add({"role": "user", "content": f"{name}-{i}"})
            except StoreConflictError:
                continue
            finally:
                manager.store.close()
            print(f"{name}-{i}", flush=True)  # acknowledged
            break
    """
)


def test_per_request_opens_from_several_processes_lose_no_acknowledged_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "context.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), f"p{n}", "25"],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in range(4)
    ]
    acknowledged = []
    for proc in workers:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        acknowledged += out.split()
    restored = [m["content"] for m in open_manager(path).messages]
    assert sorted(restored) == sorted(acknowledged) and len(acknowledged) == 100
    for n in range(4):  # each process's lines in its own order
        mine = [c for c in restored if c.startswith(f"p{n}-")]
        assert mine == [f"p{n}-{i}" for i in range(25)]


# --- integrity and hostile lines ------------------------------------------------------------------
def test_crc_detects_a_change_that_still_parses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "context.jsonl"
    manager = open_manager(path, integrity=True, system_prompt="sys")
    manager.add({"role": "user", "content": "pay alice 10"})
    manager.add({"role": "user", "content": "ok"}, priority=2)
    manager.checkpoint()
    lines = path.read_bytes().splitlines(keepends=True)
    assert all(b'"crc":' in line or b'"crc": ' in line for line in lines)
    lines[1] = lines[1].replace(b"alice 10", b"alice 99")  # valid JSON, wrong content
    path.write_bytes(b"".join(lines))
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        restored = open_manager(path, integrity=True)
    assert [m["content"] for m in restored.messages] == ["ok"]
    assert "line 2" in caplog.text and "crc" in caplog.text
    with pytest.raises(StoreCorruptionError) as info:
        open_manager(path, strict=True)
    assert info.value.line == 2


def test_default_lines_carry_no_crc_so_kimi_bytes_stay_identical() -> None:
    assert encode_message({"role": "user", "content": "x"}) == b'{"role":"user","content":"x"}\n'


@pytest.mark.parametrize(
    "bad",
    [
        '{"role":"user","content":"x","_cm":{"priority":"x"}}',
        '{"role":"user","content":"x","_cm":{"priority":null}}',
        '{"role":"user","content":"x","_cm":{"priority":NaN}}',
        '{"role":"user","content":"x","_cm":{"priority":' + "9" * 400 + "}}",
        '{"role":"user","content":"x","_cm":{"pinned":"yes"}}',
        '{"role":"user","content":"x","_cm":{"type":7,"payload":{}}}',
        '{"role":"user","content":"x","_cm":{"type":"nope","payload":{}}}',
        '{"role":"user","content":' + "[" * 50_000 + "]" * 50_000 + "}",
        '{"role":"_compaction","content":null,"first_kept_index":"x"}',
        '{"role":"_compaction","content":null,"first_kept_index":0,"summary_message":{"x":1}}',
        '{"role":"_system_prompt","content":"s","_cm":{"message":{"bad":1},"type":"zz"}}',
        '{"role":"_usage","token_count":1e999}',
        '{"role":"_checkpoint","id":NaN}',
    ],
)
def test_one_bad_line_never_aborts_a_non_strict_restore(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text(
        '{"role":"user","content":"before"}\n' + bad + '\n{"role":"user","content":"after"}\n'
    )
    restored = [m["content"] for m in open_manager(path).messages]
    assert restored[0] == "before" and restored[-1] == "after"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused_at_encode(tmp_path: Path, value: float) -> None:
    path = tmp_path / "context.jsonl"
    manager = open_manager(path)
    with pytest.raises((StoreError, InvalidMessageError), match="JSON"):
        manager.add({"role": "user", "content": "x", "score": value})
    assert manager.messages == []
    assert not path.exists() or b"NaN" not in path.read_bytes()
    raw = JsonlLog(tmp_path / "raw.jsonl")
    with pytest.raises(StoreError, match="NaN"):
        raw.append_compaction({"ratio": value})
    with pytest.raises(StoreError, match="NaN"):
        raw.append_message({"role": "user", "content": "x", "score": value})
    assert raw.restore().messages == []


def test_lone_surrogate_is_refused_and_memory_unchanged(tmp_path: Path) -> None:
    manager = open_manager(tmp_path / "context.jsonl")
    with pytest.raises((StoreError, InvalidMessageError)):
        manager.add({"role": "user", "content": "a\ud800b"})
    assert manager.messages == []
    with pytest.raises(StoreError, match="surrogate"):
        JsonlLog(tmp_path / "raw.jsonl").append_message({"role": "user", "content": "a\ud800"})


def test_callbacks_are_not_replayed_on_open(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    manager = MessageContextManager.open(path, max_tokens=200, reserve_tokens=0, strategy="fifo")
    for i in range(40):
        manager.add({"role": "user", "content": f"message number {i} " * 3})
    evicted: list[Any] = []
    near: list[Any] = []
    reopened = MessageContextManager.open(
        path,
        max_tokens=200,
        reserve_tokens=0,
        strategy="fifo",
        on_evict=evicted.append,
        on_near_limit=near.append,
    )
    assert evicted == [] and near == []
    reopened.add({"role": "user", "content": "new " * 30})
    assert evicted and near  # live events still arrive


# --- SQLite file handling and typed errors for bad options / paths ------------------------------
# (imports inside the tests: this section was appended, the file's import block is left alone)
def test_dangling_symlink_at_the_database_path_is_refused_and_nothing_created(
    tmp_path: Path,
) -> None:
    """The database file is created without opening it; a planted link must not be followed."""
    (tmp_path / "link.db").symlink_to(tmp_path / "missing.db")
    with pytest.raises(StoreError, match="symbolic link"):
        open_manager(f"sqlite:///{tmp_path}/link.db")
    assert sorted(os.listdir(tmp_path)) == ["link.db"]


def test_new_sqlite_database_leaves_only_its_own_files(tmp_path: Path) -> None:
    from context_manager.store.sqlite import SqliteStore

    old = os.umask(0o022)
    try:
        store = SqliteStore(tmp_path / "db" / "new.db")
        store.close()
    finally:
        os.umask(old)
    assert sorted(os.listdir(tmp_path / "db")) == ["new.db"]  # no temporary file left behind
    assert mode(tmp_path / "db" / "new.db") == 0o600


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1, -0.5, "30", True, None])
def test_bad_busy_timeout_is_a_configuration_error(tmp_path: Path, value: object) -> None:
    from context_manager.errors import ConfigurationError
    from context_manager.store import open_store
    from context_manager.store.sqlite import SqliteStore

    path = tmp_path / "chat.db"
    with pytest.raises(ConfigurationError, match="busy_timeout"):
        open_store(f"sqlite:///{path}", busy_timeout=value)
    with pytest.raises(ConfigurationError, match="busy_timeout"):
        SqliteStore(path, busy_timeout=value)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="busy_timeout"):
        open_manager(f"sqlite:///{path}", store_options={"busy_timeout": value})
    assert not path.exists()  # refused before anything was created


def test_good_busy_timeouts_are_accepted(tmp_path: Path) -> None:
    from context_manager.store import open_store

    for value in (0, 0.25, 5):
        store = open_store(f"sqlite:///{tmp_path}/chat.db", session="s", busy_timeout=value)
        assert store.session == "s"
        store.close()


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("a\x00b.jsonl", "NUL"),  # a JSONL log
        ("dir\x00x/", "NUL"),  # a directory of sessions
        ("sub\x00dir/context.jsonl", "NUL"),  # NUL in a directory level
        ("sqlite:///{tmp}/a\x00b.db", "NUL"),
        ("sqlite:///{tmp}/d\x00ir/chat.db", "NUL"),
        # a lone surrogate: no file system encoding can write it (os raised UnicodeEncodeError)
        ("a\ud800b.jsonl", "cannot encode"),
        ("d\udfffir/", "cannot encode"),
        ("sqlite:///{tmp}/a\ud800b.db", "cannot encode"),
    ],
)
def test_an_unwritable_store_path_is_a_configuration_error(
    tmp_path: Path, target: str, reason: str
) -> None:
    from context_manager.errors import ConfigurationError
    from context_manager.store import delete_session, open_store

    text = target.format(tmp=tmp_path) if "{tmp}" in target else f"{tmp_path}/{target}"
    for session in ("s", None):
        with pytest.raises(ConfigurationError, match=reason):
            open_store(text, session=session)
        with pytest.raises(ConfigurationError, match=reason):
            open_manager(text, session=session)
        with pytest.raises(ConfigurationError, match=reason):
            delete_session(text, session=session)
    assert os.listdir(tmp_path) == []


def test_nul_in_a_path_given_to_a_store_class_is_a_configuration_error(tmp_path: Path) -> None:
    from context_manager.errors import ConfigurationError
    from context_manager.store.sqlite import SqliteStore

    with pytest.raises(ConfigurationError, match="NUL"):
        SqliteStore(f"{tmp_path}/a\x00.db")
    with pytest.raises(ConfigurationError, match="NUL"):
        SqliteStore(tmp_path / "d\x00" / "chat.db")
    with pytest.raises(ConfigurationError, match="NUL"):
        JsonlLog(f"{tmp_path}/a\x00.jsonl").restore()
    with pytest.raises(ConfigurationError, match="NUL"):
        JsonlLog(tmp_path / "d\x00", session="s")
    with pytest.raises(ConfigurationError, match="NUL"):
        SessionIndex(tmp_path / "d\x00" / "sessions.json")
    index = SessionIndex(tmp_path / "sessions\x00.json")
    with pytest.raises(ConfigurationError, match="NUL"):
        index.load()
    with pytest.raises(ConfigurationError, match="NUL"):
        index.resolve("k")
    assert os.listdir(tmp_path) == []
