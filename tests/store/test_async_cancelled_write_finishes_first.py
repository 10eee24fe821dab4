"""A batch cancelled while its write runs in a worker thread (SQLite, JSONL, any sync store
under asyncio): the thread cannot be stopped, so the cancellation waits for its write, and only
then does the next batch rebuild memory from the store. Afterwards memory is what a fresh open
of the store reads, and no write is acknowledged on top of records this manager has not seen.
The same holds for a cancelled catch-up or revert: their step ran to its end in the thread, so
the journal stays stale until memory took in what the step did.

Before: the cancelled task returned at once, the next batch rebuilt memory from the store, and
then the abandoned write landed and passed its conflict check against the view that rebuild had
set (JSONL: memory 3 messages, the file 20,003, and later writes went on without a conflict).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.store import Batch, Head, Store, ThreadedStore, aopen_store

from .aio import run
from .backends import Backend, contents, user
from .forwarding import ForwardingStore


class HeldStore(ForwardingStore):
    """A real sync store whose next call of the operation named by :meth:`hold` first waits in
    its worker thread until released (the operation is in flight), then runs."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.started = threading.Event()
        self.release = threading.Event()
        self._armed: str | None = None

    def hold(self, operation: str) -> None:
        self._armed = operation

    def _wait(self, operation: str) -> None:
        if self._armed == operation:
            self._armed = None
            self.started.set()
            assert self.release.wait(60), "the test never released the held operation"

    def load(self, start: int = 0) -> Batch:
        self._wait("load")
        return super().load(start)

    def load_after(self, head: Head) -> Batch | None:
        self._wait("load_after")
        return super().load_after(head)

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        self._wait("append")
        return super().append(records, durable=durable)

    def revert_to(self, checkpoint_id: int) -> object:
        self._wait("revert_to")
        return super().revert_to(checkpoint_id)


async def opened(held: HeldStore, first: str) -> MessageContextManager:
    """A manager opened on ``held`` that has stored ``first`` in a batch of its own."""
    manager = await MessageContextManager.aopen(held, max_tokens=1_000_000)
    async with manager.store.batch():
        manager.add(user(first))
    return manager


def said(manager: MessageContextManager) -> list[Any]:
    return [m["content"] for m in manager.messages]


def test_the_next_batch_rebuilds_only_after_the_cancelled_write_finished(
    backend: Backend,
) -> None:
    held = HeldStore(backend.store("s"))

    async def scenario() -> list[Any]:
        manager = await opened(held, "first")

        async def big() -> None:
            async with manager.store.batch():
                manager.extend([user(f"big {i}") for i in range(50)])

        async def after() -> None:
            async with manager.store.batch():
                manager.add(user("after"))

        held.hold("append")
        cancelled = asyncio.create_task(big())
        await asyncio.get_running_loop().run_in_executor(None, held.started.wait, 60)
        cancelled.cancel()  # the append is in its worker thread now
        following = asyncio.create_task(after())
        await asyncio.sleep(0.2)  # time for the next batch to run, if it could
        assert not following.done()  # it waits for the cancelled write, not beside it
        held.release.set()
        results = await asyncio.gather(cancelled, following, return_exceptions=True)
        assert isinstance(results[0], asyncio.CancelledError)
        assert results[1] is None
        async with manager.store.batch():
            manager.add(user("later"))
        memory = said(manager)
        await manager.store.aclose()
        return memory

    memory = run(scenario())
    expected = ["first", *(f"big {i}" for i in range(50)), "after", "later"]
    assert contents(backend.target, "s", store_options=dict(backend.options)) == expected
    assert memory == expected


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_big_batch_cancelled_mid_write_leaves_memory_as_a_fresh_open_reads(
    kind: str, tmp_path: Path
) -> None:
    """The reported case, unwrapped: 20,000 messages whose append is encoding and writing in
    the thread when the task is cancelled; another batch follows at once."""
    target = str(tmp_path / "j") if kind == "jsonl" else f"sqlite:///{tmp_path}/s.db"

    async def scenario() -> tuple[list[Any], bool]:
        manager = await MessageContextManager.aopen(
            target, session="s", max_tokens=10**9, counter="chars"
        )
        async with manager.store.batch():
            manager.add(user("first"))

        async def big() -> None:
            async with manager.store.batch():
                manager.extend([user(f"big {i}") for i in range(20_000)])

        task = asyncio.create_task(big())
        while not manager.messages or said(manager)[-1] != "big 19999":
            await asyncio.sleep(0)  # until the batch ended and its append was handed over
        await asyncio.sleep(0.02)  # the worker thread is encoding / writing it
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with manager.store.batch():
            manager.add(user("after"))
        async with manager.store.batch():
            manager.add(user("later"))
        memory = said(manager)
        await manager.store.aclose()
        return memory, manager.store.stale

    memory, stale = run(scenario())
    assert not stale
    stored = contents(target, "s", max_tokens=10**9, counter="chars")
    assert memory == stored
    assert stored[0] == "first" and stored[-2:] == ["after", "later"]
    assert len(stored) in (3, 20_003)  # the whole batch or none of it


