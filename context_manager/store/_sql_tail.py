"""The SQL stores' rows as the open that leaves the oldest message rows in the database reads
them (``_tail_read.Rows``): the newest rows, the running sums one row holds
(``_line_ends.Running``, written with every row by ``SqlFlows._insert``), the older rows that
are no message (the partial index ``records_meta``). Flows over :class:`SqlFlows`, run inside
one read transaction by its sync driver (``SqlStore.load_tail`` / ``load_older``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._drive import Flow
from ._line_ends import Running
from ._sql import SqlFlows
from ._sql_steps import Sql, line_of
from ._sql_tables import cell
from ._tail_read import Moved, Row
from .protocol import Head

__all__ = ["SqlRows"]

_WHERE = "WHERE session = ? AND generation = ?"


class SqlRows:
    """One session's rows in one generation: the current one, read by the first
    :meth:`newest`, or that of ``head``, an open's (read while the session's epoch is still
    the one ``head`` carries)."""

    def __init__(self, db: SqlFlows, head: Head | None = None) -> None:
        self._db = db
        self.head = head or Head(0, 0)
        self.where = f"{db.target} session {db.session!r}"
        self._key: tuple[Any, ...] = (db.session, self.head.generation)

    def _rows(self, condition: str, params: Sequence[Any], order: str = "") -> Flow[list[Row]]:
        found = yield Sql(
            self._db._sql(
                f"SELECT position, body FROM {{p}}records {_WHERE} AND {condition} "
                f"ORDER BY position{order}"
            ),
            (*self._key, *params),
        )
        return [(cell(pos), line_of(body)) for pos, body in found]

    def newest(self, below: int | None, limit: int) -> Flow[list[Row]]:
        if below is None:
            generation, epoch = yield from self._db._current()
            self._key = (self._db.session, generation)
        # Bounded on position from the first page on: PostgreSQL then walks the primary key
        # backwards even before its statistics know the table (without the bound it sorted
        # every row of a freshly written session: 80 ms at 100k). The first bound is ">= 0",
        # which SQLite's text cells pass (a damaged one is reported, not left).
        page = yield from self._rows(
            f"position {'>=' if below is None else '<'} ?", (below or 0, limit), " DESC LIMIT ?"
        )
        page.reverse()
        if below is None:
            self.head = Head(generation, page[-1][0] + 1 if page else 0, epoch=epoch)
        return page

    def between(self, start: int | None, end: int) -> Flow[list[Row]]:
        if start is None:
            return (yield from self._rows("position < ?", (end,)))
        return (yield from self._rows("position >= ? AND position < ?", (start, end)))

    def at(self, positions: Sequence[int]) -> Flow[list[Row]]:
        marks = ", ".join("?" * len(positions))
        return (yield from self._rows(f"position IN ({marks})", positions))

    def before(self, start: int) -> Flow[tuple[list[tuple[int, bytes, object]], Running] | None]:
        # One statement (a round trip, not three): the oldest row, the rows before ``start``
        # that are no message (the partial index ``records_meta``), the row before ``start``.
        found = yield Sql(
            self._db._sql(
                "SELECT 0, position, NULL, upto, counter FROM (SELECT position, upto, counter "
                f"FROM {{p}}records {_WHERE} ORDER BY position LIMIT 1) AS oldest UNION ALL "
                f"SELECT 1, position, body, upto, counter FROM {{p}}records {_WHERE} "
                "AND meta IS NOT NULL AND position < ? UNION ALL "
                f"SELECT 2, position, NULL, upto, counter FROM {{p}}records {_WHERE} "
                "AND position = ? ORDER BY 1, 2"
            ),
            (*self._key, *self._key, start, *self._key, start - 1),
        )
        if not found or found[0][0] != 0 or cell(found[0][1]):  # the oldest rows were
            return None  # removed (a retention job): they would be held as if still there
        older = [
            (cell(pos), line_of(body), upto) for kind, pos, body, upto, _ in found if kind == 1
        ]
        last = [row[3:] for row in found if row[0] == 2]
        return older, Running.of_row(last[0] if last else None)

    def messages(self, cut: int) -> Flow[list[Row]]:
        _, now = yield from self._db._current()
        rows = yield from self._rows("meta IS NULL AND position < ?", (cut,))
        if now != self.head.epoch:
            raise Moved
        return rows
