"""From a target to an async store: :func:`aconnect` (a handle, once per process) and
:func:`aopen_store` (one session), the asyncio side of ``targets.py``.

======================  ==============================================================
``redis://``            :class:`~.redis_async.AsyncRedisStore` on ``redis.asyncio``
``postgresql://``       :class:`~.postgres_async.AsyncPostgresStore` on psycopg's
                        ``AsyncConnection`` (a pool of them for a handle)
``sqlite:///``, paths   the sync store (``targets.py``) in a worker thread:
                        :class:`ThreadedStore` (a worker thread per operation)
======================  ==============================================================

SQLite and JSONL have no async client worth the name (aiosqlite is a thread too): a thread per
operation keeps their locking, WAL and file rules exactly the sync ones, and the event loop
free while a write waits for a lock. A sync ``Store`` or ``StoreHandle`` of any backend is
accepted the same way. Option names and meanings are the sync ones.

A thread cannot be stopped, so a cancelled operation is not abandoned: the cancellation waits
until the thread's call has finished, then is raised (:func:`in_thread`). Whatever the call
wrote is in the store before the caller (a journal releasing its batch, a rebuild) goes on.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._config import check_flag
from ..errors import ConfigurationError, StoreError
from .handle import StoreHandle
from .jsonl import FsyncMode, JsonlLog
from .log import StoreLog
from .protocol import (
    DEFAULT_SESSION,
    AsyncStore,
    Batch,
    DeletableStore,
    Head,
    Store,
    check_session_id,
)
from .replayer import Records, RestoredLog, Resume
from .warm import SessionCache

if TYPE_CHECKING:
    from ._redis_client import HandleShare

__all__ = ["AsyncStoreHandle", "ThreadedStore", "aconnect", "aopen_store"]

_REDIS = ("redis://", "rediss://")
_POSTGRES = ("postgresql://", "postgres://")

T = TypeVar("T")


async def in_thread(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` in a worker thread (``asyncio.to_thread``'s executor and
    context), awaited to its end even when the caller is cancelled.

    Why: a cancelled ``to_thread`` returns at once while its thread goes on. A journal would
    then release its batch and rebuild memory from a store the abandoned write can still
    change; the write lands after the rebuild, passes its conflict check against the view the
    rebuild set, and memory misses it for good. Here a cancellation (each one, if repeated)
    waits for the thread, then is raised: the thread's result or error is dropped, what it
    wrote is stored, and the caller's cleanup runs after it."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
    future = loop.run_in_executor(None, call)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            result = await asyncio.shield(future)
        except asyncio.CancelledError as exc:
            if future.cancelled():  # the executor's future itself (a closing loop)
                raise
            cancelled = exc
            if not future.done():
                continue  # the thread still runs: wait for it
        except BaseException:
            if cancelled is None:
                raise
        if cancelled is not None:
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: the caller hears of its cancellation instead
            raise cancelled
        return result


class ThreadedStore:
    """A sync :class:`~.protocol.Store` as an :class:`~.protocol.AsyncStore`: each operation
    runs in a worker thread (:func:`in_thread`: a cancelled one still runs to its end before
    the cancellation is raised), so the sync store's locks and rules hold."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @property
    def store(self) -> Store:
        """The sync store underneath."""
        return self._store

    @property
    def session(self) -> str:
        return self._store.session

    @property
    def target(self) -> str:
        return self._store.target

    @property
    def head(self) -> Head | None:
        return self._store.head

    async def load(self, start: int = 0) -> Batch:
        return await in_thread(self._store.load, start)

    async def load_after(self, head: Head) -> Batch | None:
        return await in_thread(self._store.load_after, head)

    async def append(
        self, records: Sequence[Mapping[str, Any]], *, durable: bool = False
    ) -> list[int]:
        return await in_thread(self._store.append, records, durable=durable)

    async def checkpoint(self) -> int:
        return await in_thread(self._store.checkpoint)

    async def revert_to(self, checkpoint_id: int) -> object:
        return await in_thread(self._store.revert_to, checkpoint_id)

    async def clear(self) -> None:
        await in_thread(self._store.clear)

    async def sessions(self) -> list[str]:
        return await in_thread(self._store.sessions)

    async def delete(self) -> bool:
        """The sync store's ``delete`` (a :class:`~.protocol.DeletableStore`), in the thread."""
        store = self._store
        if not isinstance(store, DeletableStore):
            raise ConfigurationError(f"a {type(store).__name__} store cannot delete its session")
        return await in_thread(store.delete)

    async def read_log(
        self, strict: bool, resume: Resume | None = None
    ) -> tuple[RestoredLog, Records]:
        """Read and replay the whole session in the worker thread (JSONL: its own reader,
        which also reports a torn last line and sweeps a crashed rotation's temp files)."""
        store = self._store
        if isinstance(store, JsonlLog):
            store.strict = store.strict or strict
            return await in_thread(store.read, resume)
        return await in_thread(StoreLog(store, strict=strict, tail=False).read, resume)

    async def aclose(self) -> None:
        await in_thread(self._store.close)

    async def __aenter__(self) -> ThreadedStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncStoreHandle:
    """What :func:`aconnect` returns: ``await handle.session(id)`` per request, ``aclose()``
    at shutdown (closing a session's store never closes what the handle shares)."""

    def __init__(
        self,
        target: str,
        make: Callable[[str], Awaitable[AsyncStore]],
        close: Callable[[], Awaitable[Any]],
        cache: SessionCache | None = None,
    ) -> None:
        self._target = target
        #: The caller's session cache (see :func:`~.targets.connect`; None: none).
        self.cache = cache
        self._make = make
        self._close = close
        self._closed = False

    @property
    def target(self) -> str:
        """Where the sessions live (a path, or a URL without its password)."""
        return self._target

    async def session(self, session: str = DEFAULT_SESSION) -> AsyncStore:
        """The store of one session, on the shared connections (``aclose`` it after use)."""
        if self._closed:
            raise StoreError(f"{self._target}: this store handle is closed")
        return await self._make(check_session_id(session))

    async def aclose(self) -> None:
        """Close what the handle shares (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await self._close()

    async def __aenter__(self) -> AsyncStoreHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncStoreHandle({self._target!r}{', closed' if self._closed else ''})"


def _threaded_handle(handle: StoreHandle) -> AsyncStoreHandle:
    async def make(session: str) -> AsyncStore:
        return ThreadedStore(await in_thread(handle.session, session))

    return AsyncStoreHandle(handle.target, make, lambda: in_thread(handle.close), handle.cache)


async def aconnect(
    target: str | os.PathLike[str] | StoreHandle | AsyncStoreHandle,
    *,
    fsync: FsyncMode = "checkpoint",
    cache: SessionCache | None = None,
    **options: Any,
) -> AsyncStoreHandle:
    """Open ``target``'s shared connections once (per process); ``await .session(id)`` per
    request. Redis: one ``redis.asyncio`` client (or the caller's ``client=``, never closed
    here); PostgreSQL: a pool of async connections
    (``max_idle`` kept, 8 by default); SQLite and JSONL: :func:`~.targets.connect`'s handle,
    used from worker threads. Options (``cache`` too) are :func:`~.targets.connect`'s."""
    if isinstance(target, AsyncStoreHandle):
        return target
    if isinstance(target, StoreHandle):
        return _threaded_handle(target)
    if cache is not None and not isinstance(cache, SessionCache):
        raise ConfigurationError(f"cache must be a SessionCache, got {type(cache).__name__}")
    text = os.fspath(target) if isinstance(target, (str, os.PathLike)) else target
    if isinstance(text, str) and text.startswith(_REDIS):
        from ._redis_client import HandleShare, make_client
        from .redis_async import AsyncRedisStore

        cluster = check_flag("cluster", options.get("cluster", False))
        # A caller's ``client=`` is used as it is and stays open when the handle closes.
        mine = options.pop("client", None)
        client = mine if mine is not None else make_client(text, cluster=cluster, asyncio=True)
        if cluster:  # learn the slots now: concurrent first commands race in redis-py
            await _initialized(client, text)

        share = HandleShare()

        async def redis_session(session: str) -> AsyncStore:
            return AsyncRedisStore(text, session, client=client, shared=share, **options)

        return AsyncStoreHandle(_display(text), redis_session, _closer(client, mine, share), cache)
    if isinstance(text, str) and text.startswith(_POSTGRES):
        from .postgres_async import AsyncConnectionPool, AsyncPostgresStore

        shared = {k: options.pop(k) for k in ("connect_timeout", "prepare") if k in options}
        pool = AsyncConnectionPool(text, max_idle=options.pop("max_idle", 8), **shared)

        async def postgres_session(session: str) -> AsyncStore:
            return await AsyncPostgresStore.open(text, session, pool=pool, **shared, **options)

        return AsyncStoreHandle(pool.target, postgres_session, pool.aclose, cache)
    from .targets import connect

    handle = await in_thread(connect, target, fsync=fsync, cache=cache, **options)
    return _threaded_handle(handle)


