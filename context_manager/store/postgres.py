"""PostgreSQL backend (psycopg 3): sessions shared by workers on several machines.

``postgresql://user:password@host:5432/dbname``. The two tables (schema in ``_sql.py``; the
primary key ``(session, generation, position)`` is the index reads and appends use) are created
on first use, or explicitly by :meth:`PostgresStore.create_tables` when the application's role
may not run DDL at request time (pass ``create=False`` then). Creation takes a transaction-level
advisory lock, so workers starting together do not race on ``CREATE TABLE``.

Writes lock the session's row (``SELECT ... FOR UPDATE``), so appends to one session are
serialized while other sessions proceed in parallel. A committed record survives the worker
being killed; power-loss durability is the server's (``synchronous_commit``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ConfigurationError, ContextManagerError, StoreError
from ._sql import Cursor, SqlStore, schema
from .protocol import DEFAULT_SESSION

__all__ = ["PostgresStore"]

_DDL_LOCK = 0x636D5F7374  # any constant: serializes CREATE TABLE among workers


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigurationError(
            "postgresql:// targets need psycopg 3: pip install 'context-manager[stores]'"
        ) from exc
    return psycopg


class PostgresStore(SqlStore):
    """One session in a PostgreSQL database."""

    placeholder = "%s"
    lock_clause = " FOR UPDATE"
    share_clause = " FOR SHARE"

    def __init__(
        self,
        url: str,
        session: str = DEFAULT_SESSION,
        *,
        prefix: str = "context_",
        create: bool = True,
        connect_timeout: float = 10.0,
    ) -> None:
        super().__init__(session, prefix=prefix)
        psycopg = _psycopg()
        self._error: type[Exception] = psycopg.Error
        self._url = url
        self._lock = threading.RLock()
        try:
            self._conn = psycopg.connect(
                url, autocommit=True, connect_timeout=max(1, int(connect_timeout))
            )
        except psycopg.Error as exc:
            raise StoreError(f"{self.target}: cannot connect to PostgreSQL: {exc}") from exc
        if create:
            self.create_tables()

    @property
    def target(self) -> str:
        """The URL without its password."""
        try:
            from psycopg.conninfo import conninfo_to_dict

            info = conninfo_to_dict(self._url)
        except Exception:
            return "postgresql://"
        user = f"{info['user']}@" if info.get("user") else ""
        port = f":{info['port']}" if info.get("port") else ""
        return f"postgresql://{user}{info.get('host', '')}{port}/{info.get('dbname', '')}"

    def create_tables(self) -> None:
        """Create the tables if they do not exist (idempotent, safe from several workers)."""
        with self._transaction(write=True) as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            for statement in schema(self.prefix):
                cur.execute(statement)

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Cursor]:
        with self._lock:
            try:
                with self._conn.transaction(), self._conn.cursor() as cur:
                    yield cur
            except ContextManagerError:
                raise
            except self._error as exc:
                raise StoreError(
                    f"{self.target} session {self.session!r}: PostgreSQL failed: "
                    f"{str(exc).strip()}; nothing was changed"
                ) from exc

    def close(self) -> None:
        self._conn.close()
