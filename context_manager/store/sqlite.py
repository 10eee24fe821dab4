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

import math
import numbers
import os
import sqlite3
import threading
import time
from pathlib import Path

from ..errors import ConfigurationError, StoreError
from . import _files
from ._drive import Flow
from ._sqldb import SqlStore
from .protocol import DEFAULT_SESSION

__all__ = ["SqliteStore", "ThreadConnections"]

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


def _connect(path: Path, timeout: float, fsync: str) -> sqlite3.Connection:
    """A configured connection to ``path`` (WAL, busy timeout, synchronous by ``fsync``).

    Private like the JSONL files (0600 in a 0700 directory, no symlinks); SQLite gives its -wal
    / -shm files the database file's permissions. Never open the file here (see the module
    docstring): create it when missing, and refuse a link by lstat before and after.
    """
    synchronous = {"always": "FULL", "checkpoint": "NORMAL", "never": "OFF"}[fsync]
    _files.ensure_directory(path.parent)
    _files.create_private(path)
    uri = f"{path.absolute().as_uri()}?mode=rw"  # rw: SQLite must not create it (0644)
    try:
        conn = sqlite3.connect(
            uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the SQLite store: {exc}") from exc
    try:
        if _files.is_link(path):  # swapped in after the check: SQLite followed it
            raise _files.symlink_error(path)
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        _wal(conn, timeout)
        conn.execute(f"PRAGMA synchronous = {synchronous}")
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.Error):
            raise StoreError(f"{path}: cannot open the SQLite store: {exc}") from exc
        raise
    return conn


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


class ThreadConnections:
    """One connection per thread to one database file, shared by every session store made in
    that thread (:func:`~context_manager.store.connect`): a per-request session costs no
    connect, no PRAGMAs and no schema check. Each connection has its own lock, which the stores
    that use it take, so a store handed to another thread stays correct."""

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
        self._all: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        #: Table prefixes whose tables a store already checked (once per database, not per
        #: session: every thread's connection sees the same file).
        self.ready: set[str] = set()

    def get(self) -> tuple[sqlite3.Connection, threading.RLock]:
        pair: tuple[sqlite3.Connection, threading.RLock] | None
        pair = getattr(self._local, "pair", None)
        if pair is None:
            pair = (_connect(self.path, self._timeout, self._fsync), threading.RLock())
            self._local.pair = pair
            with self._guard:
                self._all.append(pair[0])
        return pair

    def close(self) -> None:
        """Close every thread's connection (call when the process stops serving)."""
        with self._guard:
            for conn in self._all:
                conn.close()
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
            self._conn, self._lock = connections.get()
            if prefix in connections.ready:
                return
        else:
            self._lock = threading.RLock()  # one connection; a store object may serve threads
            self._conn = _connect(self.path, timeout, fsync)
        try:
            self._run(self._transaction(self._sqlite_schema, write=True))
        except BaseException:
            if connections is None:
                self._conn.close()
            raise
        if connections is not None:
            connections.ready.add(prefix)

    def _sqlite_schema(self) -> Flow[None]:
        return self._create_schema(bigint="INTEGER", real="REAL")

    @property
    def target(self) -> str:
        return f"sqlite:///{self.path}"

    def close(self) -> None:
        if not self._shared:
            self._conn.close()
