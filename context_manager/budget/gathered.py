"""The last scattered priority context, kept so the next one redoes only what changed.

A scattered priority cut is gathered through a keep-byte per message
(:mod:`~context_manager.budget.scattered`): at 100k messages with 76% kept that gather is a C
loop over the whole history, 2.5-5 ms, on every ``get_context()``. Between two requests a chat
backend adds a few messages, and the cut moves by a few groups. The keep-bytes of the old
messages then differ from the last call's in a short span, or not at all.

So the last mask and its gathered list are kept. The next gather compares the masks in C (two
big integers XORed: the highest and lowest set bits are the first and last changed bytes),
re-gathers only that span into the kept list (one slice assignment) and appends the new
messages. What it returns is a copy of the kept list, a memcpy.

It is valid only while the ledger's messages keep their positions: the ledger lets it go whenever
it drops or moves messages (FIFO eviction, compaction), and a gather from another start, or one
ending before the last, starts over. Memory: a pointer per kept message and a byte per message,
held only by managers whose cut was scattered.
"""

from __future__ import annotations

from itertools import compress, islice
from typing import Any

__all__ = ["LastGather"]


class LastGather:
    """The mask and messages of the last :meth:`gather` over ``originals[first:...]``."""

    __slots__ = ("first", "mask", "out")

    def __init__(self) -> None:
        self.first = -1
        self.mask: bytes | bytearray = b""
        self.out: list[Any] = []

    def gather(
        self, originals: list[Any], first: int, stop: int, mask: bytes | bytearray
    ) -> list[Any]:
        """``originals[first:stop]`` where ``mask`` has a 1 (each byte is 0 or 1).

        The list returned is the one kept for the next call: copy it before handing it out.
        """
        old = self.mask
        size = len(old)
        if first != self.first or stop - first < size:
            out = list(compress(islice(originals, first, stop), mask))
        else:
            out = self.out
            self.first = -1  # invalid while patched: a failure half-way means start over
            span = _changed(old, mask)
            if span is not None:
                a, b = span
                # Kept before ``a``: counted over the shorter side of it.
                k = old.count(1, 0, a) if 2 * a < size else len(out) - old.count(1, a, size)
                out[k : k + old.count(1, a, b)] = compress(
                    originals[first + a : first + b], mask[a:b]
                )
            if stop - first > size:
                out += compress(originals[first + size : stop], mask[size:])
        self.first, self.mask, self.out = first, mask, out
        return out


#: Bytes compared at a time when looking for the changed span (a Python step per block).
_BLOCK = 4096


def _changed(old: bytes | bytearray, new: bytes | bytearray) -> tuple[int, int] | None:
    """``(a, b)``: the first and one past the last byte where ``new`` differs from ``old`` (over
    ``old``'s length), or None when they agree.

    Blocks are compared from each end (slices, compared with ``memcmp``; a memoryview compares
    byte by byte, 100 times slower); only the blocks that differ are XORed as big integers,
    whose highest and lowest set bits are the first and last changed bytes (big-endian).
    """
    size = len(old)
    if old == new[:size]:
        return None
    lo = 0
    while old[lo : lo + _BLOCK] == new[lo : lo + _BLOCK]:
        lo += _BLOCK
    hi = size  # the block at ``lo`` differs: drop equal blocks from the end, down to above it
    while hi - _BLOCK >= lo + _BLOCK and old[hi - _BLOCK : hi] == new[hi - _BLOCK : hi]:
        hi -= _BLOCK
    x = int.from_bytes(old[lo:hi], "big") ^ int.from_bytes(new[lo:hi], "big")
    width = hi - lo
    return (
        lo + width - 1 - (x.bit_length() - 1) // 8,
        lo + width - ((x & -x).bit_length() - 1) // 8,
    )
