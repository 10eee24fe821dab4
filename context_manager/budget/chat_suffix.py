"""The sliding window over a history of plain OpenAI chat dicts, in one backwards pass.

A stateless backend calls ``trim(history, max_tokens)`` with default options on every request,
and a short history (20-100 messages) is where a general scan cannot beat LangChain: building a
record per message, storing it, replaying the protocol over the records and slicing cost more
per message than the answer is worth. For the three shapes that make up nearly every stored chat
history (``read_fast``'s: ``{role, content}`` user/assistant turns, ``tool`` results, assistant
turns with ``tool_calls``) the whole answer is a suffix, found by reading each message once:

* reading backwards, ``tool`` results are collected until the assistant turn that issued them,
  which must name exactly those ids (each once, never reused in the suffix): that closes a group;
  a plain turn closes a group of one and may not follow unanswered results;
* each closed group costs the chars estimator's count of its messages (the arithmetic of
  ``counting.fastlane``), and the walk stops at the first group that does not fit: the sliding
  window's answer (non-ASCII texts are charged an upper bound until then: see :func:`walk`);
* an optional system/developer prompt at index 0 is sent and paid for first.

Anything else answers None and the general scan decides (and raises its exact errors): another
shape, a broken protocol, an open group at the end, a newest group that does not fit, or a cut
that leaves the latest user turn out (the general scan protects it). So this path can only be
faster, never different; the property tests hold it to the manager's answer.

:func:`walk` is the pass itself and records what it read (each kept group's start and cost, the
call ids and where they were issued), so ``budget.chat_memo`` can resume it on the next request
without reading the same messages again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._js import utf16_len
from ..counting import CharEstimator
from ..counting.fastlane import read_fast


@dataclass(slots=True)
class Walk:
    """What one backwards walk read, from the newest message down to where it stopped.

    ``start``: the first index kept (the length when nothing fits); ``used``: the tokens kept.
    ``stop``: the first index of the group that did not fit, or -1 when the walk reached its
    floor. ``ids``: every call id read (kept or in the stop group) and the index of the message
    that issued it. ``newest_user``: the newest plain user turn read, or -1. Recorded walks also
    hold ``starts[k]`` / ``costs[k]``, the first index and the tokens of the k-th kept group,
    newest first (else both are empty). ``bounded``: the non-ASCII texts still charged by their
    upper bound, with their message index (None: every cost is exact). ``over``: the tokens of
    the group at ``stop``.
    """

    start: int
    used: int
    stop: int
    ids: dict[str, int]
    newest_user: int
    starts: list[int]
    costs: list[int]
    bounded: list[tuple[int, str]] | None
    over: int = 0

    def settle(self, whole: int) -> int:
        """Measure the texts charged by the bound and make ``used`` (and ``costs``) exact;
        returns what the group still open (before ``start``) was overcharged."""
        starts = self.starts
        costs = self.costs
        open_over = 0
        group = 0
        for index, text in self.bounded or ():
            over = -(-2 * len(text) // whole) + (utf16_len(text) // -whole)
            if index < self.start:
                open_over += over
                continue
            self.used -= over
            if starts:
                while starts[group] > index:  # both newest first: find the group holding it
                    group += 1
                costs[group] -= over
        self.bounded = None
        return open_over


def prompt_room(messages: list[Any], room: int, estimator: CharEstimator) -> tuple[int, int] | None:
    """``(lo, room)``: ``lo`` is 1 when index 0 is a system/developer prompt (then paid for out
    of ``room``), else 0; None when the pass cannot answer (message 0 of another shape, or even
    the reply priming does not fit: the general scan raises the overflow)."""
    whole = int(estimator.chars_per_token)
    if whole != estimator.chars_per_token or whole < 1:
        return None
    lo = 0
    if messages:
        first = messages[0]
        role = first.get("role") if type(first) is dict else None
        if role == "system" or role == "developer":
            text = first.get("content")
            if len(first) != 2 or type(text) is not str:
                return None
            room -= -(-utf16_len(text) // whole) + estimator.message_overhead
            lo = 1
        elif read_fast(first) is None:
            return None  # the general scan reads message 0 whatever the cut (is it a prompt?)
    return (lo, room) if room >= 0 else None


def walk(
    messages: list[Any], floor: int, room: int, estimator: CharEstimator, record: bool = False
) -> Walk | None:
    """Read ``messages`` from the newest down to index ``floor``, keeping whole groups while
    they fit ``room``; None on any shape or protocol the pass does not answer for.

    Measuring a non-ASCII text in UTF-16 units can mean encoding it (astral characters take two
    units), so the walk first charges an upper bound (``2k`` units for ``k`` characters) and
    measures nothing while the bound fits; the first group that does not fit under the bound
    settles what was charged so far and the walk goes on exactly. A walk that reaches its floor
    may thus hold bounds (``Walk.bounded``; :meth:`Walk.settle` measures them). ``record``
    keeps each group's start and cost (what ``budget.chat_memo`` resumes from).
    """
    whole = int(estimator.chars_per_token)
    overhead = estimator.message_overhead
    n = len(messages)
    used = opened = 0  # opened: the tokens of the results read since the open group's end
    start = n
    starts: list[int] = []
    costs: list[int] = []
    ids: dict[str, int] = {}
    waiting: set[str] | None = None  # those results' call ids (None: no group is open)
    newest_user = -1
    bounded: list[tuple[int, str]] | None = []  # (group, text) charged by the bound; None: exact
    # Each branch reads a message's role and size once and charges its own cost: a tool result
    # only adds to the open group, so it skips the fit check (about 6% of the walk at 100
    # messages, where a cold one-shot call is all this loop).
    for i in range(n - 1, floor - 1, -1):
        message = messages[i]
        if type(message) is not dict:
            return None
        try:  # plain subscripts (faster than get); a key a shape needs is missing: not ours
            text = message["content"]
            role = message["role"]
        except KeyError:
            return None
        size = len(message)
        if size == 2 and waiting is None and type(text) is str:  # a plain turn: a group
            if role == "user":
                if newest_user < 0:
                    newest_user = i
            elif role != "assistant":
                return None
            if text.isascii():
                cost = -(-len(text) // whole) + overhead
            elif bounded is None:
                cost = -(-utf16_len(text) // whole) + overhead
            else:
                cost = -(-2 * len(text) // whole) + overhead
                bounded.append((i, text))
        elif size == 3 and role == "tool":
            call_id = message.get("tool_call_id")
            if type(text) is not str or type(call_id) is not str or not call_id:
                return None
            if waiting is None:
                waiting = {call_id}
            elif call_id in waiting:
                return None
            else:
                waiting.add(call_id)
            if text.isascii():
                opened += -(-len(text) // whole) + overhead
            elif bounded is None:
                opened += -(-utf16_len(text) // whole) + overhead
            else:
                opened += -(-2 * len(text) // whole) + overhead
                bounded.append((i, text))
            continue  # its group starts further back
        elif size == 3 and role == "assistant" and waiting is not None:
            if type(text) is not str:
                if text is not None or "content" not in message:
                    return None
                text = ""
            calls = message.get("tool_calls")
            if type(calls) is not list or len(calls) != len(waiting):
                return None
            for call in calls:
                if type(call) is not dict:
                    return None
                try:
                    call_id = call["id"]
                    fn = call["function"]
                    if type(call_id) is not str or type(fn) is not dict:
                        return None
                    name = fn["name"]
                except KeyError:
                    return None
                if call_id not in waiting or call_id in ids:
                    return None
                args = fn.get("arguments", "")
                if type(name) is not str or type(args) is not str:
                    return None
                ids[call_id] = i
                text += name + args  # the estimator charges names and arguments as text
            waiting = None
            if text.isascii():
                cost = opened - (-len(text) // whole) + overhead
            elif bounded is None:
                cost = opened - (-utf16_len(text) // whole) + overhead
            else:
                cost = opened - (-2 * len(text) // whole) + overhead
                bounded.append((i, text))
            opened = 0
        else:
            return None
        if used + cost > room:
            if bounded:  # under the bound: measure, then decide exactly
                read = Walk(start, used, -1, ids, newest_user, starts, costs, bounded)
                cost -= read.settle(whole)
                used = read.used
            bounded = None
            if used + cost > room:
                return Walk(start, used, i, ids, newest_user, starts, costs, None, cost)
        used += cost
        start = i
        if record:
            starts.append(i)
            costs.append(cost)
    if waiting is not None:
        return None  # results before any call
    return Walk(start, used, -1, ids, newest_user, starts, costs, bounded or None)


def answer(messages: list[Any], lo: int, start: int, stop: int, newest_user: int) -> bool:
    """Whether a cut at ``start`` (the group at ``stop`` did not fit; -1: nothing was cut) is
    the scan's answer too, else the general scan must decide."""
    if stop < 0:
        return True
    if start == len(messages) or newest_user < start:
        return False  # the newest group, or the latest user turn, needs protecting
    # The scan reads the message before a call (is it a reasoning item?) and would reject it.
    return not (stop > lo and len(messages[stop]) == 3 and read_fast(messages[stop - 1]) is None)


def chat_suffix(messages: list[Any], room: int, estimator: CharEstimator) -> tuple[int, int] | None:
    """``(lo, start)``: send ``messages[:lo] + messages[start:]`` (``lo`` is 1 when index 0 is
    the system prompt), or None to take the general scan. ``room``: the budget left after reply
    priming (``estimator.prompt_overhead``) and tool definitions."""
    head = prompt_room(messages, room, estimator)
    if head is None:
        return None
    lo, room = head
    read = walk(messages, lo, room, estimator)
    if read is None:
        return None
    if not answer(messages, lo, read.start, read.stop, read.newest_user):
        return None
    return lo, read.start
