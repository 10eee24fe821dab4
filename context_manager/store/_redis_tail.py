"""Redis's records as the open that leaves the oldest messages in Redis reads them
(``_tail_read.Rows``), and the running sums the writer keeps beside each generation's list.

Each record's sums (``_line_ends.Running``, the same rule the SQL stores keep in a column) are
computed by the writer, which knows the sums of its head: a load, a revert and an append return
them, and the append script takes new ones only when it checked the writer's view
(``_redis_lua.APPEND``). Redis runs each read of an open as its own script, so each checks the
session's epoch (:class:`~._tail_read.Moved`: deleted or rebuilt since); a generation's records
below its length never change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .._config import SAFE_INT
from ._drive import Flow
from ._line_ends import Running, running_sums
from ._tail_read import Moved, Row
from .protocol import Head

if TYPE_CHECKING:
    from .redis import RedisFlows

__all__ = ["UNKNOWN", "RedisRows", "Sums", "continued", "head_sums", "sums_of"]


class Sums(NamedTuple):
    """What a Redis record's entry in ``s:<N>`` holds: the running sums up to it and how many
    records up to it are no message (``m:<N>`` lists their positions: an open checks that
    list against this count, so an edited or evicted one is not taken)."""

    running: Running
    metas: int


#: The sums of a head a writer does not know (a reader must read every record).
UNKNOWN = Sums(Running(None), 0)


def continued(head: Sums, lines: Sequence[bytes]) -> tuple[list[str], Sums]:
    """The ``s:<N>`` entries of ``lines`` written after ``head`` and the sums after them: ``m``
    first for a record that is no message (``m:<N>`` lists its position), the tokens (``-``:
    a reader must read the messages up to it), the count of records that are no message, the
    counter's fingerprint and object types, each after a space."""
    out, metas, running = [], head.metas, head.running
    for running, meta in running_sums(head.running, lines):
        metas += meta
        tokens = "-" if running.tokens is None else str(running.tokens)
        out.append(f"{'m' if meta else ''}{tokens} {metas} {running.counter}")
    return out, Sums(running, metas)


def sums_of(stored: object) -> Sums | None:
    """The sums an ``s:<N>`` entry holds; None: none, or one an edit damaged."""
    if not isinstance(stored, bytes) or not stored.isascii():
        return None
    tokens, metas, counter = [*stored.decode().removeprefix("m").split(" ", 2), "", ""][:3]
    if not metas.isdigit() or not (tokens == "-" or tokens.isdigit()):
        return None
    running = Running(None if tokens == "-" else int(tokens), counter)
    if running.tokens is not None and running.tokens > SAFE_INT:
        return None
    return Sums(running, int(metas))


def head_sums(position: int, stored: object) -> Sums:
    """The sums at a head at ``position`` (a script's reply ``stored``): an empty
    generation's are known."""
    return Sums(Running(), 0) if position == 0 else sums_of(stored) or UNKNOWN


class RedisRows:
    """One session's records in one generation: the current one, read by the first
    :meth:`newest`, or that of ``head``, an open's (read while the session's epoch is
    still the one ``head`` carries)."""

    def __init__(self, store: RedisFlows, head: Head | None = None) -> None:
        self._store = store
        self.head = head or Head(0, 0)
        self.where = f"{store.target} session {store.session!r}"

    def _read(self, name: str, args: Sequence[Any]) -> Flow[list[Any]]:
        head = self.head
        reply = yield from self._store._read_script(name, [head.epoch, head.generation, *args])
        if reply[0] == 0:
            raise Moved
        return list(reply)

    def _ranges(self, ranges: Sequence[tuple[int, int]]) -> Flow[list[Row]]:
        wanted = [n for first, last in ranges if first <= last for n in (first, last)]
        if not wanted:
            return []
        reply = yield from self._read("rows", wanted)
        return [(int(reply[k]), bytes(reply[k + 1]) + b"\n") for k in range(1, len(reply) - 1, 2)]

    def newest(self, below: int | None, limit: int) -> Flow[list[Row]]:
        if below is None:
            batch = yield from self._store._load(-limit)
            self.head = batch.head
            return batch.lines
        return (yield from self._ranges([(max(0, below - limit), below - 1)]))

    def between(self, start: int | None, end: int) -> Flow[list[Row]]:
        return (yield from self._ranges([(start or 0, end - 1)]))

    def at(self, positions: Sequence[int]) -> Flow[list[Row]]:
        return (yield from self._ranges([(p, p) for p in positions]))

    def before(self, start: int) -> Flow[tuple[list[tuple[int, bytes, object]], Running] | None]:
        reply = yield from self._read("before", [start])
        last = sums_of(reply[1]) if reply[0] == 1 else None
        if last is None:
            return None
        older: list[tuple[int, bytes, object]] = []
        for entry in reply[2:]:  # its position, its sums and its line, one per line
            head, _, line = bytes(entry).rpartition(b"\n")
            pos, _, stored = head.partition(b"\n")
            sums = sums_of(stored)
            if sums is None or not pos.isdigit() or (older and int(pos) <= older[-1][0]):
                return None  # (an edited or evicted m:<N>)
            older.append((int(pos), line + b"\n", sums.running.tokens))
        if len(older) != last.metas:
            return None
        return older, last.running

    def messages(self, cut: int) -> Flow[list[Row]]:
        return (yield from self._ranges([(0, cut - 1)]))
