"""The SQLite / PostgreSQL offload area: rows of ``<prefix>offload`` (see ``offload.py``),
written through the store's own flows (its transactions, reconnect rule and typed errors)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from ..offload.area import BaseArea, Entry
from ._drive import Flow
from ._sql import SqlFlows
from ._sql_steps import Sql

__all__ = ["SqlOffload"]


class SqlOffload(BaseArea):
    """Rows of ``<prefix>offload`` in the store's database, through the store's flows."""

    def __init__(self, store: Any) -> None:
        super().__init__(store.session)
        self._store = store
        self._flows: SqlFlows = store
        self._postgres = self._flows.dialect == "PostgreSQL"
        self._ready = False

    def _run(self, body: Any, *, write: bool, create: bool = True) -> Any:
        """``body`` in a transaction. The table is created by the first write that needs it;
        a read (or a delete) of a database without it answers None and creates nothing, so
        copying or deleting a session never writes DDL into a source database."""
        if not self._ready:
            if not create or not write:
                if not self._store._run(self._flows._read(self._probe)):
                    return None
            else:
                self._store._run(self._schema())
            self._ready = True
        flows = self._flows
        flow = flows._write(body) if write else flows._read(body)
        return self._store._run(flow)

    def _q(self, text: str) -> str:
        return self._flows._sql(text)

    def _probe(self) -> Flow[bool]:
        if self._postgres:
            rows = yield Sql("SELECT to_regclass(%s)", (f"{self._flows.prefix}offload",))
            return rows[0][0] is not None
        rows = yield Sql(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
            (f"{self._flows.prefix}offload",),
        )
        return bool(rows)

    def _schema(self) -> Flow[None]:
        blob, real = ("BYTEA", "DOUBLE PRECISION") if self._postgres else ("BLOB", "REAL")
        flows = self._flows

        def probe() -> Flow[bool]:
            if not self._postgres:
                return False
            rows = yield Sql("SELECT to_regclass(%s)", (f"{flows.prefix}offload_key",))
            return rows[0][0] is not None

        def create() -> Flow[None]:
            if self._postgres:  # one DDL at a time across workers (as the store's tables)
                yield Sql("SELECT pg_advisory_xact_lock(%s)", (0x636D6F66,))
            yield Sql(
                self._q(
                    "CREATE TABLE IF NOT EXISTS {p}offload (session TEXT NOT NULL, "
                    f"token TEXT NOT NULL, key TEXT, live INTEGER NOT NULL, size BIGINT NOT "
                    f"NULL, data {blob} NOT NULL, created_at {real} NOT NULL, "
                    "PRIMARY KEY (session, token))"
                )
            )
            yield Sql(
                self._q("CREATE INDEX IF NOT EXISTS {p}offload_key ON {p}offload (session, key)")
            )

        if (yield from flows._transaction(probe, write=False)):
            return
        yield from flows._transaction(create, write=True)

    def _insert(self, token: str, data: bytes, key: str | None) -> str:
        """A keyed put is idempotent: its token is derived from the key, so two workers putting
        the same content at once insert the same (session, token) row. The SELECT finds a row
        made earlier (by an older version, under another token); the upsert covers the race
        where both SELECTs saw nothing, since under read committed neither sees the other's
        uncommitted row: the second waits for the first and revives it (``live = 1``, keeping
        the first data, as a second put of a key does) instead of failing on the primary key."""
        session = self._session

        def body() -> Flow[str]:
            if key is not None:
                rows = yield Sql(
                    self._q("SELECT token FROM {p}offload WHERE session = ? AND key = ? LIMIT 1"),
                    (session, key),
                )
                if rows:
                    known = str(rows[0][0])
                    yield Sql(
                        self._q("UPDATE {p}offload SET live = 1 WHERE session = ? AND token = ?"),
                        (session, known),
                    )
                    return known
            yield Sql(
                self._q(
                    "INSERT INTO {p}offload (session, token, key, live, size, data, created_at) "
                    "VALUES (?, ?, ?, 1, ?, ?, ?) "
                    "ON CONFLICT (session, token) DO UPDATE SET live = 1"
                ),
                (session, token, key, len(data), data, time.time()),
            )
            return token

        return str(self._run(body, write=True))

    def _fetch(self, token: str) -> bytes | None:
        def body() -> Flow[bytes | None]:
            rows = yield Sql(
                self._q("SELECT data FROM {p}offload WHERE session = ? AND token = ? AND live = 1"),
                (self._session, token),
            )
            return bytes(rows[0][0]) if rows else None

        result: bytes | None = self._run(body, write=False)
        return result

    def _revive(self, tokens: list[str]) -> None:
        def body() -> Flow[None]:
            yield Sql(
                self._q("UPDATE {p}offload SET live = 1 WHERE session = ? AND token = ?"),
                [(self._session, t) for t in tokens],
                many=True,
            )

        self._run(body, write=True, create=False)

    def retire(self) -> None:
        def body() -> Flow[None]:
            yield Sql(
                self._q("UPDATE {p}offload SET live = 0 WHERE session = ? AND live = 1"),
                (self._session,),
            )

        self._run(body, write=True, create=False)

    def delete_entries(self) -> int:
        def body() -> Flow[int]:
            rows = yield Sql(
                self._q("SELECT count(*) FROM {p}offload WHERE session = ?"), (self._session,)
            )
            yield Sql(self._q("DELETE FROM {p}offload WHERE session = ?"), (self._session,))
            return int(rows[0][0])

        return int(self._run(body, write=True, create=False) or 0)

    def entries(self) -> Iterator[Entry]:
        def body() -> Flow[list[Any]]:
            rows = yield Sql(
                self._q(
                    "SELECT token, key, live, data FROM {p}offload WHERE session = ? "
                    "ORDER BY created_at, token"
                ),
                (self._session,),
            )
            return list(rows)

        for token, key, live, data in self._run(body, write=False) or ():
            yield Entry(str(token), key, bool(live), bytes(data))

    def _import(self, entry: Entry) -> None:
        def body() -> Flow[None]:
            yield Sql(
                self._q(
                    "INSERT INTO {p}offload (session, token, key, live, size, data, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
                ),
                (
                    self._session,
                    entry.token,
                    entry.key,
                    int(entry.live),
                    len(entry.data),
                    entry.data,
                    time.time(),
                ),
            )

        self._run(body, write=True)
