"""When an async batch's append fails, memory is rebuilt as the store has it, and a retry
stores each change exactly once.

The failures: a real conflict (another worker wrote first) on every backend; a store that
refuses the append; a reply lost after the records were stored (a wrapper, and for real through
a TCP proxy in front of PostgreSQL and Redis, with a partition); a task cancelled before or
after its append reached the store; a rebuild that fails too.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreConflictError, StoreError, StoreOutcomeUnknownError
from context_manager.store import aopen_store, aretrying, retrying
from context_manager.store.records import record_id

from .aio import Wrapped, aopen, contents, run
from .backends import Backend, user
from .proxy import reply_dropping_proxy


async def wrapped(backend: Backend, session: str = "s1") -> tuple[MessageContextManager, Wrapped]:
    store = Wrapped(await aopen_store(backend.target, session=session, **backend.options))
    manager = await MessageContextManager.aopen(store, max_tokens=1_000_000)
    return manager, store


def said(manager: MessageContextManager) -> list[Any]:
    return [m["content"] for m in manager.messages]


def test_a_conflicting_batch_leaves_memory_as_the_store_has_it(backend: Backend) -> None:
    async def scenario() -> None:
        mine, other = await aopen(backend), await aopen(backend)
        async with other.store.batch():
            other.add(user("other"))
        with pytest.raises(StoreConflictError):
            async with mine.store.batch():
                mine.add(user("mine 1"))
                mine.add(user("mine 2"))
        assert said(mine) == ["other"]  # rebuilt: nothing of the batch, the other's write
        await aretrying(mine, lambda m: m.extend([user("mine 1"), user("mine 2")]))
        assert said(mine) == ["other", "mine 1", "mine 2"]
        await mine.store.aclose()
        await other.store.aclose()

    run(scenario())
    assert contents(backend) == ["other", "mine 1", "mine 2"]


def test_a_refused_append_rebuilds_memory_and_the_journal_goes_on(backend: Backend) -> None:
    async def scenario() -> None:
        manager, store = await wrapped(backend)
        async with manager.store.batch():
            manager.add(user("stored"))

        async def refuse(records: Sequence[Mapping[str, Any]]) -> None:
            raise StoreError("disk full")

        store.before = refuse
        with pytest.raises(StoreError, match="disk full"):
            async with manager.store.batch():
                manager.add(user("refused"))
                manager.record_usage(99)
        assert said(manager) == ["stored"]
        store.before = None
        async with manager.store.batch():
            manager.add(user("next"))
        await manager.store.aclose()

    run(scenario())
    assert contents(backend) == ["stored", "next"]


def test_a_lost_reply_after_the_records_landed_is_not_stored_twice(backend: Backend) -> None:
    async def scenario() -> None:
        manager, store = await wrapped(backend)
        lost = 0

        async def lose_reply(records: Sequence[Mapping[str, Any]]) -> None:
            nonlocal lost
            if lost < 1:
                lost += 1
                ids = tuple(rid for r in records if (rid := record_id(r)) is not None)
                raise StoreOutcomeUnknownError("reply lost", record_ids=ids)

        store.after = lose_reply
        with pytest.raises(StoreOutcomeUnknownError) as caught:
            async with manager.store.batch():
                manager.extend([user("a"), user("b")])
        assert said(manager) == ["a", "b"]  # rebuilt from the store, which has them
        assert await manager.store.alanded(caught.value.record_ids) is True
        lost = 0  # and through aretrying: resolved as landed, not redone
        assert await aretrying(manager, lambda m: m.extend([user("c"), user("d")])) is None
        await manager.store.aclose()

    run(scenario())
    assert contents(backend) == ["a", "b", "c", "d"]


class LosingStore:
    """A sync store whose next append stores the records and then loses the reply."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.lose = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def session(self) -> str:
        return str(self.inner.session)

    @property
    def target(self) -> str:
        return str(self.inner.target)

    @property
    def head(self) -> Any:
        return self.inner.head

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        positions: list[int] = self.inner.append(records, durable=durable)
        if self.lose:
            self.lose -= 1
            ids = tuple(rid for r in records if (rid := record_id(r)) is not None)
            raise StoreOutcomeUnknownError("reply lost", record_ids=ids)
        return positions

    def load(self, start: int = 0) -> Any:
        return self.inner.load(start)

    def load_after(self, head: Any) -> Any:
        return self.inner.load_after(head)

    def checkpoint(self) -> int:
        return int(self.inner.checkpoint())

    def revert_to(self, checkpoint_id: int) -> object:
        return self.inner.revert_to(checkpoint_id)

    def clear(self) -> None:
        self.inner.clear()

    def sessions(self) -> list[str]:
        return list(self.inner.sessions())

    def close(self) -> None:
        self.inner.close()


def test_sync_retrying_a_bulk_write_whose_reply_was_lost_stores_it_once(backend: Backend) -> None:
    """The same commit flow serves the sync journal: a lost ``extend`` is found, not redone."""
    store = LosingStore(backend.store())
    manager = MessageContextManager.open(store, max_tokens=1_000_000)
    store.lose = 1
    assert retrying(manager, lambda m: m.extend([user("a"), user("b")])) is None
    assert said(manager) == ["a", "b"]
    manager.store.close()
    assert contents(backend) == ["a", "b"]


