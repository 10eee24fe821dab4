"""SQLite keeps its POSIX locks when one process serves many sessions of one database file.

POSIX advisory locks belong to the process: closing *any* descriptor of the database file drops
every lock the process's live SQLite connections hold on it. A store that opened (or created)
the file itself before connecting did exactly that on every open. Then another process, closing
its last connection, believed it was the only user, checkpointed and deleted the WAL under the
live connections: disk I/O errors and short reads in the field, a malformed file here.

The workers below do what a web worker does: open a manager per request (hundreds of sessions
of one file), keep a few recent managers alive, drop older ones without ``close()``, and
sometimes re-open a session they served before. Several real processes run at once, and in the
second test real threads of this process run next to helper processes. Afterwards no request
failed, ``PRAGMA integrity_check`` says ``ok`` and every acknowledged message is stored, in order.
With the old open-and-close in ``SqliteStore`` both tests fail (most requests get "disk I/O
error" and the file is malformed).

(Threads of a single process alone never showed the failure: SQLite shares one lock state per
file among a process's connections. The damage needs a second process, so both tests have one.)
"""

from __future__ import annotations

import collections
import gc
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_manager import MessageContextManager
from context_manager.store import open_store

ROOT = Path(__file__).resolve().parents[2]

#: (session, content) of every message whose ``add`` returned, and every failure as text.
Outcome = tuple[list[tuple[str, str]], list[str]]


def session_for(tag: str, request: int) -> str:
    """Mostly a new session per request; every 4th re-opens the previous request's session
    (its manager is still alive) and every 9th an older one (its manager was dropped)."""
    if request % 4 == 3:
        request -= 1
    elif request % 9 == 8:
        request //= 3
    return f"{tag}-s{request}"


def serve(target: str, tag: str, requests: int, keep: int = 8) -> Outcome:
    """One worker: a manager per request, never closed; the ``keep`` newest stay referenced.

    Every 25th request drops them all, so (unless another thread holds one) the process's last
    connection goes away: that is when SQLite checks, with an exclusive lock on the database
    file, whether other processes still use the WAL, and deletes it if none seems to.
    """
    acked: list[tuple[str, str]] = []
    errors: list[str] = []
    live: collections.deque[MessageContextManager] = collections.deque(maxlen=keep)
    for request in range(requests):
        session, content = session_for(tag, request), f"{tag}-m{request}"
        try:
            manager = MessageContextManager.open(target, session=session, max_tokens=100_000)
            manager.add({"role": "user", "content": content})
        except Exception as exc:  # counted, so the assertion says how many requests failed
            errors.append(f"{session}: {type(exc).__name__}: {exc}")
            continue
        live.append(manager)  # the oldest one is dropped here, still open
        del manager
        acked.append((session, content))
        if request % 25 == 24:
            live.clear()
            gc.collect()  # a manager and its store refer to each other: only GC closes them
    return acked, errors


