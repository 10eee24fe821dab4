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
* measuring a non-ASCII text in UTF-16 units is the expensive part, so the walk first charges
  an upper bound (``2k`` units for ``k`` characters) and measures nothing while the bound fits;
  only when a group would not fit under the bound are the non-ASCII texts read so far measured,
  and the walk goes on exactly. A history that fits whole is thus never measured;
* an optional system/developer prompt at index 0 is sent and paid for first.

Anything else answers None and the general scan decides (and raises its exact errors): another
shape, a broken protocol, an open group at the end, a newest group that does not fit, or a cut
that leaves the latest user turn out (the general scan protects it). So this path can only be
faster, never different; the property tests hold it to the manager's answer.
"""

from __future__ import annotations

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
            room -= -(-utf16_len(text) // whole) + overhead
            lo = 1
        elif read_fast(first) is None:
            return None  # the general scan reads message 0 whatever the cut (is it a prompt?)
    if room < 0:
        return None  # even the reply priming does not fit: the general scan raises the overflow
    used = cost = 0
    start = n  # the kept suffix is messages[start:]
    waiting: set[str] = set()  # results read since the open group's end, awaiting their call
    issued: set[str] = set()
    newest_user = -1  # the newest plain user turn read: kept when at or after ``start``
    exact = False  # False: non-ASCII texts are charged 2 units a character (an upper bound)
    bounded: list[int] = []  # messages charged by the bound, kept or in the open group
    for i in range(n - 1, lo - 1, -1):
        message = messages[i]
        if type(message) is not dict:
            return None
        text = message.get("content")
        if type(text) is str and len(message) == 2 and not waiting:  # a plain turn: a group
            role = message.get("role")
            if role == "user":
                if newest_user < 0:
                    newest_user = i
            elif role != "assistant":
                return None
        elif len(message) == 3 and message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if type(text) is not str or type(call_id) is not str or not call_id:
                return None
            if call_id in waiting:
                return None
            waiting.add(call_id)
        elif len(message) == 3 and message.get("role") == "assistant" and waiting:
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
                text += name + args  # the estimator charges names and arguments as text
            waiting.clear()
        else:
            return None
        if text.isascii():
            cost += -(-len(text) // whole) + overhead
        elif exact:
            cost += -(-utf16_len(text) // whole) + overhead
        else:
            cost += -(-2 * len(text) // whole) + overhead
            bounded.append(i)
        if waiting:
            continue  # a result: its group starts further back
        if used + cost <= room and (cap is None or n - i <= cap):
            used += cost
            cost = 0
            start = i
            continue
        # The group [i, start) does not fit under the bound (or passes ``cap``).
        if not exact:
            exact = True  # measure what the bound charged, then decide exactly
            for k in bounded:
                over = _tokens(messages[k], 2, whole) - _tokens(messages[k], 1, whole)
                if k >= start:
                    used -= over
                else:
                    cost -= over
        if used + cost > room or (cap is not None and n - i > cap):
            if start == n or newest_user < start:
                return None  # the newest group, or the latest user turn, needs protecting
            if i > lo and len(message) == 3 and read_fast(messages[i - 1]) is None:
                return None  # the scan reads the message before a call (is it a reasoning
                # item?) and would reject it: let it
            return lo, start
        used += cost
        cost = 0
        start = i
    if waiting:
        return None  # results before any call
    return lo, start


def _tokens(message: dict[str, Any], units: int, whole: int) -> int:
    """A fast-shape message's token count, its non-ASCII characters charged ``units`` UTF-16
    units each (2: the bound), or measured (1). The message overhead cancels out and is left out.
    """
    text = message.get("content") or ""
    for call in message.get("tool_calls") or ():
        text += call["function"]["name"] + call["function"].get("arguments", "")
    chars = 2 * len(text) if units == 2 else utf16_len(text)
    return -(-chars // whole)
