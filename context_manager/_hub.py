"""The extension boundary every manager offers: write-ahead journal, subscribers, lock, state,
and the entry points into the extensions (``open``, ``compact``, ``checkpoint``, ``revert_to``).

A base class of :class:`~context_manager.manager.MessageContextManager`, kept apart because it
is the contract extensions (stores, compaction, integrations) rely on; it owns only its own
state (the lock, subscribers, journal and extension state), never the manager's budget state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from operator import attrgetter
from os import PathLike
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, cast, overload

from ._config import check_int
from .errors import ConfigurationError
from .events import Change, Event, Journal, Listener

if TYPE_CHECKING:
    from .host import ManagerHost

__all__ = ["ExtensionHub", "ReadOnly"]

T = TypeVar("T")


class ExtensionHub:
    """Journal (before a change), subscribers (after it), the lock, per-manager extension state."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._journal: Journal | None = None
        self._extensions: dict[type[Any], Any] = {}

    def locked(self) -> AbstractContextManager[Any]:
        """The manager's (re-entrant) lock: hold it to make several calls atomically."""
        return self._lock

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` after every change; returns a function that unsubscribes."""
        if not callable(listener):
            raise ConfigurationError(f"listener must be callable, got {listener!r}")
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def attach_journal(self, journal: Journal | None) -> Journal | None:
        """Install the write-ahead journal (one at a time); returns the previous one."""
        with self._lock:
            previous, self._journal = self._journal, journal
            return previous

    @property
    def store(self) -> Any:
        """The attached store (the journal), or None for an in-memory manager."""
        return self._journal

    def extension(self, key: type[T], factory: Callable[[], T]) -> T:
        """The per-manager instance of an extension's state, created by ``factory`` once.

        Extensions keep their bookkeeping here (owned by the manager, freed with it) instead of
        in module-global registries.
        """
        with self._lock:
            value = self._extensions.get(key)
            if value is None:
                value = self._extensions[key] = factory()
            return value

    def _write(self, change: Change) -> None:
        if self._journal is not None:
            self._journal.write(change)

    def _emit(self, event: Event) -> None:
        for listener in list(self._listeners):
            listener(event)

    # -- entry points into the extensions (loaded on first use) ---------------------------
    @classmethod
    def open(cls, path: str | PathLike[str], **options: Any) -> Self:
        """Open (or create) a persistent session log; every later change is written ahead."""
        from .store.session import open_session

        return open_session(cls, path, **options)  # type: ignore[type-var]

    @classmethod
    async def aopen(cls, target: Any, **options: Any) -> Self:
        """``open`` for asyncio: the store's I/O is awaited; make changes inside
        ``async with manager.store.batch():`` (docs/guide/stores.md, "Async")."""
        from .store import aopen_session

        return await aopen_session(cls, target, **options)  # type: ignore[type-var]

    def compact(
        self, summarizer: Any = None, *, focus: str | None = None, policy: Any = None
    ) -> Any:
        """Summarize old messages now; returns the ``CompactionEntry`` applied, or a
        ``PruningFallback`` when the history was too short to summarize (see compaction)."""
        from .compaction.runner import compact_manager

        return compact_manager(self._host(), summarizer, focus=focus, policy=policy)

    async def acompact(
        self, summarizer: Any = None, *, focus: str | None = None, policy: Any = None
    ) -> Any:
        """Async ``compact``; cancelling it leaves history and log untouched."""
        from .compaction.runner import acompact_manager

        return await acompact_manager(self._host(), summarizer, focus=focus, policy=policy)

    def _host(self) -> ManagerHost:
        """This object as the extensions see it (a manager subclass completes the protocol)."""
        return cast("ManagerHost", self)

    # -- persistence shortcuts (see store/) -------------------------------------------------
    def _require_store(self) -> Any:
        if self._journal is None or not hasattr(self._journal, "checkpoint"):
            raise ConfigurationError(
                "this manager has no store; create it with MessageContextManager.open(path)"
            )
        return self._journal

    def checkpoint(self) -> int:
        """Mark the current point of a persistent session; returns the checkpoint id."""
        with self._lock:
            return int(self._require_store().checkpoint())

    def revert_to(self, checkpoint_id: int) -> None:
        """Rewind a persistent session to just before checkpoint ``checkpoint_id``."""
        check_int("checkpoint_id", checkpoint_id, None)
        with self._lock:  # no add may slip between the file rewrite and the rebuild
            self._require_store().revert_to(checkpoint_id, self)


class ReadOnly(Generic[T]):
    """A read-only attribute backed by a private one: ``manager.counter = x`` raises.

    Cached totals depend on these values, so they are fixed at construction.
    """

    def __init__(self, attribute: str, doc: str) -> None:
        self.attribute = attribute  # may name a part's attribute: "_part.name"
        self._get = attrgetter(attribute)
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> ReadOnly[T]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> T: ...
    def __get__(self, instance: object | None, owner: type) -> T | ReadOnly[T]:
        if instance is None:
            return self
        return self._get(instance)  # type: ignore[no-any-return]

    def __set__(self, instance: object, value: object) -> None:
        raise AttributeError(
            f"{self.name} is fixed at construction (cached totals depend on it); "
            "build a new manager with the new value"
        )
