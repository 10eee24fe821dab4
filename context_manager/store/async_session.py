"""An async journal for a (sync) manager: ``await MessageContextManager.aopen(...)``.

The manager's work is CPU only, so it stays synchronous; only the store's I/O is awaited. The
write-ahead rule holds through the batch the sync journal already has: inside
``async with manager.store.batch():`` every change is validated and encoded as it is made and
its records are collected; when the block ends they are appended in one atomic step (one
transaction, one script, one file write), awaited. If that append fails, memory is rebuilt as
the store has it and the typed error is raised (``StoreConflictError``: another worker wrote
first, nothing of the batch was stored; :func:`~.retry.aretrying` catches up and redoes it).

A change made outside a batch (or by another task while one is open) would need I/O from sync
code: it raises :class:`AsyncJournalError` before memory changes. So does every sync method
of the journal that needs I/O (``manager.checkpoint()``, ``manager.revert_to()``); their async
forms are :meth:`AsyncSessionStore.acheckpoint`, :meth:`~AsyncSessionStore.arevert_to`,
:meth:`~AsyncSessionStore.areload`, :meth:`~AsyncSessionStore.alanded` and
:meth:`~AsyncSessionStore.aclose`.

Batches of one journal run one at a time (an ``asyncio.Lock``); a batch cancelled while its
append is in flight (or while it rebuilds memory) leaves the journal *stale*: the next batch
first rebuilds memory from every record, so whatever the store holds is what memory holds. A
store that runs its operations in a worker thread (SQLite, JSONL) raises the cancellation only
once the thread's write has finished (``async_targets.in_thread``), so the turn is released
and the rebuild reads a store that write can no longer change.
Every rule (encoding, replay, catching up, committing) is ``_journal.py``'s, shared with the
sync :class:`~.session.SessionStore`.
"""

from __future__ import annotations

import asyncio
import os
from functools import partial
from typing import Any, TypeVar

from ..errors import ConfigurationError, StoreError
from ..events import Change
from ..host import ManagerHost
from ._drive import Flow, adrive
from ._journal import JournalCore, Op
from .async_targets import AsyncStoreHandle, aopen_store
from .handle import StoreHandle
from .jsonl import FsyncMode
from .protocol import AsyncStore, Batch, Head, Store
from .records import RecordWriter
from .replayer import Records, Replayer, RestoredLog, Resume
from .targets import SCHEMES
from .warm import options_key

__all__ = ["AsyncJournalError", "AsyncLog", "AsyncSessionStore", "aopen_session"]

M = TypeVar("M", bound=ManagerHost)
T = TypeVar("T")


class AsyncJournalError(StoreError):
    """A change or a sync call on a manager whose store is async needs I/O it cannot block
    on: make changes inside ``async with manager.store.batch():`` (from the task that opened
    it) and await the store's ``a...`` methods. Nothing was changed."""


class AsyncLog(RecordWriter):
    """The async journal's log: the typed appends (collected, never written one by one) and the
    async store's operations."""

    def __init__(self, store: AsyncStore, *, strict: bool = False) -> None:
        self._store = store
        self.strict = strict

    @property
    def store(self) -> AsyncStore:
        return self._store

    @property
    def target(self) -> str:
        return self._store.target

    @property
    def path(self) -> str:
        return self._store.target

    def _put(self, record: dict[str, Any], durable: bool) -> None:
        raise AsyncJournalError(
            f"{self.target}: a record was written outside a batch; nothing was changed"
        )

    async def read(self, resume: Resume | None = None) -> tuple[RestoredLog, Records]:
        threaded = getattr(self._store, "read_log", None)
        if threaded is not None:
            return await threaded(self.strict, resume)  # type: ignore[no-any-return]
        batch = await self._store.load(0)
        replayer = Replayer.of_rows(self.target, batch.lines, strict=self.strict, resume=resume)
        return replayer.state, replayer.sequence

    async def load_after(self, head: Head) -> Batch | None:
        return await self._store.load_after(head)

    async def append(self, records: list[dict[str, Any]], *, durable: bool = False) -> list[int]:
        return await self._store.append(records, durable=durable)

    async def checkpoint(self) -> int:
        return await self._store.checkpoint()

    async def revert_to(self, checkpoint_id: int) -> object:
        return await self._store.revert_to(checkpoint_id)

    async def clear(self) -> None:
        await self._store.clear()

    async def aclose(self) -> None:
        await self._store.aclose()


