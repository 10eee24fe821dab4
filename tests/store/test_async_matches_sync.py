"""The async API stores what the sync API stores, on every backend, and refuses sync I/O.

One script of operations (a system prompt, messages in several shapes with their attributes, a
tool exchange, usage, a compaction, checkpoints, a revert, a bulk extend, a clear) runs once
through ``MessageContextManager.open`` and once through ``aopen`` (changes inside
``async with manager.store.batch():``). After every step both sessions hold the same records
(record ids aside: they are random per write) and both managers the same messages; heads move
the same way. Then: what the async journal refuses, and that it refuses before memory changes.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import ConfigurationError, StoreError
from context_manager.store import (
    AsyncJournalError,
    AsyncSessionStore,
    aconnect,
    aopen_store,
    aretrying,
    retrying,
)

from .aio import aopen, run, stored
from .backends import Backend, user
from .test_handle import server_connections

TOOL_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}

SCRIPT: list[tuple[Any, ...]] = [
    ("system", "be brief"),
    ("add", user("one"), {}),
    ("add", TOOL_CALL, {}),
    ("add", {"role": "tool", "tool_call_id": "c1", "content": "42"}, {}),
    ("add", user("pinned"), {"pinned": True, "priority": 3}),
    ("add", {"role": "user", "content": [{"type": "text", "text": "parts"}]}, {}),
    ("usage", 1234),
    ("checkpoint",),
    ("add", user("dropped by the revert"), {}),
    ("revert", 0),
    ("extend", [user("bulk 1"), user("bulk 2"), user("bulk 3")]),
    ("compact", {"role": "user", "content": "summary of one"}, 1),
    ("checkpoint",),
    ("clear",),
    ("add", user("after the clear"), {}),
]


def sync_step(manager: MessageContextManager, step: tuple[Any, ...]) -> None:
    kind = step[0]
    if kind == "system":
        manager.set_system_prompt(step[1])
    elif kind == "add":
        manager.add(step[1], **step[2])
    elif kind == "usage":
        manager.record_usage(step[1])
    elif kind == "checkpoint":
        manager.checkpoint()
    elif kind == "revert":
        manager.revert_to(step[1])
    elif kind == "extend":
        manager.extend(step[1])
    elif kind == "compact":
        manager.apply_compaction(step[1], step[2])
    else:
        manager.clear()


async def async_step(manager: MessageContextManager, step: tuple[Any, ...]) -> None:
    store = manager.store
    assert isinstance(store, AsyncSessionStore)
    if step[0] == "checkpoint":
        await store.acheckpoint()
    elif step[0] == "revert":
        await store.arevert_to(step[1])
    else:
        async with store.batch():
            sync_step(manager, step)


def test_the_same_operations_store_the_same_records_sync_and_async(backend: Backend) -> None:
    sync_manager = backend.manager("sync")
    after_sync = []
    for step in SCRIPT:
        sync_step(sync_manager, step)
        after_sync.append(
            (stored(backend, "sync"), sync_manager.messages, sync_manager.used_tokens)
        )
    sync_manager.store.close()

    async def scenario() -> list[Any]:
        manager = await aopen(backend, "async")
        seen = []
        for step in SCRIPT:
            await async_step(manager, step)
            seen.append((stored(backend, "async"), manager.messages, manager.used_tokens))
        await manager.store.aclose()
        return seen

    after_async = run(scenario())
    for index, (sync_state, async_state) in enumerate(zip(after_sync, after_async, strict=True)):
        assert async_state == sync_state, f"after step {index}: {SCRIPT[index]}"
    # Same history kept on each backend (old generations: the revert and the clear)
    sync_store, async_store = backend.store("sync"), backend.store("async")
    assert backend.generations(async_store) == backend.generations(sync_store) == 3
    sync_store.close()
    async_store.close()
    # and either API restores either session the same way
    reopened = backend.manager("async")
    assert reopened.messages == after_sync[-1][1]
    assert reopened.system_prompt == "be brief"
    reopened.store.close()


def test_heads_and_positions_are_the_same_through_both_apis(backend: Backend) -> None:
    records = [user("a"), user("b"), user("c")]
    sync_store = backend.store("sync")
    sync_positions = [sync_store.append([r]) for r in records]
    sync_checkpoint = sync_store.checkpoint()
    sync_head = sync_store.load().head

    async def scenario() -> tuple[Any, ...]:
        store = await aopen_store(backend.target, session="async", **backend.options)
        positions = [await store.append([r]) for r in records]
        checkpoint = await store.checkpoint()
        batch = await store.load()
        assert await store.load_after(batch.head) is not None
        sessions = await store.sessions()
        await store.aclose()
        return positions, checkpoint, batch.head, sessions

    positions, checkpoint, head, sessions = run(scenario())
    assert (positions, checkpoint) == (sync_positions, sync_checkpoint)
    assert head.position == sync_head.position == 4
    if backend.name != "jsonl":  # JSONL's generation is the file's inode, its epoch a CRC
        assert head.generation == sync_head.generation == 0
        assert head.epoch and sync_head.epoch and head.epoch != sync_head.epoch  # per session
    assert sessions == ["async", "sync"] == sync_store.sessions()
    sync_store.close()


def test_a_session_written_async_opens_sync_and_the_other_way(backend: Backend) -> None:
    first = backend.manager("s")
    first.set_system_prompt("prompt")
    first.add(user("sync"))
    first.store.close()

    async def scenario() -> None:
        manager = await aopen(backend, "s")
        assert [m["content"] for m in manager.messages] == ["sync"]
        assert manager.system_prompt == "prompt"
        async with manager.store.batch():
            manager.add(user("async"))
        await manager.store.aclose()

    run(scenario())
    again = backend.manager("s")
    assert [m["content"] for m in again.messages] == ["sync", "async"]
    again.store.close()


def test_a_system_prompt_option_that_differs_is_stored_on_open(backend: Backend) -> None:
    async def scenario() -> None:
        manager = await aopen(backend, "s", system_prompt="first")
        await manager.store.aclose()
        manager = await aopen(backend, "s", system_prompt="second")
        assert manager.system_prompt == "second"
        await manager.store.aclose()

    run(scenario())
    assert [r["content"] for r in stored(backend, "s")] == ["first", "second"]


# ---------------------------------------------------------------------- what it refuses
def test_sync_io_on_an_async_journal_raises_before_memory_changes(backend: Backend) -> None:
    async def scenario() -> None:
        manager = await aopen(backend)
        async with manager.store.batch():
            manager.add(user("kept"))
        refusals = [
            lambda: manager.add(user("outside a batch")),
            lambda: manager.extend([user("bulk outside")]),
            lambda: manager.record_usage(10),
            lambda: manager.set_system_prompt("new"),
            lambda: manager.clear(),
            lambda: manager.checkpoint(),
            lambda: manager.revert_to(0),
            lambda: manager.store.close(),
            lambda: manager.store.reload(manager),
        ]
        for refused in refusals:
            with pytest.raises(AsyncJournalError, match="async"):
                refused()
        assert [m["content"] for m in manager.messages] == ["kept"]
        assert manager.system_prompt is None
        with pytest.raises(ConfigurationError, match="aretrying"):
            retrying(manager, lambda m: m.add(user("x")))
        await manager.store.aclose()

    run(scenario())
    assert [r["content"] for r in stored(backend)] == ["kept"]


def test_another_task_cannot_write_into_a_batch_it_does_not_hold(backend: Backend) -> None:
    async def scenario() -> None:
        manager = await aopen(backend)
        inside = asyncio.Event()
        release = asyncio.Event()

        async def holder() -> None:
            async with manager.store.batch():
                manager.add(user("holder"))
                inside.set()
                await release.wait()

        task = asyncio.create_task(holder())
        await inside.wait()
        with pytest.raises(AsyncJournalError, match="task that opened it"):
            manager.add(user("intruder"))
        release.set()
        await task
        assert [m["content"] for m in manager.messages] == ["holder"]
        await manager.store.aclose()

    run(scenario())
    assert [r["content"] for r in stored(backend)] == ["holder"]


def test_aretrying_refuses_a_sync_manager(tmp_path: Any) -> None:
    manager = MessageContextManager.open(tmp_path / "log.jsonl", max_tokens=1000)
    with pytest.raises(ConfigurationError, match="aopen"):
        run(aretrying(manager, lambda m: m.add(user("x"))))
    manager.store.close()


def test_a_handle_is_shared_and_closed_once(backend: Backend) -> None:
    before = server_connections(backend)

    async def scenario() -> int | None:
        async with await aconnect(backend.target, **backend.options) as handle:
            for request in range(20):
                manager = await MessageContextManager.aopen(
                    handle, session=f"s{request % 4}", max_tokens=10_000
                )
                async with manager.store.batch():
                    manager.add(user(f"request {request}"))
                await manager.store.aclose()  # the session's store; the handle stays open
            during = server_connections(backend)
        assert "closed" in repr(handle)
        with pytest.raises(StoreError, match="closed"):
            await handle.session("s0")
        return during

    during = run(scenario())
    if before is not None and during is not None:  # 20 requests, one shared connection
        assert during - before <= 2, (before, during)
        deadline = time.monotonic() + 5  # the server notices a closed connection soon after
        while server_connections(backend) != before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server_connections(backend) == before  # aclose() closed it
    assert [len(stored(backend, f"s{n}")) for n in range(4)] == [5, 5, 5, 5]
