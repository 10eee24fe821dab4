"""The oldest message lines of a session an open left unread, read when the manager needs them.

An open of a long session that was never compacted reads its newest message lines, as far as
a request can reach, and every record that is not a message (``Replayer._tail``). The manager
holds the others unread: how many there are and their stored tokens, which is all a request,
an add, ``token_count`` or ``len()`` need of them. What needs the messages themselves (the
history, ``messages``, ``stats()``, a compaction, a request reaching that far) first reads them
(``MessageContextManager._read_unread``), once, from the lines the open fetched: no I/O, so the
sync and the async sessions share it. A sync SQL or Redis store's open fetched none of them
(``_tail_read.load_tail``): the store the manager is attached to then reads them
(``load_older`` of a ``protocol.NewestFirst`` store).

The read is the open that reads every record, done late: the lines are replayed into a new
manager built with the same options, then every message the manager holds is added after
them, as an open would have added them (a refused line, an interrupted call closed, each
numbered as then). The manager takes that one's history; the journal its count of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import StoreError
from ..host import ManagerHost
from ._replay import replay
from .protocol import Tail
from .replayer import Replayer, UnreadRun

if TYPE_CHECKING:
    from ._journal import JournalCore

__all__ = ["UnreadHistory"]


class UnreadHistory:
    """Message lines left unread by an open, in order, with their count and stored tokens."""

    def __init__(self, build: Callable[[], ManagerHost], journal: JournalCore) -> None:
        self._build = build
        self._journal = journal
        self._lines: list[tuple[int, bytes, bool]] = []
        #: A SQL store's open fetched none of them: what its store reads them by.
        self._tail: Tail | None = None
        #: Messages left unread, and their tokens as stored under the manager's counter.
        self.count = 0
        self.tokens = 0

    def take(self, run: UnreadRun) -> None:
        self._lines += run.lines
        self._tail = run.tail
        self.count += run.count
        self.tokens += run.tokens

    def read(self, manager: ManagerHost) -> ManagerHost:
        """A manager built like ``manager`` holding every message: those left unread, then
        those ``manager`` holds (whose own unread ones it must no longer hold)."""
        whole = self._build()
        journal = self._journal
        path = journal.target
        lines = self._lines if self._tail is None else _older(manager, self._tail)
        replayer = Replayer.of_lines(path, lines, strict=False, defer_messages=True)
        tally = replayer.state
        replay(whole, replayer.sequence, strict=False, path=path, tally=tally, restored=tally)
        for item in manager.history():
            whole.add_counted(item.message, item.tokens, priority=item.priority, pinned=item.pinned)
        # The journal numbered the history as if every unread line were a message of it.
        restored, shift = journal.restored, tally.history - self.count
        restored.history += shift
        restored.history_gaps = tally.history_gaps + [g + shift for g in restored.history_gaps]
        # (a compaction written from now on names no starting point past an unreadable line)
        restored.skipped_lines = sorted({*tally.skipped_lines, *restored.skipped_lines})
        self._lines, self._tail = [], None
        return whole


def _older(manager: ManagerHost, tail: Tail) -> list[tuple[int, bytes, bool]]:
    """The message records a SQL or Redis store's open left in the store, read by the journal
    the manager is attached to now (a manager a session cache kept has a new one)."""
    read = getattr(manager.store, "read_older", None)
    if read is None:
        raise StoreError(
            f"the {tail.unread} oldest messages of this session were left in "
            "its store by the open, and the manager is no longer attached to its store"
        )
    return read(tail)  # type: ignore[no-any-return]
