"""The extension boundary every manager offers: write-ahead journal, subscribers, lock, state.

A base class of :class:`~context_manager.manager.MessageContextManager`, kept apart because it
is the whole contract extensions (stores, compaction, integrations) rely on, and nothing else.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar, overload

from .errors import ConfigurationError
from .events import Change, Event, Journal, Listener

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


class ReadOnly(Generic[T]):
    """A read-only attribute backed by a private one: ``manager.counter = x`` raises.

    Cached totals depend on these values, so they are fixed at construction.
    """

    def __init__(self, attribute: str, doc: str) -> None:
        self.attribute = attribute
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
        return getattr(instance, self.attribute)  # type: ignore[no-any-return]

    def __set__(self, instance: object, value: object) -> None:
        raise AttributeError(
            f"{self.name} is fixed at construction (cached totals depend on it); "
            "build a new manager with the new value"
        )
