"""Which message indices a caller's ``pinned`` collection names, the way the manager reads it.

The manager pins message ``i`` when ``i in set(pinned)``; ``trim()`` must find the same indices
without testing every message, so it reads the collection instead: anything ``operator.index``
accepts, and integral floats (``2.0 == 2`` in a set); nothing else can equal an index.
"""

from __future__ import annotations

from collections.abc import Collection
from operator import index as as_index
from typing import Any


def pin_indices(pinned: Collection[int], lo: int, n: int) -> list[int]:
    """Input indices in ``[lo, n)`` that ``i in set(pinned)`` would match, as the manager tests."""
    out = []
    for p in set[Any](pinned):
        try:
            i = as_index(p)
        except TypeError:
            if not (isinstance(p, float) and p.is_integer()):
                continue  # nothing else equals an index
            i = int(p)
        if lo <= i < n:
            out.append(i)
    return out
