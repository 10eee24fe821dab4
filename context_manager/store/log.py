"""A session log over any record-level :class:`~.protocol.Store`: what ``SessionStore`` writes to.

:class:`~.jsonl.JsonlLog` is its own session log (the Kimi-compatible file needs its tail
repair, rotation and fsync modes); every other backend is wrapped in :class:`StoreLog`. Both
write through :class:`~.records.RecordWriter` and read through :class:`~.replayer.Replayer`, so
a manager restores from and writes through every backend identically.
"""

from __future__ import annotations

from typing import Any, Protocol

from ._line_ends import LineEnds
from .protocol import NewestFirst, Store
from .records import RecordWriter
from .replayer import Records, Replayer, RestoredLog, Resume

__all__ = ["SessionLog", "StoreLog"]


class SessionLog(Protocol):
    """What :class:`~.session.SessionStore` needs of a log (``JsonlLog`` and ``StoreLog``)."""

    @property
    def strict(self) -> bool: ...
    @property
    def target(self) -> str: ...
    @property
    def store(self) -> Store: ...

    def read(self, resume: Resume | None = None) -> tuple[RestoredLog, Records]: ...
    def append_message(
        self,
        message: Any,
        *,
        pinned: bool = False,
        priority: int = 0,
        extra: Any = None,
        record_id: str | None = None,
    ) -> None: ...
    def append_usage(
        self,
        token_count: int,
        *,
        count: tuple[int | None, str] | None = None,
        record_id: str | None = None,
    ) -> None: ...
    def write_system_prompt(
        self, text: str, original: Any = None, *, record_id: str | None = None
    ) -> None: ...
    def append_compaction(self, entry: Any, *, record_id: str | None = None) -> None: ...
    def start_collecting(self) -> None: ...
    def take_collected(self) -> tuple[list[dict[str, Any]], bool]: ...
    def checkpoint(self) -> int: ...
    def revert_to(self, checkpoint_id: int) -> object: ...
    def clear(self) -> None: ...
    def close(self) -> None: ...


class StoreLog(RecordWriter):
    """Typed appends and replay over a backend store (SQLite, Redis, PostgreSQL)."""

    def __init__(self, store: Store, *, strict: bool = False, tail: bool = True) -> None:
        self._store = store
        self.strict = strict
        # A SQL or Redis store may leave the oldest messages where they are until they are
        # needed (``_tail_read.load_tail``); not for a session read in a worker thread (async
        # SQLite), whose later reads would block the event loop.
        self._tail = store if tail and isinstance(store, NewestFirst) else None

    @property
    def store(self) -> Store:
        return self._store

    @property
    def target(self) -> str:
        return self._store.target

    @property
    def path(self) -> str:
        """The target (named ``path`` like ``JsonlLog.path``, for messages)."""
        return self._store.target

    def read(self, resume: Resume | None = None) -> tuple[RestoredLog, Records]:
        """Every record, for a manager to replay: it reads each message line itself (once), and
        ``_replay.replay`` reports one it cannot read as a corrupt line, by number (``resume``:
        from the latest compaction on, see ``Replayer.of_lines``)."""
        store = None if self.strict else self._tail
        if store is not None and resume is not None and resume.reach is not None:
            tail = store.load_tail(LineEnds(resume.fingerprint), resume.reach)
            if tail is not None:
                read = Replayer.of_tail(self.target, tail, resume)
                if read is not None:
                    return read.state, read.sequence
        lines = self._store.load(0).lines
        replayer = Replayer.of_rows(self.target, lines, strict=self.strict, resume=resume)
        return replayer.state, replayer.sequence

    def _put(self, record: dict[str, Any], durable: bool) -> None:
        self._store.append([record], durable=durable)

    def checkpoint(self) -> int:
        return self._store.checkpoint()

    def revert_to(self, checkpoint_id: int) -> object:
        return self._store.revert_to(checkpoint_id)

    def clear(self) -> None:
        self._store.clear()

    def close(self) -> None:
        self._store.close()
