"""SQLite backend (stdlib ``sqlite3``): the embedded default for several processes on one machine.

``sqlite:///relative.db`` or ``sqlite:////absolute/path.db``. The database runs in WAL mode
(readers never block the writer) with a busy timeout, so concurrent workers queue for the write
lock instead of failing. Every write is one ``BEGIN IMMEDIATE`` transaction (the schema and the
algorithm are in ``_sql.py``). ``synchronous=NORMAL`` (default, ``fsync="checkpoint"``): a
committed record survives the process being killed; ``fsync="always"`` uses ``FULL`` so it also
survives power loss.

Nothing here opens the database file (or its ``-wal`` / ``-shm``) except SQLite itself. POSIX
record locks belong to the *process*: closing any descriptor of the file drops every lock this
process's live connections hold on it, and another process may then checkpoint and delete the
WAL under them (disk I/O errors, short reads, a malformed database). A web worker opens a store per
request while older ones are still alive, so a stray ``open``/``close`` per store is fatal. The
file is therefore created by :func:`._files.create_private` (0600, never opened afterwards) and
SQLite is told ``mode=rw`` so that it never creates it itself (it would use 0644).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import (
    ConfigurationError,
    StoreError,
    StoreOutcomeUnknownError,
)
from . import _files
from ._drive import Flow
from ._sqldb import SqlStore
from ._urls import sqlite_url
from .protocol import DEFAULT_SESSION
from .records import record_id

__all__ = ["SqliteStore", "ThreadConnections"]

_T = TypeVar("_T")
#: A file's identity: ``(st_dev, st_ino)``.
_File = tuple[int, int]

#: SQLite keeps the busy timeout in milliseconds in a C ``int``.
_MAX_BUSY_TIMEOUT = (2**31 - 1) // 1000


def _check_busy_timeout(value: object) -> float:
    """Seconds to wait for a lock; a bool, NaN, infinity or negative value is a caller's bug."""
    seconds = math.nan
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an int beyond float range
            seconds = math.inf
    if not 0 <= seconds <= _MAX_BUSY_TIMEOUT:  # NaN fails this too
        shown = f"{value!r:.60}" if not isinstance(value, int) or seconds < math.inf else "<int>"
        raise ConfigurationError(
            f"busy_timeout={shown}: give the seconds to wait for a locked database, "
            f"a number from 0 to {_MAX_BUSY_TIMEOUT}"
        )
    return seconds


