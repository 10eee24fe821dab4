"""Glue between a :class:`MessageContextManager` and its session log (sync).

``MessageContextManager.open(path, **options)`` lands in :func:`open_session`: it reads the log,
builds the manager, replays the history with no journal attached (so nothing is written twice),
then attaches :class:`SessionStore` as the manager's write-ahead journal: every later add /
system prompt / usage / clear / compaction is written before memory changes. The rules it
shares with the async journal (encoding a change, replay, catching up, committing a batch) are
``_journal.py``'s and ``_replay.py``'s flows, which this class performs by blocking.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from functools import partial
from typing import Any, TypeVar

from ..errors import ContextManagerError
from ..events import Change, Cleared
from ..host import ManagerHost
from ._drive import Flow, drive
from ._journal import JournalCore, Op
from ._replay import replay
from .handle import StoreHandle
from .jsonl import FsyncMode
from .log import SessionLog
from .protocol import Store
from .replayer import RestoredLog
from .warm import options_key

__all__ = ["SessionStore", "open_session", "replay"]

M = TypeVar("M", bound=ManagerHost)
T = TypeVar("T")


class SessionStore(JournalCore):
    """The journal of a persistent session: writes each change ahead, checkpoints, reverts."""

    log: SessionLog

    def __init__(self, log: SessionLog, restored: RestoredLog) -> None:
        super().__init__(log, restored)
        self._batching = False
        self._rotated = False  # whether the clear being written reached the store

    def write(self, change: Change) -> None:
        """Write ``change`` before the manager applies it (runs under the manager's lock).

        Encoding and I/O failures become typed errors, and the manager stays unchanged. A clear
        that keeps the system prompt is two writes (the rotation, then the prompt again): they
        run as a batch, so if the second fails memory is rebuilt as the store has it.
        """
        self._refuse_if_stale()
        if isinstance(change, Cleared) and not self._batching:
            self._rotated = False
            try:
                with self.batch():
                    self._write_ahead(change, self._clear_now)
            except ContextManagerError as exc:
                if self._rotated:  # the error's own "nothing was changed" is not so here
                    exc.args = (
                        f"{exc.args[0] if exc.args else exc}; the clear itself was stored, only "
                        "the system prompt was not written again: memory was rebuilt as the "
                        "store holds it (no history, no system prompt)",
                    )
                else:
                    exc.add_note("memory was rebuilt as the store holds it (history, prompt)")
                raise
            return
        self._write_ahead(change, self._clear_now)

    def _clear_now(self) -> None:
        self._flush()  # a clear comes after what was collected before it
        self.log.clear()
        self._rotated = True

    def _perform(self, op: Op) -> Any:
        log = self.log
        if op.name == "read":
            return log.read(*op.args)
        if op.name == "append":
            return log.store.append(*op.args, durable=op.durable)
        if op.name == "load_after":
            return log.store.load_after(*op.args)
        return getattr(log, op.name)(*op.args)  # checkpoint, revert_to, clear

    def _run(self, flow: Flow[T]) -> T:
        manager = self._manager
        with manager.locked() if manager is not None else contextlib.nullcontext():
            return drive(flow, self._perform)

    @contextlib.contextmanager
    def batch(self, *, atomic: bool = False) -> Iterator[None]:
        """The writes made inside go to the store in one atomic append when it ends (see
        :meth:`~context_manager.events.Journal.batch`); nested batches join the outer one.
        ``atomic``: an error inside stores nothing of the batch either."""
        if self._batching:
            yield
            return
        self._batching = True
        self.log.start_collecting()
        try:
            yield
        except BaseException:
            if atomic:
                self.log.take_collected()  # nothing of the batch is stored...
                self._run(self._rebuild_flow())  # ...and memory goes back to the store
            else:
                self._flush()  # what came before the error, as unbatched writes would have
            raise
        else:
            self._flush()
        finally:
            self._batching = False
            self.log.take_collected()  # never leave the log collecting

    def _flush(self) -> None:
        records, durable = self.log.take_collected()
        if self._batching:
            self.log.start_collecting()
        if records:
            self._run(self._commit_flow([Op("append", (records,), durable)]))

    def checkpoint(self) -> int:
        self._refuse_if_stale()
        self._flush()
        return self._run(self._checkpoint_flow())

    def revert_to(self, checkpoint_id: int, manager: ManagerHost) -> None:
        """Rewrite the log up to the checkpoint, then rebuild ``manager`` from it.

        Runs under the manager's (re-entrant) lock when it has one, so an add from another
        thread cannot slip in while the listener is detached and go unlogged.
        """
        with manager.locked():
            drive(self._revert_flow(manager, checkpoint_id), self._perform)

    def reload(self, manager: ManagerHost) -> None:
        """Bring ``manager`` up to date with the store: the retry after a
        ``StoreConflictError`` (another worker wrote since this one read), then redo the change.

        When the session still extends what this worker last saw (same generation, nothing
        rewritten), only the records after that point are read and applied; otherwise (a
        revert, a clear, an expired and rebuilt session, a compaction among the new records)
        the manager is rebuilt from every record.
        """
        with manager.locked():
            drive(self._reload_flow(manager, ()), self._perform)

    def landed(self, manager: ManagerHost, record_ids: tuple[str, ...]) -> bool:
        """Reload ``manager`` (see :meth:`reload`) and say whether the records ``record_ids``
        (from a ``StoreOutcomeUnknownError``) are stored: if so the write took effect and the
        reload brought it into memory; if not, redo it."""
        with manager.locked():
            return drive(self._reload_flow(manager, record_ids), self._perform)

    def close(self) -> None:
        with self._manager.locked() if self._manager is not None else contextlib.nullcontext():
            self._park_manager(self._batching)
        self.log.close()


def open_session(
    cls: type[M],
    path: str | os.PathLike[str] | Store | StoreHandle,
    *,
    session: str | None = None,
    fsync: FsyncMode = "checkpoint",
    strict: bool = False,
    store_options: dict[str, Any] | None = None,
    integrity: bool = False,
    **options: Any,
) -> M:
    """Open or create the session at ``path`` and return a manager restored from it.

    ``path`` is a JSONL path or a store URL (``sqlite:///``, ``redis://``, ``postgresql://``;
    see ``targets.py``) or a :class:`~.protocol.Store`; ``session`` picks the session there.
    ``fsync``, ``strict`` and ``store_options`` configure the store; every other option goes to
    the manager's constructor. A ``system_prompt`` option that differs from the logged one
    replaces it (and is persisted); without the option the logged prompt is restored.
    """
    from .targets import open_log

    if integrity:  # a per-line CRC (JSONL only; database rows have their own checks)
        store_options = {**(store_options or {}), "integrity": True}
    log = open_log(path, session=session, fsync=fsync, strict=strict, store_options=store_options)
    store = SessionStore(log, RestoredLog())
    cache = path.cache if isinstance(path, StoreHandle) else None
    parked = None
    if cache is not None:
        store.options = options_key(cls, options, strict)
        parked = cache.take(log.store.session, store.options)
        store.park = partial(cache.park, log.store.session)
    try:
        manager, system_prompt = drive(store._resume_flow(cls, options, parked), store._perform)
    except BaseException:
        log.close()
        raise
    store.attach(manager)
    if system_prompt is not None and system_prompt != manager.system_prompt:
        manager.set_system_prompt(system_prompt)
    return manager
