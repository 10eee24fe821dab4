"""SQLite backend (stdlib ``sqlite3``): the embedded default for several processes on one machine.

``sqlite:///relative.db`` or ``sqlite:////absolute/path.db``. The database runs in WAL mode
(readers never block the writer) with a busy timeout, so concurrent workers queue for the write
lock instead of failing. Every write is one ``BEGIN IMMEDIATE`` transaction (the schema and the
algorithm are in ``_sql.py``). ``synchronous=NORMAL`` (default, ``fsync="checkpoint"``): a
committed record survives the process being killed; ``fsync="always"`` uses ``FULL`` so it also
survives power loss.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ConfigurationError, ContextManagerError, StoreError
from . import _files
from ._sql import Cursor, SqlStore, schema
from .protocol import DEFAULT_SESSION

__all__ = ["SqliteStore"]


class SqliteStore(SqlStore):
    """One session in a SQLite database file (created with its tables on first use)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        session: str = DEFAULT_SESSION,
        *,
        prefix: str = "context_",
        busy_timeout: float = 30.0,
        fsync: str = "checkpoint",
    ) -> None:
        super().__init__(session, prefix=prefix)
        if fsync not in ("always", "checkpoint", "never"):
            raise ConfigurationError(f"fsync={fsync!r}: use always, checkpoint or never")
        self.path = Path(path)
        self._lock = threading.RLock()  # one connection; a store object may serve threads
        synchronous = {"always": "FULL", "checkpoint": "NORMAL", "never": "OFF"}[fsync]
        # Private like the JSONL files (0600 in a 0700 directory, no symlinks); SQLite gives its
        # -wal / -shm files the database file's permissions.
        _files.ensure_directory(self.path.parent)
        os.close(_files.open_file(self.path, os.O_RDWR | os.O_CREAT))
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            with self._transaction(write=True) as cur:
                for statement in schema(self.prefix, bigint="INTEGER", real="REAL"):
                    cur.execute(statement)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the SQLite store: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot open: {exc.strerror or exc}") from exc

    @property
    def target(self) -> str:
        return f"sqlite:///{self.path}"

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Cursor]:
        with self._lock:
            yield from self._locked_transaction(write)

    def _locked_transaction(self, write: bool) -> Iterator[Cursor]:
        cur = self._conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield cur
            except BaseException:
                self._conn.rollback()
                raise
            cur.execute("COMMIT")
        except ContextManagerError:
            raise
        except sqlite3.Error as exc:
            if self._conn.in_transaction:
                self._conn.rollback()
            raise StoreError(
                f"{self.target} session {self.session!r}: SQLite failed: {exc}; nothing was changed"
            ) from exc
        finally:
            cur.close()

    def close(self) -> None:
        self._conn.close()
