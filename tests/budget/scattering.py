"""Force the byte-mask gather of scattered priority cuts, which normally needs hundreds of runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from context_manager.budget import scattered
from context_manager.budget.gathered import LastGather


@contextmanager
def scattered_everywhere() -> Iterator[None]:
    """Within the block every priority cut is held as its rule and gathered with a mask."""
    saved = scattered.SCATTERED_MIN, scattered.SCATTERED_SHARE
    scattered.SCATTERED_MIN, scattered.SCATTERED_SHARE = -1, 1 << 62
    try:
        yield
    finally:
        scattered.SCATTERED_MIN, scattered.SCATTERED_SHARE = saved


@contextmanager
def scattered_nowhere() -> Iterator[None]:
    """Within the block every priority cut is built as group runs (the path before the mask)."""
    saved = scattered.SCATTERED_MIN
    scattered.SCATTERED_MIN = 1 << 62
    try:
        yield
    finally:
        scattered.SCATTERED_MIN = saved


@contextmanager
def mask_gathers() -> Iterator[list[tuple[int, int, int]]]:
    """Within the block, each gather of a scattered cut through a byte mask is recorded as
    ``(id of the LastGather asked, first position, length of the mask)``: the calls show
    which path a request took and whether it reused the previous request's gather."""
    calls: list[tuple[int, int, int]] = []
    real = LastGather.gather

    def recording(self: LastGather, originals: Any, first: int, stop: int, mask: Any) -> Any:
        calls.append((id(self), first, len(mask)))
        return real(self, originals, first, stop, mask)

    with mock.patch.object(LastGather, "gather", recording):
        yield calls
