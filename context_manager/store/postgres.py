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

What the sync :class:`PostgresStore` and the async ``postgres_async.AsyncPostgresStore`` share
lives here once: the dialect (:class:`PgDialect`: placeholders, row locks, the table check, the
redaction of errors) and the connection pool's rules (:class:`PoolRules`, as flows whose steps
are "connect" and "close this connection"). The SQL itself is ``_sql.py``'s.
"""

from __future__ import annotations

import contextlib
import math
import threading
from dataclasses import dataclass
from typing import Any

from .._config import check_flag
from ..errors import ConfigurationError, StoreError
from ._drive import Flow, drive
from ._sql import SqlFlows
from ._sql_steps import Sql
from ._sqldb import SqlStore
from ._urls import postgres_url
from .protocol import DEFAULT_SESSION

__all__ = ["ConnectionPool", "PgDialect", "PoolRules", "PostgresStore"]

_DDL_LOCK = 0x636D5F7374  # any constant: serializes CREATE TABLE among workers


def psycopg_module() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigurationError(
            "postgresql:// targets need psycopg 3: pip install 'context-manager[stores]'"
        ) from exc
    return psycopg


def checked_connect_options(connect_timeout: object, prepare: object) -> tuple[int, int | None]:
    if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float)):
        raise ConfigurationError(f"connect_timeout must be seconds, got {connect_timeout!r}")
    if not 0 < connect_timeout < math.inf:
        raise ConfigurationError(
            f"connect_timeout must be a finite number > 0, got {connect_timeout!r}"
        )
    check_flag("prepare", prepare)
    # psycopg's default (prepare after 5 runs) unless off: None never prepares.
    return max(1, int(connect_timeout)), (5 if prepare else None)


def connect_options(timeout: int, prepare_threshold: int | None) -> dict[str, Any]:
    """psycopg's ``connect`` keywords (sync and async alike)."""
    return {"autocommit": True, "connect_timeout": timeout, "prepare_threshold": prepare_threshold}


def connect_error(url_info: Any, exc: BaseException) -> StoreError:
    """A failed connect as a typed error naming the target and keeping libpq's reason, without
    the password; raise it ``from url_info.cause(exc)`` (not libpq's exception if that would
    print the password)."""
    reason = url_info.redact(" ".join(str(exc).split()))
    return StoreError(f"{url_info.display}: cannot connect to PostgreSQL: {reason}")


def reusable(conn: Any) -> bool:
    """Open, not broken and outside any transaction (a cancelled or failed one left it)."""
    idle = psycopg_module().pq.TransactionStatus.IDLE
    return not (conn.broken or conn.closed) and conn.info.transaction_status == idle


class Connect:
    """Pool step: open a new connection."""


@dataclass(frozen=True, slots=True)
class Close:
    """Pool step: close ``conn`` (its failure is ignored)."""

    conn: Any


CONNECT = Connect()


class PoolRules:
    """Connections to one PostgreSQL URL, reused by the session stores of one process.

    A per-request session borrows a connection (``acquire``) and gives it back on close
    (``release``), so a request pays no connect (a TCP and auth round trip or three) and no
    table check. Idle connections are kept up to ``max_idle``; a broken one, or one left inside
    a transaction, is closed instead of reused. The rules as flows; the sync
    :class:`ConnectionPool` and the async one perform their steps.
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
        self._timeout, self._prepare_threshold = checked_connect_options(connect_timeout, prepare)
        if isinstance(max_idle, bool) or not isinstance(max_idle, int) or max_idle < 0:
            raise ConfigurationError(f"max_idle must be an integer >= 0, got {max_idle!r}")
        self._max_idle = max_idle
        self._idle: list[Any] = []
        self._guard = threading.Lock()  # held for bookkeeping only, never across a step
        self._closed = False
        #: Table prefixes already created or found (a table check per pool, not per request).
        self.ready: set[str] = set()

    @property
    def target(self) -> str:
        return self._url_info.display

    @property
    def closed(self) -> bool:
        """Whether the handle closed the pool: a store still holding one of its connections
        refuses work then, as every backend's sessions do once their handle is closed."""
        return self._closed

    def _acquire(self) -> Flow[Any]:
        with self._guard:
            if self._closed:
                raise StoreError(f"{self.target}: the connection pool is closed")
            while self._idle:
                conn = self._idle.pop()
                if not (conn.broken or conn.closed):
                    return conn
        return (yield CONNECT)

    def _release(self, conn: Any) -> Flow[None]:
        keep = reusable(conn)
        with self._guard:
            if keep and not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        yield Close(conn)

    def _close(self) -> Flow[None]:
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            yield Close(conn)


