"""Runs of plain adds held back from the ledger until the next read, then written at once.

Between two reads a manager may take many adds (a history loaded message by message, a batch
import, ``extend``), and nothing looks at the history until the next read. For a plain
``{"role": "user" | "assistant", "content": str}`` dict counted by the estimator, while nobody
watches (no journal, subscriber or hook) and nothing needs deciding (no tool call open, no
FIFO cut that cannot wait, see ``deferred.py``), the add only has to check and count the
message. Writing it to the ledger cost about two thirds of the add: a normalized record, a dozen
list appends and the user-turn bookkeeping, through three Python calls.

So, from the :data:`RUN`-th add since the last read on, such an add keeps four values (message,
role, text, tokens: the text is read now, so a caller who edits the dict later does not change
what was counted) and :meth:`PendingAdds.drain` writes the run into the ledger with slices and
C-level ``extend``, ``accumulate`` and ``map``: the lists :meth:`Ledger.append` would have
built, message by message (property-tested). The first adds after a read take the usual path:
a chat backend adds a message or two between reads, and a run that short costs more to
hold and drain than to append.
"""

from __future__ import annotations

import gc
from itertools import accumulate, compress, repeat
from operator import eq
from typing import Any

from .._js import utf16_len
from ..counting import TokenCounter
from ..counting.estimate import CharEstimator
from ..messages import Message
from ._ledger import Ledger
from .deferred import DeferredCut

__all__ = ["RUN", "PendingAdds"]

#: Adds since the last read before plain ones are held (a read resets the count).
RUN = 8
#: A run this long or shorter is appended one by one: slicing a run and extending a dozen lists
#: cost about 3 us whatever its length, an append about 0.7 us.
_ONE_BY_ONE = 8
_NEVER = 1 << 60
_ROLES = ("user", "assistant")


class PendingAdds:
    """The held adds (``items``: four values each) and what deciding to hold one needs."""

    __slots__ = ("_base", "_cut", "_overhead", "_whole", "hold_from", "items", "run", "tokens")

    def __init__(
        self, counter: TokenCounter, evicts: int, cut: DeferredCut | None, repair: bool
    ) -> None:
        self.items: list[Any] = []
        self.tokens = 0  # theirs, in all
        cpt = getattr(counter, "chars_per_token", 0.5)
        plain = type(counter) is CharEstimator and cpt == int(cpt) and not repair
        #: Only with the estimator (whole chars a token), no repair (it may rewrite a stream)
        #: and a strategy whose add decides nothing (``evicts`` 0) or FIFO with a ``cut`` that
        #: can wait; else the add index never reaches ``hold_from``.
        self.run = self._base = RUN if plain and (evicts == 0 or cut is not None) else _NEVER
        self._whole = int(cpt)
        self._overhead = getattr(counter, "message_overhead", 0)
        self._cut = cut
        #: The add index from which adds are held: each read sets it ``run`` adds on.
        self.hold_from = self.run

    def hold(self, message: Any, ledger: Ledger, cap: int) -> int:
        """Hold ``message`` if it is plain and its add decides nothing now: its tokens, else -1.

        The caller checked that nobody watches and no tool call is open. A FIFO manager's add
        decides nothing while everything fits in ``cap`` or its cut may wait (``limit``: the
        held messages are unpinned one-message groups, so they grow ``cum[-1]`` by their tokens).
        """
        if type(message) is not dict or len(message) != 2:
            return -1
        role, text = message.get("role"), message.get("content")
        if type(role) is not str or type(text) is not str or role not in _ROLES:
            return -1
        chars = len(text) if text.isascii() else utf16_len(text)
        tokens = -(-chars // self._whole) + self._overhead  # CharEstimator.count_message's
        grown = self.tokens + tokens
        cut = self._cut
        if cut is not None and ledger.total + grown > cap:
            if ledger.cum[-1] + grown > cut.limit:
                return -1
            cut.due = True
        self.items += (message, role, text, tokens)
        self.tokens = grown
        return tokens

    def clear(self) -> None:
        self.items, self.tokens = [], 0

    def pause(self, paused: bool) -> None:
        """Hold no more (``use_pruning``: a FIFO manager with a pruned view evicts on every add,
        the pruned sums deciding), or again."""
        self.run = self.hold_from = _NEVER if paused and self._cut is not None else self._base

    def drain(self, ledger: Ledger) -> None:
        """Write every held add into ``ledger``, in order, as ``append`` would have.

        ``items`` is emptied last: a reader that takes no lock (``token_count``) sees adds
        still held until all of them are in the ledger, and waits on the lock meanwhile.
        """
        items = self.items
        if not items:
            return
        k = len(items) // 4
        # A record each, none of them garbage: a collection would walk the history for nothing.
        paused = k > _ONE_BY_ONE and gc.isenabled()
        if paused:
            gc.disable()
        try:
            if k > _ONE_BY_ONE:
                _write_run(ledger, items, k, self.tokens)
            else:
                append = ledger.append
                for at in range(0, len(items), 4):
                    original, role, text, tokens_ = items[at : at + 4]
                    append(original, Message(role, text), tokens_, 0, False, False)
        finally:
            self.items, self.tokens = [], 0
            if paused:
                gc.enable()


def _write_run(ledger: Ledger, items: list[Any], k: int, total: int) -> None:
    """``k`` held adds of ``total`` tokens appended at once: each its own unpinned group of
    priority 0."""
    roles, tokens = items[1::4], items[3::4]
    n, first = len(ledger.originals), len(ledger.group_start)
    ledger.originals += items[0::4]
    ledger.records += map(Message, roles, items[2::4])
    ledger.tokens += tokens
    ledger.seq += range(ledger.next_seq, ledger.next_seq + k)
    ledger.next_seq += k
    ledger.total += total
    ledger.group_start += range(n, n + k)
    ledger.group_tokens += tokens
    ledger.group_pinned += repeat(False, k)
    ledger.group_priority += repeat(0, k)
    cum = ledger.cum
    cum += accumulate(tokens, initial=cum.pop())
    turns = list(compress(range(first, first + k), map(eq, roles, repeat("user"))))
    if turns:  # a plain user message is always a user turn
        ledger.new_turns(turns)