async def cancelled_while_held(
    held: HeldStore, manager: MessageContextManager, step: str, run_step: Awaitable[object]
) -> list[Any]:
    """Run ``run_step`` until ``held`` stops it at ``step``, cancel it there, let the step
    finish in its thread, then add "after" in a batch: what memory says at the end."""
    held.hold(step)
    task = asyncio.ensure_future(run_step)
    await asyncio.get_running_loop().run_in_executor(None, held.started.wait, 60)
    task.cancel()
    held.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with manager.store.batch():
        manager.add(user("after"))
    memory = said(manager)
    await manager.store.aclose()
    return memory


def test_a_catch_up_cancelled_after_its_read_rebuilds_before_the_next_write(
    backend: Backend,
) -> None:
    """``areload()`` cancelled while its read of another worker's records runs: the store's
    view moved past memory, so the next batch rebuilds first instead of writing on top."""
    held = HeldStore(backend.store("s"))

    async def scenario() -> list[Any]:
        manager = await opened(held, "mine")
        other = backend.manager("s")
        other.add(user("theirs"))
        other.store.close()
        return await cancelled_while_held(held, manager, "load_after", manager.store.areload())

    memory = run(scenario())
    assert contents(backend.target, "s", store_options=dict(backend.options)) == memory
    assert memory == ["mine", "theirs", "after"]


def test_a_revert_cancelled_while_it_runs_rebuilds_before_the_next_write(
    backend: Backend,
) -> None:
    held = HeldStore(backend.store("s"))

    async def scenario() -> list[Any]:
        manager = await opened(held, "a")
        checkpoint = await manager.store.acheckpoint()
        async with manager.store.batch():
            manager.add(user("b"))
        revert = manager.store.arevert_to(checkpoint)
        return await cancelled_while_held(held, manager, "revert_to", revert)

    memory = run(scenario())
    assert contents(backend.target, "s", store_options=dict(backend.options)) == memory
    assert memory == ["a", "after"]


def test_a_timeout_on_a_threaded_write_is_raised_once_the_write_is_stored(
    tmp_path: Path,
) -> None:
    """``asyncio.timeout`` around a threaded append: the ``TimeoutError`` comes after the
    thread's write finished (0.3 s, not the 0.05 s of the timeout), and the write is stored."""
    held = HeldStore(Backend("jsonl", str(tmp_path / "j")).store("s"))

    async def scenario() -> float:
        store = await aopen_store(held)
        assert isinstance(store, ThreadedStore)
        held.hold("append")
        began = time.monotonic()  # before the timer starts: it releases 0.3 s after this
        threading.Timer(0.3, held.release.set).start()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await store.append([user("one"), user("two")])
        waited = time.monotonic() - began
        await store.aclose()
        return waited

    assert run(scenario()) >= 0.3
    assert contents(str(tmp_path / "j")) == ["one", "two"]


def test_a_task_cancelled_again_still_waits_for_its_threaded_write(tmp_path: Path) -> None:
    held = HeldStore(Backend("sqlite", f"sqlite:///{tmp_path}/s.db").store("s"))

    async def scenario() -> None:
        store = await aopen_store(held)
        held.hold("append")
        task = asyncio.create_task(store.append([user("one"), user("two")]))
        await asyncio.get_running_loop().run_in_executor(None, held.started.wait, 60)
        for _ in range(2):
            task.cancel()
            await asyncio.sleep(0.1)
            assert not task.done()  # the write still runs in its thread
        held.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await store.aclose()

    run(scenario())
    assert contents(f"sqlite:///{tmp_path}/s.db") == ["one", "two"]
