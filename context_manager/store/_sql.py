"""The SQL backends' shared algorithm (SQLite and PostgreSQL differ only in connection,
locking and placeholders, supplied by a subclass).

Schema (``<prefix>`` defaults to ``context_``)::

    CREATE TABLE <prefix>sessions (
        session    TEXT PRIMARY KEY,
        generation BIGINT NOT NULL DEFAULT 0,      -- the current generation
        updated_at DOUBLE PRECISION NOT NULL       -- epoch seconds of the last write
    );
    CREATE TABLE <prefix>records (
        session    TEXT NOT NULL,
        generation BIGINT NOT NULL,
        position   BIGINT NOT NULL,                -- 0, 1, ... within the generation
        checkpoint BIGINT,                         -- the id, on _checkpoint records only
        body       TEXT NOT NULL,                  -- the record's JSON line, byte for byte
        PRIMARY KEY (session, generation, position)
    );

The primary key is the index every read and append uses. One row per record; ``body`` is
text, not JSONB, so a record reads back exactly as written (JSONB reorders keys). Every write
runs in one transaction that first locks the session's row (SQLite: ``BEGIN IMMEDIATE``;
PostgreSQL: ``SELECT ... FOR UPDATE``), checks the writer's view, then inserts: so appends from
many workers are serialized, atomic and never interleaved. ``revert_to`` copies the kept rows
into generation + 1 and ``clear`` just moves to generation + 1: old generations stay.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..errors import CheckpointNotFoundError, ConfigurationError, StoreConflictError
from .protocol import Batch, Head, check_session_id
from .records import CHECKPOINT, dump_record

_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


class Cursor(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...
    def executemany(self, sql: str, params: Any, /) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class SqlStore:
    """One session in a SQL database; subclasses supply ``_transaction`` and ``_lock_clause``."""

    #: ``?`` placeholders are rewritten to this (``%s`` for psycopg).
    placeholder = "?"
    #: Appended to the SELECT that reads the session row inside a write transaction.
    lock_clause = ""
    #: ... and inside a read (load) transaction.
    share_clause = ""

    def __init__(self, session: str, *, prefix: str = "context_") -> None:
        self._session = check_session_id(session)
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise ConfigurationError(
                f"table prefix {prefix!r} is invalid: use letters, digits and _ (at most 40)"
            )
        self.prefix = prefix
        self._head: Head | None = None

    # -- subclass hooks --------------------------------------------------------------------
    def _transaction(self, *, write: bool) -> AbstractContextManager[Cursor]:
        raise NotImplementedError

    @property
    def target(self) -> str:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- shared algorithm ------------------------------------------------------------------
    def _sql(self, text: str) -> str:
        text = text.replace("{p}", self.prefix)
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    @property
    def session(self) -> str:
        return self._session

    @property
    def head(self) -> Head | None:
        return self._head

    def _locked_generation(self, cur: Cursor) -> int:
        """Create the session row if needed and lock it; the current generation."""
        cur.execute(
            self._sql(
                "INSERT INTO {p}sessions (session, generation, updated_at) VALUES (?, 0, ?) "
                "ON CONFLICT DO NOTHING"
            ),
            (self._session, time.time()),
        )
        cur.execute(
            self._sql("SELECT generation FROM {p}sessions WHERE session = ?" + self.lock_clause),
            (self._session,),
        )
        return int(cur.fetchone()[0])

    def _next_position(self, cur: Cursor, generation: int) -> int:
        cur.execute(
            self._sql(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM {p}records "
                "WHERE session = ? AND generation = ?"
            ),
            (self._session, generation),
        )
        return int(cur.fetchone()[0])

    def _checked(self, cur: Cursor) -> Head:
        generation = self._locked_generation(cur)
        head = Head(generation, self._next_position(cur, generation))
        if self._head is not None and head != self._head:
            raise StoreConflictError(
                f"{self.target} session {self._session!r}: another writer changed it since "
                f"this one read it (generation/position {self._head.generation}/"
                f"{self._head.position} -> {head.generation}/{head.position}); nothing was "
                "written: reload the session and retry"
            )
        return head

    def _insert(self, cur: Cursor, head: Head, rows: list[tuple[str, int | None]]) -> list[int]:
        positions = list(range(head.position, head.position + len(rows)))
        cur.executemany(
            self._sql(
                "INSERT INTO {p}records (session, generation, position, checkpoint, body) "
                "VALUES (?, ?, ?, ?, ?)"
            ),
            [
                (self._session, head.generation, pos, checkpoint, body)
                for pos, (body, checkpoint) in zip(positions, rows, strict=True)
            ],
        )
        cur.execute(
            self._sql("UPDATE {p}sessions SET updated_at = ? WHERE session = ?"),
            (time.time(), self._session),
        )
        return positions

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        rows: list[tuple[str, int | None]] = []
        for record in records:
            body = dump_record(record)[:-1].decode("utf-8")
            checkpoint = record.get("id") if record.get("role") == CHECKPOINT else None
            rows.append((body, checkpoint))
        with self._transaction(write=True) as cur:
            head = self._checked(cur)
            positions = self._insert(cur, head, rows)
        self._head = Head(head.generation, head.position + len(rows))
        return positions

    def checkpoint(self) -> int:
        with self._transaction(write=True) as cur:
            head = self._checked(cur)
            cur.execute(
                self._sql(
                    "SELECT COALESCE(MAX(checkpoint) + 1, 0) FROM {p}records "
                    "WHERE session = ? AND generation = ?"
                ),
                (self._session, head.generation),
            )
            checkpoint_id = int(cur.fetchone()[0])
            body = json.dumps({"role": CHECKPOINT, "id": checkpoint_id})
            self._insert(cur, head, [(body, checkpoint_id)])
        self._head = Head(head.generation, head.position + 1)
        return checkpoint_id

    def revert_to(self, checkpoint_id: int) -> Head:
        with self._transaction(write=True) as cur:
            generation = self._locked_generation(cur)
            cur.execute(
                self._sql(
                    "SELECT position FROM {p}records "
                    "WHERE session = ? AND generation = ? AND checkpoint = ?"
                ),
                (self._session, generation, checkpoint_id),
            )
            row = cur.fetchone()
            if row is None:
                cur.execute(
                    self._sql(
                        "SELECT COUNT(checkpoint) FROM {p}records "
                        "WHERE session = ? AND generation = ?"
                    ),
                    (self._session, generation),
                )
                count = int(cur.fetchone()[0])
                raise CheckpointNotFoundError(
                    f"{self.target} session {self._session!r}: checkpoint {checkpoint_id} does "
                    f"not exist (the session has {count} checkpoints, ids from 0); pick an "
                    "existing id"
                )
            cut = int(row[0])
            cur.execute(
                self._sql(
                    "INSERT INTO {p}records (session, generation, position, checkpoint, body) "
                    "SELECT session, ?, position, checkpoint, body FROM {p}records "
                    "WHERE session = ? AND generation = ? AND position < ?"
                ),
                (generation + 1, self._session, generation, cut),
            )
            self._new_generation(cur, generation + 1)
        self._head = Head(generation + 1, cut)
        return self._head

    def clear(self) -> None:
        with self._transaction(write=True) as cur:
            generation = self._locked_generation(cur)
            self._new_generation(cur, generation + 1)
        self._head = Head(generation + 1, 0)

    def _new_generation(self, cur: Cursor, generation: int) -> None:
        cur.execute(
            self._sql("UPDATE {p}sessions SET generation = ?, updated_at = ? WHERE session = ?"),
            (generation, time.time(), self._session),
        )

    def load(self, start: int = 0) -> Batch:
        with self._transaction(write=False) as cur:
            cur.execute(
                self._sql(
                    "SELECT generation FROM {p}sessions WHERE session = ?" + self.share_clause
                ),
                (self._session,),
            )
            row = cur.fetchone()
            generation = int(row[0]) if row is not None else 0
            cur.execute(
                self._sql(
                    "SELECT position, body FROM {p}records WHERE session = ? AND generation = ? "
                    "AND position >= ? ORDER BY position"
                ),
                (self._session, generation, max(0, int(start))),
            )
            rows = cur.fetchall()
            end = self._next_position(cur, generation)
        self._head = Head(generation, end)
        return Batch(self._head, [(int(pos), _line(body)) for pos, body in rows])

    def sessions(self) -> list[str]:
        with self._transaction(write=False) as cur:
            cur.execute(self._sql("SELECT session FROM {p}sessions ORDER BY session"))
            return [str(row[0]) for row in cur.fetchall()]

    def generations(self) -> list[int]:
        """Every generation that holds records (old ones are kept by revert and clear)."""
        with self._transaction(write=False) as cur:
            cur.execute(
                self._sql(
                    "SELECT DISTINCT generation FROM {p}records WHERE session = ? "
                    "ORDER BY generation"
                ),
                (self._session,),
            )
            return [int(row[0]) for row in cur.fetchall()]

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _line(body: str | bytes) -> bytes:
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    return data if data.endswith(b"\n") else data + b"\n"


def schema(prefix: str, *, bigint: str = "BIGINT", real: str = "DOUBLE PRECISION") -> Iterator[str]:
    """The CREATE statements (idempotent) for one table prefix."""
    yield (
        f"CREATE TABLE IF NOT EXISTS {prefix}sessions (session TEXT PRIMARY KEY, "
        f"generation {bigint} NOT NULL DEFAULT 0, updated_at {real} NOT NULL)"
    )
    yield (
        f"CREATE TABLE IF NOT EXISTS {prefix}records (session TEXT NOT NULL, "
        f"generation {bigint} NOT NULL, position {bigint} NOT NULL, checkpoint {bigint}, "
        "body TEXT NOT NULL, PRIMARY KEY (session, generation, position))"
    )
