"""The backwards scan behind ``trim()`` (see :mod:`context_manager.oneshot` for the rules).

It reads records and counts lazily, by index, from the newest message back, so a one-shot trim
does work proportional to what it keeps: the system prompt, pins, the latest user turn and the
groups that fit, plus one group past the cut. Whatever it cannot decide alone raises
:class:`Fallback` and ``trim`` takes the full path (a filled manager), which has the exact errors.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ..counting import TokenCounter
from ..counting.fastlane import lane_for, read_fast
from ..counting.message_cache import MessageCountCache, plain_key, record_key
from ..messages import Message, normalize
from ..messages.groups import ToolProtocol
from ..messages.replay import is_glue, replay_chat
from ..providers import ProviderRules, restrict
from .pins import pin_indices

__all__ = ["BackwardScan", "Fallback"]

_SYSTEM_ROLES = ("system", "developer")
#: Dict roles that never normalize to a user turn (aliases included): skipped unread.
_NOT_USER = frozenset({"assistant", "system", "developer", "tool", "ai", "model", "function"})

Span = tuple[int, int]  # a group as message indices [start, end)


class Fallback(Exception):
    """The scan cannot decide alone (overflow, invalid input): take the full path."""


class _Tighten(Exception):
    """A budget check failed on upper bounds: count exactly what was read and select again."""


class BackwardScan:
    """One backwards scan: records and counts are read lazily, by index.

    With a counter that offers a cheap upper bound (:meth:`TokenCounter.message_bound`, e.g.
    tiktoken's UTF-8 bytes) the scan first charges every message its bound: a "fits" decided on
    bounds holds for the exact counts too, so when nothing had to be cut on budget the answer is
    exact and nothing was tokenized. The first budget check that fails on bounds counts exactly
    what was read so far (``loose``) and selects again from the start, exactly.
    """

    __slots__ = ("bound", "cache", "count", "lane", "lo", "loose", "messages", "recs", "toks")

    def __init__(
        self, messages: Sequence[Any], counter: TokenCounter, cache: MessageCountCache | None
    ) -> None:
        self.messages = messages
        self.count = counter.count_message
        self.lane = lane_for(counter)
        self.bound = counter.message_bound()
        self.cache = cache
        self.recs: dict[int, Message] = {}
        self.toks: dict[int, int] = {}
        #: Indices charged their bound (counted exactly, through the cache, on a retry).
        self.loose: list[int] = []
        self.lo = 0

    def rec(self, i: int) -> Message:
        rec = self.recs.get(i)
        if rec is None:
            rec = self._read(i)
        return rec

    def _read(self, i: int) -> Message:
        message = self.messages[i]
        lane = self.lane
        got = lane(message) if lane is not None else None
        if got is not None:
            self.recs[i], self.toks[i] = got  # a common shape, counted faster than a lookup
            return got[0]
        if self.bound is not None:  # charged its bound: nothing tokenized, nothing looked up
            rec = read_fast(message) or normalize(message, i)
            self.recs[i] = rec
            self.toks[i] = self.bound(rec)
            self.loose.append(i)
            return rec
        rec, self.toks[i] = self._counted(i, None)
        self.recs[i] = rec
        return rec

    def _counted(self, i: int, rec: Message | None) -> tuple[Message, int]:
        """Message ``i``'s record (``rec`` when already read) and exact count, through the
        content cache: a plain dict's hit skips normalizing too."""
        message = self.messages[i]
        cache = self.cache
        if cache is None:
            if rec is None:
                rec = read_fast(message) or normalize(message, i)
            return rec, self.count(rec)
        key = plain_key(message)
        if key is not None:
            hit = cache.get(key)
            if hit is not None:
                return (hit[0] if rec is None else rec), hit[1]
            if rec is None:
                rec = read_fast(message) or normalize(message, i)
            tokens = self.count(rec)
            cache.put(key, (rec, tokens))
            return rec, tokens
        if rec is None:
            rec = normalize(message, i)
        rkey = record_key(rec)
        cached = cache.get(rkey)
        if cached is None:
            cached = self.count(rec)
            cache.put(rkey, cached)
        return rec, cached

    def joins(self, i: int) -> bool:
        """Message ``i`` belongs to the group before it (in a protocol-valid stream)."""
        rec = self.rec(i)
        if rec.tool_call_id is not None or rec.tool_results:
            return True
        if not rec.tool_calls or i <= self.lo:
            return False
        prev = self.rec(i - 1)
        if rec.item and prev.tool_calls and not prev.result_ids:
            return True  # a parallel call item while the group has only issued calls
        return is_glue(prev)

    def group(self, i: int, n: int) -> Span:
        """The group holding message ``i``."""
        start = i
        while start > self.lo and self.joins(start):
            start -= 1
        end = i + 1
        while end < n and self.joins(end):
            end += 1
        return start, end

    def tokens(self, span: Span) -> int:
        toks, rec = self.toks, self.rec
        total = 0
        for i in range(*span):
            if i not in toks:
                rec(i)
            total += toks[i]
        return total

    def check(self, spans: list[Span]) -> bool:
        """Replay the tool-call protocol over runs of adjacent groups, fresh at each run.

        Raises :class:`Fallback` when the protocol groups differ from the scan's; returns True
        when calls still await results at the end of the last span (an open group)."""
        quick = replay_chat(self.recs, spans)  # the chat shapes' rules, when they suffice
        if quick is not None:
            return quick
        recs, read = self.recs, self._read
        protocol = ToolProtocol()
        last = -1
        for start, end in spans:
            if start != last:
                protocol = ToolProtocol()
            for i in range(start, end):
                rec = recs.get(i) or read(i)
                if (  # a plain message outside any exchange: no check, no state change
                    not protocol.pending
                    and not protocol.glue
                    and not rec.tool_calls
                    and rec.tool_call_id is None
                    and not rec.tool_results
                    and not rec.item
                ):
                    if i != start:
                        raise Fallback
                elif protocol.accept(rec, i) != (i != start):
                    raise Fallback  # the scan's grouping is not the protocol's
            last = end
        return bool(protocol.pending)

    def latest_user(self, n: int) -> int | None:
        messages, rec = self.messages, self.rec
        for i in range(n - 1, self.lo - 1, -1):
            message = messages[i]
            role = message.get("role") if type(message) is dict else None
            if type(role) is str and role in _NOT_USER:
                continue  # no user turn, valid or not
            if rec(i).is_user_turn:
                return i
        return None

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
        for i in self.loose:
            toks[i] = self._counted(i, recs[i])[1]
        self.loose.clear()
        self.bound = None
        return self._select(room, cap, pins, rules)

    def _select(
        self,
        room: int,
        cap: int | None,
        pins: Collection[int],
        rules: ProviderRules | None,
    ) -> list[Any]:
        messages = self.messages
        self.lo = 0
        n = len(messages)
        out: list[Any] = []
        if n and self.rec(0).role in _SYSTEM_ROLES:
            self.lo = 1
            room -= self.toks[0]
            out.append(messages[0])
        lo = self.lo
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
        user = self.latest_user(n)
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
        if p_tokens + n_tokens > room:
            if self.loose:
                raise _Tighten  # on bounds: the exact counts may still fit
            raise Fallback  # overflow: the full path raises it with the exact figures
        kept = self._window(room, cap, protected, p_tokens, hi, pinned)
        if newest is not None and newest not in kept:
            kept = self._window(room - n_tokens, cap, protected, p_tokens, hi, pinned)
            if newest not in kept:
                kept.append(newest)
        kept.extend(pinned.items())
        kept = sorted(set(kept))
        self.check(kept)
        if rules is not None:
            kept = self._restrict(rules, kept, protected, newest, pinned)
        return out + self._messages(kept)

    def _window(
        self,
        room: int,
        cap: int | None,
        protected: Span | None,
        p_tokens: int,
        hi: int,
        pinned: dict[int, int],
    ) -> list[Span]:
        """The sliding window's groups (``SlidingWindow.select``), pinned groups excluded."""
        groups = self._walk(room, cap, self.lo, hi, pinned)
        start = groups[-1][0] if groups else hi
        if protected is None or protected[0] >= start:
            return groups
        p_start, p_end = protected
        p_cap = None if cap is None else max(cap - (p_end - p_start), 0)
        return [protected, *self._walk(room - p_tokens, p_cap, p_end, hi, pinned)]

    def _walk(
        self, room: int, cap: int | None, stop: int, hi: int, pinned: dict[int, int]
    ) -> list[Span]:
        """The longest run of groups ending at ``hi`` within ``room`` and ``cap``, newest first.

        The same answer as bisecting the manager's prefix sums (pinned groups cost nothing in
        them but count as messages), read newest first, stopping at the first group that does
        not fit. Pinned groups are left out of the result (they are merged in once).
        """
        out: list[Span] = []
        end, used, count, cost = hi, 0, 0, 0
        recs, toks, read, joins = self.recs, self.toks, self._read, self.joins
        i = hi - 1
        while i >= stop:
            rec = recs.get(i) or read(i)
            if i > stop and (
                rec.tool_call_id is not None
                or rec.tool_results
                # a chat call joins only after an item (skip joins() unless one is involved)
                or (
                    rec.tool_calls
                    and (rec.item or (recs.get(i - 1) or read(i - 1)).item)
                    and joins(i)
                )
            ):
                cost += toks[i]
                i -= 1  # a result or a call item: its group starts further back
                continue
            cost += toks[i]
            is_pin = i in pinned
            if is_pin:
                cost = 0
            if used + cost > room or (cap is not None and count + end - i > cap):
                if self.loose and used + cost > room:
                    raise _Tighten
                break
            used += cost
            count += end - i
            if not is_pin:
                out.append((i, end))
            end = i
            cost = 0
            i -= 1
        return out

    def _restrict(
        self,
        rules: ProviderRules,
        kept: list[Span],
        protected: Span | None,
        newest: Span | None,
        pinned: dict[int, int],
    ) -> list[Span]:
        """The provider's rules over the kept groups: ids are consecutive where groups touch."""
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
            if span in (protected, newest) or span[0] in pinned
        )
        starts, stops, _ = restrict(rules, _Roles(self, by_id), ids, [x + 1 for x in ids], keep)
        return [by_id[x] for a, b in zip(starts, stops, strict=True) for x in range(a, b)]

    def _messages(self, kept: list[Span]) -> list[Any]:
        messages = self.messages
        out: list[Any] = []
        run_start, run_end = -1, -1
        for start, end in kept:
            if start != run_end:
                if run_end > run_start:
                    out += messages[run_start:run_end]
                run_start = start
            run_end = end
        if run_end > run_start:
            out += messages[run_start:run_end]
        return out


class _Roles:
    """The :class:`~context_manager.providers.GroupRoles` of the kept groups, by local id."""

    __slots__ = ("groups", "scan")

    def __init__(self, scan: BackwardScan, groups: dict[int, Span]) -> None:
        self.scan = scan
        self.groups = groups

    def first_role(self, g: int) -> str:
        role = self.scan.rec(self.groups[g][0]).role
        return "user" if role == "tool" else role

    def last_role(self, g: int) -> str:
        role = self.scan.rec(self.groups[g][1] - 1).role
        return "user" if role == "tool" else role

    def first_is_user_turn(self, g: int) -> bool:
        return self.scan.rec(self.groups[g][0]).is_user_turn
