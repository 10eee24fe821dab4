"""The manager's tool-call policy: the protocol state, closing the calls a new user turn
interrupted, and ``repair=True``, which repairs a broken exchange instead of raising.

A part the manager owns (composition): it reads the held messages it is handed and returns what
to store; the manager stores it. Kept apart because it is one concern with its own state (the
protocol and the repairer), reached from ``add`` only off its common path.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from .messages import Message
from .messages.groups import Repairer, ToolProtocol, closes_after, interrupted, missing_results

if TYPE_CHECKING:
    from .budget._ledger import Ledger

__all__ = ["ToolCalls"]

#: The manager's store step for one message and its record (returns its count).
Store = Callable[[Any, Message], int]
#: The manager's closing step for the open calls with the given ids.
Close = Callable[[tuple[str, ...]], object]


class ToolCalls:
    """Protocol state and repair for one manager (reset with its history)."""

    __slots__ = ("protocol", "repair", "repairer")

    def __init__(self, repair: bool) -> None:
        self.protocol = ToolProtocol()
        self.repair = bool(repair)
        self.repairer: Repairer | None = None

    def set_repair(self, value: bool, ledger: Ledger) -> None:
        if value and not self.repair:  # the repairer mirrors the protocol state from here on
            self.repairer = Repairer.resuming(self.protocol, open_callers(ledger, self.pending))
        self.repair = bool(value)

    @property
    def pending(self) -> tuple[str, ...]:
        """Ids of the calls still awaiting results, in order."""
        return tuple(self.protocol.pending)

    def interrupted(self, rec: Message) -> tuple[str, ...]:
        """The open calls the user turn ``rec`` interrupts, to close right before it
        (:func:`~.messages.groups.interrupted`: none answered, or some answered and more said)."""
        return interrupted(rec, self.protocol.pending) if self.protocol.pending else ()

    def closures(self, ledger: Ledger, text: str, ids: Collection[str] | None = None) -> list[Any]:
        """Results answering the open calls ``ids`` (default: all) with ``text``, each in its
        caller's shape. The repairer is shown them too: it follows the same stream, and a
        closure it did not see would leave the calls open for it, so it would answer them a
        second time."""
        ids = self.pending if ids is None else tuple(ids)
        results = missing_results(open_callers(ledger, ids), ids, text) if ids else []
        if self.repair and self.repairer is not None:
            for result in results:
                self.repairer.feed(result)
        return results

    def store_repaired(
        self, message: Any, index: int, rec: Message, interrupted_text: str, store: Store
    ) -> int:
        """Store through ``store`` what the repairer makes of ``message`` (usually the message;
        the calls a user turn interrupts are closed with ``interrupted_text``, before it or
        after a Gemini turn's responses). Returns the count of the last entry stored for the
        message (a closure's before it when it was dropped), as ``add`` reports."""
        if self.repairer is None:
            self.repairer = Repairer()  # sees the same stream, so its state mirrors ours
        fed = self.repairer.feed(message, index, rec, interrupted_text)
        tokens, own = 0, len(fed) - self.repairer.closed_after
        for k, (item, item_rec) in enumerate(fed):
            counted = store(item, item_rec)
            tokens = counted if k < own else tokens
        return tokens

    def interrupt(self, message: Any, rec: Message, store: Store, close: Close) -> int:
        """Store the user turn ``message`` (through ``store``), closing the open calls it
        interrupts (through ``close``) before it, or right after it for a Gemini turn that
        answers some of them (:func:`~.messages.groups.closes_after`); its count."""
        cut = self.interrupted(rec)
        after = bool(cut) and closes_after(message, rec)
        if cut and not after:
            close(cut)
        tokens = store(message, rec)
        if after:
            close(cut)
        return tokens

    def reset(self) -> None:
        self.protocol.reset()
        self.repairer = None


def open_callers(ledger: Ledger, ids: Collection[str]) -> list[tuple[Any, Message]]:
    """The held messages that issued the calls ``ids``, in order (read back from the newest
    message, as far as the open group reaches): each answer takes its caller's shape."""
    wanted = set(ids)
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
