"""The backends every store test runs against, as one value the tests share (``backend``
fixture in ``conftest.py``): JSONL, SQLite, a real Redis, a real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.store import aconnect
from context_manager.store.protocol import Store
from context_manager.store.targets import open_store

BACKENDS = ["jsonl", "sqlite", "redis", "postgres"]
FORK = multiprocessing.get_context("fork")


@dataclass
class Backend:
    name: str
    target: str
    options: dict[str, Any] = field(default_factory=dict)

    def store(self, session: str = "s1") -> Store:
        return open_store(self.target, session=session, **self.options)

    def manager(self, session: str = "s1", **options: Any) -> MessageContextManager:
        options.setdefault("max_tokens", 1_000_000)
        return MessageContextManager.open(
            self.target, session=session, store_options=dict(self.options), **options
        )

    def opened_in_tasks(
        self, observe: Callable[[MessageContextManager], Any], tasks: int, **options: Any
    ) -> list[Any]:
        """``observe`` of session "s" as ``tasks`` concurrent asyncio tasks open it (``aopen``)
        on one async handle, each closing its session after."""

        async def main() -> list[Any]:
            async with await aconnect(self.target, **self.options) as handle:

                async def one() -> Any:
                    manager = await MessageContextManager.aopen(handle, session="s", **options)
                    try:
                        return observe(manager)
                    finally:
                        await manager.store.aclose()

                return list(await asyncio.gather(*(one() for _ in range(tasks))))

        return asyncio.run(main())

    def generations(self, store: Store) -> int:
        if self.name == "jsonl":
            assert isinstance(store.target, str)
            return 1 + len(list(Path(store.target).parent.glob("context_*.jsonl")))
        return len(store.generations())  # type: ignore[attr-defined]


def make_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The ``backend`` fixture's value: each test gets its own namespace (a directory, a
    database file, a Redis key prefix, a table prefix), so tests do not see each other's
    sessions."""
    tag = "t" + uuid.uuid4().hex[:10]
    if request.param == "jsonl":
        return Backend("jsonl", str(tmp_path / "sessions"))
    if request.param == "sqlite":
        return Backend("sqlite", f"sqlite:///{tmp_path}/store.db")
    if request.param == "redis":
        return Backend("redis", request.getfixturevalue("redis_url"), {"prefix": f"{tag}:"})
    return Backend("postgres", request.getfixturevalue("postgres_url"), {"prefix": f"{tag}_"})


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def in_threads(
    work: Callable[[int], object], count: int, timeout: float = 120
) -> list[BaseException]:
    """Run ``work(0)`` ... ``work(count - 1)`` on as many threads at once; what they raised."""
    errors: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            work(worker)
        except BaseException as exc:  # reported by the caller's assertion
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    return errors


def contents(target: str, session: str = "s", **options: Any) -> list[str]:
    """The contents of a session's messages as a fresh open reads them (closed after)."""
    options.setdefault("max_tokens", 1_000_000)
    manager = MessageContextManager.open(target, session=session, **options)
    try:
        return [m["content"] for m in manager.messages]
    finally:
        manager.store.close()


def run_child(code: str, *args: str, timeout: float = 120) -> Any:
    """Run ``code`` in a fresh interpreter that imports this checkout; its stdout's JSON."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)
