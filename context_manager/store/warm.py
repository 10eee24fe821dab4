"""Warm sessions: the managers of recently closed sessions, kept for their next request.

A backend that opens a session per request would otherwise rebuild the manager from every
record each time (read, decode, normalize, count: linear in the history). A :class:`SessionCache`
given to :func:`~context_manager.store.connect` keeps the manager a request closed, with the
store position it had reached; the next open of that session on the handle reads only the
records written since (by this worker or any other) and applies them, so a request costs what
changed, not the history. When the session no longer extends that position (another worker
reverted, cleared or compacted it, or it expired), the open reads everything, as without a cache.

The caller creates and owns the cache (no process-wide state) and bounds it by sessions. A parked
manager belongs to the cache: its journal refuses writes (nothing can change it unseen), and the
next open of its session hands that same object out again, so code must not keep using a manager
after closing its store.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError
from .protocol import Head
from .replayer import RestoredLog

__all__ = ["Parked", "SessionCache"]


@dataclass(frozen=True, slots=True)
class Parked:
    """A closed session's manager, the options it was opened with and where its store stood."""

    options: object
    manager: Any
    head: Head
    restored: RestoredLog


class SessionCache:
    """Up to ``max_sessions`` parked managers, least recently closed evicted first.

    Thread-safe: an open takes its session's entry out, so two requests on the same session
    never share a manager (the second one reads the store, as without a cache).
    """

    def __init__(self, max_sessions: int = 128) -> None:
        if not isinstance(max_sessions, int) or isinstance(max_sessions, bool) or max_sessions < 1:
            raise ConfigurationError(f"max_sessions must be an int >= 1, got {max_sessions!r:.60}")
        self.max_sessions = max_sessions
        self._parked: OrderedDict[str, Parked] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, session: str, options: object) -> Parked | None:
        """The parked entry of ``session`` when it was opened with the same ``options`` (it
        leaves the cache either way: a different configuration means a fresh manager)."""
        with self._lock:
            parked = self._parked.pop(session, None)
        return parked if parked is not None and parked.options == options else None

    def park(self, session: str, parked: Parked) -> None:
        with self._lock:
            self._parked[session] = parked
            self._parked.move_to_end(session)
            while len(self._parked) > self.max_sessions:
                self._parked.popitem(last=False)

    def discard(self, session: str) -> None:
        """Forget ``session``'s manager (its next open reads the store)."""
        with self._lock:
            self._parked.pop(session, None)

    def clear(self) -> None:
        with self._lock:
            self._parked.clear()

    def __len__(self) -> int:
        return len(self._parked)

    def __repr__(self) -> str:
        return f"SessionCache({len(self)}/{self.max_sessions} sessions)"


def options_key(cls: type, options: dict[str, Any], strict: bool) -> object:
    """What a parked manager must have been opened with to serve an open with ``options``.

    Hooks and the system prompt are left out: an open applies them to the manager it returns.
    Values are compared by ``==`` (objects without their own equality by identity), so a
    counter, strategy or tool list passed again as the same value reuses the manager.
    """
    kept = {k: v for k, v in options.items() if k not in _APPLIED_PER_OPEN}
    return _Key(cls, strict, kept)


_APPLIED_PER_OPEN = ("on_evict", "on_near_limit", "system_prompt")


@dataclass(frozen=True, eq=False, slots=True)
class _Key:
    """Options compared by ``==`` (they may hold unhashable lists of tool schemas)."""

    cls: type
    strict: bool
    options: dict[str, Any]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Key):
            return NotImplemented
        try:
            same = bool(self.options == other.options)
        except Exception:  # an option whose == raises: not the same configuration
            return False
        return self.cls is other.cls and self.strict == other.strict and same
