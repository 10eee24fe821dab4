"""What a stored line's bytes tell without parsing it: where an open may start reading, and
whether an older message line may stay unread, with its tokens (``Replayer._tail``).

Our writer puts ``_cm`` last in a message line and, in it, the count, the id, maybe a place
in a batch and a CRC last (``records.message_record``, ``_tail._placed``); an object stored
losslessly sits in a wrapper whose ``_cm`` starts with its type (``_journal._encode``). So the
line's end gives its count, and its start whether it is pinned or ranked (those keys come
first in ``_cm``), without decoding the message.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from .._config import SAFE_INT
from ..messages import codec

__all__ = [
    "COMPACTION_LINE",
    "MESSAGE_LINE",
    "METADATA_LINES",
    "LineEnds",
    "Plain",
    "Running",
    "plain",
    "running_sums",
]

#: How a message line we wrote starts (compact JSON, role first); a record's role starts with
#: "_" (the 10th byte): a metadata line.
MESSAGE_LINE = b'{"role":"'
COMPACTION_LINE = b'{"role":"_compaction"'
#: How metadata lines start (Kimi's spacing, or compact for a compaction).
METADATA_LINES = (b'{"role": "_', b'{"role":"_')
#: A plain user turn as our writer writes it: never inside a tool exchange, so a read may start
#: there with no call open before it.
_USER_TURN = b'{"role":"user","content":"'
#: How a first message line that cannot become the system prompt starts; a system message
#: further on is read too (a damaged line before it would make it the first).
_NO_PROMPT = (b'{"role":"user"', b'{"role":"assistant"', b'{"role":"tool"')
_PROMPT = (b'{"role":"system"', b'{"role":"developer"')
#: The end of ``_cm`` after the count: the id, maybe a place in a batch, maybe a CRC.
_AFTER_COUNT = (
    rb'"id":"[^"\\]{1,64}"(?:,"batch":\[\d{1,15},\d{1,15}\])?(?:,"crc":(\d{1,12}))?\}\}\n?\Z'
)
#: How far from a line's end its ``_cm`` starts at most, when it matches those.
_END = 256
#: The wrapper of an object stored losslessly, up to the object's type.
_WRAPPED = re.compile(
    rb'\{"role":"\w{1,32}","content":null(?:,"tool_call_id":"(?:[^"\\]|\\.){0,512}")?,'
    rb'"_cm":\{"type":"([\w.]{1,128})"'
)


#: A message line's count under any counter: its tokens and the counter's fingerprint.
_ANY_COUNT = re.compile(rb'"count":\[(0|[1-9]\d{0,15}),"([^"\\]{1,128})"\],' + _AFTER_COUNT).search


class Plain(NamedTuple):
    """A message line any reader counting with ``fingerprint`` (and able to read ``type``, the
    object type of a line stored losslessly) may leave unread: its stored ``tokens``."""

    tokens: int
    fingerprint: str
    type: str | None
    #: Whether it may be the first message line (one that cannot become the system prompt).
    first: bool


def plain(raw: bytes) -> Plain | None:
    """What message line ``raw`` tells when a full read would take it as it is under the
    counter it was counted with: unpinned at priority 0 (nothing before the count in ``_cm``,
    or, in a wrapper, before the object's type), its CRC right, no system message; None: a
    reader must read it (the rule :class:`LineEnds` and the SQL stores' running sums share)."""
    found = _ANY_COUNT(raw, len(raw) - _END)
    if found is None or raw.startswith(_PROMPT):
        return None
    kind = None
    if raw[found.start() - 7 : found.start()] != b'"_cm":{':
        tag = _WRAPPED.match(raw)
        if tag is None:
            return None
        kind = tag[1].decode()
    if found[3] is not None and not _crc_holds(raw, found):
        return None  # damaged: the full read skips it (and says so)
    tokens = int(found[1])
    if tokens > SAFE_INT:
        return None  # (beyond: the full read counts it)
    return Plain(tokens, found[2].decode(), kind, raw.startswith(_NO_PROMPT))


class Running(NamedTuple):
    """What the lines of a session up to one tell (the SQL stores keep it on every row): the
    stored tokens of its message lines, when every one is :func:`plain` under one counter and
    the first may be first (None: a reader must read them), that counter's fingerprint and the
    object types among them (``""``: no message line yet)."""

    tokens: int | None = 0
    counter: str = ""

    def then(self, raw: bytes) -> Running:
        """The running sums after line ``raw``."""
        if self.tokens is None or raw.startswith(METADATA_LINES):
            return self
        found = plain(raw)
        if found is None or (not self.counter and not found.first):
            return _MUST_READ
        fields = self.counter.split("\n") if self.counter else [found.fingerprint]
        if fields[0] != found.fingerprint:
            return _MUST_READ
        if found.type is not None and found.type not in fields:
            fields.append(found.type)
        return Running(self.tokens + found.tokens, "\n".join(fields))

    @classmethod
    def of_row(cls, row: Sequence[object] | None) -> Running:
        """A SQL row's ``upto`` and ``counter`` as stored; none, or damaged: must read."""
        if row is None or type(row[0]) is not int or not isinstance(row[1], str):
            return _MUST_READ
        return cls(row[0], row[1])

    def admitted(self, ends: LineEnds) -> bool:
        """Whether a reader (``ends``) may leave the message lines up to here unread."""
        if self.tokens is None:
            return False
        fingerprint, *types = self.counter.split("\n")
        return not self.counter or ends.admits(fingerprint, types)


_MUST_READ = Running(None)


def running_sums(running: Running, lines: Iterable[bytes]) -> Iterator[tuple[Running, bool]]:
    """What a store writes with each of ``lines`` (continued from ``running``, the sums of the
    line before them): the running sums after it, and whether it is no message (a metadata
    line, which an open reads even when it leaves the messages around it unread)."""
    for raw in lines:
        running = running.then(raw)
        yield running, raw.startswith(METADATA_LINES)


class LineEnds:
    """What the lines of one read tell under the manager's counter (``fingerprint``): where
    the read may start (:meth:`tail_start`), then, for each older message line in order,
    whether it may stay unread (:meth:`tokens`)."""

    def __init__(self, fingerprint: str) -> None:
        self._fingerprint = fingerprint
        self._stored = fingerprint.encode()  # as a line carries it
        self._readable: dict[str, bool] = {}  # per stored object type
        self._first = True  # a leading system message would become the system prompt

    def tail_start(self, lines: Sequence[tuple[int, bytes, bool]], reach: int | None) -> int | None:
        """The index in ``lines`` of the plain user turn from which the newest message lines
        carry more than ``reach`` stored tokens, older than the latest turn (every request
        sends that one, and from there); 0: the lines are not that long (or ``reach`` is
        None); None: read every line (a compaction, a line without our count)."""
        if reach is None:
            return 0
        total, turns = 0, 0
        for k in range(len(lines) - 1, 0, -1):
            raw = lines[k][1]
            if raw.startswith(METADATA_LINES):
                if raw.startswith(COMPACTION_LINE):
                    return None
                continue
            found = _ANY_COUNT(raw, len(raw) - _END)
            if found is None or found[2] != self._stored:
                return None
            total += int(found[1])
            if raw.startswith(_USER_TURN):
                turns += 1
                if total > reach and turns > 1:
                    return k
        return 0

    def tokens(self, raw: bytes) -> int | None:
        """The stored tokens of older message line ``raw`` when the full read would take it as
        it is (:func:`plain`, counted under this counter, of a type this process can read back,
        and the first one none that could become the prompt); None: it must be read."""
        found = plain(raw)
        if found is None or not self.admits(found.fingerprint, [found.type] if found.type else ()):
            return None
        if self._first and not found.first:
            return None
        self._first = False
        return found.tokens

    def admits(self, fingerprint: str, types: Sequence[str]) -> bool:
        """Whether lines counted under ``fingerprint``, holding objects of ``types``, may stay
        unread by this reader."""
        return fingerprint == self._fingerprint and all(map(self._can_read, types))

    def _can_read(self, tag: str) -> bool:
        if tag not in self._readable:
            self._readable[tag] = codec.readable(tag)
        return self._readable[tag]


def _crc_holds(raw: bytes, found: re.Match[bytes]) -> bool:
    """Whether a line's CRC (``integrity=True``) is the CRC-32 of the line without it
    (``records.verify_crc``, read from the bytes: the CRC is the last key our writer wrote)."""
    bare = raw[: found.start(3) - 7] + raw[found.end(3) :].rstrip(b"\n")  # less ',"crc":N'
    return zlib.crc32(bare) == int(found[3])
