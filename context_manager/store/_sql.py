"""The SQL backends' shared algorithm, written once as flows (``_drive.py``): SQLite and
PostgreSQL differ only in connection, locking and placeholders (a subclass's class attributes),
and the sync and async PostgreSQL stores only in the driver that performs the steps.

The tables are in ``_sql_tables.py``. The primary key is the index every read and append uses.
One row per record; ``body`` is text, not JSONB, so a record reads back exactly as written
(JSONB reorders keys). Every write runs in one transaction that first locks the session's row
(SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: ``SELECT ... FOR UPDATE``), checks the writer's view,
then inserts: so appends from many workers are serialized, atomic and never interleaved.
``revert_to`` copies the kept rows into generation + 1 and ``clear`` just moves to generation +
1: old generations stay. ``delete`` removes the session's rows from both tables and the offload
table in one transaction.

Exactly once: an append whose first record's id is already stored in the generation writes
nothing and returns where it was stored (the unique index makes a second copy impossible even
for a writer that skips the check). When the connection breaks with a write in flight (the
COMMIT may or may not have reached the server), the store reconnects once and sends the same
write again, which the id makes safe; only if that is impossible does the caller get
``StoreOutcomeUnknownError`` ("may have been applied"). Tables written by an earlier version
get the ``epoch`` / ``rid`` columns and the index added on open.

Steps: :class:`Sql` (one statement and its parameters, or ``many`` rows of them; the result is
the rows it returned) and :data:`RECONNECT`. Transactions are explicit statements (``BEGIN``,
``COMMIT``, ``ROLLBACK``) on an autocommit connection, so the transaction's shape, its rollback
and the reconnect-once rule are part of the flow, identical for every driver.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import (
    CheckpointNotFoundError,
    ConfigurationError,
    StoreConflictError,
    StoreError,
    StoreOutcomeUnknownError,
)
from ._drive import Failed, Flow
from ._line_ends import Running, running_sums
from ._sql_steps import RECONNECT, ConnectionLost, Sql, line_of
from ._sql_tables import cell, schema
from .protocol import Batch, Head, check_session_id, extends
from .records import CHECKPOINT, dump_record, indexed_checkpoint, record_id

_T = TypeVar("_T")


_COMMIT = Sql("COMMIT")
_ROLLBACK = Sql("ROLLBACK")

_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")

#: A record to insert: its line (no newline) as bytes and as text, its checkpoint id, its id.
Row = tuple[bytes, str, int | None, str | None]


class SqlFlows(ABC):
    """One session in a SQL database, as flows; subclasses set the dialect and a driver."""

    #: ``?`` placeholders are rewritten to this (``%s`` for psycopg).
    placeholder = "?"
    #: Appended to the SELECT that reads the session row inside a write transaction.
    lock_clause = ""
    #: ... and inside a read (load) transaction.
    share_clause = ""
    #: The names of a table's columns (one placeholder: the table name).
    columns_query = "SELECT name FROM pragma_table_info(?)"
    #: A row when a table exists (one placeholder: the table name).
    table_query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    #: The statements that open a write and a read transaction.
    begin_write = "BEGIN IMMEDIATE"
    begin_read = "BEGIN"
    #: The database's name in messages.
    dialect = "SQLite"

    def __init__(self, session: str, *, prefix: str = "context_") -> None:
        self._session = check_session_id(session)
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise ConfigurationError(
                f"table prefix {prefix!r} is invalid: use letters, digits and _ (at most 40)"
            )
        self.prefix = prefix
        self._head: Head | None = None

    # -- subclass hooks --------------------------------------------------------------------
    @property
    @abstractmethod
    def target(self) -> str:
        """Where the session lives, for messages (a URL without its password)."""

    def _reason(self, error: BaseException) -> str:
        """A client error's text for a message (PostgreSQL: without the URL's password)."""
        return str(error).strip()

    def _cause(self, error: BaseException) -> BaseException | None:
        """What a typed error is chained from (None where the client's text would leak)."""
        return error

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

    def _transaction(self, body: Callable[[], Flow[_T]], *, write: bool) -> Flow[_T]:
        """``body`` in one transaction: committed, or rolled back with a typed error."""
        try:
            yield Sql(self.begin_write if write else self.begin_read)
            result = yield from body()
            yield _COMMIT
            return result
        except GeneratorExit:
            raise
        except Failed as failed:
            if failed.lost:  # COMMIT may have reached the server before the reply was lost
                raise ConnectionLost(
                    f"{self.target}: the connection to {self.dialect} was lost"
                ) from None
            yield from self._rollback()
            raise StoreError(
                f"{self.target} session {self._session!r}: {self.dialect} failed: "
                f"{self._reason(failed.error)}; nothing was changed"
            ) from self._cause(failed.error)
        except BaseException:
            yield from self._rollback()
            raise

    def _rollback(self) -> Flow[None]:
        with contextlib.suppress(Failed):  # no transaction open, or no connection: no undo
            yield _ROLLBACK

    def _create_schema(
        self, *, bigint: str = "BIGINT", real: str = "DOUBLE PRECISION"
    ) -> Flow[None]:
        """Create the tables, or add what an earlier version's tables lack (idempotent)."""
        for statement in schema(self.prefix, bigint=bigint, real=real):
            yield Sql(statement)
        text, small = "TEXT", "SMALLINT"
        added = {
            "sessions": [("epoch", text)],
            "records": [("rid", text), ("upto", bigint), ("counter", text), ("meta", small)],
        }
        for table, columns in added.items():
            rows = yield Sql(self._sql(self.columns_query), (f"{self.prefix}{table}",))
            have = {str(row[0]) for row in rows}
            for column, kind in columns:
                if column not in have:
                    yield Sql(self._sql(f"ALTER TABLE {{p}}{table} ADD COLUMN {column} {kind}"))
        yield Sql(
            self._sql(
                "CREATE UNIQUE INDEX IF NOT EXISTS {p}records_rid ON {p}records "
                "(session, generation, rid) WHERE rid IS NOT NULL"
            )
        )
        # The next checkpoint id and a revert's target: one probe, not a scan of the session.
        yield Sql(
            self._sql(
                "CREATE INDEX IF NOT EXISTS {p}records_checkpoint ON {p}records "
                "(session, generation, checkpoint) WHERE checkpoint IS NOT NULL"
            )
        )
        # The records an open that leaves the oldest messages unread still reads.
        yield Sql(
            self._sql(
                "CREATE INDEX IF NOT EXISTS {p}records_meta ON {p}records "
                "(session, generation, position) WHERE meta IS NOT NULL"
            )
        )

    def _write(self, body: Callable[[], Flow[_T]], rids: tuple[str, ...] = ()) -> Flow[_T]:
        """Run one write transaction; on a lost connection reconnect and run it again once.

        Sending it again is safe for an append whose records carry ids (a first attempt that
        did commit is found by its id); anything else that may have been applied is reported as
        such rather than guessed.
        """
        for attempt in range(2):
            try:
                return (yield from self._transaction(body, write=True))
            except ConnectionLost as exc:
                lost = exc
                if not rids or attempt:
                    break
                try:
                    yield RECONNECT
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

    def _read(self, body: Callable[[], Flow[_T]]) -> Flow[_T]:
        """Run one read transaction; a lost connection is reopened once (reads are safe)."""
        try:
            return (yield from self._transaction(body, write=False))
        except ConnectionLost:
            yield RECONNECT
            return (yield from self._transaction(body, write=False))

    def _locked_generation(self) -> Flow[tuple[int, str]]:
        """Lock the session row, made first if need be; the current generation and epoch. A
        row lost while its records remain (a cleanup pruned the table) is made for them again,
        at their newest generation and with the epoch a read of them reports (``_load``), so
        the session stays writable; a new session's row draws a new epoch."""
        lock = "SELECT generation, epoch FROM {p}sessions WHERE session = ?" + self.lock_clause
        rows = yield Sql(self._sql(lock), (self._session,))
        if not rows:
            orphaned = yield from self._orphaned_generation()
            if orphaned is None and self._head is not None and self._head.position > 0:
                rows = []  # this view saw records, and they went with the row: a delete
            else:
                yield Sql(
                    self._sql(
                        "INSERT INTO {p}sessions (session, generation, updated_at, epoch) "
                        "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
                    ),
                    (
                        self._session,
                        orphaned or 0,
                        time.time(),
                        "" if orphaned is not None else secrets.token_hex(8),
                    ),
                )
                rows = yield Sql(self._sql(lock), (self._session,))
        if not rows:  # a delete removed the row while this write waited for it (PostgreSQL)
            raise StoreConflictError(
                f"{self.target} session {self._session!r}: it was deleted while this write "
                "waited; nothing was written: reload the session and retry"
            )
        return cell(rows[0][0]), self._epoch(rows[0][1])

    def _orphaned_generation(self) -> Flow[int | None]:
        """The newest generation of the session's records (None: it has none), one probe."""
        rows = yield Sql(
            self._sql(
                "SELECT generation FROM {p}records WHERE session = ? "
                "ORDER BY generation DESC LIMIT 1"
            ),
            (self._session,),
        )
        return cell(rows[0][0]) if rows else None

    def _epoch(self, stored: object) -> str:
        """The session's epoch as a head carries it (the stored one; SQLite adds its file)."""
        return str(stored or "")

    def _end(
        self, generation: int, rid: str | None = None
    ) -> Flow[tuple[int, Running, int | None]]:
        """The next position of ``generation``, the running sums of its last row (what the
        next rows' sums continue) and the position of the record with id ``rid`` (None: not
        stored; a batch's records are contiguous from its first one), in one probe of the
        primary key's last entry: PostgreSQL scanned every row of the session for
        COALESCE(MAX(position) + 1, 0) (3 ms at 10k records, on every append)."""
        key = (self._session, generation)
        stored = ", (SELECT position FROM {p}records WHERE session = ? AND generation = ? AND "
        rows = yield Sql(
            self._sql(
                f"SELECT position, upto, counter{stored + 'rid = ?) AS at' if rid else ''} FROM "
                "{p}records WHERE session = ? AND generation = ? ORDER BY position DESC LIMIT 1"
            ),
            (*key, rid, *key) if rid else key,
        )
        if not rows:
            return 0, Running(), None
        at = rows[0][3] if rid else None
        return cell(rows[0][0]) + 1, Running.of_row(rows[0][1:3]), None if at is None else cell(at)

    def _checked(self, rid: str | None = None) -> Flow[tuple[Head, Running, int | None]]:
        """The session's head (its row locked) and its last row's running sums, or
        ``StoreConflictError`` when it is not this store's view; and the position of the
        record with id ``rid``: a retry of a write that committed, whose view is not checked
        (nothing is written)."""
        generation, epoch = yield from self._locked_generation()
        end, running, at = yield from self._end(generation, rid)
        head = Head(generation, end, epoch=epoch)
        if at is not None:
            return head, running, at
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
        return head, running, None

    def _insert(self, head: Head, running: Running, rows: list[Row]) -> Flow[list[int]]:
        """Insert ``rows`` at ``head``, each with the running sums continued from ``running``
        (those of the row before them)."""
        positions = list(range(head.position, head.position + len(rows)))
        values = [
            (self._session, head.generation, pos, checkpoint, body, rid, *sums, 1 if meta else None)
            for pos, (_, body, checkpoint, rid), (sums, meta) in zip(
                positions, rows, running_sums(running, (raw for raw, *_ in rows)), strict=True
            )
        ]
        yield Sql(
            self._sql(
                "INSERT INTO {p}records (session, generation, position, checkpoint, body, rid, "
                "upto, counter, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            ),
            values,
            many=True,
        )
        yield Sql(
            self._sql("UPDATE {p}sessions SET updated_at = ? WHERE session = ?"),
            (time.time(), self._session),
        )
        return positions

    def _append(self, records: Sequence[Mapping[str, Any]]) -> Flow[list[int]]:
        rows: list[Row] = []
        for record in records:
            raw = dump_record(record)[:-1]
            rows.append((raw, raw.decode("utf-8"), indexed_checkpoint(record), record_id(record)))
        first = rows[0][3] if rows else None

        def run() -> Flow[tuple[Head, list[int]]]:
            head, running, at = yield from self._checked(first)
            if at is not None:  # a retry of a write that did commit: nothing to write
                return Head(head.generation, at + len(rows), epoch=head.epoch), list(
                    range(at, at + len(rows))
                )
            positions = yield from self._insert(head, running, rows)
            return Head(head.generation, head.position + len(rows), epoch=head.epoch), positions

        rids = tuple(rid for *_, rid in rows if rid is not None)
        self._head, positions = yield from self._write(run, rids)
        return positions

    def _checkpoint(self) -> Flow[int]:
        def run() -> Flow[tuple[Head, int]]:
            head, running, _ = yield from self._checked()
            rows = yield Sql(
                self._sql(
                    "SELECT checkpoint FROM {p}records WHERE session = ? AND generation = ? "
                    "AND checkpoint IS NOT NULL ORDER BY checkpoint DESC LIMIT 1"
                ),
                (self._session, head.generation),
            )
            checkpoint_id = cell(rows[0][0]) + 1 if rows else 0
            body = json.dumps({"role": CHECKPOINT, "id": checkpoint_id})
            yield from self._insert(head, running, [(body.encode(), body, checkpoint_id, None)])
            return Head(head.generation, head.position + 1, epoch=head.epoch), checkpoint_id

        self._head, checkpoint_id = yield from self._write(run)
        return checkpoint_id

    def _revert_to(self, checkpoint_id: int) -> Flow[Head]:
        def run() -> Flow[Head]:
            generation, epoch = yield from self._locked_generation()
            rows = yield Sql(
                self._sql(
                    "SELECT position FROM {p}records "
                    "WHERE session = ? AND generation = ? AND checkpoint = ?"
                ),
                (self._session, generation, checkpoint_id),
            )
            if not rows:
                counted = yield Sql(
                    self._sql(
                        "SELECT COUNT(checkpoint) FROM {p}records "
                        "WHERE session = ? AND generation = ?"
                    ),
                    (self._session, generation),
                )
                raise CheckpointNotFoundError(
                    f"{self.target} session {self._session!r}: checkpoint {checkpoint_id} does "
                    f"not exist (the session has {int(counted[0][0])} checkpoints, ids from 0); "
                    "pick an existing id"
                )
            cut = cell(rows[0][0])
            yield Sql(
                self._sql(
                    "INSERT INTO {p}records (session, generation, position, checkpoint, body, rid, "
                    "upto, counter, meta) SELECT session, ?, position, checkpoint, body, rid, "
                    "upto, counter, meta FROM {p}records "
                    "WHERE session = ? AND generation = ? AND position < ?"
                ),
                (generation + 1, self._session, generation, cut),
            )
            yield from self._new_generation(generation + 1)
            return Head(generation + 1, cut, epoch=epoch)

        self._head = yield from self._write(run)
        return self._head

    def _clear(self) -> Flow[None]:
        def run() -> Flow[Head]:
            generation, epoch = yield from self._locked_generation()
            yield from self._new_generation(generation + 1)
            return Head(generation + 1, 0, epoch=epoch)

        self._head = yield from self._write(run)

    def _new_generation(self, generation: int) -> Flow[None]:
        yield Sql(
            self._sql("UPDATE {p}sessions SET generation = ?, updated_at = ? WHERE session = ?"),
            (generation, time.time(), self._session),
        )

    def _delete(self) -> Flow[bool]:
        """Delete the session's records (every generation), its row and its offloaded results
        in one transaction; whether any existed. The row is locked first (PostgreSQL), so a
        writer waiting for it finds it gone; one that writes later makes a row with a new epoch
        and its stale view conflicts."""

        def run() -> Flow[bool]:
            q, session = self._sql, (self._session,)
            lock = "SELECT epoch FROM {p}sessions WHERE session = ?" + self.lock_clause
            found = bool((yield Sql(q(lock), session)))
            yield Sql(q("DELETE FROM {p}records WHERE session = ?"), session)
            yield Sql(q("DELETE FROM {p}sessions WHERE session = ?"), session)
            if (yield Sql(q(self.table_query), (f"{self.prefix}offload",))):
                where = "FROM {p}offload WHERE session = ?"
                found = found or bool((yield Sql(q(f"SELECT 1 {where} LIMIT 1"), session)))
                yield Sql(q(f"DELETE {where}"), session)
            return found

        found = yield from self._write(run)
        self._head = Head(0, 0)  # the empty session: this store may start it again
        return found

    def _current(self) -> Flow[tuple[int, str]]:
        """The session's generation and epoch, read inside a read transaction."""
        found = yield Sql(
            self._sql(
                "SELECT generation, epoch FROM {p}sessions WHERE session = ?" + self.share_clause
            ),
            (self._session,),
        )
        if found:
            return cell(found[0][0]), self._epoch(found[0][1])
        # a new session (a blind view), or records whose row was lost
        orphaned = yield from self._orphaned_generation()
        return (0, "") if orphaned is None else (orphaned, self._epoch(""))

    def _load(self, start: int = 0) -> Flow[Batch]:
        def run() -> Flow[tuple[Head, list[Any]]]:
            generation, epoch = yield from self._current()
            rows = yield Sql(
                self._sql(
                    "SELECT position, body FROM {p}records WHERE session = ? AND generation = ? "
                    "AND position >= ? ORDER BY position"
                ),
                (self._session, generation, max(0, int(start))),
            )
            # The rows are every position from ``start`` up, in order: the last one read is the
            # highest (MAX(position)); only an empty read asks for the end.
            end = cell(rows[-1][0]) + 1 if rows else (yield from self._end(generation))[0]
            # No row yet: the first write creates it with a new epoch, which this view must not
            # match (a stale blind view would otherwise equal a rebuilt session).
            return Head(generation, end, epoch=epoch), rows

        self._head, rows = yield from self._read(run)
        return Batch(self._head, [(cell(pos), line_of(body)) for pos, body in rows])

    def _load_after(self, head: Head) -> Flow[Batch | None]:
        batch = yield from self._load(head.position)
        return batch if extends(batch.head, head) else None

    def _sessions(self) -> Flow[list[str]]:
        def run() -> Flow[list[str]]:
            rows = yield Sql(self._sql("SELECT session FROM {p}sessions ORDER BY session"))
            return [str(row[0]) for row in rows]

        return (yield from self._read(run))

    def _generations(self) -> Flow[list[int]]:
        def run() -> Flow[list[int]]:
            rows = yield Sql(
                self._sql(
                    "SELECT DISTINCT generation FROM {p}records WHERE session = ? "
                    "ORDER BY generation"
                ),
                (self._session,),
            )
            return [cell(row[0]) for row in rows]

        return (yield from self._read(run))
