"""What a JSONL writer reads of a log's end: the head's CRC, a retried batch by its id, and
what a killed writer left unfinished (a torn last line, a batch missing its last records).

Kept apart from ``jsonl.py`` because all of it is byte logic over the file's last bytes, shared
by the readers, the conflict check, the exactly-once check and the repair before an append.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

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
    end = last = start
    for _ in range(count):
        newline = region.find(b"\n", end)
        if newline < 0:
            return None
        last, end = end, newline + 1
    # the first lines of a batch a killed writer left unfinished are not stored
    return None if opens_batch(region[last:end]) else (start, end)


# --------------------------------------------------------------------------- unfinished batches
# A batch is one ``os.write``, but the kernel may stop a write of several pages at a page
# boundary when its process is killed, leaving the batch's first lines whole. Each line of a
# batch of n > 1 records therefore carries its place ``[k, n]`` (``_cm.batch``, written last in
# the line): a file whose last record says k < n - 1, or whose last line holds a place but no
# newline, ends in a batch that was never finished, so never acknowledged. Only the file's end
# is judged, so a reader pays one line's parse, and an append one small read, not one per line.

#: A place as our writer ends a line with it: ``_placed`` puts ``_cm`` last and the place last
#: in it (only a CRC follows; Kimi's spacing on metadata lines). Read from the line's last bytes
#: alone, so neither a long line nor a finished batch (k = n - 1) is parsed; an open place is
#: confirmed by parsing the line (a key of that name elsewhere is not a place).
_PLACE = re.compile(rb'"batch": ?\[(\d{1,15}), ?(\d{1,15})\](?:, ?"crc": ?\d{1,12})?\}\}\n?\Z')
_PLACE_REACH = 96


def batched(records: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """``records`` as the lines of one batch: each with its place (none for a batch of one,
    and a place a caller's record already held is taken out)."""
    n = len(records)
    if n < 2:
        return [_placed(record, None) for record in records]
    return [_placed(record, [k, n]) for k, record in enumerate(records)]


def _placed(record: Mapping[str, Any], place: list[int] | None) -> Mapping[str, Any]:
    attrs = record.get(ATTRS_KEY)
    if attrs is not None and not isinstance(attrs, Mapping):
        return record  # stored as given: every reader refuses a "_cm" that is not an object
    if place is None and not (attrs is not None and BATCH_KEY in attrs):
        return record  # the common case: nothing to add or take away
    new = dict(attrs) if attrs else {}
    new.pop(BATCH_KEY, None)
    if place is not None:
        new[BATCH_KEY] = place  # last: a reader finds it in the line's last bytes
    out = dict(record)
    out.pop(ATTRS_KEY, None)
    if new:
        out[ATTRS_KEY] = new  # last in the line, for the same reason
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
    """``(k, n)`` when ``line`` ends as record k of a batch of n (0 <= k < n, n >= 2) ends."""
    found = _PLACE.search(line, max(0, len(line) - _PLACE_REACH))
    if found is None:
        return None
    k, n = int(found[1]), int(found[2])
    return (k, n) if k < n and n >= 2 else None


def _confirmed(line: bytes, place: tuple[int, int]) -> bool:
    """Whether ``line`` parses and its ``_cm`` holds ``place`` (not a look-alike key)."""
    value = _record(line)
    attrs = value.get(ATTRS_KEY) if value is not None else None
    return isinstance(attrs, dict) and attrs.get(BATCH_KEY) == list(place)


def _open(place: tuple[int, int] | None) -> bool:
    """Whether a whole line at ``place`` leaves its batch unfinished (not its last record)."""
    return place is not None and place[0] < place[1] - 1


def opens_batch(line: bytes) -> bool:
    """Whether ``line`` (a whole line) is a record of a batch other than its last: a file
    ending with it ends in a batch that was never finished."""
    place = _place(line)
    return place is not None and _open(place) and _confirmed(line, place)


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


def _judged(data: bytes) -> tuple[int, int, bool]:
    """``(start, end, without_newline)`` of the line that decides whether ``data`` ends in an
    unfinished batch: a last line without its newline when it holds a place or is a whole
    record, else the last whole line; ``(0, 0, False)`` when there is none."""
    end = len(data)
    if end and data[-1] != 0x0A:
        start = data.rfind(b"\n") + 1
        fragment = data[start:]
        if _place(fragment) is not None or _whole(fragment):
            return start, end, True
        end = start  # a torn line: the whole line before it decides
    if end == 0:
        return 0, 0, False
    return data.rfind(b"\n", 0, end - 1) + 1, end, False


def torn_from(data: bytes) -> int | None:
    """The offset in ``data`` where a batch left unfinished at its end starts, or None.

    Unfinished: the deciding line (:func:`_judged`) is record k < n - 1 of its batch, or any
    record of it without its newline (the batch's write never ended). A place that does not
    match the batch's first line (``[0, n]``, k lines back) is not ours: every line is stored.
    """
    start, end, without_newline = _judged(data)
    line = data[start:end]
    place = _place(line) if end else None
    if place is None or not (without_newline or _open(place)):
        return None  # the common case, decided by the line's last bytes
    if not _confirmed(line, place):
        return None
    k, n = place
    for _ in range(k):
        if start == 0:
            return None  # fewer lines than the place says
        start = data.rfind(b"\n", 0, start - 1) + 1
    first = data[start : data.find(b"\n", start) + 1] if k else line
    return start if _place(first) == (0, n) and _confirmed(first, (0, n)) else None


def stored(data: bytes) -> tuple[bytes, bool]:
    """``data`` without a batch left unfinished at its end, and whether there was one."""
    cut = torn_from(data)
    return (data, False) if cut is None else (data[:cut], True)


class View(NamedTuple):
    """What a JSONL writer last saw of its file. ``size`` and ``mark`` (the CRC of its end)
    tell whether another writer changed the file since; ``lines`` stored lines end at byte
    ``end`` (before a torn line or an unfinished batch), where a head points (``end_mark``)."""

    inode: int | None
    size: int
    mark: str
    lines: int
    end: int
    end_mark: str


def view_of(
    inode: int | None, data: bytes, kept: bytes, *, base: int = 0, at: int = 0, lines: int = 0
) -> View:
    """The view of a file that ends with ``data``, where ``data[base:]`` starts at byte ``at``
    after ``lines`` stored lines and ``kept`` is its :func:`stored` part (``data[:base]``: the
    bytes before, for the CRCs: the :data:`TAIL_BYTES` before ``at``, or the file from its
    start)."""
    stop = kept.rfind(b"\n") + 1
    whole = mark(data)
    end_mark = whole if base + stop == len(data) else mark(data[: base + stop])
    size = at + len(data) - base
    return View(inode, size, whole, lines + kept.count(b"\n"), at + stop, end_mark)


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
    """Make the file end with its last stored line before an append: cut a batch left
    unfinished or a torn last line (a whole record only lacking its newline is kept).
    ``lines`` counts the stored lines (:func:`stored`); returns the next record's position."""
    size = os.fstat(fd).st_size
    if size == 0:
        return lines
    reach = min(size, _PLACE_REACH)
    tail = os.pread(fd, reach, size - reach)
    if tail.endswith(b"\n") and not _open(_place(tail)):
        return lines  # a finished last line: the common case, one small read
    start, body = _last_lines(fd, size, 1)
    decided, end, _ = _judged(body)
    place = _place(body[decided:end]) if end else None
    if place is not None:
        start, body = _last_lines(fd, size, place[0] + 1)
    first = torn_from(body)
    if first is not None:
        logger.warning(
            "%s: cutting off %d bytes of a batch an interrupted writer left unfinished (never "
            "acknowledged)",
            path,
            len(body) - first,
        )
        os.ftruncate(fd, start + first)
        return lines
    if body.endswith(b"\n"):
        return lines
    cut = body.rfind(b"\n") + 1
    if _whole(body[cut:]):
        write_all(fd, b"\n")  # a whole record that only lacks its newline: keep it
        return lines + 1
    logger.warning(
        "%s: cutting off %d bytes of a torn last line left by an interrupted writer",
        path,
        len(body) - cut,
    )
    os.ftruncate(fd, start + cut)
    return lines