WORKER = textwrap.dedent(
    """
    import json, sys
    from tests.store.test_sqlite_locks import serve
    target, tag, requests = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print("ready", flush=True)
    sys.stdin.readline()  # every worker starts at once, so their requests overlap
    acked, errors = serve(target, tag, requests)
    print(json.dumps({"acked": acked, "errors": errors}), flush=True)
    """
)


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[str]]]:
    """Worker processes of one test; any still running when it fails are killed."""
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for proc in processes:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start_workers(
    spawned: list[subprocess.Popen[str]], target: str, tags: list[str], requests: int
) -> list[subprocess.Popen[str]]:
    """Start one worker process per tag and wait until each has imported everything."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, target, tag, str(requests)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for tag in tags
    ]
    spawned += workers
    for proc in workers:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    return workers


def go(workers: list[subprocess.Popen[str]]) -> None:
    for proc in workers:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def finish(workers: list[subprocess.Popen[str]]) -> list[Outcome]:
    outcomes = []
    for proc in workers:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        report = json.loads(out)
        outcomes.append(([tuple(pair) for pair in report["acked"]], report["errors"]))
    return outcomes


def check_database(path: Path, outcomes: list[Outcome]) -> None:
    """No failed request, an intact file, and exactly the acknowledged messages per session."""
    errors = [error for _, errs in outcomes for error in errs]
    per_worker = collections.Counter(error.split("-", 1)[0] for error in errors)
    assert errors == [], f"{len(errors)} requests failed ({dict(per_worker)}), first: {errors[:2]}"
    expected: dict[str, list[str]] = collections.defaultdict(list)
    for acked, _ in outcomes:
        for session, content in acked:
            expected[session].append(content)
    connection = sqlite3.connect(path)
    try:
        integrity = connection.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:  # "database disk image is malformed", "disk I/O error"
        integrity = [(f"{type(exc).__name__}: {exc}",)]
    finally:
        connection.close()
    assert integrity == [("ok",)]
    target = f"sqlite:///{path}"
    store = open_store(target)
    try:
        assert set(store.sessions()) == set(expected)
    finally:
        store.close()
    for session, contents in expected.items():
        manager = MessageContextManager.open(target, session=session, max_tokens=100_000)
        try:
            assert [m["content"] for m in manager.messages] == contents, session
        finally:
            manager.store.close()


def run_processes(
    spawned: list[subprocess.Popen[str]], path: Path, processes: int, requests: int
) -> None:
    tags = [f"p{n}" for n in range(processes)]
    workers = start_workers(spawned, f"sqlite:///{path}", tags, requests)
    go(workers)
    outcomes = finish(workers)
    assert sum(len(acked) + len(errors) for acked, errors in outcomes) == processes * requests
    check_database(path, outcomes)


@pytest.mark.slow
def test_processes_opening_hundreds_of_sessions_keep_their_locks(
    tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    run_processes(spawned, tmp_path / "db" / "chat.db", processes=4, requests=300)


@pytest.mark.slow
def test_many_processes_opening_thousands_of_sessions_keep_their_locks(
    tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    run_processes(spawned, tmp_path / "db" / "chat.db", processes=8, requests=1000)


@pytest.mark.slow
def test_threads_serving_sessions_of_one_file_keep_their_locks(
    tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    """Four threads of this process, and two helper processes so that a lost lock matters."""
    path = tmp_path / "db" / "chat.db"
    target = f"sqlite:///{path}"
    helpers = start_workers(spawned, target, ["h0", "h1"], 300)
    results: dict[str, Outcome] = {}

    def thread(tag: str) -> None:
        results[tag] = serve(target, tag, 150)

    threads = [threading.Thread(target=thread, args=(f"t{n}",)) for n in range(4)]
    go(helpers)
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    outcomes = finish(helpers)
    assert sorted(results) == ["t0", "t1", "t2", "t3"]  # every thread ran to its end
    outcomes += results.values()
    assert sum(len(acked) + len(errors) for acked, errors in outcomes) == 1200
    check_database(path, outcomes)


def test_threads_opening_a_new_database_at_once_all_get_in(tmp_path: Path) -> None:
    """SQLite does not wait (busy timeout) for the switch to WAL, so threads that open a new
    file at the same moment used to fail with "database is locked" (5% of such races here)."""
    import threading

    from context_manager import MessageContextManager
    from context_manager.store import connect

    from .backends import in_threads

    errors: list[BaseException] = []
    for trial in range(40):
        stores = connect(f"sqlite:///{tmp_path}/new{trial}.db")
        barrier = threading.Barrier(6)

        def serve(worker: int, stores: object = stores, barrier: object = barrier) -> None:
            barrier.wait()  # type: ignore[attr-defined]
            manager = MessageContextManager.open(stores, session=f"w{worker}", max_tokens=1000)
            manager.add({"role": "user", "content": f"hello from {worker}"})
            manager.store.close()

        errors += in_threads(serve, 6, timeout=60)
        stores.close()
    assert errors == []
