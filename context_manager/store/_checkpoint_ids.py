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

from .records import CHECKPOINT, _Invalid, parse_record

__all__ = ["next_checkpoint_id"]

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
