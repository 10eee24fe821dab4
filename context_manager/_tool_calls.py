"""What an add does about the tool protocol besides checking it: it closes the calls a new user
turn interrupted, and with ``repair=True`` it repairs a broken exchange instead of raising.

A base of :class:`~context_manager.manager.MessageContextManager`, kept apart because it is one
concern with its own state (the repairer), reached from ``add`` only off its common path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._hub import ExtensionHub
from .errors import ConfigurationError
from .events import ToolCallsClosed
from .messages import Message, normalize
from .messages.groups import Repairer, ToolProtocol, missing_results

if TYPE_CHECKING:
    from .budget._ledger import Ledger

__all__ = ["ToolCallHandling", "interrupts"]


class ToolCallHandling(ExtensionHub):
    """Closing interrupted calls and repairing the protocol, on the manager's state."""

    _protocol: ToolProtocol
    _repair: bool
    _repairer: Repairer | None
    _added: int
    _ledger: Ledger
    interrupted_result: str

    if TYPE_CHECKING:

        def _store(
            self, message: Any, rec: Message, index: int, priority: int, pinned: bool
        ) -> int: ...

    @property
    def repair(self) -> bool:
        """Repair a broken tool protocol on add instead of raising; may be switched any time."""
        return self._repair

    @repair.setter
    def repair(self, value: bool) -> None:
        with self._lock:
            if value and not self._repair:
                # The repairer mirrors the protocol state from here on.
                self._repairer = Repairer.resuming(self._protocol, self._open_callers())
            self._repair = bool(value)

    def close_pending_tool_calls(self, reason: str | None = None) -> list[Any]:
        """Answer every open tool call with a synthetic error result (your own cancel path).

        The results are added like any message (a store persists them) in the calling message's
        shape, and :class:`~context_manager.events.ToolCallsClosed` is emitted. Returns them.
        """
        if reason is not None and not isinstance(reason, str):
            raise ConfigurationError(f"reason must be a string, got {reason!r}")
        with self._lock:
            return self._close_pending(reason or self.interrupted_result)

    def _close_pending(self, text: str) -> list[Any]:
        ids = tuple(self._protocol.pending)
        if not ids:
            return []
        results = missing_results(self._open_callers(), ids, text)
        for result in results:
            self._store(result, normalize(result), self._added, 0, False)
        if self._listeners:
            self._emit(ToolCallsClosed(ids, text))
        return results

    def _open_callers(self) -> list[tuple[Any, Message]]:
        """The held messages that issued the open calls, in order (read back from the newest
        message, as far as the open group reaches): each answer takes its caller's shape."""
        ledger, wanted = self._ledger, set(self._protocol.pending)
        records, originals = ledger.records, ledger.originals
        found: list[tuple[Any, Message]] = []
        for i in range(len(records) - 1, -1, -1):
            if not wanted:
                break
            rec = records[i]
            if rec.tool_calls and not wanted.isdisjoint(rec.call_ids):
                wanted.difference_update(rec.call_ids)
                if originals[i] is not None:
                    found.append((originals[i], rec))
        found.reverse()
        return found

    def _add_repaired(
        self, message: Any, rec: Message, index: int, priority: int, pinned: bool
    ) -> int:
        if self._repairer is None:
            self._repairer = Repairer()  # sees the same stream, so its state mirrors ours
        tokens = 0
        for item, item_rec in self._repairer.feed(message, index, rec):
            tokens = self._store(item, item_rec, self._added, priority, bool(pinned))
        return tokens


def interrupts(rec: Message) -> bool:
    """A user turn that answers none of the open calls: the person moved on."""
    return rec.role == "user" and not rec.result_ids
