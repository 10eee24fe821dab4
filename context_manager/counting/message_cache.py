"""A cache of whole-message counts that the caller creates, owns and passes to ``trim()``.

A stateless backend reloads the same history from its database on every request and trims it
again: the message objects are new each time, their contents are not. So the key is the content
(never ``id()``): for a dict whose values are all strings or ``None`` (the plain chat shapes, tool
results included) the key is its items, and a hit returns the normalized record and its count
without normalizing again; for any other shape the key is the normalized record's fields, and a
hit saves the counting (the expensive part with a real tokenizer).

Nothing here is process-wide: a :class:`MessageCountCache` lives as long as its owner keeps it
(one per worker, per tenant or per conversation, as the owner decides), so no text is retained
for a request that did not ask for it, and dropping the object frees everything it held.

It holds a reference to each key's strings, so it is bounded by the bytes of what it holds
(``sys.getsizeof`` of the texts plus a fixed per-entry cost), not by an entry count that a few
1 MB messages could turn into gigabytes. When full, the oldest entries go first. One cache may
serve several counters: their counts are kept apart (estimators by their settings, which
``get_counter("chars")`` rebuilds on every call; any other counter by instance, which the cache
then keeps alive). A counter's configuration must not change once it has counted into a cache
(call :meth:`MessageCountCache.clear` if it does).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import fields
from itertools import repeat
from operator import attrgetter
from typing import Any

from .._config import check_int
from ..messages import Message, normalize
from ..messages.nesting import MAX_DEPTH
from .base import TokenCounter
from .estimate import CharEstimator

#: Default bound of a cache (bytes of the texts held plus a fixed cost per entry).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: Bytes charged per entry beyond its texts: key tuple, record, dict slot.
ENTRY_OVERHEAD = 240
#: Counters one cache keeps counts for (the oldest one's go first): a caller that builds a new
#: counter instance on every call cannot make the cache hold instances without bound.
MAX_COUNTERS = 16

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


#: Every field of a record, read at C speed: a count may depend on any of them (a document's
#: pages, a signed turn), and a key written field by field missed the ones added later.
_ALL_FIELDS = attrgetter(*(f.name for f in fields(Message)))


def record_key(rec: Message) -> tuple[Hashable, ...]:
    """Every field of the record (all hashable: strings, ints, bools, tuples of named tuples),
    so two records that could count differently never share a key."""
    key: tuple[Hashable, ...] = _ALL_FIELDS(rec)
    return key


def _size(key: Any) -> int:
    """Bytes held by a key: its strings (shared with the caller's message) and its tuples."""
    size = ENTRY_OVERHEAD
    stack = [key]
    while stack:
        item = stack.pop()
        if type(item) is str:
            size += str.__sizeof__(item)  # what sys.getsizeof says of a str, 5x faster
        elif isinstance(item, tuple):  # named tuples too: a tool call's arguments count
            size += 8 * len(item) + 40
            stack.extend(item)
    return size


class MessageCountCache:
    """Counts of messages already seen, keyed by content; pass it as ``trim(..., cache=...)``.

    ``max_bytes`` (64 MB by default) bounds what it holds in all, counters together: the texts
    it keeps alive plus :data:`ENTRY_OVERHEAD` bytes an entry; past it the oldest entries go
    (a quarter of the bound at once, so a put does not evict one entry at a time). A message
    larger than the whole bound is never stored. ``hits`` / ``misses`` count lookups; ``bytes``
    is what it holds now. Lookups take no lock, stores take the cache's lock: one cache may be
    shared by the threads of a worker.
    """

    __slots__ = ("_lock", "_parts", "bytes", "hits", "max_bytes", "misses")

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = check_int("max_bytes", max_bytes)
        #: counter key -> (the counter, its entries): the counter is held so its id stays its own.
        self._parts: dict[Hashable, tuple[TokenCounter, CounterCounts]] = {}
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return sum(len(part.entries) for _, part in self._parts.values())

    def __repr__(self) -> str:
        return (
            f"MessageCountCache({len(self)} entries, {self.bytes:,} of {self.max_bytes:,} bytes, "
            f"{self.hits} hits, {self.misses} misses)"
        )

    def counts_for(self, counter: TokenCounter) -> CounterCounts:
        """The entries of ``counter`` (created on first use)."""
        key: Hashable
        if type(counter) is CharEstimator:
            key = (
                "chars",
                counter.chars_per_token,
                counter.message_overhead,
                counter.prompt_overhead,
                counter.image_tokens,
            )
        else:
            key = id(counter)
        held = self._parts.get(key)
        if held is None or (type(key) is int and held[0] is not counter):
            with self._lock:
                held = self._parts.get(key)
                if held is None or (type(key) is int and held[0] is not counter):
                    held = (counter, CounterCounts(self))
                    self._parts[key] = held
                    if len(self._parts) > MAX_COUNTERS:  # a new counter instance a call
                        _, oldest = self._parts.pop(next(iter(self._parts)))
                        oldest.live = False  # a scan still holding it stores nothing more
                        self.bytes -= sum(size for _, size in oldest.entries.values())
        return held[1]

    def clear(self) -> None:
        """Forget every count (e.g. after changing a counter's configuration)."""
        with self._lock:
            for _, part in self._parts.values():
                part.entries.clear()
            self.bytes = 0

    def _evict(self, keep: CounterCounts) -> None:
        """Oldest entries first, ``keep``'s own last, down to three quarters of the bound
        (called under the lock)."""
        target = self.max_bytes * 3 // 4
        for _, part in [*(p for p in self._parts.values() if p[1] is not keep), (None, keep)]:
            entries = part.entries
            while self.bytes > target and entries:
                self.bytes -= entries.pop(next(iter(entries)))[1]
            if self.bytes <= target:
                return


class CounterCounts:
    """One counter's entries in a :class:`MessageCountCache`: ``key -> (record, tokens)`` for
    plain dicts, ``key -> tokens`` for records."""

    __slots__ = ("cache", "entries", "live")

    def __init__(self, cache: MessageCountCache) -> None:
        self.cache = cache
        self.entries: dict[tuple[Any, ...], tuple[Any, int]] = {}
        self.live = True

    def get(self, key: tuple[Any, ...]) -> Any:
        """The cached value for ``key``, or None."""
        entry = self.entries.get(key)
        cache = self.cache
        if entry is None:
            cache.misses += 1
            return None
        cache.hits += 1
        return entry[0]

    def counted(
        self, message: Any, index: int, rec: Message | None, count: Callable[[Message], int]
    ) -> tuple[Message, int]:
        """``message``'s record (``rec`` when already read) and ``count`` of it, through this
        cache: a plain dict's hit skips normalizing too (keyed by its content); any other
        shape's hit skips counting (keyed by its record). ``index``: for ``normalize``'s
        errors."""
        key = plain_key(message)
        if key is not None:
            hit = self.get(key)
            if hit is not None:
                return (hit[0] if rec is None else rec), hit[1]
            if rec is None:
                rec = normalize(message, index)
            tokens = count(rec)
            self.put(key, (rec, tokens))
            return rec, tokens
        if rec is None:
            rec = normalize(message, index)
        rkey = record_key(rec)
        try:
            cached = self.get(rkey)
        except TypeError:  # a caller's own record holding a list: counted, not cached
            return rec, count(rec)
        if cached is None:
            cached = count(rec)
            self.put(rkey, cached)
        return rec, cached

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        cache = self.cache
        size = _size(key)
        if size > cache.max_bytes:
            return  # larger than the whole cache: not worth evicting everything for
        with cache._lock:
            if key in self.entries or not self.live:
                return
            self.entries[key] = (value, size)
            cache.bytes += size
            if cache.bytes > cache.max_bytes:
                cache._evict(self)
