"""The in-memory offload area: owned by the caller (or a manager), bounded by bytes.

Nothing is process-wide: create one per conversation (or per worker serving many, one per
session id) and pass it where offloading happens (``ToolResultPruning(offload=...)``,
``trim(..., pruning=OffloadOnly(area))``, :func:`~context_manager.offload.offload_results`).
When the stored bytes pass ``max_bytes``, the oldest entries are evicted first (insertion order;
a re-put of the same key counts as new) and their handles raise ``OffloadNotFoundError``: the
stub the model saw still shows the head and tail. An entry larger than ``max_bytes`` alone is
not stored (put raises ``OffloadError``), so one giant result cannot empty the area, and
``offload_results`` refuses a message whose results together pass ``max_bytes`` before storing
any (:attr:`capacity`): the newest entries are evicted last, so the results of one call that fit
together never evict each other.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

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


class MemoryOffload(BaseArea):
    """Offloaded results in this process's memory (lost with it), oldest evicted first."""

    def __init__(self, session: str = "default", *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(session)
        self.max_bytes = check_int("max_bytes", max_bytes, 1)
        self._items: OrderedDict[str, _Stored] = OrderedDict()
        self._keys: dict[str, str] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        return self.max_bytes

    @property
    def stored_bytes(self) -> int:
        """The bytes held now (at most ``max_bytes``)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def _insert(self, token: str, data: bytes, key: str | None) -> str:
        if len(data) > self.max_bytes:
            raise OffloadError(
                f"a result of {len(data):,} bytes is larger than this area's max_bytes "
                f"({self.max_bytes:,}); raise max_bytes or use a store-backed area"
            )
        with self._lock:
            if key is not None:
                known = self._keys.get(key)
                if known is not None and known in self._items:
                    self._items[known].live = True
                    self._items.move_to_end(known)
                    return known
            self._items[token] = _Stored(data, key)
            self._bytes += len(data)
            if key is not None:
                self._keys[key] = token
            while self._bytes > self.max_bytes:
                old, gone = self._items.popitem(last=False)
                self._bytes -= len(gone.data)
                if gone.key is not None and self._keys.get(gone.key) == old:
                    del self._keys[gone.key]
            return token

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

    def delete_entries(self) -> int:
        with self._lock:
            n = len(self._items)
            self._items.clear()
            self._keys.clear()
            self._bytes = 0
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
