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
from collections.abc import Sequence

from .._config import SAFE_INT
from ..messages import codec

__all__ = ["COMPACTION_LINE", "MESSAGE_LINE", "METADATA_LINES", "LineEnds"]

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


class LineEnds:
    """What the lines of one read tell under the manager's counter (``fingerprint``): where
    the read may start (:meth:`tail_start`), then, for each older message line in order,
    whether it may stay unread (:meth:`tokens`)."""

    def __init__(self, fingerprint: str) -> None:
        count = rb'"count":\[(0|[1-9]\d{0,15}),"' + re.escape(fingerprint.encode()) + rb'"\],'
        self._count = re.compile(count + _AFTER_COUNT).search
        self._readable: dict[bytes, bool] = {}  # per stored object type
        self._first = True  # a leading system message would become the system prompt

    def tail_start(self, lines: Sequence[tuple[int, bytes, bool]], reach: int | None) -> int:
        """The index in ``lines`` of the plain user turn from which the newest message lines
        carry more than ``reach`` stored tokens, older than the latest turn (every request
        sends that one, and from there); 0: read every line (no reach, a compaction, a line
        without our count, or the history is not that long)."""
        if reach is None:
            return 0
        total, turns = 0, 0
        for k in range(len(lines) - 1, 0, -1):
            raw = lines[k][1]
            if raw.startswith(METADATA_LINES):
                if raw.startswith(COMPACTION_LINE):
                    return 0
                continue
            found = self._count(raw, len(raw) - _END)
            if found is None:
                return 0
            total += int(found[1])
            if raw.startswith(_USER_TURN):
                turns += 1
                if total > reach and turns > 1:
                    return k
        return 0

    def tokens(self, raw: bytes) -> int | None:
        """The stored tokens of older message line ``raw`` when the full read would take it as
        it is (unpinned at priority 0: nothing before the count in ``_cm``, or, in a wrapper,
        before the type of an object this process can read back; the CRC right; no system
        message, and the first one none that could become the prompt); None: it must be read."""
        found = self._count(raw, len(raw) - _END)
        if found is None or raw.startswith(_PROMPT):
            return None
        if raw[found.start() - 7 : found.start()] != b'"_cm":{':
            tag = _WRAPPED.match(raw)
            if tag is None or not self._can_read(tag[1]):
                return None
        if self._first and not raw.startswith(_NO_PROMPT):
            return None
        if found[2] is not None and not _crc_holds(raw, found):
            return None  # damaged: the full read skips it (and says so)
        self._first = False
        tokens = int(found[1])
        return tokens if tokens <= SAFE_INT else None  # (beyond: the full read counts it)

    def _can_read(self, tag: bytes) -> bool:
        if tag not in self._readable:
            self._readable[tag] = codec.readable(tag.decode())
        return self._readable[tag]


def _crc_holds(raw: bytes, found: re.Match[bytes]) -> bool:
    """Whether a line's CRC (``integrity=True``) is the CRC-32 of the line without it
    (``records.verify_crc``, read from the bytes: the CRC is the last key our writer wrote)."""
    bare = raw[: found.start(2) - 7] + raw[found.end(2) :].rstrip(b"\n")  # less ',"crc":N'
    return zlib.crc32(bare) == int(found[2])
