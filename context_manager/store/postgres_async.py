"""PostgreSQL for asyncio (psycopg's ``AsyncConnection``): the sync store's flows, awaited.

The SQL is ``_sql.py``'s, the dialect, table check, error redaction and pool rules are
``postgres.py``'s (:class:`~.postgres.PgDialect`, :class:`~.postgres.PoolRules`); this module
only performs their steps on async connections, one flow at a time per store object (an
``asyncio.Lock``). A step cancelled mid-query is cancelled on the server by psycopg and the
flow rolls back; a connection left inside a transaction anyway is replaced before its next use.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from .._config import check_flag
from ..errors import StoreError
from ._drive import Failed, Flow, adrive
from ._sql_steps import Reconnect, Sql
from ._urls import postgres_url
from .postgres import (
    Close,
    Connect,
    PgDialect,
    PoolRules,
    checked_connect_options,
    connect_error,
    connect_options,
    psycopg_module,
    reusable,
)
from .protocol import DEFAULT_SESSION, Batch, Head

__all__ = ["AsyncConnectionPool", "AsyncPostgresStore"]

_T = TypeVar("_T")


async def _aconnect(url: str, url_info: Any, timeout: int, prepare_threshold: int | None) -> Any:
    psycopg = psycopg_module()
    try:
        return await psycopg.AsyncConnection.connect(
            url, **connect_options(timeout, prepare_threshold)
        )
    except psycopg.Error as exc:
        raise connect_error(url_info, exc) from url_info.cause(exc)


class AsyncConnectionPool(PoolRules):
    """:class:`~.postgres.PoolRules` on psycopg's async connections (made by
    :func:`~context_manager.store.aconnect`)."""

    async def _perform(self, step: Connect | Close) -> Any:
        if isinstance(step, Close):
            with contextlib.suppress(Exception):
                await step.conn.close()
            return None
        return await _aconnect(self._url, self._url_info, self._timeout, self._prepare_threshold)

    async def acquire(self) -> Any:
        return await adrive(self._acquire(), self._perform)

    async def release(self, conn: Any) -> None:
        await adrive(self._release(conn), self._perform)

    async def aclose(self) -> None:
        await adrive(self._close(), self._perform)


class AsyncPostgresStore(PgDialect):
    """One session in a PostgreSQL database, on an async connection. Make it with
    ``await AsyncPostgresStore.open(url, session)`` (connecting is I/O)."""

    def __init__(
        self,
        url: str,
        session: str = DEFAULT_SESSION,
        *,
        prefix: str = "context_",
        connect_timeout: float = 10.0,
        prepare: bool = False,
        pool: AsyncConnectionPool | None = None,
    ) -> None:
        super().__init__(session, prefix=prefix)
        self._connect_timeout, self._prepare_threshold = checked_connect_options(
            connect_timeout, prepare
        )
        self._url_info = postgres_url(url)
        self._error = psycopg_module().Error
        self._url = url
        self._lock = asyncio.Lock()
        self._pool = pool
        self._conn: Any = None

    @classmethod
    async def open(
        cls,
        url: str,
        session: str = DEFAULT_SESSION,
        *,
        prefix: str = "context_",
        create: bool = True,
        connect_timeout: float = 10.0,
        prepare: bool = False,
        pool: AsyncConnectionPool | None = None,
    ) -> AsyncPostgresStore:
        """Connect (or borrow from ``pool``) and create the tables unless ``create=False``."""
        store = cls(
            url,
            session,
            prefix=prefix,
            connect_timeout=connect_timeout,
            prepare=prepare,
            pool=pool,
        )
        store._conn = await store._open_connection()
        if check_flag("create", create) and (pool is None or prefix not in pool.ready):
            try:
                await store.create_tables()
            except BaseException:
                await store.aclose()
                raise
            if pool is not None:
                pool.ready.add(prefix)
        return store

    async def create_tables(self) -> None:
        """Create the tables if they do not exist (idempotent, safe from several workers)."""
        await self._run(self._create_tables())

    async def _open_connection(self) -> Any:
        if self._pool is not None:
            return await self._pool.acquire()
        return await _aconnect(
            self._url, self._url_info, self._connect_timeout, self._prepare_threshold
        )

    async def _reconnect(self) -> None:
        """A new connection after the old one broke; if connecting fails, the closed old one
        stays, so the next operation tries again."""
        with contextlib.suppress(Exception):
            await self._conn.close()
        self._conn = await self._open_connection()

    async def _perform(self, step: Sql | Reconnect) -> Any:
        if isinstance(step, Reconnect):
            await self._reconnect()
            return None
        conn = self._conn
        try:
            cur = conn.cursor()
            try:
                if step.many:
                    await cur.executemany(step.text, step.params)
                elif step.params:
                    await cur.execute(step.text, step.params)
                else:
                    await cur.execute(step.text)
                return await cur.fetchall() if cur.description is not None else []
            finally:
                await cur.close()
        except self._error as exc:
            raise Failed(exc, lost=bool(conn.broken or conn.closed)) from None

    async def _run(self, flow: Flow[_T]) -> _T:
        async with self._lock:
            conn = self._conn
            if conn is None or self._handle_closed():
                flow.close()
                raise StoreError(f"{self.target} session {self.session!r}: the store is closed")
            if not (conn.broken or conn.closed) and not reusable(conn):
                await self._reconnect()  # left inside a transaction by a cancelled step
            return await adrive(flow, self._perform)

    async def append(
        self, records: Sequence[Mapping[str, Any]], *, durable: bool = False
    ) -> list[int]:
        return await self._run(self._append(records))

    async def checkpoint(self) -> int:
        return await self._run(self._checkpoint())

    async def revert_to(self, checkpoint_id: int) -> Head:
        return await self._run(self._revert_to(checkpoint_id))

    async def clear(self) -> None:
        await self._run(self._clear())

    async def delete(self) -> bool:
        """Delete the session for good (every generation, offloaded results) in one transaction."""
        return await self._run(self._delete())

    async def load(self, start: int = 0) -> Batch:
        return await self._run(self._load(start))

    async def load_after(self, head: Head) -> Batch | None:
        return await self._run(self._load_after(head))

    async def sessions(self) -> list[str]:
        return await self._run(self._sessions())

    async def generations(self) -> list[int]:
        """Every generation that holds records (old ones are kept by revert and clear)."""
        return await self._run(self._generations())

    async def aclose(self) -> None:
        """Close the connection, or give it back to the pool it was borrowed from."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._pool is not None:
            await self._pool.release(conn)
        else:
            with contextlib.suppress(Exception):
                await conn.close()

    async def __aenter__(self) -> AsyncPostgresStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
