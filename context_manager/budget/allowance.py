"""What a manager's requests may spend, and on what: one part the manager owns.

The window less the reply's reserve is the budget. Every request pays a fixed part (reply
priming and tool definitions) and its front (the system prompt, the latest summary); what is
left is the room of the held messages, less the pinned ones, which are always sent. Calibration
turns the budget into counted tokens and counted growth into real tokens. These sums were
spread over the manager's methods; kept here they are written once, for every reader
(``get_context``, ``add``, ``stats``, ``context_tokens``, compaction's ``summary_room``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..counting import TokenCounter
from ..messages import Message
from ._ledger import Ledger
from .calibration import Calibration

__all__ = ["Allowance", "Entry"]

#: A message sent in front of the history: the caller's object, its record and its tokens.
Entry = tuple[Any, Message, int]


class Allowance:
    """The budget arithmetic of one manager; ``cap`` is refreshed by :meth:`recap` whenever
    the front or the calibration changes (adds read it on every call, so it is kept, not
    recomputed)."""

    __slots__ = (
        "budget",
        "calibration",
        "cap",
        "fixed",
        "reserve",
        "summary",
        "system",
        "tools",
        "window",
    )

    def __init__(
        self, window: int, reserve: int, priming: int, tools: int, calibration: Calibration
    ) -> None:
        self.window, self.reserve, self.budget = window, reserve, window - reserve
        self.tools = tools  # the tool definitions' tokens
        self.fixed = priming + tools  # reply priming and tool definitions: in every request
        self.calibration = calibration
        self.system: Entry | None = None
        self.summary: Entry | None = None
        self.cap = 0
        self.recap()

    @classmethod
    def counted(
        cls,
        counter: TokenCounter,
        window: int,
        reserve: int,
        tools: Sequence[Any] | None,
        calibration: Calibration,
    ) -> Allowance:
        """The allowance of requests ``counter`` primes, with ``tools`` counted by it (the
        manager's and ``trim()``'s)."""
        tokens = counter.count_tools(list(tools)) if tools else 0
        return cls(window, reserve, counter.prompt_overhead, tokens, calibration)

    @property
    def front(self) -> int:
        """Tokens of the system prompt and the summary (sent before the history)."""
        return (self.system[2] if self.system else 0) + (self.summary[2] if self.summary else 0)

    @property
    def calibrated(self) -> int:
        """The budget in counted tokens (calibration applied)."""
        return self.calibration.budget(self.budget)

    def recap(self) -> None:
        """What held messages may take: the calibrated budget less fixed part and front."""
        self.cap = self.calibrated - self.fixed - self.front

    def room(self, ledger: Ledger, held: bool = False) -> int:
        """Tokens left for unpinned groups (``held``: with a pinned group awaiting results)."""
        return self.cap - (ledger.pinned_total if held else ledger.pinned_complete_tokens())

    def summary_room(self, ledger: Ledger) -> int:
        """Counted tokens a summary may take: the room held messages have (a pinned group
        awaiting results included), plus what the current summary takes, which it replaces."""
        return self.room(ledger, True) + (self.summary[2] if self.summary else 0)

    def sent(self, ledger: Ledger, planned: int) -> int:
        """Tokens of a request whose history part the plan counted at ``planned``: fixed part,
        front and pinned messages included (``context_tokens``)."""
        return self.calibrated - self.room(ledger) + planned

    def used(self, held: int) -> int:
        """What sending ``held`` counted tokens costs now, anchored on usage."""
        return self.calibration.used(held, self.fixed)

    def admits(self, used: int, counted: int) -> bool:
        """Whether ``counted`` more tokens keep ``used`` within the budget (``can_add``)."""
        return used + self.calibration.scale(counted) <= self.budget

    def near(self, used: int, warn_ratio: float) -> bool:
        """Whether ``used`` tokens reach the near-limit share of the budget."""
        return used >= warn_ratio * self.budget