@pytest.mark.parametrize("landed", [False, True])
def test_a_batch_cancelled_mid_append_is_rebuilt_before_the_next_one(
    backend: Backend, landed: bool
) -> None:
    async def scenario() -> None:
        manager, store = await wrapped(backend)
        hung = asyncio.Event()

        async def hang(records: Sequence[Mapping[str, Any]]) -> None:
            hung.set()
            await asyncio.Event().wait()  # until cancelled

        if landed:
            store.after = hang  # the records reached the store, then the task was cancelled
        else:
            store.before = hang

        async def request() -> None:
            async with manager.store.batch():
                manager.add(user("cancelled"))

        task = asyncio.create_task(request())
        await hung.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        store.before = store.after = None
        async with manager.store.batch():  # memory is first rebuilt from the store
            manager.add(user("next"))
        assert said(manager) == (["cancelled", "next"] if landed else ["next"])
        await manager.store.aclose()

    run(scenario())
    assert contents(backend) == (["cancelled", "next"] if landed else ["next"])


def test_when_the_rebuild_fails_too_the_next_batch_rebuilds(backend: Backend) -> None:
    async def scenario() -> None:
        manager, store = await wrapped(backend)

        async def refuse(records: Sequence[Mapping[str, Any]]) -> None:
            raise StoreError("server gone")

        real_load = store.load

        async def down(start: int = 0) -> Any:
            raise StoreError("still gone")

        store.before = refuse
        store.load = down  # type: ignore[method-assign]
        with pytest.raises(StoreError, match="server gone") as caught:
            async with manager.store.batch():
                manager.add(user("never stored"))
        assert "could not be rebuilt" in " ".join(caught.value.__notes__)
        assert manager.store.stale
        store.before = None
        store.load = real_load  # type: ignore[method-assign]
        async with manager.store.batch():
            manager.add(user("after"))
        assert said(manager) == ["after"]
        await manager.store.aclose()

    run(scenario())
    assert contents(backend) == ["after"]


# ---------------------------------------------------------------------- a lost reply, for real
def _via(url: str, port: int) -> str:
    return url.replace(f":{urlsplit(url).port}/", f":{port}/")


def _server(server: str, request: pytest.FixtureRequest) -> tuple[str, dict[str, Any], bytes]:
    url = request.getfixturevalue(f"{server}_url")
    tag = f"t{uuid.uuid4().hex[:8]}"
    options = {"prefix": f"{tag}_" if server == "postgres" else f"{tag}:"}
    marker = b"COMMIT" if server == "postgres" else b"$6\r\nappend\r\n"
    return url, options, marker


@pytest.mark.parametrize("server", ["postgres", "redis"])
def test_a_write_whose_reply_is_lost_is_stored_exactly_once(
    server: str, request: pytest.FixtureRequest
) -> None:
    url, options, marker = _server(server, request)

    async def scenario(port: int, proxy: Any) -> None:
        manager = await MessageContextManager.aopen(
            _via(url, port), session="s", max_tokens=100_000, store_options=options
        )
        for text in ("one", "two", "three"):
            if text == "two":
                proxy.drop_next()  # committed, reply lost, sent again: found by its id
            async with manager.store.batch():
                manager.add(user(text))
        assert proxy.dropped == 1
        await manager.store.aclose()

    with reply_dropping_proxy(urlsplit(url).port or 0, marker) as proxy:
        run(scenario(proxy.port, proxy))
    assert contents(Backend(server, url, options), "s") == ["one", "two", "three"]


@pytest.mark.parametrize("server", ["postgres", "redis"])
def test_a_lost_reply_during_a_partition_is_resolved_by_aretrying(
    server: str, request: pytest.FixtureRequest
) -> None:
    url, options, marker = _server(server, request)

    async def scenario(proxy: Any) -> None:
        manager = await MessageContextManager.aopen(
            _via(url, proxy.port), session="s", max_tokens=100_000, store_options=options
        )
        async with manager.store.batch():
            manager.add(user("one"))
        proxy.drop_next(10)  # the reply is lost, and so is every resend...
        proxy.down = True  # ...and no new connection gets through for a while

        def heal() -> None:
            time.sleep(0.5)
            proxy.down = False
            proxy.drop_next(0)

        healer = threading.Thread(target=heal)
        healer.start()
        outcome = await aretrying(
            manager,
            lambda m: m.add(user("two")),
            attempts=30,
            first_delay=0.05,
            max_delay=0.2,
            rng=random.Random(7),
        )
        healer.join()
        assert outcome is None  # it had landed: found, not redone
        assert said(manager) == ["one", "two"]
        async with manager.store.batch():
            manager.add(user("three"))
        await manager.store.aclose()

    with reply_dropping_proxy(urlsplit(url).port or 0, marker) as proxy:
        run(scenario(proxy))
    assert contents(Backend(server, url, options), "s") == ["one", "two", "three"]
