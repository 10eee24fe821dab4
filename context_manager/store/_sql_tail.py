"""How a SQL store's open leaves the oldest message rows in the database: it reads the newest
rows, one row's running sums for the rest (``_line_ends.Running``, written with every row by
``SqlFlows._insert``) and the older rows that are no message; the older message rows are read
when the manager first needs them (``store/_unread.py``). Flows over :class:`SqlFlows`, run
by its sync driver (``SqlStore.load_tail`` / ``load_older``).
"""

from __future__ import annotations

from typing import Any

from ..errors import StoreConflictError
from ._drive import Flow
from ._line_ends import METADATA_LINES, LineEnds, Running
from ._sql import SqlFlows
from ._sql_steps import Sql, line_of
from ._sql_tables import cell
from .protocol import Head, Tail

__all__ = ["load_older", "load_tail"]


def load_tail(db: SqlFlows, ends: LineEnds, reach: int) -> Flow[Tail | None]:
    """The newest records, from the plain user turn where they carry more than ``reach``
    stored tokens (``LineEnds.tail_start``), the records before it that are no message,
    and the running sums of the messages before it (``_line_ends.Running``, read from one
    row). Pages of newest records grow fourfold until the turn is found. Every record comes
    back (``Tail.cut`` 0) when the session is shorter than that, or when a line among the
    newest says the open must read them all (a compaction, a line without our count); None:
    the running sums say so (a message before the turn must be read, another counter)."""

    def run() -> Flow[Tail | None]:
        generation, epoch = yield from db._current()
        where = "WHERE session = ? AND generation = ?"
        key: tuple[Any, ...] = (db._session, generation)
        lines: list[tuple[int, bytes, bool]] = []
        limit = 64
        while True:
            # Bounded on position from the first page on: PostgreSQL then walks the primary
            # key backwards even before its statistics know the table (without the bound it
            # sorted every row of a freshly written session: 80 ms at 100k). The first bound
            # is ">= 0", which SQLite's text cells pass (a damaged one is reported, not left).
            page = yield Sql(
                db._sql(
                    f"SELECT position, body FROM {{p}}records {where} AND "
                    f"position {'<' if lines else '>='} ? ORDER BY position DESC LIMIT ?"
                ),
                (*key, lines[0][0] - 1 if lines else 0, limit),
            )
            lines[:0] = [(cell(pos) + 1, line_of(body), True) for pos, body in reversed(page)]
            if not lines:
                return Tail(Head(generation, 0, epoch=epoch))
            head = Head(generation, lines[-1][0], epoch=epoch)
            if len(page) < limit:  # every record read
                return Tail(head, lines)
            cut = ends.tail_start(lines, reach)
            if cut is None:  # read every record, in this transaction: the rest at once
                rest = yield Sql(
                    db._sql(
                        f"SELECT position, body FROM {{p}}records {where} AND position < ? "
                        "ORDER BY position"
                    ),
                    (*key, lines[0][0] - 1),
                )
                lines[:0] = [(cell(pos) + 1, line_of(body), True) for pos, body in rest]
                return Tail(head, lines)
            if cut:
                break
            limit *= 4
        start = lines[cut][0] - 1  # the position of the first record read whole
        found = yield Sql(
            db._sql(f"SELECT upto, counter FROM {{p}}records {where} AND position = ?"),
            (*key, start - 1),
        )
        running = Running.of_row(found[0] if found else None)
        if not running.admitted(ends):
            return None
        meta = yield Sql(
            db._sql(
                f"SELECT position, body, upto FROM {{p}}records {where} AND meta IS NOT NULL "
                "AND position < ? ORDER BY position"
            ),
            (*key, start),
        )
        older = [(cell(pos), line_of(body), upto) for pos, body, upto in meta]
        if running.tokens is None or any(
            type(upto) is not int or not raw.startswith(METADATA_LINES) for _, raw, upto in older
        ):
            return None  # (a cell an edit or damage changed: the full read reports it)
        return Tail(head, lines[cut:], start, older, running.tokens)

    return (yield from db._read(run))


def load_older(db: SqlFlows, tail: Tail) -> Flow[list[tuple[int, bytes, bool]]]:
    """The message records ``tail`` left unread (``_load_tail``): a session deleted or
    rebuilt since no longer holds them (``StoreConflictError``)."""

    def run() -> Flow[list[Any]]:
        _, epoch = yield from db._current()
        rows: list[Any] = yield Sql(
            db._sql(
                "SELECT position, body FROM {p}records WHERE session = ? AND generation = ? "
                "AND meta IS NULL AND position < ? ORDER BY position"
            ),
            (db._session, tail.head.generation, tail.cut),
        )
        if epoch != tail.head.epoch or len(rows) + len(tail.older) != tail.cut:
            raise StoreConflictError(
                f"{db.target} session {db._session!r}: it was deleted or rebuilt since "
                f"it was opened, so the {tail.cut - len(tail.older)} oldest messages the "
                "open left unread are gone; reopen the session"
            )
        return rows

    rows = yield from db._read(run)
    return [(cell(pos) + 1, line_of(body), True) for pos, body in rows]
