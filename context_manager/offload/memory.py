"""The in-memory offload area: owned by the caller (or a manager), bounded by bytes.

Nothing is process-wide: create one per conversation (or per worker serving many, one per
session id) and pass it where offloading happens (``ToolResultPruning(offload=...)``,
``trim(..., pruning=OffloadOnly(area))``, :func:`~context_manager.offload.offload_results`).
When the stored bytes pass ``max_bytes``, the oldest entries are evicted first (insertion order;
a re-put of the same key counts as new) and their handles raise ``OffloadNotFoundError``: the
stub the model saw still shows the head and tail. An entry larger than ``max_bytes`` alone is
not stored (put raises ``OffloadError``), so one giant result cannot empty the area.

Inside :meth:`MemoryOffload.batch` (one ``offload_results`` call) the same rule covers the whole
batch: what the batch stored is *pinned* (never evicted, so no stub of the call names a handle
the call itself evicted), eviction waits for the end of the batch, and a put that would not fit
beside the batch's pinned entries raises ``OffloadError``; the batch then takes back what it
stored and evicts nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from .._config import check_int
from ..errors import OffloadError
from .area import BaseArea, Entry

__all__ = ["MemoryOffload"]

#: 64 MiB: a few multi-megabyte outputs per conversation.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


@dataclass(slots=True)
class _Stored:
    data: bytes
    key: str | None
    live: bool = True
    pins: int = 0  # batches in progress that stored or reused it: not evictable meanwhile
    owner: object = None  # the batch that created it, until that batch ends


@dataclass(slots=True, eq=False)
class _Batch:
    """The entries one batch stored or reused (token -> True when the batch created it)."""

    touched: dict[str, bool] = field(default_factory=dict)


class MemoryOffload(BaseArea):
    """Offloaded results in this process's memory (lost with it), oldest evicted first."""

    def __init__(self, session: str = "default", *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(session)
        self.max_bytes = check_int("max_bytes", max_bytes, 1)
        self._items: OrderedDict[str, _Stored] = OrderedDict()
        self._keys: dict[str, str] = {}
        self._bytes = 0
        self._pinned = 0  # bytes of the entries pinned by batches in progress
        self._lock = threading.Lock()
        self._batch: ContextVar[_Batch | None] = ContextVar("offload_batch", default=None)

    @property
    def stored_bytes(self) -> int:
        """The bytes held now (at most ``max_bytes`` outside a :meth:`batch`)."""
        return self._bytes

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Puts inside are one unit: none is evicted before the block ends, and if the block
        raises (a put that cannot fit beside the others raises ``OffloadError``) every entry it
        created is dropped again. Nested batches join the outer one."""
        if self._batch.get() is not None:
            yield
            return
        batch = _Batch()
        reset = self._batch.set(batch)
        kept = False
        try:
            yield
            kept = True
        finally:
            self._batch.reset(reset)
            self._end(batch, kept)

    def _end(self, batch: _Batch, kept: bool) -> None:
        with self._lock:
            for token, created in batch.touched.items():
                item = self._items.get(token)
                if item is None or not item.pins:  # deleted meanwhile (delete_session)
                    continue
                item.pins -= 1
                if not item.pins:
                    self._pinned -= len(item.data)
                if item.owner is batch:
                    item.owner = None
                    # taken back only while no other batch uses it (a reuse keeps it)
                    if created and not kept and not item.pins:
                        self._drop(token)
            self._evict()

    def _drop(self, token: str) -> None:
        gone = self._items.pop(token)
        self._bytes -= len(gone.data)
        if gone.key is not None and self._keys.get(gone.key) == token:
            del self._keys[gone.key]

    def _evict(self) -> None:
        """Oldest unpinned entries out until the bytes fit (pinned ones always fit: _insert)."""
        if self._bytes <= self.max_bytes:
            return
        excess, victims = self._bytes - self.max_bytes, []
        for token, item in self._items.items():
            if excess <= 0:
                break
            if not item.pins:
                victims.append(token)
                excess -= len(item.data)
        for token in victims:
            self._drop(token)

    def __len__(self) -> int:
        return len(self._items)

    def _insert(self, token: str, data: bytes, key: str | None) -> str:
        batch = self._batch.get()
        with self._lock:
            if key is not None:
                known = self._keys.get(key)
                if known is not None and known in self._items:
                    item = self._items[known]
                    if batch is not None and known not in batch.touched:
                        if not item.pins:
                            self._check(len(item.data))
                        batch.touched[known] = False
                        self._pin(item)
                    item.live = True
                    self._items.move_to_end(known)
                    return known
            self._check(len(data))
            item = self._items[token] = _Stored(data, key)
            self._bytes += len(data)
            if key is not None:
                self._keys[key] = token
            if batch is None:
                self._evict()
            else:  # eviction waits for the end of the batch (or the batch takes it back)
                batch.touched[token] = True
                item.owner = batch
                self._pin(item)
            return token

    def _check(self, size: int) -> None:
        """The one capacity rule: an entry is kept only if it fits beside every pinned one."""
        if self._pinned + size <= self.max_bytes:
            return
        if not self._pinned:
            raise OffloadError(
                f"a result of {size:,} bytes is larger than this area's max_bytes "
                f"({self.max_bytes:,}); raise max_bytes or use a store-backed area"
            )
        raise OffloadError(
            f"the results of one offload call ({self._pinned + size:,} bytes together) do not "
            f"fit in this area's max_bytes ({self.max_bytes:,}): nothing of the call was kept; "
            "raise max_bytes or use a store-backed area"
        )

    def _pin(self, item: _Stored) -> None:
        if not item.pins:
            self._pinned += len(item.data)
        item.pins += 1

    def _fetch(self, token: str) -> bytes | None:
        with self._lock:
            item = self._items.get(token)
            return item.data if item is not None and item.live else None

    def _revive(self, tokens: list[str]) -> None:
        with self._lock:
            for token in tokens:
                item = self._items.get(token)
                if item is not None:
                    item.live = True

    def retire(self) -> None:
        with self._lock:
            for item in self._items.values():
                item.live = False

    def delete_session(self) -> int:
        with self._lock:
            n = len(self._items)
            self._items.clear()
            self._keys.clear()
            self._bytes = 0
            self._pinned = 0
            return n

    def entries(self) -> Iterator[Entry]:
        with self._lock:
            items = list(self._items.items())
        for token, item in items:
            yield Entry(token, item.key, item.live, item.data)

    def _import(self, entry: Entry) -> None:
        token = self._insert(entry.token, entry.data, entry.key)
        if not entry.live:
            with self._lock:
                self._items[token].live = False
