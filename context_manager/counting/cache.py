"""Bounded LRU of text -> token count, so identical texts are tokenized once.

Two ``functools.lru_cache`` tiers (C-implemented, thread-safe, ~0.1 µs a hit): up to
``maxsize`` texts of at most ``LONG_TEXT`` characters, and a few long ones. Bounding the long
tier by entry count keeps memory bounded even when a caller counts many large, distinct texts
(the cache holds a reference to each key), while a long system prompt repeated on every request
still hits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

#: Texts longer than this (characters) go to the small long-text tier.
LONG_TEXT = 2048
#: Entries in the long-text tier.
LONG_ENTRIES = 64


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int


class TextCountCache:
    """``cache(text) -> int`` with LRU eviction; ``maxsize=0`` disables caching."""

    __slots__ = ("_long", "_short")

    def __init__(self, count: Callable[[str], int], maxsize: int) -> None:
        self._short: Any = functools.lru_cache(maxsize=maxsize)(count)
        self._long: Any = functools.lru_cache(maxsize=min(maxsize, LONG_ENTRIES))(count)

    def __call__(self, text: str) -> int:
        if len(text) <= LONG_TEXT:
            return self._short(text)  # type: ignore[no-any-return]
        return self._long(text)  # type: ignore[no-any-return]

    def info(self) -> CacheInfo:
        short, long = self._short.cache_info(), self._long.cache_info()
        return CacheInfo(
            short.hits + long.hits,
            short.misses + long.misses,
            short.maxsize + long.maxsize,
            short.currsize + long.currsize,
        )

    def clear(self) -> None:
        self._short.cache_clear()
        self._long.cache_clear()