class _Batch:
    """``async with journal.batch():`` opens a batch; ``with journal.batch():`` (the manager's
    ``extend``) joins the one the current task holds and refuses otherwise."""

    __slots__ = ("_atomic", "_joined", "_journal")

    def __init__(self, journal: AsyncSessionStore, atomic: bool) -> None:
        self._journal = journal
        self._atomic = atomic
        self._joined = False

    def __enter__(self) -> None:
        self._journal._require_batch("extend()")

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> None:
        self._joined = await self._journal._open_batch()

    async def __aexit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if not self._joined:
            await self._journal._close_batch(exc, self._atomic)


class AsyncSessionStore(JournalCore):
    """The async journal of a persistent session (see the module docstring)."""

    log: AsyncLog

    def __init__(self, log: AsyncLog, restored: RestoredLog) -> None:
        super().__init__(log, restored)
        self._gate = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None
        self._ops: list[Op] = []

    # -- the sync Journal protocol the manager calls ---------------------------------------
    def _owned(self) -> bool:
        if self._owner is None:
            return False
        try:
            return asyncio.current_task() is self._owner
        except RuntimeError:  # no event loop in this thread
            return False

    def _require_batch(self, doing: str) -> None:
        if not self._owned():
            raise AsyncJournalError(
                f"{self.target}: this manager's store is async, so {doing} must run inside "
                "`async with manager.store.batch():`, in the task that opened it (a sync write "
                "would block the event loop); nothing was changed"
            )

    def write(self, change: Change) -> None:
        """Encode ``change`` into the current batch (runs under the manager's lock, before
        memory changes); outside a batch, :class:`AsyncJournalError`."""
        self._refuse_if_closed()
        self._require_batch(f"a change ({type(change).__name__})")
        self._write_ahead(change, self._queue_clear)

    def _queue_clear(self) -> None:
        self._cut()  # a clear comes after what the batch collected before it
        self._ops.append(Op("clear"))

    def batch(self, *, atomic: bool = False) -> _Batch:
        """``async with manager.store.batch():`` make changes; they are stored when it ends
        (``atomic``: an error inside stores nothing of them, as the sync batch)."""
        return _Batch(self, atomic)

    def _refuse(self, name: str) -> Any:
        raise AsyncJournalError(
            f"{self.target}: this manager's store is async: use `await manager.store.a{name}"
            f"(...)`; nothing was changed"
        )

    def checkpoint(self) -> int:
        return self._refuse("checkpoint")  # type: ignore[no-any-return]

    def revert_to(self, checkpoint_id: int, manager: ManagerHost) -> None:
        self._refuse("revert_to")

    def reload(self, manager: ManagerHost) -> None:
        self._refuse("reload")

    def landed(self, manager: ManagerHost, record_ids: tuple[str, ...]) -> bool:
        return self._refuse("landed")  # type: ignore[no-any-return]

    def close(self) -> None:
        self._refuse("close")

    # -- batches -----------------------------------------------------------------------------
    def _cut(self) -> None:
        """Close the records collected so far into one append operation."""
        records, durable = self.log.take_collected()
        self.log.start_collecting()
        if records:
            self._ops.append(Op("append", (records,), durable))

    async def _perform(self, op: Op) -> Any:
        if op.name == "append":
            return await self.log.append(*op.args, durable=op.durable)
        return await getattr(self.log, op.name)(*op.args)

    async def _open_batch(self, *, rebuild: bool = True) -> bool:
        """Take this journal's turn (True: the current task holds it already and joins); a
        stale journal first rebuilds memory (unless the caller's flow reloads anyway)."""
        if self._owned():
            return True
        await self._gate.acquire()
        try:
            if rebuild and self.stale and self._manager is not None:
                await adrive(self._reload_flow(self._manager, (), full=True), self._perform)
        except BaseException:
            self._gate.release()
            raise
        self._owner = asyncio.current_task()
        self._ops = []
        self.log.start_collecting()
        return False

    async def _close_batch(self, error: BaseException | None, atomic: bool = False) -> None:
        try:
            self._cut()
            ops, self._ops = self._ops, []
            self.log.take_collected()
            if ops and atomic and isinstance(error, Exception):  # nothing of it is stored
                await adrive(self._rebuild_flow(), self._perform)
            elif ops and (error is None or isinstance(error, Exception)):
                # What came before an error is stored, as unbatched writes would have been.
                await adrive(self._commit_flow(ops), self._perform)
            elif ops:  # cancelled or interrupted inside the batch: memory is ahead of the store
                self.stale = True
        finally:
            self._owner = None
            self._gate.release()

    async def _turn(self, flow: Flow[T]) -> T:
        """Run ``flow`` on this journal's turn (after what the current batch collected)."""
        if self._owned():
            self._cut()
            ops, self._ops = self._ops, []
            if ops:
                await adrive(self._commit_flow(ops), self._perform)
            return await adrive(flow, self._perform)
        # A stale journal's reload is a full one anyway, and must see the ids it asks about.
        await self._open_batch(rebuild=False)
        try:
            return await adrive(flow, self._perform)
        finally:
            await self._close_batch(None)

    def _attached(self) -> ManagerHost:
        if self._manager is None:
            raise StoreError(f"{self.target}: this store is not attached to a manager")
        return self._manager

    async def acheckpoint(self) -> int:
        """Append the next checkpoint and return its id (``manager.checkpoint()``'s async
        form; inside a batch, what it collected is stored first)."""
        return await self._turn(self._checkpoint_flow())

    async def arevert_to(self, checkpoint_id: int) -> None:
        """Start a new generation holding the records before checkpoint ``checkpoint_id`` and
        rebuild the manager from it (``manager.revert_to()``'s async form)."""
        if isinstance(checkpoint_id, bool) or not isinstance(checkpoint_id, int):
            raise ConfigurationError(f"checkpoint_id must be an int, got {checkpoint_id!r}")
        await self._turn(self._revert_flow(self._attached(), checkpoint_id))

    async def areload(self) -> None:
        """Catch the manager up with the store (after a ``StoreConflictError``)."""
        await self._turn(self._reload_flow(self._attached(), ()))

    async def alanded(self, record_ids: tuple[str, ...]) -> bool:
        """Catch up and say whether the write with ``record_ids`` (from a
        ``StoreOutcomeUnknownError``) is stored: if not, redo it."""
        return await self._turn(self._reload_flow(self._attached(), tuple(record_ids)))

    async def aclose(self) -> None:
        """Close the session's store (a handle's shared connections stay open)."""
        self._park_manager(self._owner is not None)
        await self.log.aclose()