async def aopen_store(
    target: str | os.PathLike[str] | Store | StoreHandle | AsyncStore | AsyncStoreHandle,
    *,
    session: str | None = None,
    fsync: FsyncMode = "checkpoint",
    **options: Any,
) -> AsyncStore:
    """The async store for ``target`` and ``session`` (an ``AsyncStore`` is returned as is; a
    sync ``Store`` or ``StoreHandle`` runs in worker threads). Options as for
    :func:`~.targets.open_store`."""
    name = session if session is not None else DEFAULT_SESSION
    if isinstance(target, (AsyncStoreHandle, StoreHandle)):
        if options:
            raise ConfigurationError(
                f"options go to aconnect(), not to a session of its handle: {sorted(options)}"
            )
        return await (await aconnect(target)).session(name)
    if isinstance(target, AsyncStore) and not isinstance(target, (str, os.PathLike)):
        return target
    if isinstance(target, Store) and not isinstance(target, (str, os.PathLike)):
        return ThreadedStore(target)
    text = os.fspath(target) if isinstance(target, (str, os.PathLike)) else target
    if isinstance(text, str) and text.startswith(_REDIS):
        from .redis_async import AsyncRedisStore

        return AsyncRedisStore(text, check_session_id(name), **options)
    if isinstance(text, str) and text.startswith(_POSTGRES):
        from .postgres_async import AsyncPostgresStore

        return await AsyncPostgresStore.open(text, check_session_id(name), **options)
    from .targets import open_store

    store = await in_thread(open_store, target, session=session, fsync=fsync, **options)
    return ThreadedStore(store)


async def _initialized(client: Any, url: str) -> None:
    from ._redis_client import redis_module
    from ._urls import redis_url

    redis = redis_module()
    try:
        await client.initialize()
    except (redis.RedisError, redis.exceptions.RedisClusterException) as exc:
        info = redis_url(url)
        raise StoreError(f"{info.display}: cannot reach Redis: {info.redact(str(exc))}") from None


def _closer(client: Any, mine: Any, share: HandleShare) -> Callable[[], Awaitable[Any]]:
    """What closing a Redis handle does: its stores refuse work (the client would reconnect by
    itself), and the client it made is closed; never the caller's own."""

    async def close() -> None:
        share.closed = True
        if mine is None:
            await client.aclose()

    return close


def _display(url: str) -> str:
    from ._urls import redis_url

    return str(redis_url(url).display)
