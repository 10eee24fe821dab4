"""What extensions (compaction, stores, integrations) may use of a manager: one small Protocol.

Compaction and the stores are written against :class:`ManagerHost`, never against
``MessageContextManager`` itself or its private state, so they sit above the manager in the
layering without importing it, and a test double or another manager can host them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .events import Journal, Listener
from .messages.record import Message

__all__ = ["HistoryItem", "ManagerHost"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class HistoryItem:
    """One held message as compaction and persistence see it (``index`` is stable)."""

    index: int
    message: Any
    record: Message
    tokens: int
    pinned: bool
    priority: int


class ManagerHost(Protocol):
    """The public surface of a manager that compaction and stores rely on."""

    @property
    def max_tokens(self) -> int: ...
    @property
    def budget_tokens(self) -> int: ...
    @property
    def used_tokens(self) -> int: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def system_message(self) -> Any: ...
    @property
    def compaction(self) -> Any: ...
    @property
    def summarizer(self) -> Any: ...

    def locked(self) -> AbstractContextManager[Any]: ...
    def subscribe(self, listener: Listener) -> Callable[[], None]: ...
    def attach_journal(self, journal: Journal | None) -> Journal | None: ...
    def extension(self, key: type[T], factory: Callable[[], T]) -> T: ...

    def add(self, message: Any, *, priority: int = 0, pinned: bool = False) -> int: ...
    def set_system_prompt(self, prompt: Any) -> None: ...
    def record_usage(self, usage: Any) -> None: ...
    def clear(self, *, keep_system_prompt: bool = True) -> None: ...
    def history(self) -> list[HistoryItem]: ...
    def get_context(self) -> list[Any]: ...
    def apply_compaction(self, summary: Any, first_kept_index: int, entry: Any = None) -> None: ...
