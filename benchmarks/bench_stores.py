"""Session stores side by side: JSONL, SQLite, Redis, PostgreSQL.

    python -m benchmarks.bench_stores              # 10,000 messages, starts its own servers
    python -m benchmarks.bench_stores --n 2000     # quicker

Per backend, through ``MessageContextManager.open`` (so encoding, write-ahead and conflict
checks are all included):

* **appends/s, 1 worker**: one process adds ``n`` messages to one session;
* **appends/s, 4 workers**: four processes add ``n / 4`` messages each, each to its own session
  (the common case: many conversations), total messages over wall time;
* **restore**: opening the ``n``-message session (read + replay into a manager);
* **per request**: open an existing 20-message session, add one message, close (mean of 200).

Asyncio, 16 concurrent tasks on 16 distinct sessions, each serving ``--requests`` requests of
open + add (the user's message) + get_context + add (the reply) + close, one event loop:

* **ours, async**: ``MessageContextManager.aopen`` on one ``aconnect`` handle, each add in
  ``async with manager.store.batch():``;
* **ours, sync in threads**: the sync API on a ``connect`` handle, each request run with
  ``asyncio.to_thread`` (what the docs suggested before there was an async API);
* **Agents SDK**: the OpenAI Agents SDK's async sessions on the same backend where it has one
  (``agents.SQLiteSession`` per request; ``agents.extensions.memory.RedisSession`` on one shared
  ``redis.asyncio`` client), ``add_items`` + ``get_items`` + ``add_items`` + ``close``. Its
  ``SQLAlchemySession`` (PostgreSQL, on one shared engine) needs SQLAlchemy and asyncpg:
  measured when they are installed.

Reported: requests/s over the wall time and the mean request latency (the median of
``--rounds`` rounds, the variants interleaved), and our throughput as a ratio of the SDK's, all
from one run (no enforced target: ratios move with the machine's load).

Redis and PostgreSQL are throwaway local servers (``tests/store/servers.py``) on loopback, with
PostgreSQL's ``fsync=off``; JSONL and SQLite use their default durability (a record survives
the process being killed). Numbers are for this machine only; compare rows, not absolutes.

    python -m benchmarks.bench_stores --async-only --requests 20   # just the asyncio table
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from context_manager import MessageContextManager
from context_manager.store import aconnect, connect

FORK = multiprocessing.get_context("fork")


def _open(target: str, options: dict[str, Any], session: str) -> MessageContextManager:
    return MessageContextManager.open(
        target, session=session, store_options=dict(options), max_tokens=100_000_000
    )


def _message(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {i}: " + "lorem ipsum dolor " * 8}


def _fill(target: str, options: dict[str, Any], session: str, n: int) -> None:
    manager = _open(target, options, session)
    for i in range(n):
        manager.add(_message(i))
    manager.store.close()


def _worker(target: str, options: dict[str, Any], session: str, n: int) -> None:
    _fill(target, options, session, n)


def measure(name: str, target: str, options: dict[str, Any], n: int) -> dict[str, float]:
    row: dict[str, float] = {}
    start = time.perf_counter()
    _fill(target, options, "one", n)
    row["appends_1"] = n / (time.perf_counter() - start)

    start = time.perf_counter()
    restored = _open(target, options, "one")
    row["restore_ms"] = (time.perf_counter() - start) * 1000
    assert len(restored.messages) == n, (name, len(restored.messages))
    restored.store.close()

    _open(target, options, "four-0").store.close()  # schema exists before the race
    start = time.perf_counter()
    processes = [
        FORK.Process(target=_worker, args=(target, options, f"four-{w}", n // 4)) for w in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    row["appends_4"] = (n // 4) * 4 / (time.perf_counter() - start)

    _fill(target, options, "request", 20)
    rounds = 200
    start = time.perf_counter()
    for i in range(rounds):
        manager = _open(target, options, "request")
        manager.add(_message(i))
        manager.store.close()
    row["request_ms"] = (time.perf_counter() - start) * 1000 / rounds
    return row


TASKS = 16


def _reply(i: int) -> dict[str, Any]:
    return {"role": "assistant", "content": f"reply {i}: " + "consectetur adipiscing " * 8}


Request = Callable[[str, int], Awaitable[None]]


async def _sixteen(request: Request, requests: int) -> tuple[float, float]:
    """(requests/s, mean latency in ms) of TASKS tasks, each serving ``requests`` requests on
    its own session."""
    latencies: list[float] = []

    async def serve(task: int) -> None:
        for i in range(requests):
            started = time.perf_counter()
            await request(f"task-{task}", i)
            latencies.append(time.perf_counter() - started)

    start = time.perf_counter()
    await asyncio.gather(*(serve(task) for task in range(TASKS)))
    wall = time.perf_counter() - start
    return len(latencies) / wall, 1000 * sum(latencies) / len(latencies)


async def _ours_async(target: str, options: dict[str, Any], requests: int) -> tuple[float, float]:
    handle = await aconnect(target, **options)

    async def request(session: str, i: int) -> None:
        manager = await MessageContextManager.aopen(handle, session=session, max_tokens=10**8)
        async with manager.store.batch():
            manager.add(_message(i))
        manager.get_context()
        async with manager.store.batch():
            manager.add(_reply(i))
        await manager.store.aclose()

    try:
        return await _sixteen(request, requests)
    finally:
        await handle.aclose()


async def _ours_threads(target: str, options: dict[str, Any], requests: int) -> tuple[float, float]:
    handle = connect(target, **options)

    def blocking(session: str, i: int) -> None:
        manager = MessageContextManager.open(handle, session=session, max_tokens=10**8)
        manager.add(_message(i))
        manager.get_context()
        manager.add(_reply(i))
        manager.store.close()

    async def request(session: str, i: int) -> None:
        await asyncio.to_thread(blocking, session, i)

    try:
        return await _sixteen(request, requests)
    finally:
        handle.close()


async def _agents(name: str, target: str, directory: str, requests: int) -> tuple[float, float]:
    """The OpenAI Agents SDK's session on the same backend (ImportError / KeyError: none)."""
    if name == "SQLite":
        from agents import SQLiteSession

        path = f"{directory}/agents.db"

        async def sqlite_request(session: str, i: int) -> None:
            store = SQLiteSession(session, path)
            await store.add_items([_message(i)])  # type: ignore[list-item]
            await store.get_items()
            await store.add_items([_reply(i)])  # type: ignore[list-item]
            store.close()

        return await _sixteen(sqlite_request, requests)
    if name == "Redis":
        import redis.asyncio as aredis
        from agents.extensions.memory import RedisSession

        client = aredis.Redis.from_url(target)
        prefix = f"agents{uuid.uuid4().hex[:6]}"

        async def redis_request(session: str, i: int) -> None:
            store = RedisSession(session, redis_client=client, key_prefix=prefix)
            await store.add_items([_message(i)])  # type: ignore[list-item]
            await store.get_items()
            await store.add_items([_reply(i)])  # type: ignore[list-item]
            await store.close()

        try:
            return await _sixteen(redis_request, requests)
        finally:
            await client.aclose()
    if name == "PostgreSQL":
        from agents.extensions.memory import SQLAlchemySession
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(target.replace("postgresql://", "postgresql+asyncpg://", 1))

        async def sqlalchemy_request(session: str, i: int) -> None:
            store = SQLAlchemySession(session, engine=engine, create_tables=True)
            await store.add_items([_message(i)])  # type: ignore[list-item]
            await store.get_items()
            await store.add_items([_reply(i)])  # type: ignore[list-item]

        try:
            return await _sixteen(sqlalchemy_request, requests)
        finally:
            await engine.dispose()
    raise KeyError(name)


