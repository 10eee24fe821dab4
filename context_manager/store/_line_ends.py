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

__all__ = ["COMPACTION_LINE", "MESSAGE_LINE", "METADATA_LINES", "UnreadLines", "tail_start"]

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
#: A message line's stored count under any fingerprint (the reach only adds them up).
_COUNTED = re.compile(rb'"count":\[(\d{1,16}),"[^"\\]{1,64}"\],' + _AFTER_COUNT)
#: How far from a line's end its ``_cm`` starts at most, when it matches those.
_END = 256
#: The wrapper of an object stored losslessly, up to the object's type.
_WRAPPED = re.compile(
    rb'\{"role":"\w{1,32}","content":null(?:,"tool_call_id":"(?:[^"\\]|\\.){0,512}")?,'
    rb'"_cm":\{"type":"([\w.]{1,128})"'
)


def tail_start(lines: Sequence[tuple[int, bytes, bool]], reach: int | None) -> int:
    """The index in ``lines`` of the plain user turn from which the newest message lines carry
    more than ``reach`` stored tokens, older than the latest turn (every request sends that one,
    and from there); 0: read every line (no reach, a compaction, a line without our count, or
    the history is not that long). Reads each line's end only."""
    if reach is None:
        return 0
    total, turns = 0, 0
    for k in range(len(lines) - 1, 0, -1):
        raw = lines[k][1]
        if raw.startswith(METADATA_LINES):
            if raw.startswith(COMPACTION_LINE):
                return 0
            continue
        found = _COUNTED.search(raw, len(raw) - _END)
        if found is None:
            return 0
        total += int(found[1])
        if raw.startswith(_USER_TURN):
            turns += 1
            if total > reach and turns > 1:
                return k
    return 0


class UnreadLines:
    """Judges the older message lines of one read, in order: each may stay unread when the
    full read would take it as it is (our count under ``fingerprint``, unpinned at priority
    0, an object type this process can read back, the CRC right, no system message, and the
    first one none that could become the prompt); :meth:`tokens` then gives its tokens."""

    def __init__(self, fingerprint: str) -> None:
        count = rb'"count":\[(0|[1-9]\d{0,15}),"' + re.escape(fingerprint.encode()) + rb'"\],'
        self._plain = re.compile(rb',"_cm":\{' + count + _AFTER_COUNT).search
        self._wrapped = re.compile(rb"," + count + _AFTER_COUNT).search
        self._readable: dict[bytes, bool] = {}  # per stored object type
        self._first = True  # a leading system message would become the system prompt

    def tokens(self, raw: bytes) -> int | None:
        """The stored tokens of message line ``raw``, or None: it must be read."""
        found = self._plain(raw, len(raw) - _END)
        if found is None and (tag := _WRAPPED.match(raw)) is not None:
            if tag[1] not in self._readable:
                self._readable[tag[1]] = codec.readable(tag[1].decode())
            found = self._wrapped(raw, len(raw) - _END) if self._readable[tag[1]] else None
        if found is None or raw.startswith(_PROMPT):
            return None
        if self._first and not raw.startswith(_NO_PROMPT):
            return None
        if found[2] is not None and not _crc_holds(raw, found):
            return None  # damaged: the full read skips it (and says so)
        self._first = False
        tokens = int(found[1])
        return tokens if tokens <= SAFE_INT else None  # (beyond: the full read counts it)


def _crc_holds(raw: bytes, found: re.Match[bytes]) -> bool:
    """Whether a line's CRC (``integrity=True``) is the CRC-32 of the line without it
    (``records.verify_crc``, read from the bytes: the CRC is the last key our writer wrote)."""
    bare = raw[: found.start(2) - 7] + raw[found.end(2) :].rstrip(b"\n")  # less ',"crc":N'
    return zlib.crc32(bare) == int(found[2])
