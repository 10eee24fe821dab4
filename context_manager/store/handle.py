"""A store handle: one target's shared connections, opened once per process.

A backend that opens a session per request should not pay a connection per request: a
PostgreSQL connect is a TCP and authentication round trip or three (plus a table check), a
Redis client a new connection pool, SQLite a file open with its PRAGMAs. :func:`connect` opens
what can be shared once (a connection pool for PostgreSQL, one client for Redis, one connection
per thread for SQLite; nothing for JSONL), and :meth:`StoreHandle.session` makes the per-request
session store on top of it. Closing a session store never closes what the handle shares; closing
the handle does. The caller creates and owns the handle (no process-wide registry), e.g. at
application start-up::

    stores = connect("postgresql://app@db/chat")
    manager = MessageContextManager.open(stores, session="user-42", max_tokens=8000)

With a :class:`~.warm.SessionCache` (``connect(..., cache=SessionCache())``) the handle also
keeps the managers of recently closed sessions, so a request reads only what changed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..errors import StoreError
from .protocol import DEFAULT_SESSION, Store, check_session_id
from .warm import SessionCache

__all__ = ["StoreHandle"]


class StoreHandle:
    """What :func:`~context_manager.store.connect` returns: ``.session(id)`` per request."""

    def __init__(
        self,
        target: str,
        make: Callable[[str], Store],
        close: Callable[[], None],
        jsonl: bool,
        cache: SessionCache | None = None,
    ) -> None:
        self._target = target
        #: The caller's session cache (None: every open reads the whole session).
        self.cache = cache
        self._make = make
        self._close = close
        self._closed = False
        self._guard = threading.Lock()
        #: Whether the sessions are JSONL logs (``MessageContextManager.open`` reads them as
        #: their own session logs).
        self.jsonl = jsonl

    @property
    def target(self) -> str:
        """Where the sessions live (a path, or a URL without its password)."""
        return self._target

    def session(self, session: str = DEFAULT_SESSION) -> Store:
        """The store of one session, on the shared connections (close it after the request)."""
        if self._closed:
            raise StoreError(f"{self._target}: this store handle is closed")
        return self._make(check_session_id(session))

    def close(self) -> None:
        """Close what the handle shares (idempotent); session stores made from it stop working
        (a JSONL handle shares nothing: its sessions are files, each closed on its own)."""
        with self._guard:
            if self._closed:
                return
            self._closed = True
        self._close()

    def __enter__(self) -> StoreHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StoreHandle({self._target!r}{', closed' if self._closed else ''})"


def _nothing() -> None:
    return None


def jsonl_handle(
    target: str, make: Callable[[str], Store], cache: SessionCache | None = None
) -> StoreHandle:
    return StoreHandle(target, make, _nothing, jsonl=True, cache=cache)


def shared_handle(
    target: str,
    make: Callable[[str], Store],
    close: Callable[[], Any],
    cache: SessionCache | None = None,
) -> StoreHandle:
    return StoreHandle(target, make, close, jsonl=False, cache=cache)
