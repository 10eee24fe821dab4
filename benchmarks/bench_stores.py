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

Redis and PostgreSQL are throwaway local servers (``tests/store/servers.py``) on loopback, with
PostgreSQL's ``fsync=off``; JSONL and SQLite use their default durability (a record survives
the process being killed). Numbers are for this machine only; compare rows, not absolutes.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from context_manager import MessageContextManager

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
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory, _targets(directory) as targets:
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


if __name__ == "__main__":
    main()
