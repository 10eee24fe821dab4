"""Typed events: what changed in a manager, as values a store or an extension can act on.

Every change a manager makes is described by one of these frozen dataclasses. A *journal* (the
write-ahead side, e.g. a store) receives the change **before** memory changes and may refuse it by
raising; *subscribers* receive it **after** it was applied. Both see the same object, so what was
written is exactly what was applied. ``isinstance`` / ``match`` on the class replaces the string
event names and loosely typed dicts of earlier versions.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from .messages.record import Message

__all__ = [
    "CacheReported",
    "Change",
    "Cleared",
    "Compacted",
    "Event",
    "Evicted",
    "Journal",
    "Listener",
    "MessageAdded",
    "SystemPromptSet",
    "ToolCallsClosed",
    "ToolResultTruncated",
    "ToolResultsPruned",
    "UsageRecorded",
]


@dataclass(frozen=True, slots=True)
class MessageAdded:
    """A message joined the history. ``message`` is the caller's object, ``record`` its reading."""

    message: Any
    record: Message
    index: int
    tokens: int
    pinned: bool = False
    priority: int = 0


@dataclass(frozen=True, slots=True)
class SystemPromptSet:
    """The pinned system prompt was set or replaced (``message`` as the caller gave it)."""

    message: Any
    record: Message


@dataclass(frozen=True, slots=True)
class UsageRecorded:
    """The provider reported ``input_tokens`` for the context last sent, which we counted at
    ``counted`` (None: nothing fitted the budget, so nothing of ours was sent)."""

    input_tokens: int
    counted: int | None = None


@dataclass(frozen=True, slots=True)
class Cleared:
    """The history was forgotten (and the system prompt, unless ``keep_system_prompt``)."""

    keep_system_prompt: bool


@dataclass(frozen=True, slots=True)
class Compacted:
    """``summary`` now stands for every message before ``first_kept_index``.

    ``entry`` is the compaction package's record of it (``None`` when applied by hand).
    ``held``: what the manager still holds afterwards, as history indices: the messages held
    before the cut (pinned ones, the latest user turn) and the first one from the cut on; what a
    store's reader replays (None when applied by hand to a bare event).
    """

    summary: Any
    first_kept_index: int
    entry: Any = None
    held: tuple[tuple[int, ...], int] | None = None


@dataclass(frozen=True, slots=True)
class Evicted:
    """FIFO dropped these messages for good (the caller's objects, oldest first). Not logged."""

    messages: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class ToolCallsClosed:
    """Open tool calls were answered with synthetic results (e.g. the user interrupted them)."""

    call_ids: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class ToolResultsPruned:
    """A request's view trimmed or cleared more old tool results (history untouched).

    ``report`` is the cumulative :class:`~context_manager.compaction.pruning.PruningReport` for
    the view (``new_trimmed`` / ``new_cleared``: what this request added). Emitted by
    ``get_context`` only when something new was pruned. Not logged.
    """

    report: Any


@dataclass(frozen=True, slots=True)
class ToolResultTruncated:
    """The newest tool exchange (or the latest user turn's, whose results the person spoke
    with) did not fit, so its results were cut head+tail in the view.

    ``tokens`` is what the cut exchanges cost, ``original_tokens`` what they held; the history
    keeps the full results. Emitted by ``get_context``. Not logged.
    """

    call_ids: tuple[str, ...]
    results: int
    tokens: int
    original_tokens: int


@dataclass(frozen=True, slots=True)
class CacheReported:
    """What the provider's prompt cache would serve of the context ``get_context`` returned.

    ``report`` is a :class:`~context_manager.prompt_cache.CacheReport` (tokens repeating the
    previous request's prefix, where and why it broke, cached / written tokens, cost). Emitted
    by ``get_context`` when ``prompt_cache.track_cache`` is on. Not logged.
    """

    report: Any


#: A change a journal writes ahead of memory.
Change: TypeAlias = MessageAdded | SystemPromptSet | UsageRecorded | Cleared | Compacted
#: Anything a subscriber may receive.
Event: TypeAlias = (
    Change | Evicted | ToolCallsClosed | ToolResultsPruned | ToolResultTruncated | CacheReported
)
Listener: TypeAlias = Callable[[Event], None]


class Journal(Protocol):
    """Write-ahead sink for a manager's changes (a store implements it).

    ``write`` runs under the manager's lock before memory changes. It must validate and encode
    the change, write it durably (as its fsync policy says), and raise a
    :class:`~context_manager.errors.ContextManagerError` subclass if it cannot; the manager then
    leaves memory unchanged.
    """

    def write(self, change: Change) -> None: ...

    def batch(self, *, atomic: bool = False) -> AbstractContextManager[None]:
        """Group the writes made inside into one atomic write when it ends (a bulk ``extend``).

        Memory changes as each write is accepted; if the final write fails, the journal puts
        the manager back as the store has it (nothing of the batch) and raises. An error
        inside the batch still writes what came before it, as unbatched writes would have;
        with ``atomic`` it writes nothing of the batch and puts memory back the same way (a
        batch inside another one joins it, and the outer one decides).
        """
        ...
