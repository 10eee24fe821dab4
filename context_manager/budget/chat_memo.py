"""Repeated trims of one conversation: resume the last walk instead of reading it again.

A stateless backend reloads a conversation and trims it on every request: the same messages
(new objects, equal contents) plus one or two new ones. The chat pass (``budget.chat_suffix``)
reads each kept message once, about 1 µs each, so over a long history re-reading what was read
last time is nearly the whole call. The memo remembers, per conversation, what the last walk
read and resumes from it:

1. candidates are found by a fingerprint of the first two messages (the start of a conversation
   stays put while its end grows) and the budget;
2. the messages the last walk read must compare equal (``==``, done in C: about 5x cheaper than
   reading them) to private copies kept from then, and be plain ``dict`` objects;
3. only the new messages are walked (``chat_suffix.walk`` down to the old end);
4. the new cut is a bisection of the prefix sums of the kept groups' costs (new tokens can only
   push the oldest groups out), then the new calls' ids are checked against those issued in
   what the walk still reads, and the scan's guards at the cut (``chat_suffix.answer``) run;
5. the new state is slices of the old one plus the new messages; states are never changed once
   stored, so concurrent callers share them without a lock.

The answer is the one a fresh walk would give, because a fresh walk over equal messages reads
the same groups at the same costs; anything the memo cannot settle (a changed or unusual
message, an id reused across the old and new parts, a guard at the cut) goes to a fresh walk.
Equality is Python's: a caller's ``str`` subclass whose ``__eq__`` lies is believed (the
messages themselves must be plain ``dict`` objects).

Why copies rather than the caller's dicts: a caller may keep one list across requests and edit a
message in place; a stored reference would then compare equal to itself by identity and the
memo would resume from stale costs. The copies go two levels into tool calls (the call and its
``function``: everything the pass reads); strings are immutable and shared.

What it holds is bounded: :data:`PER_KEY` states per fingerprint, :data:`MAX_STATES` in all and
:data:`MAX_TOKENS` tokens of read text, oldest dropped first. A conversation is remembered from
its second sighting (the first leaves only its fingerprint), so a stream of one-off histories
pays a fingerprint per call, never the copies.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Hashable
from itertools import accumulate
from typing import Any

from ..counting import CharEstimator
from .chat_suffix import Walk, answer, prompt_room, walk

#: States kept per fingerprint (one conversation's recent requests, or conversations that
#: open alike).
PER_KEY = 4
#: States kept in all, and tokens of read messages they may hold together.
MAX_STATES = 256
MAX_TOKENS = 4 * 1024 * 1024
#: Fingerprints seen once, remembered so a second sighting records its walk.
MAX_SEEN = 4096
_SKETCH = 64  # characters of a fingerprint text kept from each end


class _State:
    """One conversation as a walk left it (immutable once stored).

    ``region``: private copies of ``messages[base:n]``, everything the walk read but message 0;
    ``first``: a copy of message 0. ``starts`` (ascending) and ``prefix`` (one longer, any
    origin): the kept groups and the prefix sums of their costs. ``stop``: the first index of
    the group that did not fit (-1: none); ``over``: its cost. ``ids``: call id -> index of the
    message that issued it, for every call read (older entries may linger: they lie below any
    later cut). ``room``: the budget left after the system prompt.
    """

    __slots__ = (
        "base",
        "first",
        "ids",
        "lo",
        "n",
        "newest_user",
        "over",
        "prefix",
        "region",
        "room",
        "starts",
        "stop",
        "tokens",
    )

    def __init__(
        self,
        messages: list[Any],
        lo: int,
        room: int,
        first: dict[str, Any],
        region: list[dict[str, Any]] | None,
        base: int,
        starts: list[int],
        prefix: list[int],
        stop: int,
        over: int,
        ids: dict[str, int],
        newest_user: int,
    ) -> None:
        self.n = len(messages)
        self.lo = lo
        self.room = room
        self.first = first
        self.base = base
        self.region = region if region is not None else list(map(_private, messages[base:]))
        self.starts = starts
        self.prefix = prefix
        self.stop = stop
        self.over = over
        self.ids = ids
        self.newest_user = newest_user
        self.tokens = prefix[-1] - prefix[0] + over


def _private(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of a message the walk accepted, deep enough that editing the caller's dict (or its
    calls) in place cannot change it."""
    calls = message.get("tool_calls")
    if calls is None:
        return dict(message)
    copied = [{**call, "function": dict(call["function"])} for call in calls]
    return {**message, "tool_calls": copied}


