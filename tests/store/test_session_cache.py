"""A session cache on a store handle: a request reads only what changed since the last one.

Two handles stand for two worker processes serving the same sessions, each with its own cache;
whatever one writes (messages, a revert, a clear, a compaction), the other's next open shows, on
every backend against real servers. A manager that went back to the cache cannot be changed.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.compaction import TokenBudgetCompaction
from context_manager.errors import (
    CheckpointNotFoundError,
    ConfigurationError,
    StoreConflictError,
    StoreError,
)
from context_manager.store import SessionCache, StoreHandle, aconnect, connect

from .backends import Backend, user


def worker(backend: Backend, cache: SessionCache | None = None) -> StoreHandle:
    return connect(backend.target, cache=cache or SessionCache(), **backend.options)


def contents(manager: MessageContextManager) -> list[str]:
    return [m["content"] for m in manager.messages]


def request(stores: StoreHandle, session: str, *texts: str, **options: Any) -> list[str]:
    """One request: open, add ``texts``, read the context, close; the history it saw."""
    options.setdefault("max_tokens", 100_000)
    manager = MessageContextManager.open(stores, session=session, **options)
    try:
        for text in texts:
            manager.add(user(text))
        manager.get_context()
        return contents(manager)
    finally:
        manager.store.close()


def test_each_request_sees_what_the_other_worker_wrote(backend: Backend) -> None:
    one, two = worker(backend), worker(backend)
    expected: list[str] = []
    for turn in range(12):
        stores = one if turn % 3 else two
        expected.append(f"turn {turn}")
        assert request(stores, "s", f"turn {turn}") == expected
    # a worker without any cache reads the same history from the store
    assert request(connect(backend.target, **backend.options), "s") == expected
    one.close()
    two.close()


def test_a_revert_or_clear_by_another_worker_is_seen(backend: Backend) -> None:
    one, two = worker(backend), worker(backend)
    assert request(one, "s", "a", "b") == ["a", "b"]
    other = MessageContextManager.open(two, session="s", max_tokens=100_000)
    checkpoint = other.store.checkpoint()
    other.add(user("c"))
    other.store.revert_to(checkpoint, other)
    other.add(user("d"))
    other.store.close()
    assert request(one, "s") == ["a", "b", "d"]
    other = MessageContextManager.open(two, session="s", max_tokens=100_000)
    other.clear()
    other.add(user("fresh"))
    other.store.close()
    assert request(one, "s") == ["fresh"]


def test_a_compaction_by_another_worker_is_seen(backend: Backend) -> None:
    one, two = worker(backend), worker(backend)
    texts = [f"message {i} " + "words " * 40 for i in range(30)]
    request(one, "s", *texts, counter="chars")
    other = MessageContextManager.open(two, session="s", max_tokens=100_000, counter="chars")
    policy = TokenBudgetCompaction(keep_recent_tokens=300, reserve_tokens=100)
    other.compact(lambda messages, previous=None: "the summary", policy=policy)
    compacted = other.get_context()
    other.store.close()
    manager = MessageContextManager.open(one, session="s", max_tokens=100_000, counter="chars")
    assert manager.get_context() == compacted
    assert "the summary" in str(compacted[0]["content"])
    manager.store.close()


def test_a_closed_manager_cannot_change(backend: Backend) -> None:
    stores = worker(backend)
    manager = MessageContextManager.open(stores, session="s", max_tokens=100_000)
    manager.add(user("kept"))
    manager.store.close()
    with pytest.raises(StoreError, match="closed"):
        manager.add(user("after close"))
    assert contents(manager) == ["kept"]
    assert request(stores, "s") == ["kept"]
    assert request(connect(backend.target, **backend.options), "s") == ["kept"]


def test_an_open_with_other_options_gets_a_manager_built_with_them(backend: Backend) -> None:
    stores = worker(backend)
    request(stores, "s", "hello", max_tokens=100_000)
    manager = MessageContextManager.open(stores, session="s", max_tokens=50_000, counter="chars")
    assert (manager.max_tokens, manager.counter.name) == (50_000, "chars/4")
    assert contents(manager) == ["hello"]
    manager.store.close()


def test_the_last_request_s_callbacks_and_system_prompt_do_not_linger(backend: Backend) -> None:
    stores = worker(backend)
    heard: list[Any] = []
    texts = ["x " * 150] * 3  # 3 x ~75 tokens: past 90% of the 160-token budget
    options: dict[str, Any] = {"max_tokens": 200, "counter": "chars"}
    request(stores, "s", *texts, **options, on_near_limit=heard.append, system_prompt="A")
    assert heard
    heard.clear()
    manager = MessageContextManager.open(stores, session="s", **options, system_prompt="B")
    manager.add(user("y " * 150))
    assert heard == []
    assert manager.system_prompt == "B"
    manager.store.close()
    fresh = MessageContextManager.open(
        backend.target, session="s", max_tokens=200, store_options=dict(backend.options)
    )
    assert fresh.system_prompt == "B"
    fresh.store.close()


def test_two_open_requests_on_one_session_never_share_a_manager(backend: Backend) -> None:
    stores = worker(backend)
    request(stores, "s", "first")
    a = MessageContextManager.open(stores, session="s", max_tokens=100_000)
    b = MessageContextManager.open(stores, session="s", max_tokens=100_000)
    assert a is not b
    a.add(user("from a"))
    a.store.close()
    b.store.reload(b)
    b.add(user("from b"))
    b.store.close()
    assert request(stores, "s") == ["first", "from a", "from b"]


def test_the_cache_keeps_at_most_max_sessions(tmp_path: Path) -> None:
    cache = SessionCache(max_sessions=2)
    stores = connect(tmp_path, cache=cache)
    for session in ("a", "b", "c"):
        request(stores, session, session)
    assert len(cache) == 2
    assert [request(stores, s) for s in ("a", "b", "c")] == [["a"], ["b"], ["c"]]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8"])
def test_a_bad_bound_is_a_configuration_error(bad: Any, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        SessionCache(max_sessions=bad)
    with pytest.raises(ConfigurationError):
        connect(tmp_path, cache=bad)


def test_async_tasks_on_one_cached_handle(backend: Backend) -> None:
    async def main() -> list[list[str]]:
        stores = await aconnect(backend.target, cache=SessionCache(), **backend.options)

        async def serve(task: int) -> None:
            for turn in range(5):
                manager = await MessageContextManager.aopen(
                    stores, session=f"task{task}", max_tokens=100_000
                )
                async with manager.store.batch():
                    manager.add(user(f"{task}:{turn}"))
                manager.get_context()
                await manager.store.aclose()

        await asyncio.gather(*(serve(task) for task in range(8)))
        seen = []
        for task in range(8):
            manager = await MessageContextManager.aopen(
                backend.target,
                session=f"task{task}",
                max_tokens=100_000,
                store_options=dict(backend.options),
            )
            seen.append(contents(manager))
            await manager.store.aclose()
        await stores.aclose()
        return seen

    assert asyncio.run(main()) == [[f"{t}:{turn}" for turn in range(5)] for t in range(8)]


def test_a_store_closed_inside_a_batch_is_not_parked_half_written(backend: Backend) -> None:
    stores = worker(backend)
    manager = MessageContextManager.open(stores, session="s", max_tokens=100_000)
    # PostgreSQL refuses the write: the connection went back to its pool at the close
    with contextlib.suppress(StoreError), manager.store.batch():
        manager.add(user("one"))
        manager.store.close()  # misuse: the batch is written when it ends, after the close
        manager.add(user("two"))
    stored = request(connect(backend.target, **backend.options), "s")  # no cache: the store
    assert stored in (["one", "two"], [])
    assert request(stores, "s") == stored
    assert request(stores, "s", "three") == [*stored, "three"]


@pytest.mark.parametrize("other_writes", ["a message", "a revert"])
def test_a_refused_revert_leaves_a_stale_parked_manager_stale(
    backend: Backend, other_writes: str
) -> None:
    """A request on a parked manager asks for a checkpoint that does not exist while another
    worker has written since: the refusal must not move its view past what memory holds, so
    its next write is a conflict and the next open shows what the store has."""
    one, two = worker(backend), worker(backend)
    manager = MessageContextManager.open(one, session="s", max_tokens=100_000)
    manager.add(user("a1"))
    checkpoint = manager.checkpoint()
    manager.add(user("a2"))
    manager.store.close()
    manager = MessageContextManager.open(one, session="s", max_tokens=100_000)  # parked
    other = MessageContextManager.open(two, session="s", max_tokens=100_000)
    if other_writes == "a message":
        other.add(user("b1"))
    else:
        other.revert_to(checkpoint)
    other.store.close()
    with pytest.raises(CheckpointNotFoundError):
        manager.revert_to(checkpoint + 5)
    with pytest.raises(StoreConflictError):
        manager.add(user("a3"))
    manager.store.close()
    expected = ["a1", "a2", "b1"] if other_writes == "a message" else ["a1"]
    assert request(one, "s") == expected
    assert request(worker(backend), "s") == expected


def test_checkpoints_of_cached_requests_are_numbered_on(backend: Backend) -> None:
    """Each cached request takes the next checkpoint id, whichever worker took the last one,
    and reverting to any of them goes back to that turn."""
    one, two = worker(backend), worker(backend)
    ids = []
    for turn in range(6):
        stores = one if turn % 2 else two
        manager = MessageContextManager.open(stores, session="s", max_tokens=100_000)
        manager.add(user(f"turn {turn}"))
        ids.append(manager.checkpoint())
        manager.store.close()
    assert ids == list(range(6))
    manager = MessageContextManager.open(one, session="s", max_tokens=100_000)
    manager.revert_to(ids[2])
    manager.store.close()
    assert request(two, "s") == ["turn 0", "turn 1", "turn 2"]


def test_the_next_checkpoint_id_is_found_behind_long_lines(tmp_path: Path) -> None:
    """JSONL: a parked request learns the next id by reading back from its view's end, past
    a 300 kB line and 2,000 short ones another worker wrote after the last marker."""
    backend = Backend("jsonl", str(tmp_path / "logs"))
    one, two = worker(backend), worker(backend)
    manager = MessageContextManager.open(two, session="s", max_tokens=10**7)
    assert [manager.checkpoint(), manager.checkpoint()] == [0, 1]
    manager.store.close()
    request(one, "s", "parked on the first worker")
    manager = MessageContextManager.open(two, session="s", max_tokens=10**7)
    manager.add(user("x" * 300_000))
    manager.extend(user(f"short {i}") for i in range(2_000))
    manager.store.close()
    for expected in (2, 3):
        manager = MessageContextManager.open(one, session="s", max_tokens=10**7)
        assert manager.checkpoint() == expected
        manager.store.close()
