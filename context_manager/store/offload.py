"""Store-backed offload areas: oversized tool results kept beside a session's records.

Each area reuses its store's connection and error handling (nothing new is opened), and binds
handles to the store's session (``context_manager.offload.area``); one module each
(``offload_jsonl.py``, ``offload_sql.py``, ``offload_redis.py``), loaded when first used:

- **JSONL**: a side directory next to the log, ``<log>.offload/`` (``<root>/<session>/
  context.jsonl.offload/`` for a directory of sessions): one ``<token>.data`` file per result
  and a ``<token>.meta`` JSON beside it (key, live), written atomically, 0600 in a 0700
  directory, links refused, like the log.
- **SQLite / PostgreSQL**: one table ``<prefix>offload`` (session, token, key, live, size, data
  BLOB / BYTEA), created on first use; every operation is one transaction of the store's flows.
- **Redis**: three keys in the session's hash slot, ``<prefix>{<session>}:off:data`` (token ->
  bytes), ``...:off:live`` (the set of live tokens) and ``...:off:keys`` (key -> token). With
  the store's ``ttl`` they expire that many seconds after the last offload or revive, as the
  session's own keys do after its last write.

Offloaded data survives reopening (it is stored), compaction (nothing deletes it) and a copy
between backends (:func:`copy_offload`, run by ``copy_session``); ``delete_session`` removes it.
:func:`attach_store_offload` wires a store-backed manager's area (``MessageContextManager.open``
returns a manager whose journal knows its store).
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from ..host import ManagerHost
from ..offload.area import BaseArea
from ..offload.attach import attach_offload
from .jsonl import JsonlLog
from .protocol import Store

__all__ = ["attach_store_offload", "copy_offload", "offload_area"]


def offload_area(store: Store | Any) -> BaseArea:
    """The offload area of ``store``'s session, on ``store``'s connection (keep the store open
    while the area is used).

    An asyncio SQLite or JSONL store (a ``ThreadedStore``) gives the area of the sync store it
    wraps. The asyncio Redis and PostgreSQL stores hold async connections, which a view built
    synchronously cannot use: give those managers the area of a sync store of the same session
    (``offload_area(open_store(url, session=...))`` with ``attach_offload``)."""
    from .async_targets import ThreadedStore

    if isinstance(store, ThreadedStore):
        store = store.store
    if isinstance(store, JsonlLog):
        from .offload_jsonl import JsonlOffload

        return JsonlOffload(store)
    from ._sqldb import SqlStore
    from .offload_sql import SqlOffload

    if isinstance(store, SqlStore):
        return SqlOffload(store)
    from .offload_redis import RedisOffload
    from .redis import RedisStore

    if isinstance(store, RedisStore):
        return RedisOffload(store)
    raise ConfigurationError(
        f"no offload area for a {type(store).__name__} store; for an asyncio Redis or "
        "PostgreSQL session use offload_area(open_store(url, session=...)) (a sync store)"
    )


def attach_store_offload(manager: ManagerHost, *, view: bool = True) -> BaseArea:
    """Attach the offload area of a store-backed ``manager``'s session (see
    :func:`~context_manager.offload.attach_offload`) and return it."""
    journal: Any = getattr(manager, "store", None)
    log = getattr(journal, "log", None)
    store = getattr(log, "store", None)
    if store is None:
        raise ConfigurationError(
            "this manager has no store; open it with MessageContextManager.open(...) or attach "
            "a MemoryOffload with attach_offload()"
        )
    area = offload_area(store)
    attach_offload(manager, area, view=view)
    return area


def copy_offload(source: Store, destination: Store) -> int:
    """Copy every offloaded entry of ``source``'s session to ``destination``'s (tokens, keys
    and live flags kept); the number copied. Handles are re-bound to the destination session."""
    src, dst = offload_area(source), offload_area(destination)
    return dst.load(src.entries())
