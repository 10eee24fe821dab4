"""A priority selection kept as its rule, for when what it keeps is scattered.

Dropping the lowest priorities from a long history can keep most of it in thousands of short
runs: at 100k messages with 76% kept, 12k runs. Building those runs (sorting the dropped groups)
and then copying the context run by run cost 12-15 ms, one Python step per run. The rule behind
them is two numbers: every group of a priority above ``priority`` is kept and, of that priority,
the groups from ``cut`` on. With each message's priority rank held as a byte
(:class:`~context_manager.budget.ranks.MessageRanks`), the rule becomes a byte mask in two
``bytes.translate`` calls and the context one ``itertools.compress``: loops in C.

The runs stay available (:meth:`Scattered.runs`) for whatever needs groups: provider rules, and
strategies that wrap this one.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, compress, islice, repeat
from operator import add, lt
from typing import Any

from ._ledger import Ledger
from .gathered import LastGather

__all__ = ["Scattered", "count", "gather", "group_runs", "is_scattered", "mask_ready"]

#: Below this many kept (or dropped) groups, whichever is fewer, runs are cheap: build them.
SCATTERED_MIN = 256
#: A mask costs a C step per message, runs a Python step per group: a mask from one run per
#: this many messages on (measured: ~25 ns a message against ~0.7 us a run).
SCATTERED_SHARE = 32

Slices = list[tuple[Sequence[int], int, int]]  # (a level's groups, first, stop) positions


@dataclass(frozen=True, slots=True)
class Scattered:
    """Groups ``[lo, hi)`` of a priority above ``priority`` kept, and of it those from ``cut``.

    ``spare`` is the latest user turn when it lies in the dropped part (kept all the same) and
    ``below`` the latest user turn when it lies under ``lo`` (kept first); -1 when there is none.
    ``kept`` and ``dropped`` are the level slices the rule came from (``spare`` among the kept),
    to build runs on demand.
    """

    priority: int
    cut: int
    lo: int
    hi: int
    spare: int
    below: int
    kept: Slices
    dropped: Slices

    def runs(self) -> tuple[list[int], list[int]]:
        """The kept groups as sorted, disjoint runs (the latest user turn included)."""
        return group_runs(self.kept, self.dropped, self.lo, self.hi, self.below)


def group_runs(
    kept: Slices, dropped: Slices, lo: int, hi: int, below: int
) -> tuple[list[int], list[int]]:
    """Kept groups as runs, built from whichever of kept/dropped is smaller, in C; ``below``
    (a kept group under ``lo``, or -1) comes first.

    Level slices are already sorted, so ``sorted`` only merges runs (timsort). With a large
    budget few groups are dropped and the answer is a few long runs between them.
    """
    if sum(b - a for _, a, b in dropped) <= sum(b - a for _, a, b in kept):
        gone = sorted(chain.from_iterable(groups[a:b] for groups, a, b in dropped))
        starts = [lo, *map(add, gone, repeat(1))]
        stops = [*gone, hi]
        nonempty = list(map(lt, starts, stops))
        starts, stops = list(compress(starts, nonempty)), list(compress(stops, nonempty))
    else:
        starts = sorted(chain.from_iterable(groups[a:b] for groups, a, b in kept))
        stops = list(map(add, starts, repeat(1)))
    if below >= 0:
        starts.insert(0, below)
        stops.insert(0, below + 1)
    return starts, stops


def is_scattered(few: int, messages: int) -> bool:
    """Whether a cut keeping or dropping ``few`` groups of ``messages`` is worth a mask."""
    return few > SCATTERED_MIN and few * SCATTERED_SHARE > messages


def mask_ready(ledger: Ledger) -> bool:
    """Whether the ledger's priorities fit in bytes (at most 256 distinct), refreshing them."""
    return _ranks(ledger) is not None


def _ranks(ledger: Ledger) -> tuple[bytearray, list[int]] | None:
    return ledger.ranks.current(ledger.group_start, ledger.group_priority, len(ledger.originals))


def _span(ledger: Ledger, lo: int, hi: int) -> tuple[int, int]:
    starts, size = ledger.group_start, len(ledger.originals)
    return starts[lo] if lo < len(starts) else size, starts[hi] if hi < len(starts) else size


def _mask(ledger: Ledger, rule: Scattered) -> tuple[list[int], int, int, bytearray]:
    """Groups kept under ``rule.lo`` (in order), and a keep-byte per message of ``[lo, hi)``."""
    ranks = _ranks(ledger)
    if ranks is None:  # mask_ready said yes for this very ledger state
        raise AssertionError("scattered selection on more than 256 priorities")
    data, order = ranks
    lo, hi = rule.lo, rule.hi
    first, stop = _span(ledger, lo, hi)
    at = min(max(_span(ledger, rule.cut, rule.cut)[0], first), stop)
    r = bisect_left(order, rule.priority)
    above = bytes(r + 1).ljust(256, b"\1")  # ranks above the cut's priority
    from_cut = bytes(r).ljust(256, b"\1")  # ... and the cut's own, from group ``cut`` on
    mask = data[first:at].translate(above) + data[at:stop].translate(from_cut)
    pins = ledger.pinned_groups
    forced = pins[bisect_left(pins, lo) : bisect_left(pins, hi)]
    if rule.spare >= 0:
        forced = sorted([*forced, rule.spare])
    for g in forced:  # pinned groups and the latest user turn stay, whatever their priority
        a, b = _span(ledger, g, g + 1)
        mask[a - first : b - first] = b"\1" * (b - a)
    below = pins[: bisect_left(pins, lo)]
    if rule.below >= 0:
        below = sorted([*below, rule.below])
    return below, first, stop, mask


def gather(ledger: Ledger, rule: Scattered, swap: dict[int, Any]) -> list[Any]:
    """The caller's messages ``rule`` keeps, pins merged, ``swap``'s copies (by seq) swapped in."""
    below, first, stop, mask = _mask(ledger, rule)
    originals = ledger.originals
    out: list[Any] = []
    for g in below:
        out += originals[slice(*_span(ledger, g, g + 1))]
    memo = ledger.gathered
    if memo is None:
        memo = ledger.gathered = LastGather()
    out += memo.gather(originals, first, stop, mask)  # a copy of the list it keeps
    if swap:
        # Positions of what was kept, in the same order, to look up replacements by seq.
        seq = ledger.seq
        kept_seq = [s for g in below for s in seq[slice(*_span(ledger, g, g + 1))]]
        kept_seq += compress(islice(seq, first, stop), mask)
        out = list(map(swap.get, kept_seq, out))
    return out


def count(ledger: Ledger, rule: Scattered) -> int:
    """How many messages :func:`gather` returns."""
    below, _, _, mask = _mask(ledger, rule)
    spans = [_span(ledger, g, g + 1) for g in below]
    return mask.count(1) + sum(b - a for a, b in spans)
