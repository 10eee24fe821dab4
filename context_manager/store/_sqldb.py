"""The sync driver of the SQL flows (``_sql.py``) over a DB-API connection: ``sqlite3`` and
psycopg's ``Connection`` are driven by the same code (a cursor per statement, rows back).
The async PostgreSQL store drives the same flows on psycopg's ``AsyncConnection``
(``postgres_async.py``); async SQLite runs this driver in a worker thread.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from ..errors import StoreError
from ._drive import Failed, Flow, drive
from ._line_ends import LineEnds
from ._sql import SqlFlows
from ._sql_steps import Reconnect, Sql
from ._sql_tail import SqlRows
from ._tail_read import load_older, load_tail
from .protocol import Batch, Head, Tail

__all__ = ["SqlStore"]

_T = TypeVar("_T")


class SqlStore(SqlFlows):
    """The sync driver: a DB-API connection (``sqlite3``, psycopg), one flow at a time.

    Subclasses set ``_conn``, ``_lock`` and ``_error`` (the client's exception base class) and
    say when a failed statement means the connection is gone (:meth:`_is_lost`).
    """

    _conn: Any
    _lock: threading.RLock
    _error: type[BaseException] | tuple[type[BaseException], ...]

    def _is_lost(self) -> bool:
        return False  # a local database never loses its connection

    def _reconnect(self) -> None:
        """Open a new connection after :class:`ConnectionLost` (a local database never loses
        one, so the default refuses)."""
        raise StoreError(f"{self.target}: the connection was lost")

    @abstractmethod
    def close(self) -> None:
        """Close the connection, or give it back to the pool it came from."""

    def _handle_closed(self) -> bool:
        """Whether the handle this store's connection came from was closed (none here)."""
        return False

    def _run(self, flow: Flow[_T]) -> _T:
        with self._lock:
            if self._conn is None or self._handle_closed():  # (a closed store's pooled
                # connection went back to the pool; a closed handle's pool refuses it)
                raise StoreError(f"{self.target}: this session's store is closed; nothing was done")
            return drive(flow, self._perform)

    def _perform(self, step: Sql | Reconnect) -> Any:
        if isinstance(step, Reconnect):
            self._reconnect()
            return None
        try:
            cur = self._conn.cursor()
            try:
                if step.many:
                    cur.executemany(step.text, step.params)
                elif step.params:
                    cur.execute(step.text, step.params)
                else:
                    cur.execute(step.text)
                return cur.fetchall() if cur.description is not None else []
            finally:
                cur.close()
        except self._error as exc:
            raise Failed(exc, lost=self._is_lost()) from None

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        return self._run(self._append(records))

    def checkpoint(self) -> int:
        return self._run(self._checkpoint())

    def revert_to(self, checkpoint_id: int) -> Head:
        return self._run(self._revert_to(checkpoint_id))

    def clear(self) -> None:
        self._run(self._clear())

    def delete(self) -> bool:
        """Delete the session for good (every generation, offloaded results) in one transaction."""
        return self._run(self._delete())

    def load(self, start: int = 0) -> Batch:
        return self._run(self._load(start))

    def load_after(self, head: Head) -> Batch | None:
        return self._run(self._load_after(head))

    def load_tail(self, ends: LineEnds, reach: int) -> Tail | None:
        """The newest records, as far as ``reach`` stored tokens (``_tail_read.load_tail``)."""
        tail = self._run(self._read(lambda: load_tail(SqlRows(self), ends, reach)))
        if tail is not None:
            self._head = tail.head
        return tail

    def load_older(self, tail: Tail) -> list[tuple[int, bytes, bool]]:
        """The message records ``tail`` left unread, read when the manager needs them."""
        return self._run(self._read(lambda: load_older(SqlRows(self, tail.head), tail)))

    def sessions(self) -> list[str]:
        return self._run(self._sessions())

    def generations(self) -> list[int]:
        """Every generation that holds records (old ones are kept by revert and clear)."""
        return self._run(self._generations())

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
