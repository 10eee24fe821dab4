"""PostgreSQL backend (psycopg 3): sessions shared by workers on several machines.

``postgresql://user:password@host:5432/dbname``. The two tables (schema in ``_sql.py``; the
primary key ``(session, generation, position)`` is the index reads and appends use) are created
on first use, or explicitly by :meth:`PostgresStore.create_tables` when the application's role
may not run DDL at request time (pass ``create=False`` then). Creation takes a transaction-level
advisory lock, so workers starting together do not race on ``CREATE TABLE``.

Writes lock the session's row (``SELECT ... FOR UPDATE``), so appends to one session are
serialized while other sessions proceed in parallel. A committed record survives the worker
being killed; power-loss durability is the server's (``synchronous_commit``).

Connection poolers: psycopg prepares a statement on the server after its fifth run on one
connection, and a pooler in transaction mode (PgBouncer, most managed and Kubernetes setups)
hands the next transaction to another server connection, where that name is unknown or already
taken (``prepared statement "_pg3_0" already exists``). So server-side prepares are off by
default (``prepare=False``); ``prepare=True`` turns them back on for direct connections, where
they save little for these short statements (measured in ``docs/guide/stores.md``).

The URL is checked (``_urls.postgres_url``) before libpq sees it and every error text is built
without the password: libpq quotes malformed URLs, password included, in its own errors.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ConfigurationError, ContextManagerError, StoreError
from ._sql import ConnectionLost, Cursor, SqlStore
from ._urls import postgres_url
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
    columns_query = (
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = %s"
    )

    def __init__(
        self,
        url: str,
        session: str = DEFAULT_SESSION,
        *,
        prefix: str = "context_",
        create: bool = True,
        connect_timeout: float = 10.0,
        prepare: bool = False,
    ) -> None:
        super().__init__(session, prefix=prefix)
        if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float)):
            raise ConfigurationError(f"connect_timeout must be seconds, got {connect_timeout!r}")
        if not 0 < connect_timeout < math.inf:
            raise ConfigurationError(
                f"connect_timeout must be a finite number > 0, got {connect_timeout!r}"
            )
        if not isinstance(prepare, bool):
            raise ConfigurationError(f"prepare must be True or False, got {prepare!r}")
        self._url_info = postgres_url(url)  # ConfigurationError, never quoting the URL
        psycopg = _psycopg()
        self._error: type[Exception] = psycopg.Error
        self._url = url
        self._lock = threading.RLock()
        self._connect_timeout = max(1, int(connect_timeout))
        # psycopg's default (prepare after 5 runs) unless off: None never prepares.
        self._prepare_threshold: int | None = 5 if prepare else None
        self._conn = self._open_connection()
        if create:
            self.create_tables()

    @property
    def target(self) -> str:
        """The URL without its password or query: ``postgresql://user@host:port/dbname``."""
        return self._url_info.display

    def create_tables(self) -> None:
        """Create the tables if they do not exist (idempotent, safe from several workers).

        A per-request open usually finds them: one catalog lookup of the index made last
        answers that without the DDL lock, which would otherwise make every open in the
        cluster wait for every other.
        """
        with self._transaction(write=False) as cur:
            cur.execute("SELECT to_regclass(%s)", (f"{self.prefix}records_rid",))
            if cur.fetchone()[0] is not None:
                return
        with self._transaction(write=True) as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            self.create_schema(cur)

    def _open_connection(self) -> Any:
        """A new connection; its error names the target and keeps libpq's reason, without the
        password (and without chaining libpq's exception if that would print it)."""
        psycopg = _psycopg()
        try:
            return psycopg.connect(
                self._url,
                autocommit=True,
                connect_timeout=self._connect_timeout,
                prepare_threshold=self._prepare_threshold,
            )
        except psycopg.Error as exc:
            reason = self._url_info.redact(" ".join(str(exc).split()))
            raise StoreError(
                f"{self.target}: cannot connect to PostgreSQL: {reason}"
            ) from self._url_info.cause(exc)

    def _reconnect(self) -> None:
        """A new connection after the old one broke (the server restarted, a proxy or pooler
        dropped it); the broken one is closed."""
        with self._lock:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = self._open_connection()

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Cursor]:
        with self._lock:
            try:
                with self._conn.transaction(), self._conn.cursor() as cur:
                    yield cur
            except ContextManagerError:
                raise
            except self._error as exc:
                if self._conn.broken or self._conn.closed:
                    # COMMIT may have reached the server before the reply was lost.
                    raise ConnectionLost(
                        f"{self.target}: the connection to PostgreSQL was lost"
                    ) from None
                raise StoreError(
                    f"{self.target} session {self.session!r}: PostgreSQL failed: "
                    f"{self._url_info.redact(str(exc).strip())}; nothing was changed"
                ) from self._url_info.cause(exc)

    def close(self) -> None:
        self._conn.close()
