"""Bounded LRU of text -> token count, so identical texts are tokenized once.

Two tiers. Short texts (at most ``LONG_TEXT`` characters): a ``functools.lru_cache`` of
``maxsize`` entries (C-implemented, thread-safe, ~0.1 µs a hit). Long texts: a small LRU bounded
by entry count (``LONG_ENTRIES``) *and* by the characters it holds (``LONG_CHARS``), because the
cache keeps a reference to each key: bounding entries alone would let 64 distinct 10 MB tool
outputs pin 640 MB. Texts above ``LONG_CHARS // 4`` are never cached (tokenizing them dominates
any lookup anyway), while a long system prompt repeated on every request still hits.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

#: Texts longer than this (characters) go to the long-text tier.
LONG_TEXT = 2048
#: Entries in the long-text tier.
LONG_ENTRIES = 64
#: Characters the long-text tier may hold in total (a few MB of keys).
LONG_CHARS = 4_000_000


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int


class _LongTier:
    """LRU bounded by entries and by total characters of the keys (thread-safe)."""

    __slots__ = ("_chars", "_count", "_entries", "_items", "_lock", "hits", "misses")

    def __init__(self, count: Callable[[str], int], entries: int) -> None:
        self._count = count
        self._entries = entries
        self._items: OrderedDict[str, int] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __call__(self, text: str) -> int:
        with self._lock:
            tokens = self._items.get(text)
            if tokens is not None:
                self._items.move_to_end(text)
                self.hits += 1
                return tokens
            self.misses += 1
        tokens = self._count(text)  # outside the lock: tokenizing a long text takes a while
        if self._entries and len(text) <= LONG_CHARS // 4:
            with self._lock:
                if text not in self._items:
                    self._items[text] = tokens
                    self._chars += len(text)
                    while len(self._items) > self._entries or self._chars > LONG_CHARS:
                        old, _ = self._items.popitem(last=False)
                        self._chars -= len(old)
        return tokens

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0
            self.hits = self.misses = 0


class TextCountCache:
    """``cache(text) -> int`` with LRU eviction; ``maxsize=0`` disables caching."""

    __slots__ = ("_long", "_short")

    def __init__(self, count: Callable[[str], int], maxsize: int) -> None:
        self._short: Any = functools.lru_cache(maxsize=maxsize)(count)
        self._long = _LongTier(count, min(maxsize, LONG_ENTRIES))

    def __call__(self, text: str) -> int:
        if len(text) <= LONG_TEXT:
            return self._short(text)  # type: ignore[no-any-return]
        return self._long(text)

    def info(self) -> CacheInfo:
        short = self._short.cache_info()
        return CacheInfo(
            short.hits + self._long.hits,
            short.misses + self._long.misses,
            short.maxsize + self._long._entries,
            short.currsize + len(self._long),
        )

    def clear(self) -> None:
        self._short.cache_clear()
        self._long.clear()