async def aopen_session(
    cls: type[M],
    target: str | os.PathLike[str] | Store | StoreHandle | AsyncStore | AsyncStoreHandle,
    *,
    session: str | None = None,
    fsync: FsyncMode = "checkpoint",
    strict: bool = False,
    store_options: dict[str, Any] | None = None,
    integrity: bool = False,
    **options: Any,
) -> M:
    """:func:`~.session.open_session` for asyncio: the same arguments, the same restore; the
    manager's journal is an :class:`AsyncSessionStore`."""
    store_options = dict(store_options or {})
    if integrity:
        store_options["integrity"] = True
    is_path = isinstance(target, (str, os.PathLike)) and not os.fspath(target).startswith(SCHEMES)
    if is_path:
        store_options["strict"] = strict
    store = await aopen_store(target, session=session, fsync=fsync, **store_options)
    journal = AsyncSessionStore(AsyncLog(store, strict=strict), RestoredLog())
    cache = target.cache if isinstance(target, (StoreHandle, AsyncStoreHandle)) else None
    parked = None
    if cache is not None:
        journal.options = options_key(cls, options, strict)
        parked = cache.take(store.session, journal.options)
        journal.park = partial(cache.park, store.session)
    try:
        flow = journal._resume_flow(cls, options, parked)
        manager, system_prompt = await adrive(flow, journal._perform)
    except BaseException:
        await store.aclose()
        raise
    journal.attach(manager)
    if system_prompt is not None and system_prompt != manager.system_prompt:
        async with journal.batch():
            manager.set_system_prompt(system_prompt)
    return manager
