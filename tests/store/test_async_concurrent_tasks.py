"""Concurrent asyncio tasks on real backends: nothing lost, duplicated or reordered.

- 16 tasks on 16 sessions, each serving per-request opens on one shared handle
  (``aconnect``), with their store I/O overlapping on the event loop;
- 8 tasks writing one session, each with its own per-request manager: conflicts resolved by
  ``aretrying`` exactly as the sync stores resolve them with ``retrying``;
- 8 tasks sharing one manager: its batches take turns, each batch stored whole.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from context_manager import MessageContextManager
from context_manager.store import aconnect, aretrying

from .aio import aopen, contents, run, stored
from .backends import Backend, user


def test_sixteen_tasks_on_distinct_sessions_lose_nothing(backend: Backend) -> None:
    tasks, requests = 16, 5
    in_flight = 0
    most = 0

    async def serve(handle: Any, task: int) -> None:
        nonlocal in_flight, most
        for request in range(requests):
            in_flight += 1
            most = max(most, in_flight)
            manager = await MessageContextManager.aopen(
                handle, session=f"task-{task}", max_tokens=100_000
            )
            assert len(manager.messages) == 2 * request  # everything earlier requests stored
            async with manager.store.batch():
                manager.add(user(f"{task}:{request}:question"))
            assert manager.get_context()[-1]["content"] == f"{task}:{request}:question"
            async with manager.store.batch():
                manager.add({"role": "assistant", "content": f"{task}:{request}:answer"})
            await manager.store.aclose()
            in_flight -= 1

    async def scenario() -> None:
        async with await aconnect(backend.target, **backend.options) as handle:
            await asyncio.gather(*(serve(handle, task) for task in range(tasks)))

    run(scenario())
    assert most > 1  # the requests did overlap on the loop
    for task in range(tasks):
        expected = [
            f"{task}:{request}:{part}"
            for request in range(requests)
            for part in ("question", "answer")
        ]
        assert contents(backend, f"task-{task}") == expected


def test_tasks_writing_one_session_converge_with_aretrying(backend: Backend) -> None:
    tasks, count = 8, 5
    attempts = 0

    async def worker(handle: Any, task: int) -> None:
        nonlocal attempts
        rng = random.Random(task)

        def add(manager: MessageContextManager, i: int) -> None:
            nonlocal attempts
            attempts += 1
            manager.add(user(f"w{task}-{i}"))

        for i in range(count):
            manager = await MessageContextManager.aopen(handle, session="hot", max_tokens=100_000)
            await asyncio.sleep(rng.uniform(0, 0.003))  # the request's own work
            await aretrying(manager, lambda m, i=i: add(m, i), attempts=200, rng=rng)
            await manager.store.aclose()

    async def scenario() -> None:
        async with await aconnect(backend.target, **backend.options) as handle:
            await asyncio.gather(*(worker(handle, task) for task in range(tasks)))

    run(scenario())
    written = contents(backend, "hot")
    assert sorted(written) == sorted(f"w{t}-{i}" for t in range(tasks) for i in range(count))
    for task in range(tasks):  # each task's adds once, in its order
        assert [c for c in written if c.startswith(f"w{task}-")] == [
            f"w{task}-{i}" for i in range(count)
        ]
    print(f"{backend.name}: {attempts} attempts for {tasks * count} adds")


def test_tasks_sharing_one_manager_take_turns_and_store_whole_batches(backend: Backend) -> None:
    tasks, batches = 8, 6

    async def scenario() -> list[Any]:
        manager = await aopen(backend)

        async def worker(task: int) -> None:
            for b in range(batches):
                async with manager.store.batch():
                    manager.add(user(f"{task}.{b}.first"))
                    await asyncio.sleep(0)  # other tasks run; their batches wait their turn
                    manager.extend([user(f"{task}.{b}.second"), user(f"{task}.{b}.third")])

        await asyncio.gather(*(worker(task) for task in range(tasks)))
        held = [m["content"] for m in manager.messages]
        await manager.store.aclose()
        return held

    held = run(scenario())
    written = contents(backend)
    assert written == held and len(written) == tasks * batches * 3
    for start in range(0, len(written), 3):  # each batch contiguous, in its order
        task, b, _ = written[start].split(".")
        assert written[start : start + 3] == [
            f"{task}.{b}.{p}" for p in ("first", "second", "third")
        ]
    assert len([r for r in stored(backend) if r["role"] == "user"]) == tasks * batches * 3
