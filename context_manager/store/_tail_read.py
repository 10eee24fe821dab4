"""How an open leaves a session's oldest message records in its store: one algorithm over a
small row source (:class:`Rows`) that the SQL stores (``_sql_tail.SqlRows``) and Redis
(``_redis_tail.RedisRows``) implement.

The open reads the newest records, then one record's running sums for everything older
(``_line_ends.Running``, written with every record) and the older records that are no message;
the older message records are read when the manager first needs them (``store/_unread.py``,
:func:`load_older`). Why a row source and not a second copy per backend: where to start, when
the sums may stand for the records, and what a compaction still needs are rules; a backend
only knows how to fetch rows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from ..errors import StoreConflictError
from ._drive import Flow
from ._line_ends import COMPACTION_LINE, METADATA_LINES, LineEnds, Running
from .protocol import Head, Skipped, Tail
from .replayer import resume_point

__all__ = ["Moved", "Rows", "load_older", "load_tail"]

logger = logging.getLogger("context_manager.store")

#: A record as a row source gives it: its position and its line (newline-terminated).
Row = tuple[int, bytes]


class Moved(Exception):
    """The session was deleted or rebuilt between two reads of one open (Redis runs each read
    as its own script; a SQL open is one transaction and never raises it)."""


class Rows(Protocol):
    """What the open asks of a store, in one generation of one session, as flows. Positions
    count from 0; every list is in ascending position."""

    #: The session's head, as the first :meth:`newest` read it.
    head: Head
    #: The session, for messages: its target (no credentials) and id.
    where: str

    def newest(self, below: int | None, limit: int) -> Flow[list[Row]]:
        """Up to ``limit`` records before position ``below`` (None: the newest; this first
        read fixes :attr:`head`)."""
        ...

    def between(self, start: int | None, end: int) -> Flow[list[Row]]:
        """The records from ``start`` (None: every one) up to ``end``, excluded."""
        ...

    def at(self, positions: Sequence[int]) -> Flow[list[Row]]:
        """The records at ``positions`` (ascending)."""
        ...

    def before(self, start: int) -> Flow[tuple[list[tuple[int, bytes, object]], Running] | None]:
        """The records before ``start`` that are no message, each with its stored running
        tokens, and the running sums of the record before ``start``; None: the store cannot
        tell (rows removed outside the library, records written without sums)."""
        ...

    def messages(self, cut: int) -> Flow[list[Row]]:
        """The message records before ``cut`` (it may return others too); :class:`Moved`
        unless the session's epoch is still the one of the head the source was made with."""
        ...


def load_tail(rows: Rows, ends: LineEnds, reach: int) -> Flow[Tail | None]:
    """The newest records, from the plain user turn where they carry more than ``reach``
    stored tokens (``LineEnds.tail_start``), the records before it that are no message,
    and the running sums of the messages before it. Pages of newest records grow fourfold
    until the turn is found. Every record comes back (``Tail.cut`` 0) when the session is
    shorter than that, or when the lines or the sums say the open must read them all (a line
    without our count, a message before the turn a reader must read, another counter); None:
    a compaction names no resume point, or the session moved (read it again, whole)."""
    try:
        return (yield from _newest(rows, ends, reach))
    except Moved:
        return None


def _newest(rows: Rows, ends: LineEnds, reach: int) -> Flow[Tail | None]:
    lines: list[tuple[int, bytes, bool]] = []
    limit = 64
    while True:
        page = yield from rows.newest(lines[0][0] - 1 if lines else None, limit)
        lines[:0] = [(pos + 1, raw, True) for pos, raw in page]
        head = rows.head
        if len(page) < limit or lines[0][0] == 1:  # every record read
            return Tail(head, lines)
        cut = ends.tail_start(lines, reach)
        if cut is None:  # read every record or, with a compaction among them, from its resume
            # point on (Replayer._resume)
            resumed = yield from _from_compaction(rows, lines)
            if resumed is not None:
                return Tail(head, resumed=resumed)
            return (yield from _whole(rows, head, lines))
        if cut:
            break
        limit *= 4
    start = lines[cut][0] - 1  # the position of the first record read whole
    found = yield from rows.before(start)
    if found is not None and any(raw.startswith(COMPACTION_LINE) for _, raw, _ in found[0]):
        resumed = yield from _from_compaction(rows, lines)  # from it on, as a file
        return None if resumed is None else Tail(head, resumed=resumed)
    older, running = found or ([], Running(None))
    metas = [(p, raw, n) for p, raw, n in older if type(n) is int and _meta(raw)]
    if running.tokens is None or not running.admitted(ends) or len(metas) != len(older):
        # (a message before the start must be read, another counter, a cell an edit or
        # damage changed, or the store cannot tell): what was read, and the rest
        return (yield from _whole(rows, head, lines))
    return Tail(head, lines[cut:], start, metas, running.tokens)