def measure_async(
    name: str, target: str, options: dict[str, Any], directory: str, requests: int, rounds: int
) -> dict[str, Any]:
    """One row of the asyncio table: the variants interleaved for ``rounds`` rounds (so a
    burst of load on a shared machine hits them alike), the median round of each. Every round
    of every variant writes its own namespace (a directory, a table or key prefix)."""
    runs: dict[str, list[tuple[float, float]]] = {"async": [], "threads": [], "agents": []}
    row: dict[str, Any] = {}
    for round_ in range(rounds):
        for kind, run in (("async", _ours_async), ("threads", _ours_threads)):
            tag = f"{kind[0]}{round_}{uuid.uuid4().hex[:6]}"
            if name == "JSONL":
                where, own = f"{target}-{tag}", dict(options)
            else:
                where, own = (
                    target,
                    {**options, "prefix": f"{tag}{':' if name == 'Redis' else '_'}"},
                )
            runs[kind].append(asyncio.run(run(where, own, requests)))
        if "why" in row:
            continue
        try:
            runs["agents"].append(asyncio.run(_agents(name, target, directory, requests)))
        except (ImportError, KeyError) as exc:
            row["why"] = "no SDK session" if isinstance(exc, KeyError) else f"not installed ({exc})"
    for kind, results in runs.items():
        row[kind] = sorted(results)[len(results) // 2] if results else None
    return row


def _async_table(
    targets: list[tuple[str, str, dict[str, Any]]], directory: str, requests: int, rounds: int
) -> None:
    print(
        f"\n{TASKS} asyncio tasks on {TASKS} sessions, {requests} requests each "
        "(open + add + get_context + add + close): requests/s, mean latency "
        f"(median of {rounds} interleaved rounds)"
    )
    print("| backend | ours, async | ours, sync in threads | Agents SDK | ours async / SDK |")
    print("|---|---:|---:|---:|---:|")
    for name, target, options in targets:
        row = measure_async(name, target, options, directory, requests, rounds)

        def cell(value: tuple[float, float] | None) -> str:
            return "-" if value is None else f"{value[0]:,.0f}/s, {value[1]:.1f} ms"

        agents = row["agents"]
        ratio = f"{row['async'][0] / agents[0]:.2f}x" if agents else row.get("why", "-")
        print(
            f"| {name} | {cell(row['async'])} | {cell(row['threads'])} | {cell(agents)} | "
            f"{ratio} |",
            flush=True,
        )


@contextmanager
def _targets(directory: str) -> Iterator[list[tuple[str, str, dict[str, Any]]]]:
    from tests.store.servers import Unavailable, postgres_server, redis_server

    tag = uuid.uuid4().hex[:8]
    found: list[tuple[str, str, dict[str, Any]]] = [
        ("JSONL", f"{directory}/jsonl", {}),
        ("SQLite", f"sqlite:///{directory}/store.db", {}),
    ]
    with ExitStack() as stack:
        try:
            found.append(("Redis", stack.enter_context(redis_server()), {"prefix": f"b{tag}:"}))
        except Unavailable as exc:
            print(f"Redis skipped: {exc}")
        try:
            url = stack.enter_context(postgres_server())
            found.append(("PostgreSQL", url, {"prefix": f"b{tag}_"}))
        except Unavailable as exc:
            print(f"PostgreSQL skipped: {exc}")
        yield found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000, help="messages per session")
    parser.add_argument("--requests", type=int, default=20, help="per asyncio task")
    parser.add_argument("--rounds", type=int, default=3, help="asyncio rounds (median)")
    parser.add_argument("--async-only", action="store_true", help="only the asyncio table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory, _targets(directory) as targets:
        if args.async_only:
            _async_table(targets, directory, args.requests, args.rounds)
            return
        print(
            f"| backend | appends/s (1 worker) | appends/s (4 workers) | restore {args.n:,} "
            "msgs | open+add+close |"
        )
        print("|---|---:|---:|---:|---:|")
        for name, target, options in targets:
            row = measure(name, target, options, args.n)
            print(
                f"| {name} | {row['appends_1']:,.0f} | {row['appends_4']:,.0f} | "
                f"{row['restore_ms']:,.0f} ms | {row['request_ms']:.2f} ms |",
                flush=True,
            )
        _async_table(targets, directory, args.requests, args.rounds)


if __name__ == "__main__":
    main()
