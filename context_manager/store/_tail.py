"""What a JSONL writer reads of a log's end: the head's CRC, and a retried batch by its id.

Kept apart from ``jsonl.py`` because both are pure byte logic over the file's last bytes, shared
by the conflict check, the exactly-once check and ``load_after``.
"""

from __future__ import annotations

import os
import zlib

from .records import parse_record, record_id

#: How much of the file's end the head's CRC covers (one ``pread`` per conditional append).
TAIL_BYTES = 4096
#: How far before its view a writer looks for a record id it is asked to store again: a retry
#: follows its write closely, and scanning the whole file per append would make appends
#: linear in the history.
SEARCH_BACK = 1 << 20


def mark(data: bytes) -> str:
    """The CRC-32 of ``data``'s last :data:`TAIL_BYTES` bytes, as the head's ``epoch``.

    Length alone can repeat (a torn last line cut and replaced by a line of the same length);
    the tail's CRC cannot: a torn line never ends in a newline, a complete one always does.
    """
    return f"{zlib.crc32(data[-TAIL_BYTES:]):08x}"


def mark_at(fd: int, size: int) -> str:
    """:func:`mark` of the file's first ``size`` bytes, reading only their end."""
    length = min(size, TAIL_BYTES)
    return mark(os.pread(fd, length, size - length))


def find_batch(region: bytes, rid: str, count: int) -> tuple[int, int] | None:
    """``(start, end)`` offsets in ``region`` of ``count`` complete lines whose first record
    carries id ``rid``, or None (not there, torn, or another line that merely contains it)."""
    found = region.find(rid.encode())
    if found < 0:
        return None
    start = region.rfind(b"\n", 0, found) + 1
    line_end = region.find(b"\n", found)
    if line_end < 0:
        return None  # a torn line is not stored
    try:
        if record_id(parse_record(region[start : line_end + 1])) != rid:
            return None
    except Exception:  # an unreadable line is not ours
        return None
    end = start
    for _ in range(count):
        newline = region.find(b"\n", end)
        if newline < 0:
            return None
        end = newline + 1
    return start, end