class ConnectionPool(PoolRules):
    """:class:`PoolRules` on psycopg's sync connections (made by
    :func:`~context_manager.store.connect`)."""

    def _perform(self, step: Connect | Close) -> Any:
        if isinstance(step, Close):
            with contextlib.suppress(Exception):
                step.conn.close()
            return None
        psycopg = psycopg_module()
        try:
            return psycopg.connect(
                self._url, **connect_options(self._timeout, self._prepare_threshold)
            )
        except psycopg.Error as exc:
            raise connect_error(self._url_info, exc) from self._url_info.cause(exc)

    def acquire(self) -> Any:
        return drive(self._acquire(), self._perform)

    def release(self, conn: Any) -> None:
        drive(self._release(conn), self._perform)

    def close(self) -> None:
        drive(self._close(), self._perform)


class PgDialect(SqlFlows):
    """PostgreSQL's side of the SQL flows, shared by the sync and the async store."""

    placeholder = "%s"
    lock_clause = " FOR UPDATE"
    share_clause = " FOR SHARE"
    columns_query = (
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = lower(%s)"  # unquoted: folded
    )
    table_query = "SELECT 1 WHERE to_regclass(%s) IS NOT NULL"
    begin_write = "BEGIN"
    begin_read = "BEGIN"
    dialect = "PostgreSQL"

    _url_info: Any
    _pool: Any  # the sync or async pool (None: a connection of its own)

    def _handle_closed(self) -> bool:
        """Whether the handle closed the pool this store borrowed its connection from."""
        return self._pool is not None and bool(self._pool.closed)

    @property
    def target(self) -> str:
        """The URL without its password or query: ``postgresql://user@host:port/dbname``."""
        return str(self._url_info.display)

    def _reason(self, error: BaseException) -> str:
        return str(self._url_info.redact(str(error).strip()))

    def _cause(self, error: BaseException) -> BaseException | None:
        return self._url_info.cause(error)  # type: ignore[no-any-return]

    def _create_tables(self) -> Flow[None]:
        """Create the tables if they do not exist (idempotent, safe from several workers).

        A per-request open usually finds them: one catalog lookup of the index made last
        answers that without the DDL lock, which would otherwise make every open in the
        cluster wait for every other.
        """

        def probe() -> Flow[bool]:
            rows = yield Sql("SELECT to_regclass(%s)", (f"{self.prefix}records_meta",))
            return rows[0][0] is not None

        if (yield from self._transaction(probe, write=False)):
            return

        def create() -> Flow[None]:
            yield Sql("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            yield from self._create_schema()

        yield from self._transaction(create, write=True)


class PostgresStore(PgDialect, SqlStore):
    """One session in a PostgreSQL database."""

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
        self._connect_timeout, self._prepare_threshold = checked_connect_options(
            connect_timeout, prepare
        )
        self._url_info = postgres_url(url)  # ConfigurationError, never quoting the URL
        self._error = psycopg_module().Error
        self._url = url
        self._lock = threading.RLock()
        self._pool = pool
        self._conn = self._open_connection()
        if check_flag("create", create) and (pool is None or prefix not in pool.ready):
            try:
                self.create_tables()
            except BaseException:
                self.close()
                raise
            if pool is not None:
                pool.ready.add(prefix)

    def create_tables(self) -> None:
        """Create the tables if they do not exist (idempotent, safe from several workers)."""
        self._run(self._create_tables())

    def _open_connection(self) -> Any:
        """A connection: borrowed from the pool when there is one, else a new one."""
        if self._pool is not None:
            return self._pool.acquire()
        psycopg = psycopg_module()
        try:
            return psycopg.connect(
                self._url, **connect_options(self._connect_timeout, self._prepare_threshold)
            )
        except psycopg.Error as exc:
            raise connect_error(self._url_info, exc) from self._url_info.cause(exc)

    def _is_lost(self) -> bool:
        return bool(self._conn.broken or self._conn.closed)

    def _reconnect(self) -> None:
        """A new connection after the old one broke (the server restarted, a proxy or pooler
        dropped it); the broken one is closed."""
        with self._lock:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = self._open_connection()

    def close(self) -> None:
        """Close the connection, or give it back to the pool it was borrowed from."""
        if self._pool is not None:
            conn, self._conn = self._conn, None
            if conn is not None:  # a second close gives nothing back twice
                self._pool.release(conn)
        else:
            self._conn.close()
