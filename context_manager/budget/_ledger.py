"""The budget core: every held message, counted once, with prefix sums over groups.

All strategies read this one structure. Messages live in flat parallel lists (caller's object,
normalized record, tokens); groups (see ``groups.py``) are contiguous runs of those lists with
per-group totals and a running prefix sum of *trimmable* tokens (pinned groups add 0), so "the
longest recent run that fits" is one ``bisect``. Per-priority levels keep the same prefix sums per
priority, so priority trimming walks levels instead of sorting the history.

Eviction (FIFO) is logical: ``floor`` moves forward and groups below it are gone unless pinned,
holding the latest user message, or (under a provider whose context opens with a user turn) the
turn that message's group must be sent from (``fit.opening``); the lists are physically
compacted only when more than half of them is dead, so adds stay O(1) amortized.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from copy import copy
from itertools import accumulate, chain, compress
from operator import mul, not_
from typing import Any

from ..messages import Message
from ..providers import ProviderRules
from .fit import merged
from .gathered import LastGather
from .level import Level, file_groups
from .ranks import MessageRanks
from .restrict import opens_context

_COMPACT_MIN = 4096


class Ledger:
    """Flat storage and bookkeeping; it decides nothing about what to drop."""

    def __init__(self, rules: ProviderRules | None = None) -> None:
        #: A provider's rules if its context opens with a user turn: FIFO then keeps kept_lead.
        self.rules = rules if rules is not None and rules.first_user else None
        self.originals: list[Any] = []
        self.records: list[Message] = []
        self.tokens: list[int] = []
        self.seq: list[int] = []  # absolute position of each message since the last clear
        self.next_seq = 0
        self.group_start: list[int] = []
        self.group_tokens: list[int] = []
        self.group_pinned: list[bool] = []
        self.group_priority: list[int] = []
        self.cum: list[int] = [0]
        #: Per-priority levels of groups ``[0, leveled)``; see :attr:`levels`.
        self._levels: dict[int, Level] = {}
        self.leveled = 0
        self.pinned_groups: list[int] = []
        self.pinned_total = 0
        self.turns: list[int] = []  # groups holding a user turn, ascending (retention cuts)
        #: Groups starting with a user turn or a native compaction: those that may open a context.
        self.openers: list[int] = []
        self.floor = 0
        self.protected = -1
        self.kept_protected = -1
        #: The group a kept latest turn is sent from, held below the floor (``first_user``).
        self.kept_lead = -1
        #: Group of the latest message carrying a native compaction (-1: none); what precedes
        #: it is not sent (``compacted.py``).
        self.native = -1
        self.open = False
        self.total = 0
        #: Held messages and tokens per role as of the last tally; see :meth:`_tally`.
        self.role_counts: dict[str, int] = {}
        self.role_tokens: dict[str, int] = {}
        self.tallied = 0
        self.untallied: list[int] = []  # groups dropped since the last tally
        self.ranks = MessageRanks()  # built on first scattered priority cut (see scattered.py)
        #: That cut's last context, built on first gather; dropped when messages move or go.
        self.gathered: LastGather | None = None

    # -- reading ---------------------------------------------------------------------------
    @property
    def group_count(self) -> int:
        return len(self.group_start)

    @property
    def complete(self) -> int:
        """Number of leading groups that are closed (an open tail group is never sent)."""
        return len(self.group_start) - (1 if self.open else 0)

    @property
    def message_count(self) -> int:
        return len(self.originals)

    def group_end(self, g: int) -> int:
        return self.group_start[g + 1] if g + 1 < len(self.group_start) else len(self.originals)

    def trimmable(self, lo: int, hi: int) -> int:
        """Trimmable tokens of groups ``[lo, hi)``."""
        cum = self.cum
        return cum[hi] - cum[lo]

    def start_fitting(self, room: int, lo: int, hi: int) -> int:
        """Smallest ``s`` in ``[lo, hi]`` whose groups ``[s, hi)`` fit in ``room`` tokens."""
        cum = self.cum
        return bisect_left(cum, cum[hi] - room, lo, hi)

    def start_within_messages(self, max_messages: int, lo: int, hi: int) -> int:
        """Smallest group start so that groups ``[s, hi)`` hold at most ``max_messages``."""
        end = self.group_start[hi] if hi < len(self.group_start) else len(self.originals)
        return bisect_left(self.group_start, end - max_messages, lo, hi)

    def messages_in(self, starts: list[int], stops: list[int]) -> list[Any]:
        """The caller's messages of the group runs ``[starts[i], stops[i])``, in order."""
        originals, group_start = self.originals, self.group_start
        if len(starts) == 1:  # the usual answer: one slice, copied once
            return originals[group_start[starts[0]] : self.group_end(stops[0] - 1)]
        if len(starts) <= 16:
            out: list[Any] = []
            for a, b in zip(starts, stops, strict=True):
                out.extend(originals[group_start[a] : self.group_end(b - 1)])
            return out
        # Run ends are group starts, the last maybe the history's end (group_start not copied).
        firsts = list(map(group_start.__getitem__, starts))
        lasts = list(map(group_start.__getitem__, stops[:-1]))
        last = stops[-1]
        lasts.append(group_start[last] if last < len(group_start) else len(originals))
        size = sum(lasts) - sum(firsts)
        if size == len(starts):  # one message a run (a scattered selection of plain turns)
            return list(map(originals.__getitem__, firsts))
        if size >= 4 * len(starts):
            # Long runs: one slice each (C memcpy), one Python step per run.
            out = []
            for a, b in zip(firsts, lasts, strict=True):
                out += originals[a:b]
            return out
        # Short runs (a scattered priority selection): expand in C, message by message, with no
        # container allocated per run (int ranges are not tracked by the cyclic GC).
        flat = chain.from_iterable(map(range, firsts, lasts))
        return list(map(originals.__getitem__, flat))

    def with_pins(self, starts: list[int], stops: list[int]) -> tuple[list[int], list[int]]:
        """Runs ``[starts[i], stops[i])`` with the complete pinned groups merged in, in order."""
        complete = self.complete
        pins = [g for g in self.pinned_groups if g < complete]
        if not pins:
            return starts, stops
        runs = merged([*zip(starts, stops, strict=True), *((g, g + 1) for g in pins)])
        return [a for a, _ in runs], [b for _, b in runs]

    def held_rows(self) -> Iterator[tuple[int, Any, Message, int, bool, int]]:
        """``(index, message, record, tokens, pinned, priority)`` of every held message."""
        seq, originals, records, tokens = self.seq, self.originals, self.records, self.tokens
        for g in self.held_groups():
            pinned, priority = self.group_pinned[g], self.group_priority[g]
            for i in range(self.group_start[g], self.group_end(g)):
                yield seq[i], originals[i], records[i], tokens[i], pinned, priority

    @property
    def levels(self) -> dict[int, Level]:
        """Per-priority groups and prefix sums, brought up to date when read.

        Only the priority strategy reads them, so an add does not pay for them: the groups
        added since the last read are filed here, in order.
        """
        n = len(self.group_start)
        if self.leveled < n:
            file_groups(
                self._levels, self.leveled, n, self.group_pinned, self.group_priority, self.cum
            )
            self.leveled = n
        return self._levels

    def with_sums(self, cum: list[int], previous: Ledger | None = None, since: int = 0) -> Ledger:
        """The ledger as a strategy sees it when groups cost other than what was counted
        (pruned tool results, the newest exchange cut to fit): ``cum`` as its trimmable sums.

        A read-only copy sharing every list but ``cum`` (O(attributes)). Its priority levels
        are filed from ``cum`` on first read, or taken over from ``previous`` (such a view of
        this ledger, not read afterwards) below the first group whose sum changed (``since``)
        and below its last group (which may have grown). Never write to the copy.
        """
        if cum is self.cum:
            return self
        view = copy(self)
        view.cum = cum
        view._levels, view.leveled = {}, 0
        keep = min(since, previous.leveled - 1, len(self.group_start)) if previous else 0
        if previous is not None and keep > 0:
            levels = view._levels = previous._levels
            for level in levels.values():
                k = bisect_left(level.groups, keep)
                del level.groups[k:]
                del level.cum[k + 1 :]
            view.leveled = keep
        return view

    def held_count(self) -> int:
        """Messages held."""
        self._tally()
        return sum(self.role_counts.values())

    def _tally(self) -> None:
        """Count the roles of the positions added since the last tally (adds and drops do not
        touch the per-role dicts): every position added since, dropped ones too, then the groups
        dropped since taken out. A compaction leaves only held messages and starts over."""
        records, tokens = self.records, self.tokens
        counts, role_tokens = self.role_counts, self.role_tokens
        for i in range(self.tallied, len(records)):
            role = records[i].role
            counts[role] = counts.get(role, 0) + 1
            role_tokens[role] = role_tokens.get(role, 0) + tokens[i]
        self.tallied = len(records)
        for g in self.untallied:
            for i in range(self.group_start[g], self.group_end(g)):
                role = records[i].role
                counts[role] -= 1
                role_tokens[role] -= tokens[i]
        self.untallied.clear()

    def role_totals(self) -> tuple[dict[str, int], dict[str, int]]:
        """Messages and tokens held per role (``developer`` counted as ``system``)."""
        self._tally()
        counts = {"system": 0, "user": 0, "assistant": 0, "tool": 0}
        tokens = dict.fromkeys(counts, 0)
        for role, n in self.role_counts.items():
            key = "system" if role == "developer" else role
            counts[key] = counts.get(key, 0) + n
            tokens[key] = tokens.get(key, 0) + self.role_tokens[role]
        return counts, tokens

    def first_role(self, g: int) -> str:
        """Role a provider sees for group ``g``'s first message (tool results are user turns)."""
        role = self.records[self.group_start[g]].role
        return "user" if role == "tool" else role

    def last_role(self, g: int) -> str:
        role = self.records[self.group_end(g) - 1].role
        return "user" if role == "tool" else role

    def has_results(self, g: int) -> bool:
        """Whether group ``g`` ends with a tool result (a complete tool exchange)."""
        return bool(self.records[self.group_end(g) - 1].result_ids)

    def first_is_user_turn(self, g: int) -> bool:
        return self.records[self.group_start[g]].is_user_turn

    def touches(self, g: int, h: int) -> bool:  # by history position: see GroupRoles.touches
        return self.seq[self.group_end(g) - 1] + 1 == self.seq[self.group_start[h]]

    def compaction(self, g: int) -> str:
        """The maker of the native compaction group ``g`` starts with, else ``""``."""
        return self.records[self.group_start[g]].compaction

    def last_call(self) -> Any:
        """The newest held message that issued tool calls (None if there is none)."""
        for i in range(len(self.records) - 1, -1, -1):
            if self.records[i].tool_calls and self.originals[i] is not None:
                return self.originals[i]
        return None

    def message_count_in(self, starts: list[int], stops: list[int]) -> int:
        group_start, n = self.group_start, len(self.originals)
        ends = (group_start[b] if b < len(group_start) else n for b in stops)
        return sum(ends) - sum(group_start[a] for a in starts)

    def held_groups(self) -> Iterator[int]:
        """Every group still held, in order (retained groups below the floor first)."""
        yield from self._held_below()
        yield from range(self.floor, len(self.group_start))

    def _held_below(self) -> list[int]:
        """The groups held below the floor, in order: pinned ones and a kept latest turn."""
        pins = self.pinned_groups
        below = pins[: bisect_left(pins, self.floor)]
        kept = [g for g in (self.kept_lead, self.kept_protected) if 0 <= g < self.floor]
        return sorted([*below, *kept]) if kept else below

    def held_originals(self) -> list[Any]:
        """The caller's messages still held: groups below the floor, then one slice (C speed)."""
        originals, group_start = self.originals, self.group_start
        out = [m for g in self._held_below() for m in originals[group_start[g] : self.group_end(g)]]
        start = group_start[self.floor] if self.floor < len(group_start) else len(originals)
        return out + originals[start:]

    def pinned_complete_tokens(self) -> int:
        last = len(self.group_start) - 1
        if self.open and last >= 0 and self.group_pinned[last]:
            return self.pinned_total - self.group_tokens[last]
        return self.pinned_total

    def protected_group(self) -> int:
        """The complete, unpinned group holding the latest user message, or -1."""
        p = self.protected
        if p < 0 or p >= self.complete or self.group_pinned[p]:
            return -1
        return p

    # -- writing ---------------------------------------------------------------------------
    def append(
        self, original: Any, rec: Message, tokens: int, priority: int, pinned: bool, joins: bool
    ) -> Sequence[Any]:
        """Store one message; returns messages evicted as a side effect (a released old turn).

        Runs on every add: a new unpinned group is written inline, nothing is allocated for the
        common case (the empty tuple is shared), and what only some readers need (per-role
        tallies, priority levels) is left for them to catch up on.
        """
        originals = self.originals
        originals.append(original)
        self.records.append(rec)
        turn = rec.is_user_turn
        self.tokens.append(tokens)
        self.seq.append(self.next_seq)
        self.next_seq += 1
        self.total += tokens
        starts = self.group_start
        g = len(starts)
        if joins:
            g -= 1
            self._grow_last(tokens, priority, pinned)
        else:
            starts.append(len(originals) - 1)
            self.group_tokens.append(tokens)
            self.group_pinned.append(pinned)
            self.group_priority.append(priority)
            cum = self.cum
            if pinned:
                cum.append(cum[-1])
                self.pinned_groups.append(g)
                self.pinned_total += tokens
            else:
                cum.append(cum[-1] + tokens)
            if turn or rec.compaction:
                self.openers.append(g)
        if rec.compaction:
            self.native = g
        if not turn:
            return ()
        released: Sequence[Any] = ()
        kept = self.kept_protected
        if kept >= 0 and kept != g:
            self.kept_protected = -1
            rules = self.rules  # the new turn rides on a result: sent from the kept one?
            if joins and rules is not None and opens_context(rules, self.records[starts[kept]]):
                self.kept_lead = kept
            else:
                released = self._drop_run(kept, kept + 1)
        if not joins and self.kept_lead >= 0:  # this turn opens a context itself
            released = [*released, *self._drop_run(self.kept_lead, self.kept_lead + 1)]
            self.kept_lead = -1
        self.protected = g
        if not self.turns or self.turns[-1] != g:
            self.turns.append(g)
        return released

    def _grow_last(self, tokens: int, priority: int, pinned: bool) -> None:
        g = len(self.group_start) - 1
        self.group_tokens[g] += tokens
        if self.group_pinned[g]:
            self.pinned_total += tokens
            return
        if pinned:
            self._pin_last()
            return
        self.cum[-1] += tokens
        raised = priority > self.group_priority[g]  # a group's priority is its highest member's
        if g >= self.leveled:  # not filed in a level yet
            if raised:
                self.group_priority[g] = priority
            return
        level = self._levels[self.group_priority[g]]
        level.cum[-1] += tokens
        if raised:
            level.groups.pop()
            level.cum.pop()
            self.group_priority[g] = priority
            self.leveled = g  # filed again, under its new priority, on the next read

    def _pin_last(self) -> None:
        g = len(self.group_start) - 1
        if g < self.leveled:
            level = self._levels[self.group_priority[g]]
            level.groups.pop()
            level.cum.pop()
        self.cum[-1] = self.cum[-2]
        self.group_pinned[g] = True
        self.pinned_groups.append(g)
        self.pinned_total += self.group_tokens[g]

    def _drop_run(self, lo: int, hi: int) -> list[Any]:
        """Drop groups ``[lo, hi)`` (none pinned or kept); returns the caller's messages.

        The caller's messages are released now, not at the next compaction (up to 4,096 groups
        later): what a FIFO manager keeps alive is what it holds. Records stay (pruning and the
        protocol read them by position); their slots are freed at compaction. Slices and C-level
        sums, so a cut of many groups (a compaction, a retention cut) costs little more than
        one of a single group.
        """
        starts, originals, cum = self.group_start, self.originals, self.cum
        start = starts[lo]
        end = starts[hi] if hi < len(starts) else len(originals)
        self.total -= cum[hi] - cum[lo]  # no group of a run is pinned: all its tokens count
        self.untallied += range(lo, hi)  # taken off the per-role tallies when read
        self.gathered = None
        gone = originals[start:end]
        originals[start:end] = [None] * (end - start)
        return gone

    def group_of_seq(self, position: int) -> int:
        """Index of the group holding absolute message ``position`` (or the next one held)."""
        flat = bisect_left(self.seq, position)
        return (
            bisect_right(self.group_start, flat) - 1
            if flat < len(self.seq)
            else len(self.group_start)
        )

    def _staying(self, new_floor: int, lead: int = -1) -> tuple[list[int], bool, bool]:
        """Groups in ``[floor, new_floor)`` a move of the floor keeps (pinned ones, the latest
        user turn, ``lead``), and whether the latest turn and ``lead`` are among them."""
        floor, pins, protected = self.floor, self.pinned_groups, self.protected
        stay = pins[bisect_left(pins, floor) : bisect_left(pins, new_floor)] if pins else []
        keep_turn = floor <= protected < new_floor and not self.group_pinned[protected]
        keep_lead = self.rules is not None and floor <= lead < min(new_floor, protected)
        extra = [g for g, kept in ((protected, keep_turn), (lead, keep_lead)) if kept]
        return (sorted([*stay, *extra]) if extra else stay), keep_turn, keep_lead

    def held_after(self, new_floor: int) -> tuple[tuple[int, ...], int]:
        """History indices, with the floor at ``new_floor``, of the messages held below it and of
        its first message (or the next one): what a store's reader replays."""
        floor, seq, starts = max(new_floor, self.floor), self.seq, self.group_start
        groups = sorted({*self._held_below(), *self._staying(floor)[0]})
        below = tuple(seq[i] for g in groups for i in range(starts[g], self.group_end(g)))
        return below, seq[starts[floor]] if floor < len(starts) else self.next_seq

    def evict_before(self, new_floor: int, lead: int = -1) -> list[Any]:
        """Move the floor; groups passed over are dropped in runs, but those :meth:`_staying`."""
        floor = self.floor
        if new_floor <= floor:
            return []
        stay, keep_turn, keep_lead = self._staying(new_floor, lead)
        if keep_turn:
            self.kept_protected = self.protected
        if keep_lead:
            self.kept_lead = lead
        evicted: list[Any] = []
        lo = floor
        for g in stay:
            if lo < g:
                evicted += self._drop_run(lo, g)
            lo = g + 1
        if lo < new_floor:
            evicted += self._drop_run(lo, new_floor)
        self.floor = new_floor
        if new_floor >= _COMPACT_MIN and 2 * new_floor > len(self.group_start):
            self._compact()
        return evicted

    def _compact(self) -> None:
        """Physically forget evicted groups (amortized O(1) per add).

        Slices and C loops (``map``, ``compress``), not a Python step per group: a FIFO manager
        at steady state compacts every few thousand adds, and a per-group rebuild cost as much as
        the adds in between.
        """
        floor, n = self.floor, len(self.group_start)
        below = self._held_below()  # few: pins and the latest turn
        old_start, size = self.group_start, len(self.originals)
        tail = old_start[floor] if floor < n else size
        spans = [(old_start[g], self.group_end(g)) for g in below]
        spans.append((tail, size))
        for name in ("originals", "records", "tokens", "seq"):
            old = getattr(self, name)
            new: list[Any] = []
            for a, b in spans:
                new += old[a:b]
            setattr(self, name, new)
        starts: list[int] = []
        at = 0
        for a, b in spans[:-1]:
            starts.append(at)
            at += b - a
        starts += map((tail - at).__rsub__, old_start[floor:])  # each start, shifted down
        self.group_start = starts
        gtokens = self.group_tokens = _kept(self.group_tokens, below, floor)
        pinned = self.group_pinned = _kept(self.group_pinned, below, floor)
        self.group_priority = _kept(self.group_priority, below, floor)
        self.pinned_groups = list(compress(range(len(pinned)), pinned))
        trimmable = map(mul, gtokens, map(not_, pinned)) if self.pinned_groups else gtokens
        self.cum = list(accumulate(trimmable, initial=0))
        self.total = sum(gtokens)
        self.pinned_total = self.total - self.cum[-1]
        # Everything left is held, so the per-role tallies and the levels start over from
        # nothing and are rebuilt when read (a FIFO manager never reads the levels).
        self.role_counts, self.role_tokens, self.tallied = {}, {}, 0
        self.untallied.clear()
        self._levels, self.leveled = {}, 0
        self.ranks.reset()
        self.gathered = None
        remap, shift = {g: i for i, g in enumerate(below)}, floor - len(below)

        def moved(g: int) -> int:
            return g - shift if g >= floor else remap.get(g, -1)

        def moved_all(groups: list[int]) -> list[int]:  # ascending: those below, then a slice
            at = bisect_left(groups, floor)
            return [remap[g] for g in groups[:at] if g in remap] + [g - shift for g in groups[at:]]

        self.turns, self.openers = moved_all(self.turns), moved_all(self.openers)
        self.protected = moved(self.protected) if self.protected >= 0 else -1
        self.kept_protected = moved(self.kept_protected) if self.kept_protected >= 0 else -1
        self.kept_lead = moved(self.kept_lead) if self.kept_lead >= 0 else -1
        self.native = moved(self.native) if self.native >= floor else -1
        self.floor = len(below)


def _kept(values: list[Any], below: list[int], floor: int) -> list[Any]:
    """Per-group ``values`` of the groups kept: those ``below`` the floor, then one slice."""
    return [values[g] for g in below] + values[floor:]