def _whole(rows: Rows, head: Head, lines: list[tuple[int, bytes, bool]]) -> Flow[Tail]:
    """Every record: the newest ``lines`` read so far, and the rest before them."""
    rest = yield from rows.between(None, lines[0][0] - 1)
    return Tail(head, [*((pos + 1, raw, True) for pos, raw in rest), *lines])


def load_older(rows: Rows, tail: Tail) -> Flow[list[tuple[int, bytes, bool]]]:
    """The message records ``tail`` left unread (:func:`load_tail`): a session deleted or
    rebuilt since no longer holds them (``StoreConflictError``); rows removed outside the
    library are reported, and the history holds the others."""
    unread = tail.unread
    try:
        found = yield from rows.messages(tail.cut)
    except Moved:
        raise StoreConflictError(
            f"{rows.where}: it was deleted or rebuilt (or the "
            f"generation it read expired) since it was opened, so the {unread} oldest "
            "messages the open left unread are gone; reopen the session"
        ) from None
    kept = [(pos + 1, raw, True) for pos, raw in found if not _meta(raw)]
    if len(kept) != unread:  # rows removed outside the library: say so, keep the rest
        logger.warning(
            "%s: %d of the %d oldest message records are missing (removed "
            "outside the library); the history holds the others",
            rows.where,
            unread - len(kept),
            unread,
        )
    return kept


def _from_compaction(
    rows: Rows, lines: list[tuple[int, bytes, bool]]
) -> Flow[list[tuple[int, bytes, bool] | Skipped] | None]:
    """The records a read from the latest compaction on needs (``lines``: the newest rows),
    in order: every record that is no message, the messages it still held before its resume
    point, every record from there on; the other message records as :class:`Skipped` runs.
    None: the session holds no compaction that names a resume point (or the store cannot
    tell which records are no message)."""
    first = lines[0][0] - 1  # the position of the oldest row read
    found = yield from rows.before(first)
    if found is None:
        return None
    metas = [(pos, raw) for pos, raw, _ in found[0]]
    if not all(_meta(raw) for _, raw in metas):
        return None  # (a list of them an edit changed)
    skip, _, below = resume_point([*((p + 1, raw, True) for p, raw in metas), *lines])
    if not skip:
        return None
    before = first - len(metas)  # message rows before the oldest row read
    held = sorted(o for o in below if o < min(skip, before))
    places = _positions([*held, min(skip, before)], [pos for pos, _ in metas])
    start = places.pop()  # every row from here on is read
    wanted = (yield from rows.at(places)) if held else []
    wanted = [(pos, raw) for pos, raw in wanted if not _meta(raw)]
    rest = yield from rows.between(start, first)
    if len(wanted) != len(held):
        return None
    out: list[tuple[int, bytes, bool] | Skipped] = []
    last = -1  # the position of the previous row taken
    for pos, raw in sorted([*((p, r) for p, r in metas if p < start), *wanted]):
        if pos - last > 1:
            out.append(Skipped(pos - last - 1))
        out.append((pos + 1, raw, True))
        last = pos
    if start - last > 1:
        out.append(Skipped(start - last - 1))
    out += [(pos + 1, raw, True) for pos, raw in rest]
    return out + lines


def _meta(raw: bytes) -> bool:
    return raw.startswith(METADATA_LINES)


def _positions(ordinals: list[int], metas: list[int]) -> list[int]:
    """The positions of message records ``ordinals`` (ascending: the how-manieth message
    record each is) among records whose ``metas`` (ascending) are no message."""
    out, k = [], 0
    for ordinal in ordinals:
        while k < len(metas) and metas[k] <= ordinal + k:
            k += 1
        out.append(ordinal + k)
    return out
