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

__all__ = ["ConnectionPool", "PostgresStore"]

_DDL_LOCK = 0x636D5F7374  # any constant: serializes CREATE TABLE among workers


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigurationError(
            "postgresql:// targets need psycopg 3: pip install 'context-manager[stores]'"
        ) from exc
    return psycopg


def _checked_connect_options(connect_timeout: object, prepare: object) -> tuple[int, int | None]:
    if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float)):
        raise ConfigurationError(f"connect_timeout must be seconds, got {connect_timeout!r}")
    if not 0 < connect_timeout < math.inf:
        raise ConfigurationError(
            f"connect_timeout must be a finite number > 0, got {connect_timeout!r}"
        )
    if not isinstance(prepare, bool):
        raise ConfigurationError(f"prepare must be True or False, got {prepare!r}")
    # psycopg's default (prepare after 5 runs) unless off: None never prepares.
    return max(1, int(connect_timeout)), (5 if prepare else None)


class ConnectionPool:
    """Connections to one PostgreSQL URL, reused by the session stores of one process.

    A per-request session borrows a connection (:meth:`acquire`) and gives it back on close
    (:meth:`release`), so a request pays no connect (a TCP and auth round trip or three) and no
    table check. Idle connections are kept up to ``max_idle``; a broken one, or one left inside
    a transaction, is closed instead of reused. Made by :func:`~context_manager.store.connect`.
    """

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 10.0,
        prepare: bool = False,
        max_idle: int = 8,
    ) -> None:
        self._url_info = postgres_url(url)
        self._url = url
        self._timeout, self._prepare_threshold = _checked_connect_options(connect_timeout, prepare)
        if isinstance(max_idle, bool) or not isinstance(max_idle, int) or max_idle < 0:
            raise ConfigurationError(f"max_idle must be an integer >= 0, got {max_idle!r}")
        self._max_idle = max_idle
        self._idle: list[Any] = []
        self._guard = threading.Lock()
        self._closed = False
        #: Table prefixes already created or found (a table check per pool, not per request).
        self.ready: set[str] = set()

    @property
    def target(self) -> str:
        return self._url_info.display

    def acquire(self) -> Any:
        with self._guard:
            if self._closed:
                raise StoreError(f"{self.target}: the connection pool is closed")
            while self._idle:
                conn = self._idle.pop()
                if not (conn.broken or conn.closed):
                    return conn
        return _connect(self._url, self._url_info, self._timeout, self._prepare_threshold)

    def release(self, conn: Any) -> None:
        psycopg = _psycopg()
        reusable = not (conn.broken or conn.closed) and (
            conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        )
        with self._guard:
            if reusable and not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        with contextlib.suppress(Exception):
            conn.close()

    def close(self) -> None:
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()


def _connect(url: str, url_info: Any, timeout: int, prepare_threshold: int | None) -> Any:
    """A new connection; its error names the target and keeps libpq's reason, without the
    password (and without chaining libpq's exception if that would print it)."""
    psycopg = _psycopg()
    try:
        return psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=timeout,
            prepare_threshold=prepare_threshold,
        )
    except psycopg.Error as exc:
        reason = url_info.redact(" ".join(str(exc).split()))
        raise StoreError(
            f"{url_info.display}: cannot connect to PostgreSQL: {reason}"
        ) from url_info.cause(exc)


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
        pool: ConnectionPool | None = None,
    ) -> None:
        super().__init__(session, prefix=prefix)
        self._connect_timeout, self._prepare_threshold = _checked_connect_options(
            connect_timeout, prepare
        )
        self._url_info = postgres_url(url)  # ConfigurationError, never quoting the URL
        psycopg = _psycopg()
        self._error: type[Exception] = psycopg.Error
        self._url = url
        self._lock = threading.RLock()
        self._pool = pool
        self._conn = self._open_connection()
        if create and (pool is None or prefix not in pool.ready):
            try:
                self.create_tables()
            except BaseException:
                self.close()
                raise
            if pool is not None:
                pool.ready.add(prefix)

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
        """A connection: borrowed from the pool when there is one, else a new one."""
        if self._pool is not None:
            return self._pool.acquire()
        return _connect(self._url, self._url_info, self._connect_timeout, self._prepare_threshold)

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
        """Close the connection, or give it back to the pool it was borrowed from."""
        if self._pool is not None:
            conn, self._conn = self._conn, None
            if conn is not None:  # a second close gives nothing back twice
                self._pool.release(conn)
        else:
            self._conn.close()
