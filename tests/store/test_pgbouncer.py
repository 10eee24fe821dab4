"""The PostgreSQL store behind a real PgBouncer in transaction pooling mode.

Transaction mode hands each transaction whichever server connection is free, so a statement
psycopg prepared on one server connection is missing (or its name already taken) on the next.
With server-side prepares on, per-request sessions failed with ``prepared statement "_pg3_0"
already exists``; the store's default (``prepare=False``) must make every one of them work, and
turning prepares back on must bring the failure back (so the first test proves the fix).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import uuid
from multiprocessing.connection import Connection
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import ConfigurationError, StoreError
from context_manager.store.targets import open_store

FORK = multiprocessing.get_context("fork")
PROCESSES, THREADS, PER_THREAD = 4, 3, 14  # 168 per-request sessions


def _request(url: str, prefix: str, session: str, **options: Any) -> None:
    """What a web worker does per request: open, add, read the context, add, close."""
    manager = MessageContextManager.open(
        url, session=session, max_tokens=1_000_000, store_options={"prefix": prefix, **options}
    )
    try:
        manager.add({"role": "user", "content": f"question in {session}"})
        assert manager.get_context()[-1]["content"] == f"question in {session}"
        manager.add({"role": "assistant", "content": f"answer in {session}"})
    finally:
        manager.store.close()


def _sessions_of(process: int) -> list[str]:
    return [f"p{process}-t{t}-{i}" for t in range(THREADS) for i in range(PER_THREAD)]


def _worker(url: str, prefix: str, process: int, report: Connection) -> None:
    """One worker process: THREADS threads, each running per-request sessions; it sends back
    one line per failed request."""
    failures: list[str] = []

    def serve(names: list[str]) -> None:
        for name in names:
            try:
                _request(url, prefix, name)
            except Exception as exc:
                failures.append(f"{name}: {type(exc).__name__}: {exc}")

    names = _sessions_of(process)
    threads = [threading.Thread(target=serve, args=(names[t::THREADS],)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report.send(failures)
    os._exit(0)


@pytest.mark.slow
def test_per_request_sessions_through_a_transaction_pooler_all_succeed(
    pgbouncer_url: str, postgres_url: str
) -> None:
    prefix = "pgb" + uuid.uuid4().hex[:8] + "_"
    pipes = [FORK.Pipe(duplex=False) for _ in range(PROCESSES)]
    processes = [
        FORK.Process(target=_worker, args=(pgbouncer_url, prefix, p, pipes[p][1]))
        for p in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    failures: list[str] = []
    for (receive, _), process in zip(pipes, processes, strict=True):
        assert receive.poll(180), "a worker process sent no report"
        failures += receive.recv()
        process.join(30)
        assert process.exitcode == 0
    assert failures == []
    # Every record is there, read directly from PostgreSQL (not through the pooler).
    expected = sorted(name for p in range(PROCESSES) for name in _sessions_of(p))
    assert len(expected) >= 160
    store = open_store(postgres_url, prefix=prefix)
    assert store.sessions() == expected
    store.close()
    for name in expected[::20]:  # restored as a manager
        manager = MessageContextManager.open(
            postgres_url, session=name, max_tokens=1_000_000, store_options={"prefix": prefix}
        )
        assert manager.messages == [
            {"role": "user", "content": f"question in {name}"},
            {"role": "assistant", "content": f"answer in {name}"},
        ]
        manager.store.close()
    for name in expected:  # and every session holds both messages
        store = open_store(postgres_url, session=name, prefix=prefix, create=False)
        try:
            texts = [json.loads(line).get("content") for _, line in store.load().lines]
        finally:
            store.close()
        assert texts[-2:] == [f"question in {name}", f"answer in {name}"]


def test_server_side_prepares_break_per_request_sessions_behind_the_pooler(
    pgbouncer_url: str,
) -> None:
    """The failure the default avoids: with ``prepare=True`` the pooler hands a new client a
    server connection that already holds psycopg's first prepared statement name."""
    prefix = "pgp" + uuid.uuid4().hex[:8] + "_"
    failures: list[str] = []
    for i in range(20):
        try:
            _request(pgbouncer_url, prefix, f"s{i}", prepare=True)
        except StoreError as exc:
            failures.append(str(exc))
    assert len(failures) >= 5, failures
    assert all("prepared statement" in text for text in failures), failures


def test_prepare_and_connect_timeout_are_checked(postgres_url: str) -> None:
    for options in (
        {"prepare": "yes"},
        {"prepare": 1},
        {"connect_timeout": 0},
        {"connect_timeout": float("inf")},
        {"connect_timeout": "5"},
    ):
        with pytest.raises(ConfigurationError):
            open_store(postgres_url, **options)
    store = open_store(postgres_url, prefix="pgo_", prepare=True, connect_timeout=0.5)
    assert store.append([{"role": "user", "content": "direct"}]) == [0]
    store.close()
