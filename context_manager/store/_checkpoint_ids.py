"""The JSONL log's next checkpoint id, learned from the bytes a writer reads or writes.

A JSONL writer hands out checkpoint ids itself (the file has no counter): the next id is the
last marker's id + 1, as a replay sets it (``replayer.Replayer.apply``). The writer caches it,
so every path that moves its view over lines (a full read, a catch-up after another writer's
lines, its own append) must learn the markers among them; a cache that missed another
writer's marker hands out an id that is already in the file, and ``revert_to`` of it goes to
the wrong place. Only the lines that can hold a marker are parsed (scanned from the end), so
this costs a byte search over what was read anyway.
"""

from __future__ import annotations

import os

from .records import CHECKPOINT, _Invalid, parse_record

__all__ = ["next_checkpoint_id", "next_checkpoint_id_before"]

#: The first block read back from a view's end: a session that checkpoints every turn has its
#: last marker within a few lines.
_BLOCK = 1 << 16

_MARKER = b'"' + CHECKPOINT.encode() + b'"'


def next_checkpoint_id(data: bytes, otherwise: int | None) -> int | None:
    """The id after the last valid checkpoint marker among the complete lines in ``data``;
    ``otherwise`` when there is none (a corrupt marker line is skipped, as replay skips it)."""
    end = len(data)
    while (found := data.rfind(_MARKER, 0, end)) >= 0:
        start = data.rfind(b"\n", 0, found) + 1
        stop = data.find(b"\n", found)
        end = start
        if stop < 0:
            continue  # a torn last line holds no marker
        try:
            record = parse_record(data[start : stop + 1], check_message=False)
        except _Invalid:
            continue
        if record.get("role") == CHECKPOINT and isinstance(record.get("id"), int):
            return int(record["id"]) + 1
    return otherwise


def next_checkpoint_id_before(fd: int, end: int) -> int:
    """:func:`next_checkpoint_id` of the file's first ``end`` bytes (complete lines: a view's
    end), read back from ``end`` in growing blocks only as far as the last marker.

    A writer that took its view from a parked session (``warm.py``) has not read the file: this
    learns its next id without a full read, which would also move the view past what memory
    holds. A block that starts inside a line leaves that line to the next block.
    """
    hi, block = end, _BLOCK
    while hi > 0:
        lo = max(0, hi - block)
        data = os.pread(fd, hi - lo, lo)
        block = min(block * 2, 1 << 24)
        if lo > 0:
            cut = data.find(b"\n")
            if cut < 0:
                continue  # one line longer than the block: read a larger one from ``hi``
            data, lo = data[cut + 1 :], lo + cut + 1
        found = next_checkpoint_id(data, None)
        if found is not None:
            return found
        hi = lo
    return 0
