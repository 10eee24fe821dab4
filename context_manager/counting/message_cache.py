"""Per-counter cache of whole-message counts, keyed by content and bounded in bytes.

A stateless backend reloads the same history from its database on every request and trims it
again: the message objects are new each time, their contents are not. So the key is the content
(never ``id()``): for a dict whose values are all strings or ``None`` (the plain chat shapes, tool
results included) the key is its items, and a hit returns the normalized record and its count
without normalizing again; for any other shape the key is the normalized record's fields, and a
hit saves the counting (the expensive part with a real tokenizer).

The cache holds a reference to each key's strings, so it is bounded by the bytes of what it
holds (``sys.getsizeof`` of the texts plus a fixed per-entry cost), not by an entry count that
a few 1 MB messages could turn into gigabytes. When full, the oldest entries go first.

One cache is shared per counter: per instance, except estimators, which ``get_counter("chars")``
builds afresh on each call and which are therefore shared per configuration. A counter's
configuration must not change once it has counted (the cached counts would then be stale).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from itertools import repeat
from typing import Any

from ..messages import Message
from ..messages.nesting import MAX_DEPTH
from .base import TokenCounter
from .estimate import CharEstimator

#: Default bound per counter (bytes of the texts held plus a fixed cost per entry).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: Bytes charged per entry beyond its texts: key tuple, record, dict slot.
ENTRY_OVERHEAD = 240

Entry = tuple[Message, int]


class _Unkeyable(Exception):
    pass


_DICT = object()  # tags nested containers, so no two different contents share a key
_LIST = object()
_SCALARS = (int, float, bool)


def _freeze(value: Any, depth: int = 1) -> Any:
    """A hashable, tagged copy of a JSON-like value; ``_Unkeyable`` for anything else.

    Past :data:`~context_manager.messages.nesting.MAX_DEPTH` levels (or in a value that contains
    itself, which is endlessly deep) the message is not keyed: ``normalize`` then reads it and
    raises the typed error, or accepts it when the deep part is a field it ignores.
    """
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is dict:
        if depth > MAX_DEPTH:
            raise _Unkeyable
        items = []
        for key, item in value.items():
            if type(key) is not str:
                raise _Unkeyable
            items.append((key, _freeze(item, depth + 1)))
        return (_DICT, tuple(items))
    if kind is list or kind is tuple:
        if depth > MAX_DEPTH:
            raise _Unkeyable
        return (_LIST, tuple(map(_freeze, value, repeat(depth + 1))))
    if kind in _SCALARS:
        return (kind, value)  # 1, 1.0 and True are equal in Python, not as content
    raise _Unkeyable


def plain_key(message: Any) -> tuple[Any, ...] | None:
    """The content key of a JSON-like dict (strings, numbers, lists, dicts), else None.

    The commonest shape (every value a string or None) is keyed by its items as they are;
    nested lists and dicts (tool calls, content blocks) are frozen into tagged tuples.
    """
    if type(message) is not dict:
        return None
    for value in message.values():
        if value is not None and type(value) is not str:
            try:
                return (_DICT, _freeze(message))
            except _Unkeyable:
                return None
    return tuple(message.items())


def record_key(rec: Message) -> tuple[Hashable, ...]:
    """Every field a count depends on (all hashable: strings, ints, tuples of named tuples)."""
    return (
        rec.role,
        rec.text,
        rec.name,
        rec.tool_calls,
        rec.tool_call_id,
        rec.tool_results,
        rec.images,
        rec.thinking,
        rec.other,
        rec.item,
    )


def _size(key: Any) -> int:
    """Bytes held by a key: its strings (shared with the caller's message) and its tuples."""
    size = ENTRY_OVERHEAD
    stack = [key]
    while stack:
        item = stack.pop()
        if type(item) is str:
            size += str.__sizeof__(item)  # what sys.getsizeof says of a str, 5x faster
        elif type(item) is tuple:
            size += 8 * len(item) + 40
            stack.extend(item)
    return size


class MessageCountCache:
    """``key -> (record, tokens)`` (plain dicts) or ``key -> tokens`` (records), byte-bounded."""

    __slots__ = ("_entries", "_lock", "bytes", "hits", "max_bytes", "misses")

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: dict[tuple[Any, ...], tuple[Any, int]] = {}
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple[Any, ...]) -> Any:
        """The cached value for ``key``, or None."""
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        return entry[0]

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        size = _size(key)
        if size > self.max_bytes:
            return  # larger than the whole cache: not worth evicting everything for
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = (value, size)
            self.bytes += size
            if self.bytes > self.max_bytes:
                self._evict()

    def _evict(self) -> None:
        entries = self._entries
        target = self.max_bytes * 3 // 4  # evict in batches, not one entry per put
        while self.bytes > target and entries:
            key = next(iter(entries))
            self.bytes -= entries.pop(key)[1]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0


_lock = threading.Lock()
_by_counter: weakref.WeakKeyDictionary[TokenCounter, MessageCountCache] = (
    weakref.WeakKeyDictionary()
)
_by_config: dict[tuple[Any, ...], MessageCountCache] = {}


def _estimator_config(counter: CharEstimator) -> tuple[Any, ...]:
    return (
        counter.chars_per_token,
        counter.message_overhead,
        counter.prompt_overhead,
        counter.image_tokens,
    )


def message_cache_for(counter: TokenCounter) -> MessageCountCache | None:
    """The cache shared by every caller of ``counter`` (created on first use).

    None for a counter that cannot key a weak mapping (unhashable, or ``__slots__`` without
    ``__weakref__``): its counts are then simply not cached.
    """
    if type(counter) is CharEstimator:
        config = _estimator_config(counter)
        cache = _by_config.get(config)
        if cache is None:
            with _lock:
                cache = _by_config.setdefault(config, MessageCountCache())
        return cache
    try:
        cache = _by_counter.get(counter)
        if cache is None:
            with _lock:
                cache = _by_counter.get(counter)
                if cache is None:
                    cache = _by_counter[counter] = MessageCountCache()
    except TypeError:
        return None
    return cache


#: What else :func:`clear_message_caches` clears: caches kept by higher layers (the one-shot
#: ``trim()`` memo) register here, since this layer may not import them.
_also_clear: list[Callable[[], None]] = []


def on_clear(clear: Callable[[], None]) -> None:
    """Have :func:`clear_message_caches` call ``clear`` too."""
    _also_clear.append(clear)


def clear_message_caches() -> None:
    """Forget every cached count (e.g. after changing a counter's configuration), and what
    ``trim()`` remembers of earlier calls."""
    with _lock:
        for cache in [*_by_config.values(), *_by_counter.values()]:
            cache.clear()
    for clear in _also_clear:
        clear()