def _base(messages: list[Any], lo: int, stop: int) -> int:
    """The oldest index a walk that stopped at ``stop`` read (besides message 0): the message
    before a call group at the cut is read too (``chat_suffix.answer``)."""
    if stop < 0:
        return lo
    return stop - 1 if stop > lo and len(messages[stop]) == 3 else stop


def _sketch(message: Any) -> Hashable | None:
    if type(message) is not dict:
        return None
    role = message.get("role")
    text = message.get("content")
    if type(role) is not str or (text is not None and type(text) is not str):
        return None
    if text is not None and len(text) > 2 * _SKETCH:
        return (role, len(text), text[:_SKETCH], text[-_SKETCH:])
    return (role, text)


def _match(state: _State, messages: list[Any]) -> int:
    """The length of the prefix of ``messages`` that ``state`` read, message for message, or
    -1. Tried: all of it, then without its newest one or two groups (the same history asked
    again with another new message: a retry, an edited question, a benchmark)."""
    base, region = state.base, state.region
    starts = state.starts
    tries = [state.n] + [p for p in starts[-1:-3:-1] if p > starts[0]]
    try:  # the caller's values compare against ours: a hostile ``__eq__`` is just a miss
        for p in tries:
            if p > len(messages) or messages[p - 1] != region[p - 1 - base]:
                continue  # the commonest miss is cheap
            part = messages[base:p]
            if part != region[: p - base] or messages[0] != state.first:
                continue
            if type(messages[0]) is dict and set(map(type, part)) == {dict}:
                return p
    except Exception:
        return -1
    return -1


def _newest_user(state: _State, upto: int, floor: int) -> int:
    """The newest plain user turn in ``[floor, upto)`` of what ``state`` read, or -1."""
    region, base = state.region, state.base
    for i in range(upto - 1, max(floor, base) - 1, -1):
        message = region[i - base]
        if len(message) == 2 and message.get("role") == "user":
            return i
    return -1


