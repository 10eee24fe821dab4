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
property-tested), and :func:`lane_for` pairs it with the estimator's ``count_message`` (the one
implementation of what a message costs; nothing here repeats its arithmetic). Anything else
returns None: the caller takes the general path, so the lane can only be faster, never different.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..messages import Message
from ..messages.record import ToolCall
from .base import TokenCounter
from .estimate import CharEstimator

_PLAIN_ROLES = frozenset({"user", "assistant", "system", "developer"})

Lane = Callable[[Any], "tuple[Message, int] | None"]


_new_call = tuple.__new__  # ToolCall's own __new__ is Python: this builds the same tuple in C


def _calls(raw: Any) -> tuple[ToolCall, ...]:
    """OpenAI ``tool_calls`` as ``normalize`` reads them, or () for any unusual shape (a
    missing ``id``, ``function`` or ``name`` raises ``KeyError``, which :func:`read_many` takes
    as "not this shape")."""
    if type(raw) is not list:
        return ()
    out = []
    for call in raw:
        if type(call) is not dict:
            return ()
        call_id = call["id"]
        fn = call["function"]
        if type(call_id) is not str or not call_id or type(fn) is not dict:
            return ()
        name = fn["name"]
        args = fn.get("arguments", "")
        if type(name) is not str or type(args) is not str:
            return ()
        out.append(_new_call(ToolCall, (call_id, name, args)))
    return tuple(out)


def read_fast(message: Any) -> Message | None:
    """``normalize(message)`` for the three common chat shapes, else None (take the slow path)."""
    return read_many((message,))[0]


def read_many(messages: Iterable[Any]) -> list[Message | None]:
    """:func:`read_fast` of each message, in one loop (the one implementation: ``trim()``
    reads a block of messages at a time, and a call per message would cost a fifth of it).

    Keys are read by subscript (a missing one is not one of the three shapes): cheaper than
    ``dict.get``.
    """
    out: list[Message | None] = []
    append = out.append
    for message in messages:
        rec = None
        if type(message) is dict:
            try:
                role = message["role"]
                content = message["content"]
                size = len(message)
                if size == 2:
                    if type(content) is str and type(role) is str and role in _PLAIN_ROLES:
                        rec = Message(role, content)
                elif size == 3:
                    if role == "tool":
                        call_id = message["tool_call_id"]
                        if type(content) is str and type(call_id) is str and call_id:
                            rec = Message("tool", content, None, (), call_id)
                    elif role == "assistant" and (type(content) is str or content is None):
                        calls = _calls(message["tool_calls"])
                        if calls:
                            rec = Message("assistant", content or "", None, calls)
            except KeyError:
                pass
        append(rec)
    return out


def lane_for(counter: TokenCounter) -> Lane | None:
    """``message -> (record, tokens)`` for the fast shapes with ``counter``, or None.

    Only for the chars estimator (exact class), whose count is cheaper to redo than to look up
    in a content cache: the manager takes it on add, and ``trim()`` skips a caller's cache for
    these shapes with it. The tokens are ``counter.count_message(record)``, the estimator's one
    implementation of a message's cost. Other counters (a real tokenizer) return None: they use
    :func:`read_fast` and a cache when the caller gives one.
    """
    if type(counter) is not CharEstimator:
        return None
    count = counter.count_message

    def lane(message: Any) -> tuple[Message, int] | None:
        rec = read_fast(message)
        return None if rec is None else (rec, count(rec))

    return lane
