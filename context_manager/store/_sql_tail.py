"""How a SQL store's open leaves the oldest message rows in the database: it reads the newest
rows, one row's running sums for the rest (``_line_ends.Running``, written with every row by
``SqlFlows._insert``) and the older rows that are no message; the older message rows are read
when the manager first needs them (``store/_unread.py``). Flows over :class:`SqlFlows`, run
by its sync driver (``SqlStore.load_tail`` / ``load_older``).
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import StoreConflictError
from ._drive import Flow
from ._line_ends import COMPACTION_LINE, METADATA_LINES, LineEnds, Running
from ._sql import SqlFlows
from ._sql_steps import Sql, line_of
from ._sql_tables import cell
from .protocol import Head, Skipped, Tail
from .replayer import resume_point

__all__ = ["load_older", "load_tail"]

logger = logging.getLogger("context_manager.store")


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
            if cut is None:  # read every record (the rest in this transaction) or, with a
                # compaction among them, from its resume point on (Replayer._resume)
                resumed = yield from _from_compaction(db, key, lines)
                if resumed is not None:
                    return Tail(head, resumed=resumed)
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
        oldest = yield Sql(
            db._sql(f"SELECT position FROM {{p}}records {where} ORDER BY position LIMIT 1"),
            key,
        )
        if cell(oldest[0][0]):  # the oldest rows were removed (a retention job): counted
            return None  # from the positions, they would be held as if still there
        meta = yield Sql(
            db._sql(
                f"SELECT position, body, upto FROM {{p}}records {where} AND meta IS NOT NULL "
                "AND position < ? ORDER BY position"
            ),
            (*key, start),
        )
        older = [(cell(pos), line_of(body), upto) for pos, body, upto in meta]
        if any(raw.startswith(COMPACTION_LINE) for _, raw, _ in older):
            resumed = yield from _from_compaction(db, key, lines)  # from it on, as a file
            return None if resumed is None else Tail(head, resumed=resumed)
        found = yield Sql(
            db._sql(f"SELECT upto, counter FROM {{p}}records {where} AND position = ?"),
            (*key, start - 1),
        )
        running = Running.of_row(found[0] if found else None)
        if running.tokens is None or not running.admitted(ends):
            return None
        if any(type(n) is not int or not raw.startswith(METADATA_LINES) for _, raw, n in older):
            return None  # (a cell an edit or damage changed: the full read reports it)
        return Tail(head, lines[cut:], start, older, running.tokens)

    return (yield from db._read(run))


def load_older(db: SqlFlows, tail: Tail) -> Flow[list[tuple[int, bytes, bool]]]:
    """The message records ``tail`` left unread (``load_tail``): a session deleted or
    rebuilt since no longer holds them (``StoreConflictError``); rows removed outside the
    library are reported, and the history holds the others."""

    def run() -> Flow[list[Any]]:
        _, epoch = yield from db._current()
        rows: list[Any] = yield Sql(
            db._sql(
                "SELECT position, body FROM {p}records WHERE session = ? AND generation = ? "
                "AND meta IS NULL AND position < ? ORDER BY position"
            ),
            (db._session, tail.head.generation, tail.cut),
        )
        unread = tail.unread
        if epoch != tail.head.epoch:
            raise StoreConflictError(
                f"{db.target} session {db._session!r}: it was deleted or rebuilt since "
                f"it was opened, so the {unread} oldest messages the open left unread are "
                "gone; reopen the session"
            )
        if len(rows) != unread:  # rows removed outside the library: say so, keep the rest
            logger.warning(
                "%s session %r: %d of the %d oldest message records are missing (removed "
                "outside the library); the history holds the others",
                db.target,
                db._session,
                unread - len(rows),
                unread,
            )
        return rows

    rows = yield from db._read(run)
    return [(cell(pos) + 1, line_of(body), True) for pos, body in rows]


def _from_compaction(
    db: SqlFlows, key: tuple[Any, ...], lines: list[tuple[int, bytes, bool]]
) -> Flow[list[tuple[int, bytes, bool] | Skipped] | None]:
    """The records a read from the latest compaction on needs (``lines``: the newest rows),
    in order: every record that is no message, the messages it still held before its resume
    point, every record from there on; the other message records as :class:`Skipped` runs.
    None: the session holds no compaction that names a resume point."""
    first = lines[0][0] - 1  # the position of the oldest row read
    meta = yield Sql(
        db._sql(
            "SELECT position, body FROM {p}records WHERE session = ? AND generation = ? "
            "AND meta IS NOT NULL AND position < ? ORDER BY position"
        ),
        (*key, first),
    )
    metas = [(cell(pos), line_of(body)) for pos, body in meta]
    skip, _, below = resume_point([*((p + 1, raw, True) for p, raw in metas), *lines])
    if not skip:
        return None
    before = first - len(metas)  # message rows before the oldest row read
    held = sorted(o for o in below if o < min(skip, before))
    places = _positions([*held, min(skip, before)], [pos for pos, _ in metas])
    start = places.pop()  # every row from here on is read
    wanted: list[Any] = []
    if held:
        marks = ", ".join("?" * len(held))
        wanted = yield Sql(
            db._sql(
                "SELECT position, body FROM {p}records WHERE session = ? AND generation = ? "
                f"AND position IN ({marks}) AND meta IS NULL ORDER BY position"
            ),
            (*key, *places),
        )
    rest = yield Sql(
        db._sql(
            "SELECT position, body FROM {p}records WHERE session = ? AND generation = ? "
            "AND position >= ? AND position < ? ORDER BY position"
        ),
        (*key, start, first),
    )
    if len(wanted) != len(held):
        return None
    out: list[tuple[int, bytes, bool] | Skipped] = []
    last = -1  # the position of the previous row taken
    for pos, raw in sorted(
        [*((p, r) for p, r in metas if p < start), *((cell(p), line_of(b)) for p, b in wanted)]
    ):
        if pos - last > 1:
            out.append(Skipped(pos - last - 1))
        out.append((pos + 1, raw, True))
        last = pos
    if start - last > 1:
        out.append(Skipped(start - last - 1))
    out += [(cell(pos) + 1, line_of(body), True) for pos, body in rest]
    return out + lines


def _positions(ordinals: list[int], metas: list[int]) -> list[int]:
    """The positions of message records ``ordinals`` (ascending: the how-manieth message
    record each is) among records whose ``metas`` (ascending) are no message."""
    out, k = [], 0
    for ordinal in ordinals:
        while k < len(metas) and metas[k] <= ordinal + k:
            k += 1
        out.append(ordinal + k)
    return out
