"""What a JSONL writer reads of a log's end: the head's CRC, a retried batch by its id, and
what a killed writer left unfinished (a torn last line, a batch missing its last records).

Kept apart from ``jsonl.py`` because all of it is byte logic over the file's last bytes, shared
by the readers, the conflict check, the exactly-once check and the repair before an append.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from ._files import write_all
from .records import ATTRS_KEY, BATCH_KEY, CRC_KEY, dump_record, logger, parse_record, record_id

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


# --------------------------------------------------------------------------- unfinished batches
# A batch is one ``os.write``, but the kernel may stop a write of several pages at a page
# boundary when its process is killed, leaving the batch's first lines whole. Each line of a
# batch of n > 1 records therefore carries its place ``[k, n]`` (``_cm.batch``): a file whose
# last record says k < n - 1 ends in a batch that was never finished, so never acknowledged.
# Only the file's end is judged, so a reader pays one line's parse, not one per line.


def batched(records: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """``records`` as the lines of one batch: each with its place (none for a batch of one)."""
    n = len(records)
    if n < 2:
        return [_placed(record, None) for record in records]
    return [_placed(record, [k, n]) for k, record in enumerate(records)]


def _placed(record: Mapping[str, Any], place: list[int] | None) -> Mapping[str, Any]:
    attrs = record.get(ATTRS_KEY)
    if place is None and not (isinstance(attrs, Mapping) and BATCH_KEY in attrs):
        return record  # the common case: nothing to add or take away
    new = {k: v for k, v in (attrs.items() if isinstance(attrs, Mapping) else ()) if k != BATCH_KEY}
    if place is not None:
        new[BATCH_KEY] = place
    out = {k: v for k, v in record.items() if k != ATTRS_KEY}
    if new:
        out[ATTRS_KEY] = new
    return out


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # a torn or damaged line
        return None
    return value if isinstance(value, dict) else None


def _whole(fragment: bytes) -> bool:
    """Whether a last line without its newline is a record (kept) or torn (a writer was killed
    inside it: ignored by readers, cut by the next writer)."""
    try:
        parse_record(fragment)
    except Exception:  # whatever it holds, a line that does not parse is no record
        return False
    return True


def _place(line: bytes) -> tuple[int, int] | None:
    """``(k, n)`` when ``line`` is record k of a batch of n, else None."""
    if b'"batch"' not in line:  # no parse for the lines that cannot hold a place
        return None
    value = _record(line)
    attrs = value.get(ATTRS_KEY) if value is not None else None
    place = attrs.get(BATCH_KEY) if isinstance(attrs, dict) else None
    if isinstance(place, list) and len(place) == 2 and all(type(v) is int for v in place):
        return place[0], place[1]
    return None


def opens_batch(line: bytes) -> bool:
    """Whether ``line`` is a record of a batch other than its last: a file ending with it ends
    in a batch that was never finished."""
    place = _place(line)
    return place is not None and 0 <= place[0] < place[1] - 1


def closed(line: bytes, *, integrity: bool) -> bytes:
    """``line`` without its place, for a rewrite that ends the file with it (a revert to a
    checkpoint written inside a batch). Its CRC is made again when it had one."""
    record = _record(line)
    if record is None:
        return line
    attrs = record.get(ATTRS_KEY)
    sealed = integrity
    if isinstance(attrs, dict):
        sealed = attrs.pop(CRC_KEY, None) is not None or integrity
        attrs.pop(BATCH_KEY, None)
        if not attrs:
            del record[ATTRS_KEY]
    return dump_record(record, integrity=sealed)


def torn_from(data: bytes) -> int | None:
    """The offset in ``data`` where a batch left unfinished at its end starts, or None.

    The judged line is the last record: a last line without its newline counts when it is a
    whole record, else the whole line before it. A place that does not match the batch's first
    line (``[0, n]``, k lines back) is not ours and leaves every line stored.
    """
    end = len(data)
    if end and data[-1] != 0x0A:
        start = data.rfind(b"\n") + 1
        if not _whole(data[start:]):
            end = start  # a torn line: the batch is judged by the whole line before it
    if end == 0:
        return None
    start = data.rfind(b"\n", 0, end - 1) + 1
    if not opens_batch(data[start:end]):
        return None
    k, n = _place(data[start:end]) or (0, 0)
    for _ in range(k):
        if start == 0:
            return None  # fewer lines than the place says
        start = data.rfind(b"\n", 0, start - 1) + 1
    first = data[start : data.find(b"\n", start) + 1] if k else data[start:end]
    return start if _place(first) == (0, n) else None


def stored(data: bytes) -> tuple[bytes, bool]:
    """``data`` without a batch left unfinished at its end, and whether there was one."""
    cut = torn_from(data)
    return (data, False) if cut is None else (data[:cut], True)


def _last_lines(fd: int, size: int, count: int) -> tuple[int, bytes]:
    """``(offset, bytes)`` of the file's end from a line start, holding ``count`` whole lines
    (or the whole file): read in growing windows, so a repair costs the lines it looks at."""
    window = 4096
    while True:
        start = max(0, size - window)
        chunk = os.pread(fd, size - start, start)
        skip = 0 if start == 0 else chunk.find(b"\n") + 1
        body = chunk[skip:] if start == 0 or skip else b""
        if start == 0 or body.count(b"\n") >= count:
            return start + skip, body
        window *= 4


def repair_tail(fd: int, lines: int, path: object) -> int:
    """Make the file end with its last stored line before an append: cut a torn last line
    (a whole record only lacking its newline is kept), then a batch left unfinished.
    ``lines`` counts the stored lines (:func:`stored`); returns the next record's position."""
    size = os.fstat(fd).st_size
    if size == 0:
        return lines
    stored_lines = lines  # before the repair: they exclude an unfinished batch, torn line or not
    start, body = _last_lines(fd, size, 1)
    if not body.endswith(b"\n"):
        cut = body.rfind(b"\n") + 1
        if not _whole(body[cut:]):
            logger.warning(
                "%s: cutting off %d bytes of a torn last line left by an interrupted writer",
                path,
                len(body) - cut,
            )
            size = start + cut
            os.ftruncate(fd, size)
        else:
            write_all(fd, b"\n")  # a whole record that only lacks its newline: keep it
            size += 1
            lines += 1
        if size == 0:
            return lines
        start, body = _last_lines(fd, size, 1)
    last = body[body.rfind(b"\n", 0, len(body) - 1) + 1 :]
    place = _place(last)
    if place is None or not opens_batch(last):
        return lines
    start, body = _last_lines(fd, size, place[0] + 1)
    first = torn_from(body)
    if first is None:
        return lines
    logger.warning(
        "%s: cutting off %d records (%d bytes) of a batch of %d an interrupted writer left "
        "unfinished (never acknowledged)",
        path,
        place[0] + 1,
        len(body) - first,
        place[1],
    )
    os.ftruncate(fd, start + first)
    return stored_lines