class ChatMemo:
    """The chat pass's answers, resumed across calls on a growing history (one per estimator)."""

    def __init__(self, estimator: CharEstimator) -> None:
        self.estimator = estimator
        self._whole = int(estimator.chars_per_token)
        self._states: OrderedDict[Hashable, list[_State]] = OrderedDict()
        self._seen: set[Hashable] = set()
        self._tokens = 0
        self._count = 0
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._states.clear()
            self._seen.clear()
            self._tokens = self._count = 0

    def cut(self, messages: list[Any], room: int) -> tuple[int, int] | None:
        """``chat_suffix(messages, room, estimator)``, resumed from an earlier call on the
        same conversation when there is one."""
        key: Hashable | None = None
        states: list[_State] | None = None
        if len(messages) >= 2:
            first, second = _sketch(messages[0]), _sketch(messages[1])
            if first is not None and second is not None:
                key = (room, first, second)
                states = self._lookup(key)
        for state in states or ():
            p = _match(state, messages)
            if p < 0:
                continue
            if len(messages) == p == state.n:
                return state.lo, state.starts[0]
            found = self._resume(state, messages, p)
            if found is not None and key is not None:
                self._store(key, found, state)
                return found.lo, found.starts[0]
            break
        head = prompt_room(messages, room, self.estimator)
        if head is None:
            return None
        lo, room_left = head
        record = states is not None  # a first sighting only leaves its fingerprint
        read = walk(messages, lo, room_left, self.estimator, record)
        if read is None or not answer(messages, lo, read.start, read.stop, read.newest_user):
            return None
        if record and key is not None and read.starts:
            self._store(key, self._fresh(messages, lo, room_left, _private(messages[0]), read))
        return lo, read.start

    def _fresh(
        self, messages: list[Any], lo: int, room: int, first: dict[str, Any], read: Walk
    ) -> _State:
        """The state a recorded walk over ``messages`` leaves (its costs made exact)."""
        if read.bounded:
            read.settle(self._whole)
        prefix = list(accumulate(reversed(read.costs), initial=0))
        base = _base(messages, lo, read.stop)
        return _State(
            messages,
            lo,
            room,
            first,
            None,
            base,
            read.starts[::-1],
            prefix,
            read.stop,
            read.over,
            read.ids,
            read.newest_user,
        )

    def _resume(self, state: _State, messages: list[Any], p: int) -> _State | None:
        """The state after walking only ``messages[p:]`` on top of what ``state`` read below
        ``p`` (its length, or the start of one of its groups); None: walk afresh."""
        lo, room = state.lo, state.room
        tail = walk(messages, p, room, self.estimator, record=True)
        if tail is None:
            return None
        if tail.stop >= 0:  # the cut falls among the new messages: the old part is all out
            if not answer(messages, lo, tail.start, tail.stop, tail.newest_user):
                return None
            return self._fresh(messages, lo, room, state.first, tail)
        if tail.bounded:
            tail.settle(self._whole)
        prefix, starts = state.prefix, state.starts
        k = bisect_left(starts, p)  # the state's groups below ``p``
        # The oldest of them that still fits with the new tokens on top.
        g = bisect_left(prefix, prefix[k] + tail.used - room, 0, k)
        if g == 0:  # all of them fit: so must the group the state stopped at, not
            if state.stop >= 0 and prefix[k] - prefix[0] + tail.used + state.over <= room:
                return None  # (fewer new tokens than it had): the cut moves to unread groups
            start = starts[0]
            stop, over = state.stop, state.over
        else:
            start = starts[g] if g < k else p
            stop, over = starts[g - 1], prefix[g] - prefix[g - 1]
        newest = tail.newest_user
        if newest < 0:
            newest = state.newest_user if p == state.n else _newest_user(state, p, start)
        if not answer(messages, lo, start, stop, newest):
            return None
        read_from = stop if stop >= 0 else lo
        old_ids = state.ids
        for call_id in tail.ids:
            if read_from <= old_ids.get(call_id, -1) < p:
                return None  # an id issued again in what is still read: the walk rejects it
        if p < state.n:  # the groups from ``p`` on are gone: so are their ids
            ids = {call_id: at for call_id, at in old_ids.items() if at < p}
        else:
            ids = old_ids.copy()
        ids.update(tail.ids)
        if len(ids) > 2 * (k - g + len(tail.starts)) + 64:
            ids = {i: at for i, at in ids.items() if read_from <= at < p} | tail.ids
        base = _base(messages, lo, stop)
        region = state.region[base - state.base : p - state.base]
        region += map(_private, messages[p:])
        tail_prefix = list(accumulate(reversed(tail.costs), initial=prefix[k]))
        return _State(
            messages,
            lo,
            room,
            state.first,
            region,
            base,
            starts[g:k] + tail.starts[::-1],
            prefix[g : k + 1] + tail_prefix[1:],
            stop,
            over,
            ids,
            newest,
        )

    def _lookup(self, key: Hashable) -> list[_State] | None:
        """The states stored under ``key`` (newest first); [] on a second sighting (record the
        walk), None on a first. The sightings need no lock: a race only records a walk once more
        or once less."""
        if key in self._states:
            with self._lock:
                states = self._states.get(key)
                if states is not None:
                    self._states.move_to_end(key)
                    return list(states)
        seen = self._seen
        if key in seen:
            return []
        if len(seen) >= MAX_SEEN:
            seen.clear()
        seen.add(key)
        return None

    def _store(self, key: Hashable, state: _State, resumed: _State | None = None) -> None:
        """Keep ``state`` first under ``key``, the one it resumed from second (the same history
        may come again with another new message), dropping the least recently used."""
        if state.tokens > MAX_TOKENS:
            return
        with self._lock:
            states = self._states.setdefault(key, [])
            self._states.move_to_end(key)
            if resumed is not None and resumed in states:
                states.remove(resumed)
                states.insert(0, resumed)
            states.insert(0, state)
            self._tokens += state.tokens
            self._count += 1
            while len(states) > PER_KEY:
                self._drop(states.pop())
            while self._tokens > MAX_TOKENS or self._count > MAX_STATES:
                oldest = next(iter(self._states))
                if oldest != key:
                    for gone in self._states.pop(oldest):
                        self._drop(gone)
                elif len(states) > 1:
                    self._drop(states.pop())
                else:
                    break

    def _drop(self, state: _State) -> None:
        self._tokens -= state.tokens
        self._count -= 1
