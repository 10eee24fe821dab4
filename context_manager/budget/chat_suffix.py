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
  ``counting.fastlane``), and the walk stops at the first group that does not fit (or would pass
  ``cap`` messages): the sliding window's answer;
* an optional system/developer prompt at index 0 is sent and paid for first.

Anything else answers None and the general scan decides (and raises its exact errors): another
shape, a broken protocol, an open group at the end, a newest group that does not fit, or a cut
that leaves the latest user turn out (the general scan protects it). So this path can only be
faster, never different; the property tests hold it to the manager's answer.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from .._js import utf16_len
from ..counting import CharEstimator
from ..counting.fastlane import read_fast


def chat_suffix(
    messages: list[Any], room: int, cap: int | None, estimator: CharEstimator
) -> tuple[int, int] | None:
    """``(lo, start)``: send ``messages[:lo] + messages[start:]`` (``lo`` is 1 when index 0 is
    the system prompt), or None to take the general scan. ``room``: the budget left after reply
    priming (``estimator.prompt_overhead``) and tool definitions."""
    cpt = estimator.chars_per_token
    whole = int(cpt)
    if whole != cpt or whole < 1:
        return None
    overhead = estimator.message_overhead
    n = len(messages)
    lo = 0
    if n:
        first = messages[0]
        role = first.get("role") if type(first) is dict else None
        if role == "system" or role == "developer":
            text = first.get("content")
            if len(first) != 2 or type(text) is not str:
                return None
            chars = len(text) if text.isascii() else utf16_len(text)
            room -= -(-chars // whole) + overhead
            lo = 1
        elif read_fast(first) is None:
            return None  # the general scan reads message 0 whatever the cut (is it a prompt?)
    if room < 0:
        return None  # even the reply priming does not fit: the general scan raises the overflow
    if cap is None and _fits_whole(messages, lo, room, whole, overhead):
        return lo, lo
    used = count = cost = 0
    start = n
    waiting: set[str] = set()  # results read since the open group's end, awaiting their call
    issued: set[str] = set()
    seen_user = False
    i = n - 1
    while i >= lo:
        message = messages[i]
        if type(message) is not dict:
            return None
        size = len(message)
        role = message.get("role")
        text = message.get("content")
        if size == 2:
            if type(text) is not str or (role != "user" and role != "assistant") or waiting:
                return None
            chars = len(text) if text.isascii() else utf16_len(text)
        elif size == 3 and role == "tool":
            call_id = message.get("tool_call_id")
            if type(text) is not str or type(call_id) is not str or not call_id:
                return None
            if call_id in waiting:
                return None
            waiting.add(call_id)
            chars = len(text) if text.isascii() else utf16_len(text)
            cost += -(-chars // whole) + overhead
            i -= 1
            continue
        elif size == 3 and role == "assistant" and waiting:
            if type(text) is not str:
                if text is not None or "content" not in message:
                    return None
                text = ""
            chars = len(text) if text.isascii() else utf16_len(text)
            calls = message.get("tool_calls")
            if type(calls) is not list or len(calls) != len(waiting):
                return None
            for call in calls:
                if type(call) is not dict:
                    return None
                call_id = call.get("id")
                fn = call.get("function")
                if type(call_id) is not str or type(fn) is not dict:
                    return None
                if call_id not in waiting or call_id in issued:
                    return None
                name = fn.get("name")
                args = fn.get("arguments", "")
                if type(name) is not str or type(args) is not str:
                    return None
                issued.add(call_id)
                chars += len(name) if name.isascii() else utf16_len(name)
                chars += len(args) if args.isascii() else utf16_len(args)
            waiting.clear()
        else:
            return None
        cost += -(-chars // whole) + overhead
        if used + cost > room or (cap is not None and count + start - i > cap):
            if start == n or not seen_user:
                return None  # the newest group, or the latest user turn, needs protecting
            return lo, start
        used += cost
        count += start - i
        start = i
        cost = 0
        seen_user = seen_user or role == "user"  # a plain user turn is a user turn
        i -= 1
    if waiting:
        return None  # results before any call
    return lo, start


def _fits_whole(messages: list[Any], lo: int, room: int, whole: int, overhead: int) -> bool:
    """True when ``messages[lo:]`` are valid chat shapes that all fit in ``room``.

    An upper bound decides, so no message is counted: a text of ``k`` characters takes at most
    ``2k`` UTF-16 units (``k`` when ASCII), and ``ceil`` adds at most one token a message. False
    (let the backwards walk decide) as soon as the bound is out of reach or anything is unusual.
    """
    limit = whole * (room - (len(messages) - lo) * (overhead + 1))  # the chars the bound allows
    chars = 0
    pending: set[str] = set()
    issued: set[str] = set()
    for message in islice(messages, lo, None):
        if type(message) is not dict or chars > limit:
            return False
        text = message.get("content")
        if type(text) is str and len(message) == 2 and not pending:  # a plain turn
            role = message.get("role")
            if role != "user" and role != "assistant":
                return False
            chars += len(text) if text.isascii() else 2 * len(text)
            continue
        role = message.get("role")
        size = len(message)
        if size == 3 and role == "tool":
            call_id = message.get("tool_call_id")
            if type(text) is not str or type(call_id) is not str or call_id not in pending:
                return False
            pending.discard(call_id)
            chars += len(text) if text.isascii() else 2 * len(text)
        elif size == 3 and role == "assistant" and not pending:
            calls = message.get("tool_calls")
            if text is None and "content" in message:
                text = ""
            if type(text) is not str or type(calls) is not list or not calls:
                return False
            chars += len(text) if text.isascii() else 2 * len(text)
            for call in calls:
                if type(call) is not dict:
                    return False
                call_id = call.get("id")
                fn = call.get("function")
                if type(call_id) is not str or not call_id or call_id in issued:
                    return False
                if type(fn) is not dict:
                    return False
                name = fn.get("name")
                args = fn.get("arguments", "")
                if type(name) is not str or type(args) is not str:
                    return False
                issued.add(call_id)
                pending.add(call_id)
                chars += len(name) if name.isascii() else 2 * len(name)
                chars += len(args) if args.isascii() else 2 * len(args)
        else:
            return False
    return not pending and chars <= limit
