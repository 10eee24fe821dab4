"""The SQL backends' shared algorithm (SQLite and PostgreSQL differ only in connection,
locking and placeholders, supplied by a subclass).

Schema (``<prefix>`` defaults to ``context_``)::

    CREATE TABLE <prefix>sessions (
        session    TEXT PRIMARY KEY,
        generation BIGINT NOT NULL DEFAULT 0,      -- the current generation
        updated_at DOUBLE PRECISION NOT NULL,      -- epoch seconds of the last write
        epoch      TEXT                            -- random, drawn when the row is created
    );
    CREATE TABLE <prefix>records (
        session    TEXT NOT NULL,
        generation BIGINT NOT NULL,
        position   BIGINT NOT NULL,                -- 0, 1, ... within the generation
        checkpoint BIGINT,                         -- the id, on _checkpoint records only
        body       TEXT NOT NULL,                  -- the record's JSON line, byte for byte
        rid        TEXT,                           -- the client-made record id (_cm.id)
        PRIMARY KEY (session, generation, position)
    );
    CREATE UNIQUE INDEX <prefix>records_rid ON <prefix>records (session, generation, rid)
        WHERE rid IS NOT NULL;

The primary key is the index every read and append uses. One row per record; ``body`` is
text, not JSONB, so a record reads back exactly as written (JSONB reorders keys). Every write
runs in one transaction that first locks the session's row (SQLite: ``BEGIN IMMEDIATE``;
PostgreSQL: ``SELECT ... FOR UPDATE``), checks the writer's view, then inserts: so appends from
many workers are serialized, atomic and never interleaved. ``revert_to`` copies the kept rows
into generation + 1 and ``clear`` just moves to generation + 1: old generations stay.

Exactly once: an append whose first record's id is already stored in the generation writes
nothing and returns where it was stored (the unique index makes a second copy impossible even
for a writer that skips the check). When the connection breaks with a write in flight (the
COMMIT may or may not have reached the server), the store reconnects once and sends the same
write again, which the id makes safe; only if that is impossible does the caller get
``StoreOutcomeUnknownError`` ("may have been applied"). Tables written by an earlier version
get the ``epoch`` / ``rid`` columns and the index added on open.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from ..errors import (
    CheckpointNotFoundError,
    ConfigurationError,
    StoreConflictError,
    StoreError,
    StoreOutcomeUnknownError,
)
from .protocol import Batch, Head, check_session_id, extends
from .records import CHECKPOINT, dump_record, record_id

_T = TypeVar("_T")


class ConnectionLost(StoreError):
    """Raised by a backend's ``_transaction`` when its connection broke mid-transaction: a write
    in flight may or may not have committed. :meth:`SqlStore._write` resolves it (reconnect, send
    again) or turns it into ``StoreOutcomeUnknownError``."""


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
    #: The names of a table's columns (one placeholder: the table name).
    columns_query = "SELECT name FROM pragma_table_info(?)"

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

    def _reconnect(self) -> None:
        """Open a new connection after :class:`ConnectionLost` (a local database never loses
        one, so the default refuses)."""
        raise StoreError(f"{self.target}: the connection was lost")

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

    def create_schema(
        self, cur: Cursor, *, bigint: str = "BIGINT", real: str = "DOUBLE PRECISION"
    ) -> None:
        """Create the tables, or add what an earlier version's tables lack (idempotent)."""
        for statement in schema(self.prefix, bigint=bigint, real=real):
            cur.execute(statement)
        for table, column in (("sessions", "epoch"), ("records", "rid")):
            cur.execute(self._sql(self.columns_query), (f"{self.prefix}{table}",))
            if column not in {str(row[0]) for row in cur.fetchall()}:
                cur.execute(self._sql(f"ALTER TABLE {{p}}{table} ADD COLUMN {column} TEXT"))
        cur.execute(
            self._sql(
                "CREATE UNIQUE INDEX IF NOT EXISTS {p}records_rid ON {p}records "
                "(session, generation, rid) WHERE rid IS NOT NULL"
            )
        )

    def _write(self, run: Callable[[Cursor], _T], rids: tuple[str, ...] = ()) -> _T:
        """Run one write transaction; on a lost connection reconnect and run it again once.

        Sending it again is safe for an append whose records carry ids (a first attempt that
        did commit is found by its id); anything else that may have been applied is reported as
        such rather than guessed.
        """
        for attempt in range(2):
            try:
                with self._transaction(write=True) as cur:
                    return run(cur)
            except ConnectionLost as exc:
                lost = exc
                if not rids or attempt:
                    break
                try:
                    self._reconnect()
                except StoreError:
                    break
        raise StoreOutcomeUnknownError(
            f"{self.target} session {self._session!r}: the connection broke while a write was "
            f"in flight ({lost}); it may have been applied. Reload the session: "
            + (
                "its records carry ids, so sending the same write again cannot store it twice"
                if rids
                else "check whether the change is there before redoing it"
            ),
            record_ids=rids,
        ) from None

    def _read(self, run: Callable[[Cursor], _T]) -> _T:
        """Run one read transaction; a lost connection is reopened once (reads are safe)."""
        try:
            with self._transaction(write=False) as cur:
                return run(cur)
        except ConnectionLost:
            self._reconnect()
            with self._transaction(write=False) as cur:
                return run(cur)

    def _locked_generation(self, cur: Cursor) -> tuple[int, str]:
        """Create the session row if needed and lock it; the current generation and epoch."""
        cur.execute(
            self._sql(
                "INSERT INTO {p}sessions (session, generation, updated_at, epoch) "
                "VALUES (?, 0, ?, ?) ON CONFLICT DO NOTHING"
            ),
            (self._session, time.time(), secrets.token_hex(8)),
        )
        cur.execute(
            self._sql(
                "SELECT generation, epoch FROM {p}sessions WHERE session = ?" + self.lock_clause
            ),
            (self._session,),
        )
        row = cur.fetchone()
        return int(row[0]), str(row[1] or "")

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
        generation, epoch = self._locked_generation(cur)
        head = Head(generation, self._next_position(cur, generation), epoch=epoch)
        view = self._head
        if view is not None and view == Head(0, 0) and head == Head(0, 0, epoch=epoch):
            view = head  # read before the session existed; it still holds nothing
        if view is not None and head != view:
            raise StoreConflictError(
                f"{self.target} session {self._session!r}: another writer changed it since "
                f"this one read it (generation/position {view.generation}/{view.position} -> "
                f"{head.generation}/{head.position}"
                f"{'' if head.epoch == view.epoch else ', recreated'}); nothing was written: "
                "reload the session and retry"
            )
        return head

    def _insert(
        self, cur: Cursor, head: Head, rows: list[tuple[str, int | None, str | None]]
    ) -> list[int]:
        positions = list(range(head.position, head.position + len(rows)))
        cur.executemany(
            self._sql(
                "INSERT INTO {p}records (session, generation, position, checkpoint, body, rid) "
                "VALUES (?, ?, ?, ?, ?, ?)"
            ),
            [
                (self._session, head.generation, pos, checkpoint, body, rid)
                for pos, (body, checkpoint, rid) in zip(positions, rows, strict=True)
            ],
        )
        cur.execute(
            self._sql("UPDATE {p}sessions SET updated_at = ? WHERE session = ?"),
            (time.time(), self._session),
        )
        return positions

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        rows: list[tuple[str, int | None, str | None]] = []
        for record in records:
            body = dump_record(record)[:-1].decode("utf-8")
            checkpoint = record.get("id") if record.get("role") == CHECKPOINT else None
            rows.append((body, checkpoint, record_id(record)))
        first = rows[0][2] if rows else None

        def run(cur: Cursor) -> tuple[Head, list[int]]:
            if first is not None:
                found = self._stored_at(cur, first)
                if found is not None:  # a retry of a write that did commit: nothing to write
                    generation, epoch, at = found
                    return Head(generation, at + len(rows), epoch=epoch), list(
                        range(at, at + len(rows))
                    )
            head = self._checked(cur)
            positions = self._insert(cur, head, rows)
            return Head(head.generation, head.position + len(rows), epoch=head.epoch), positions

        rids = tuple(rid for _, _, rid in rows if rid is not None)
        self._head, positions = self._write(run, rids)
        return positions

    def _stored_at(self, cur: Cursor, rid: str) -> tuple[int, str, int] | None:
        """(generation, epoch, position) of the record with id ``rid`` in the current
        generation, or None. A batch's records are contiguous from its first one."""
        generation, epoch = self._locked_generation(cur)
        cur.execute(
            self._sql(
                "SELECT position FROM {p}records WHERE session = ? AND generation = ? AND rid = ?"
            ),
            (self._session, generation, rid),
        )
        row = cur.fetchone()
        return None if row is None else (generation, epoch, int(row[0]))

    def checkpoint(self) -> int:
        def run(cur: Cursor) -> tuple[Head, int]:
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
            self._insert(cur, head, [(body, checkpoint_id, None)])
            return Head(head.generation, head.position + 1, epoch=head.epoch), checkpoint_id

        self._head, checkpoint_id = self._write(run)
        return checkpoint_id

    def revert_to(self, checkpoint_id: int) -> Head:
        def run(cur: Cursor) -> Head:
            generation, epoch = self._locked_generation(cur)
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
                    "INSERT INTO {p}records (session, generation, position, checkpoint, body, rid) "
                    "SELECT session, ?, position, checkpoint, body, rid FROM {p}records "
                    "WHERE session = ? AND generation = ? AND position < ?"
                ),
                (generation + 1, self._session, generation, cut),
            )
            self._new_generation(cur, generation + 1)
            return Head(generation + 1, cut, epoch=epoch)

        self._head = self._write(run)
        return self._head

    def clear(self) -> None:
        def run(cur: Cursor) -> Head:
            generation, epoch = self._locked_generation(cur)
            self._new_generation(cur, generation + 1)
            return Head(generation + 1, 0, epoch=epoch)

        self._head = self._write(run)

    def _new_generation(self, cur: Cursor, generation: int) -> None:
        cur.execute(
            self._sql("UPDATE {p}sessions SET generation = ?, updated_at = ? WHERE session = ?"),
            (generation, time.time(), self._session),
        )

    def load(self, start: int = 0) -> Batch:
        def run(cur: Cursor) -> tuple[Head, list[Any]]:
            cur.execute(
                self._sql(
                    "SELECT generation, epoch FROM {p}sessions WHERE session = ?"
                    + self.share_clause
                ),
                (self._session,),
            )
            row = cur.fetchone()
            generation = int(row[0]) if row is not None else 0
            epoch = str(row[1] or "") if row is not None else ""
            cur.execute(
                self._sql(
                    "SELECT position, body FROM {p}records WHERE session = ? AND generation = ? "
                    "AND position >= ? ORDER BY position"
                ),
                (self._session, generation, max(0, int(start))),
            )
            rows = cur.fetchall()
            end = self._next_position(cur, generation)
            # No row yet: the first write creates it with a new epoch, which this view must not
            # match (a stale blind view would otherwise equal a rebuilt session).
            return Head(generation, end, epoch=epoch), rows

        self._head, rows = self._read(run)
        return Batch(self._head, [(int(pos), _line(body)) for pos, body in rows])

    def load_after(self, head: Head) -> Batch | None:
        batch = self.load(head.position)
        return batch if extends(batch.head, head) else None

    def sessions(self) -> list[str]:
        def run(cur: Cursor) -> list[str]:
            cur.execute(self._sql("SELECT session FROM {p}sessions ORDER BY session"))
            return [str(row[0]) for row in cur.fetchall()]

        return self._read(run)

    def generations(self) -> list[int]:
        """Every generation that holds records (old ones are kept by revert and clear)."""

        def run(cur: Cursor) -> list[int]:
            cur.execute(
                self._sql(
                    "SELECT DISTINCT generation FROM {p}records WHERE session = ? "
                    "ORDER BY generation"
                ),
                (self._session,),
            )
            return [int(row[0]) for row in cur.fetchall()]

        return self._read(run)

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
        f"generation {bigint} NOT NULL DEFAULT 0, updated_at {real} NOT NULL, epoch TEXT)"
    )
    yield (
        f"CREATE TABLE IF NOT EXISTS {prefix}records (session TEXT NOT NULL, "
        f"generation {bigint} NOT NULL, position {bigint} NOT NULL, checkpoint {bigint}, "
        "body TEXT NOT NULL, rid TEXT, PRIMARY KEY (session, generation, position))"
    )
