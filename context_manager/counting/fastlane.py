"""The fast lane for the commonest OpenAI chat dicts: their record and count without ``normalize``.

A one-shot ``trim()`` of a history where everything fits reads every message, so the cost per
message is the cost of the call, and LangChain's approximate ``trim_messages`` spends about
3.5 us per message. ``normalize`` is general (every SDK shape, aliases, content parts, legacy
fields), which costs a chain of calls and checks per message. Three shapes make up nearly every
stored chat history, and each can be recognised from its exact key set in a few type checks:

* ``{"role", "content"}`` with a string content and role user / assistant / system / developer;
* ``{"role": "tool", "tool_call_id", "content"}`` with string id (non-empty) and content;
* ``{"role": "assistant", "content", "tool_calls"}`` with string or None content and a non-empty
  list of ``{"id", "type", "function": {"name", "arguments"}}`` calls (string fields).

For those, :func:`read_fast` builds the very record ``normalize`` would (equality is
property-tested), and :func:`lane_for` adds the count with the estimator's own arithmetic inlined
(property-tested against ``count_message``). Anything else returns None: the caller takes the
general path, so the lane can only be faster, never different.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._js import utf16_len
from ..messages import Message
from ..messages.record import ToolCall
from .base import TokenCounter
from .estimate import CharEstimator

_PLAIN_ROLES = frozenset({"user", "assistant", "system", "developer"})

Lane = Callable[[Any], "tuple[Message, int] | None"]


def _calls(raw: Any) -> tuple[ToolCall, ...] | None:
    """OpenAI ``tool_calls`` as ``normalize`` reads them, or None for any unusual shape."""
    if type(raw) is not list or not raw:
        return None
    out = []
    for call in raw:
        if type(call) is not dict:
            return None
        call_id = call.get("id")
        fn = call.get("function")
        if type(call_id) is not str or not call_id or type(fn) is not dict:
            return None
        name = fn.get("name")
        args = fn.get("arguments", "")
        if type(name) is not str or type(args) is not str:
            return None
        out.append(ToolCall(call_id, name, args))
    return tuple(out)


def read_fast(message: Any) -> Message | None:
    """``normalize(message)`` for the three common chat shapes, else None (take the slow path)."""
    if type(message) is not dict:
        return None
    size = len(message)
    role = message.get("role")
    content = message.get("content")
    if size == 2:
        if type(content) is str and type(role) is str and role in _PLAIN_ROLES:
            return Message(role, content)
        return None
    if size != 3:
        return None
    if role == "tool":
        call_id = message.get("tool_call_id")
        if type(content) is str and type(call_id) is str and call_id:
            return Message("tool", content, None, (), call_id)
        return None
    if role == "assistant" and (type(content) is str or (content is None and "content" in message)):
        calls = _calls(message.get("tool_calls"))
        if calls is not None:
            return Message("assistant", content or "", None, calls)
    return None


def lane_for(counter: TokenCounter) -> Lane | None:
    """``message -> (record, tokens)`` for the fast shapes with ``counter``, or None.

    Only for the chars estimator (exact class): its count is cheaper to redo than to look up, so
    the scan skips the content cache for these shapes. Other counters (a real tokenizer) keep the
    cache and use :func:`read_fast` on a miss.
    """
    if type(counter) is not CharEstimator:
        return None
    cpt = counter.chars_per_token
    overhead = counter.message_overhead
    whole = int(cpt) if cpt == int(cpt) else 0

    def lane(message: Any) -> tuple[Message, int] | None:
        if type(message) is not dict:
            return None
        size = len(message)
        role = message.get("role")
        if size == 2 or (size == 3 and role == "tool"):  # read_fast's text-only cases, inlined
            text = message.get("content")
            if type(text) is not str:
                return None
            if size == 2:
                if type(role) is not str or role not in _PLAIN_ROLES:
                    return None
                rec = Message(role, text)
            else:
                call_id = message.get("tool_call_id")
                if type(call_id) is not str or not call_id:
                    return None
                rec = Message("tool", text, None, (), call_id)
            chars = len(text) if text.isascii() else utf16_len(text)
            tokens = -(-chars // whole) if whole else math.ceil(chars / cpt)
            return rec, tokens + overhead
        fast = read_fast(message)
        if fast is None:
            return None
        rec, text = fast, fast.text
        chars = len(text) if text.isascii() else utf16_len(text)
        for call in rec.tool_calls:
            name, args = call.name, call.arguments
            chars += len(name) if name.isascii() else utf16_len(name)
            chars += len(args) if args.isascii() else utf16_len(args)
        if whole:
            return rec, -(-chars // whole) + overhead
        return rec, math.ceil(chars / cpt) + overhead

    return lane