def _connect(path: Path, timeout: float, fsync: str) -> tuple[sqlite3.Connection, _File]:
    """A configured connection to ``path`` (WAL, busy timeout, synchronous by ``fsync``) and
    the identity of the file it opened.

    Private like the JSONL files (0600 in a 0700 directory, no symlinks); SQLite gives its -wal
    / -shm files the database file's permissions. Never open the file here (see the module
    docstring): create it when missing, and refuse a link by lstat before and after. The file
    is the one the path named before and after connecting (replaced in between: connect again).
    """
    synchronous = {"always": "FULL", "checkpoint": "NORMAL", "never": "OFF"}[fsync]
    _files.ensure_directory(path.parent)
    uri = f"{path.absolute().as_uri()}?mode=rw"  # rw: SQLite must not create it (0644)
    for _ in range(3):
        _files.create_private(path)
        before = _files.identity(path)
        try:
            conn = sqlite3.connect(
                uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open the SQLite store: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            _wal(conn, timeout)
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            after = _files.identity(path)  # a link swapped in after the check: SQLite followed it
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{path}: cannot open the SQLite store: {exc}") from exc
            raise
        if after is not None and after == before:
            return conn, after
        conn.close()  # SQLite leaves the -wal / -shm of a moved database file alone
    raise StoreError(f"{path}: the database file kept being replaced while connecting to it")


def _wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch to WAL, waiting up to ``timeout`` for a lock: SQLite does not call the busy
    handler for this switch, so connections opened at once on a new file (threads of one
    handle) would otherwise fail with "database is locked"."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def _checked_options(path: object, busy_timeout: object, fsync: object) -> tuple[Path, float]:
    if fsync not in ("always", "checkpoint", "never"):
        raise ConfigurationError(f"fsync={fsync!r}: use always, checkpoint or never")
    timeout = _check_busy_timeout(busy_timeout)
    if not isinstance(path, str | os.PathLike):
        raise ConfigurationError(f"path must be a str or os.PathLike, got {path!r:.60}")
    return _files.check_path(path), timeout


class _Link:
    """A connection and the database file it opened (``st_dev``, ``st_ino``), reopened once
    that file is no longer the one at the path.

    SQLite keeps using the file it opened: removed (a cleanup job) or replaced (a restore from
    backup, another process recreating the database), every commit still succeeds. In WAL mode
    it lands in the ``-wal`` file *at the path*, which the new file now uses: frames of one
    database over another's pages (duplicates, rows the restore rolled back, a corrupt index).
    So every operation starts with one ``lstat`` of the path: a file replaced since the last
    operation reconnects before anything is read or written (the store's head names the old
    file, so a write conflicts and a retry reloads the new one). A replacement *during* an
    operation is seen by a second ``lstat`` after it: its writes may have reached the new file,
    so that is ``StoreOutcomeUnknownError`` (an append names its record ids, which a redo
    checks); no file there raises ``StoreError``. Closing the dropped connection is safe:
    SQLite checkpoints on close only while the file is still at its path.
    """

    def __init__(
        self, path: Path, timeout: float, fsync: str, ready: set[tuple[_File, str]]
    ) -> None:
        self.path, self._timeout, self._fsync = path, timeout, fsync
        #: (file, table prefix) pairs whose tables exist (shared by a handle's connections).
        self.ready = ready
        self.lock = threading.RLock()  # taken by every store using this connection
        self.conn: sqlite3.Connection | None = None
        self.file: _File | None = None
        self._closed = False

    def connection(self) -> tuple[sqlite3.Connection, _File]:
        if self.conn is None or self.file is None:
            if self._closed:
                raise StoreError(f"{sqlite_url(self.path)}: this store is closed; nothing was done")
            self.conn, self.file = _connect(self.path, self._timeout, self._fsync)
        return self.conn, self.file

    def _moved(self) -> str | None:
        """None while the path names this connection's file, else what happened to it."""
        try:
            st = os.lstat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return "removed"
        except OSError:  # cannot tell (permissions): SQLite reports its own errors
            return None
        return None if (st.st_dev, st.st_ino) == self.file else "replaced"

    def check(self, *, ran: bool) -> None:
        """Whether the path still names this connection's file, before an operation (``ran``
        False: a replaced file reconnects; the head names the old file, so a write conflicts)
        or after one (it may have reached the new file: outcome unknown)."""
        moved = self._moved() if self.conn is not None else None
        if moved is None:
            return
        self.drop()
        if moved == "removed":
            when = "during this operation" if ran else "since this connection last used it"
            done = "what it wrote went with it" if ran else "nothing was done"
            raise StoreError(
                f"{self.path}: the SQLite database file was removed {when}; {done}. The next "
                "use creates a new database at the path"
            )
        if ran:
            raise StoreOutcomeUnknownError(
                f"{self.path}: the SQLite database file was replaced during this operation "
                "(removed and recreated, or restored from a backup); what it wrote may have "
                "reached the new file through the shared -wal file. Reload the session before "
                "redoing it (stop the workers before replacing a database file: SQLite cannot "
                "keep them apart)"
            )

    def refresh(self) -> None:
        """Before a new session uses the connection: reopen it if the file moved (nothing
        was read through it yet, so nothing to report)."""
        with self.lock:
            if self.conn is not None and self._moved() is not None:
                self.drop()

    def drop(self) -> None:
        conn, file, self.conn, self.file = self.conn, self.file, None, None
        for key in [key for key in self.ready if key[0] == file]:
            self.ready.discard(key)  # a new file may get this file's inode number
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def close(self) -> None:
        with self.lock:
            self._closed = True
            self.drop()


class ThreadConnections:
    """One connection per thread to one database file, shared by every session store made in
    that thread (:func:`~context_manager.store.connect`): a per-request session costs no
    connect, no PRAGMAs and no schema check. Each connection has its own lock, which the stores
    that use it take, so a store handed to another thread stays correct. A connection whose
    file was removed or replaced is reopened on the next session (see :class:`_Link`)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        fsync: str = "checkpoint",
    ) -> None:
        self.path, self._timeout = _checked_options(path, busy_timeout, fsync)
        self._fsync = fsync
        self._local = threading.local()
        self._all: list[_Link] = []
        self._guard = threading.Lock()
        #: (database file, table prefix) pairs whose tables a store already checked (once per
        #: database file, not per session: every thread's connection sees the same file).
        self.ready: set[tuple[_File, str]] = set()

    def get(self) -> _Link:
        link: _Link | None = getattr(self._local, "link", None)
        if link is None:
            link = _Link(self.path, self._timeout, self._fsync, self.ready)
            link.connection()
            self._local.link = link
            with self._guard:
                self._all.append(link)
        else:
            link.refresh()
        return link

    def close(self) -> None:
        """Close every thread's connection (call when the process stops serving)."""
        with self._guard:
            for link in self._all:
                link.close()
            self._all.clear()
        self._local = threading.local()


class SqliteStore(SqlStore):
    """One session in a SQLite database file (created with its tables on first use).

    With ``connections=`` (a :class:`ThreadConnections`) the store uses its thread's shared
    connection and leaves it open on :meth:`close`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        session: str = DEFAULT_SESSION,
        *,
        prefix: str = "context_",
        busy_timeout: float = 30.0,
        fsync: str = "checkpoint",
        connections: ThreadConnections | None = None,
    ) -> None:
        super().__init__(session, prefix=prefix)
        self.path, timeout = _checked_options(path, busy_timeout, fsync)
        self._error = sqlite3.Error
        self._shared = connections is not None
        if connections is not None:
            self._link = connections.get()
        else:
            self._link = _Link(self.path, timeout, fsync, set())
        self._lock = self._link.lock
        try:
            with self._lock:
                self._attach()
        except BaseException:
            if connections is None:
                self._link.close()
            raise

    def _attach(self) -> None:
        """Use the link's connection (reopened if its file moved), with this prefix's tables."""
        self._conn, file = self._link.connection()
        if (file, self.prefix) not in self._link.ready:
            super()._run(self._transaction(self._sqlite_schema, write=True))
            self._link.ready.add((file, self.prefix))

    def _run(self, flow: Flow[_T]) -> _T:
        with self._lock:
            self._link.check(ran=False)
            try:
                self._attach()
                result = super()._run(flow)
            except Exception:
                self._link.check(ran=True)  # an error on a moved file: say the file moved
                raise
            self._link.check(ran=True)
            return result

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        try:
            return super().append(records, durable=durable)
        except StoreOutcomeUnknownError as exc:
            if exc.record_ids:
                raise
            rids = tuple(rid for rid in map(record_id, records) if rid is not None)
            raise StoreOutcomeUnknownError(str(exc), record_ids=rids) from None

    def _epoch(self, stored: object) -> str:
        """The epoch and the database file it was read from: a file restored from a backup
        holds the session's old epoch, and a head taken before the restore must not match it
        (catching up from there would keep rows the restore rolled back)."""
        return f"{super()._epoch(stored)}@{self._link.file}"

    def _sqlite_schema(self) -> Flow[None]:
        return self._create_schema(bigint="INTEGER", real="REAL")

    @property
    def target(self) -> str:
        return sqlite_url(self.path)

    def close(self) -> None:
        if not self._shared:
            self._link.close()
