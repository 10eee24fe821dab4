"""Force the byte-mask gather of scattered priority cuts, which normally needs hundreds of runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from context_manager.budget import scattered


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
