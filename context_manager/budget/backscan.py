"""The backwards scan behind ``trim()`` (see :mod:`context_manager.oneshot` for the rules).

It reads from the newest message back, so a one-shot trim does work proportional to what it
keeps: the system prompt, pins, the latest user turn and the groups that fit, plus a few messages
past the cut. What it cannot decide alone raises :class:`Fallback`, and ``trim`` takes the full
path (a filled manager), which has the exact errors.

Each rule is someone else's: records come from the door (``messages.chat_dicts.read_many``, else
``normalize``), costs from the counter (``count_message`` / ``message_costs``, or its
``message_bound``), group edges from :func:`~context_manager.messages.groups.joins_previous` (the
protocol's rule seen from two neighbours, as a backwards reader sees it) and the verdict from
``ToolProtocol.replay`` over what is kept, and the fit from :mod:`~context_manager.budget.fit`
(the manager's rule: the scan only answers its :class:`~context_manager.budget.fit.Fits`
question, with a bisection of prefix sums over the newest messages).

The data structure makes it fast: messages are read in blocks, newest first, into flat lists
(records, counts, and the window's prefix sums). A block is one loop per rule (``read_many``,
``message_costs``), with no Python call per message beyond those, and the cut is a ``bisect``
of the sums and a step back to its group's start. A block holds about what the room left admits
at the mean count so far (7/8 of it), plus a margin, and at most as many messages as the lists
hold: the scan reads a few messages past its cut, never more than about twice what it keeps.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Sequence
from itertools import accumulate, islice
from typing import Any, cast

from ..counting import TokenCounter
from ..counting.fastlane import lane_for
from ..counting.message_cache import CounterCounts, MessageCountCache
from ..errors import InvalidMessageError
from ..messages import Message, normalize
from ..messages.chat_dicts import read_many
from ..messages.groups import ToolProtocol, joins_previous
from ..providers import ProviderRules
from .compacted import newest_sendable, sendable
from .fit import merged, overflows, protect, window
from .pins import pin_indices
from .restrict import restrict
from .spanroles import SpanRoles, lead_span

__all__ = ["BackwardScan", "Fallback"]

_SYSTEM_ROLES = ("system", "developer")
#: Dict roles that never normalize to a user turn (aliases included): skipped unread.
_NOT_USER = frozenset({"assistant", "system", "developer", "tool", "ai", "model", "function"})
#: Messages in the first block, and the margin added to a block's estimate: (cheap counts,
#: exact counts of a real tokenizer, where reading past the cut costs a tokenization each).
_CHEAP = (16, 4)
_DEAR = (4, 1)

Span = tuple[int, int]  # a group, or a run of groups, as message indices [start, end)


class Fallback(Exception):
    """The scan cannot decide alone (overflow, invalid input): take the full path."""


class _Tighten(Exception):
    """A budget check failed on upper bounds: count exactly what was read and select again."""


class BackwardScan:
    """One backwards scan: records and counts are read lazily.

    With a counter that offers a cheap upper bound (:meth:`TokenCounter.message_bound`, e.g.
    tiktoken's UTF-8 bytes) every message is first charged its bound: a "fits" decided on bounds
    holds for the exact counts too, so when nothing had to be cut on budget the answer is exact
    and nothing was tokenized. The first budget check that fails on bounds has the scan count
    exactly and select again. ``cache``: the caller's ``MessageCountCache``, or None (the
    estimator skips it for the lane's shapes: recounting them costs less than a lookup).

    The lists hang from ``top`` (the history's end): position ``p`` is message ``top - 1 - p``.
    The window starts at position ``off``; ``sums[q]`` is its cost up to position ``off + q``
    (pinned messages cost nothing there: pins are paid for apart). Group edges are asked of
    :meth:`joins` only where they matter: at the cut, and for the groups read on their own.
    """

    __slots__ = (
        "block",
        "bound",
        "cache",
        "costs",
        "costs_of",
        "count",
        "jn",
        "lane",
        "lo",
        "loose",
        "messages",
        "native",
        "off",
        "pinned",
        "records",
        "recs",
        "sums",
        "toks",
        "top",
        "total",
    )

    def __init__(
        self, messages: Sequence[Any], counter: TokenCounter, cache: MessageCountCache | None
    ) -> None:
        self.messages = messages
        self.count = counter.count_message
        self.lane = lane_for(counter)
        #: Counts of a block of the lane's records at once (the estimator's one implementation).
        self.costs_of = counter.message_costs
        self.bound = counter.message_bound()
        self.cache: CounterCounts | None = None if cache is None else cache.counts_for(counter)
        cheap = self.lane is not None or self.bound is not None
        self.block = _CHEAP if cheap else _DEAR
        # Messages read one at a time, by index.
        self.recs: dict[int, Message] = {}
        self.toks: dict[int, int] = {}
        self.jn: dict[int, bool] = {}
        #: Indices read one at a time under the bound (counted exactly on a retry).
        self.loose: list[int] = []
        self.lo = 0
        self.native = -1  # the latest native compaction read: the floor (budget/compacted.py)
        # The window lists (see the class docstring).
        self.top = 0
        self.records: list[Message] = []
        self.costs: list[int] = []
        self.sums: list[int] = []
        self.total = 0  # the tokens of the lists, pins included (their mean sizes blocks)
        self.off = -1  # the window's first position in the lists (-1: no window yet)
        self.pinned: set[int] = set()

    # -- reading one message ------------------------------------------------------------------
    def rec(self, i: int) -> Message:
        p = self.top - 1 - i
        records = self.records
        if p >= 0 and (
            p < len(records) or (p < 2 * len(records) + self.block[0] and self._cover(i))
        ):
            return records[p]
        rec = self.recs.get(i)
        if rec is None:
            rec = self._read(i)
        return rec

    def tok(self, i: int) -> int:
        self.rec(i)  # read into the lists, or on its own
        p = self.top - 1 - i
        return self.costs[p] if 0 <= p < len(self.costs) else self.toks[i]

    def _cover(self, i: int) -> bool:
        """Read the lists down to message ``i`` (near their end, so at most doubling them):
        False when a message above it cannot be read (``i`` is then read on its own)."""
        low = self.top - len(self.records)
        try:
            self._extend(0, max(low - i, self.block[0]))
        except InvalidMessageError:
            return False  # the message just below the lists: only the window may need it
        return self.top - len(self.records) <= i

    def _read(self, i: int) -> Message:
        rec, self.toks[i] = self._load(i, self.messages[i])
        self.recs[i] = rec
        if self.bound is not None:
            self.loose.append(i)
        return rec

    def _load(self, i: int, message: Any) -> tuple[Message, int]:
        """Message ``i``'s record and count: the lane's, its bound, or counted exactly."""
        lane = self.lane
        got = lane(message) if lane is not None else None
        if got is not None:
            return got  # a common shape, counted faster than a lookup
        if self.bound is not None:  # charged its bound: nothing tokenized, nothing looked up
            rec = self.recs.get(i) or normalize(message, i)
            return rec, self.bound(rec)
        return self._counted(i, self.recs.get(i))

    def _counted(self, i: int, rec: Message | None) -> tuple[Message, int]:
        """Message ``i``'s record (``rec`` when already read) and exact count, through the
        caller's cache when there is one."""
        message = self.messages[i]
        if self.cache is not None:
            return self.cache.counted(message, i, rec, self.count)
        if rec is None:
            rec = normalize(message, i)
        return rec, self.count(rec)

    def joins(self, i: int) -> bool:
        """Message ``i`` belongs to the group before it (in a protocol-valid stream): the
        protocol's rule read from the two messages (the one before only when it matters)."""
        if i <= self.lo:
            return False
        joined = self.jn.get(i)
        if joined is None:
            rec = self.rec(i)
            answer = joins_previous(None, rec)
            if answer is None:
                answer = bool(joins_previous(self.rec(i - 1), rec))
            joined = self.jn[i] = answer
        return joined

    def group(self, i: int, n: int) -> Span:
        """The group holding message ``i``."""
        start = i
        while start > self.lo and self.joins(start):
            start -= 1
        end = i + 1
        while end < n and self.joins(end):
            end += 1
        return start, end

    def group_before(self, i: int) -> int:
        return self.group(i - 1, len(self.messages))[0]

    def tokens(self, span: Span) -> int:
        tok = self.tok
        return sum(tok(i) for i in range(*span))

    # -- reading the window -------------------------------------------------------------------
    def _lists_from(self, top: int) -> None:
        """Start the lists at ``top`` (empty) and no window."""
        self.top = top
        self.records, self.costs, self.sums = [], [], []
        self.total = 0
        self.off = -1
        self.pinned = set()

    def _window_from(self, hi: int, pinned: dict[int, int]) -> None:
        """Open the window at ``hi`` (its sums start there); ``pinned`` groups cost nothing in
        the sums (they are paid for apart)."""
        if len(self.records) < self.top - hi:  # the lists stop above it: start them again there
            self._lists_from(hi)
        self.off = off = self.top - hi
        self.pinned = pins = {i for start, end in pinned.items() for i in range(start, end)}
        window = self.costs[off:]
        if pins:
            window = [0 if self.top - 1 - p in pins else t for p, t in enumerate(window, off)]
        self.sums = list(accumulate(window))

    def _extend(self, stop: int, size: int) -> None:
        """Read the next ``size`` messages below the lists (not below ``stop``; the caller
        checked there is one). A message that cannot be read ends the block just above it;
        when it is the block's first, its error is raised (whoever needs it gets the error:
        the full path reports it)."""
        records, costs = self.records, self.costs
        end = self.top - len(records)
        start = max(stop, end - size)
        block = self.messages[start:end][::-1]  # newest first
        got = read_many(block) if self.lane is not None else [None] * len(block)
        if all(got):  # the lane's shapes only: records, then their counts, a loop each
            recs = cast(list[Message], got)
            counts = self.costs_of(recs)
        else:  # one at a time: another shape, a bound, or an exact count
            recs, counts = [], []
            load, count = self._load, self.count
            for i, message, rec in zip(range(end - 1, start - 1, -1), block, got, strict=True):
                try:
                    rec, tokens = (rec, count(rec)) if rec is not None else load(i, message)
                except InvalidMessageError:
                    if not recs:
                        raise
                    break  # read up to here: the walk raises it only if it gets there
                recs.append(rec)
                counts.append(tokens)
            start = end - len(recs)
        records += recs
        costs += counts
        self.total += sum(counts)
        if self.off >= 0:  # a window is open: its sums grow too
            window = counts
            if self.pinned:
                pins = self.pinned
                window = [
                    0 if i in pins else t
                    for i, t in zip(range(end - 1, start - 1, -1), counts, strict=True)
                ]
            sums = self.sums
            sums += islice(accumulate(window, initial=sums[-1] if sums else 0), 1, None)

    def start(self, room: int, cap: int | None, stop: int) -> int:
        """The sliding window's start: the smallest group start ``c`` in ``[stop, top]`` whose
        groups up to ``top`` fit ``room`` and ``cap`` (a pinned group costs no tokens there but
        counts as messages); ``top`` when not even the newest group fits.

        The same answer as bisecting the manager's prefix sums: the longest run of groups
        ending at ``top``. Message ``stop`` starts a group whatever it is (the region's floor).
        """
        hi = self.top - self.off
        limit = hi - stop  # positions in the region
        most = limit if cap is None else min(limit, cap)
        sums, joins = self.sums, self.joins
        first, margin = self.block
        while True:
            read = len(sums)
            fit = bisect_right(sums, room)  # positions whose running cost fits the room
            if fit < read or read >= most:
                g = min(fit, most) - 1  # the oldest message that fits: back to its group start
                while 0 <= g < limit - 1 and joins(hi - 1 - g):
                    g -= 1
                if self.bound is not None and self._cut_on_room(g, room, limit):
                    raise _Tighten  # on bounds: the exact counts may still fit
                return hi - 1 - g if g >= 0 else hi
            # 7/8 of what fits at the mean count so far, plus a margin, at most doubling the
            # lists (older messages often cost more than the newest: aiming just short of the
            # cut and then reading a small block reads fewer messages past it than aiming at
            # it); +1: the neighbour that settles the last group's edge.
            lists = len(self.costs) or first
            left = max(room - (sums[-1] if sums else 0), 0)
            size = max(min(left * lists * 7 // (8 * max(self.total, 1)) + margin, lists), margin)
            self._extend(stop, min(size, most - read + 1))

    def _cut_on_room(self, g: int, room: int, limit: int) -> bool:
        """Whether the group after a cut at position ``g`` failed on tokens (not only on the
        message cap). Unread, it may have: answer True (the exact pass decides)."""
        sums, hi = self.sums, self.top - self.off
        nxt = g + 1  # the next group's start: its running cost is the group's verdict
        if nxt >= limit:
            return False  # nothing past the cut: everything fits
        while nxt < len(sums) and nxt < limit - 1 and self.joins(hi - 1 - nxt):
            nxt += 1
        return nxt >= len(sums) or sums[nxt] > room

    # -- the protocol -------------------------------------------------------------------------
    def _run(self, a: int, b: int) -> list[Message]:
        """The records of ``[a, b)`` in order: sliced from the window lists where they hold
        them, else read one by one."""
        top = self.top
        low = top - len(self.records)
        mid = max(a, low) if low < b <= top else b  # [mid, b): in the window lists
        rec = self.rec
        recs = [rec(i) for i in range(a, mid)]
        if mid < b:
            recs += self.records[top - b : top - mid][::-1]
        return recs

    def check(self, runs: list[Span]) -> bool:
        """Replay the tool-call protocol over each run, afresh (a run read from the history
        starts with nothing pending); its errors propagate (the full path reports them).
        Returns True when calls still await results at the end of the last run (an open
        group).

        The protocol's groups are the scan's: on a stream the protocol accepts from a group
        start, :func:`~context_manager.messages.groups.joins_previous` gives what
        :meth:`ToolProtocol.check` returns, message for message (property-tested), so only the
        replay's acceptance needs checking, not its groups."""
        protocol = ToolProtocol()
        for a, b in runs:
            protocol = ToolProtocol()
            protocol.replay(self._run(a, b), a)
        return bool(protocol.pending)

    def latest_user(self, n: int, rules: ProviderRules | None = None) -> int | None:
        """The latest user turn, or a native compaction after it (it stands for it)."""
        messages, rec = self.messages, self.rec
        for i in range(n - 1, self.lo - 1, -1):
            message = messages[i]
            role = message.get("role") if type(message) is dict else None
            if type(role) is str and role in _NOT_USER and type(message.get("content")) is not list:
                continue  # no user turn nor compaction (blocks may hold one), valid or not
            if rec(i).is_user_turn or sendable(rec(i), rules):
                return i
        return None

    # -- selecting ----------------------------------------------------------------------------
    def select(
        self,
        room: int,
        cap: int | None,
        pins: Collection[int],
        rules: ProviderRules | None,
    ) -> list[Any]:
        """``room``: the budget minus reply priming and tool definitions."""
        try:
            return self._select(room, cap, pins, rules)
        except _Tighten:
            pass
        recs, toks = self.recs, self.toks
        self.bound = None
        self.block = _DEAR
        for i in self.loose:
            toks[i] = self._counted(i, recs[i])[1]
        self.loose.clear()
        return self._select(room, cap, pins, rules)

    def _select(
        self,
        room: int,
        cap: int | None,
        pins: Collection[int],
        rules: ProviderRules | None,
    ) -> list[Any]:
        room_given, messages = room, self.messages
        self.lo = 0
        n = len(messages)
        self._lists_from(n)
        out: list[Any] = []
        if n and self.rec(0).role in _SYSTEM_ROLES:
            self.lo = 1
            room -= self.tok(0)
            out.append(messages[0])
        lo = self.lo
        user = self.latest_user(n, rules)  # or the latest native compaction after it
        if user is not None and sendable(self.rec(user), rules):
            self.native = user
        self.lo = max(lo, self.native)  # nothing before it is sent but pins
        # The newest group: open (calls awaiting results) means it is held but never sent.
        hi = n
        if n > lo:
            tail = self.group(n - 1, n)
            if self.check([tail]):
                hi = tail[0]
        # Pinned groups: always sent (when complete), cost budget, never part of the window.
        pinned: dict[int, int] = {}
        for p in pin_indices(pins, lo, n):
            start, end = self.group(p, n)
            if start < hi:
                pinned[start] = end
        for span in pinned.items():
            room -= self.tokens(span)
        # The latest user turn: kept whatever the window (unless pinned or still open).
        protected: Span | None = None
        if user is not None:
            span = self.group(user, n)
            if span[0] < hi and span[0] not in pinned:
                protected = span
        p_tokens = self.tokens(protected) if protected else 0
        # With a provider, the newest complete exchange is protected too (plan_context).
        newest: Span | None = None
        if rules is not None and hi > lo:
            span = self.group(hi - 1, n)
            if span != protected and span[0] not in pinned:
                newest = span
        n_tokens = self.tokens(newest) if newest else 0
        lead = lead_span(
            rules,
            protected,
            pinned,
            self.lo,
            self.rec,
            self.group_before,
            lambda i: self.group(i, n),
        )
        lead_tokens = self.tokens(lead) if lead else 0  # no pin inside: a pin leaves it None
        if overflows(p_tokens + lead_tokens, n_tokens, room):
            if self.bound is not None:
                raise _Tighten  # on bounds: the exact counts may still fit
            raise Fallback  # overflow: the full path raises it with the exact figures
        self._window_from(hi, pinned)
        p_messages = protected[1] - protected[0] if protected else 0

        def sliding(r: int) -> tuple[int, bool]:
            return window(self, r, cap, self.lo, protected, p_tokens, p_messages)

        parts: list[tuple[Span, int]] = []
        if lead is not None:
            parts.append((lead, lead_tokens))
        if newest is not None:
            parts.append((newest, n_tokens))
        (start, apart), added = protect(
            sliding, lambda chosen, at: chosen[0] <= at, room, [(a, t) for (a, _), t in parts]
        )
        spans = [(start, hi), *pinned.items()]
        if apart and protected is not None:
            spans.append(protected)
        spans += [span for span, _ in parts if span[0] in added]
        low = max(start, self.lo)  # a compaction before the latest user turn: the floor
        k = newest_sendable(self.records[self.off : self.top - low], rules)  # newest first
        if k >= 0 and hi - 1 - k > self.lo:
            self.native = hi - 1 - k
            return self._select(room_given, cap, pins, rules)
        runs = merged(spans)
        self.check(runs)
        if rules is not None:
            runs = self._restrict(rules, runs, protected, newest, pinned)
        return out + self._messages(runs)

    def _restrict(
        self,
        rules: ProviderRules,
        runs: list[Span],
        protected: Span | None,
        newest: Span | None,
        pinned: dict[int, int],
    ) -> list[Span]:
        """The provider's rules over the kept groups: ids are consecutive where groups touch."""
        kept: list[Span] = []
        for a, b in runs:
            starts = [i for i in range(a, b) if i == a or not self.joins(i)]
            kept += zip(starts, [*starts[1:], b], strict=True)
        ids: list[int] = []
        g = -2
        last = -1
        for start, end in kept:
            g += 1 if start == last else 2
            ids.append(g)
            last = end
        by_id = dict(zip(ids, kept, strict=True))
        keep = frozenset(
            ids[k]
            for k, span in enumerate(kept)
            if span in (protected, newest) or span[0] in pinned or span[0] == self.native
        )
        roles, foreign = SpanRoles(self.rec, by_id), any(self.rec(a).compaction for a, _ in kept)
        starts, stops, _ = restrict(rules, roles, ids, [x + 1 for x in ids], keep, foreign)
        return [by_id[x] for a, b in zip(starts, stops, strict=True) for x in range(a, b)]

    def _messages(self, kept: list[Span]) -> list[Any]:
        messages = self.messages
        out: list[Any] = []
        for start, end in merged(kept):
            out += messages[start:end]
        return out
