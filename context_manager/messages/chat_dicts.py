"""The three commonest OpenAI chat dicts, read by their exact key set before the general reader;
and the general reader of an OpenAI chat tool call (:func:`openai_tool_call`).

Nearly every stored chat history is made of three shapes, and each is recognised in a few type
checks, where the general reader (``normalize._read``: every SDK shape, aliases, content parts,
legacy fields) costs a chain of calls and checks per message:

* ``{"role", "content"}`` with a string content and role user / assistant / system / developer;
* ``{"role": "tool", "tool_call_id", "content"}`` with a non-empty string id and string content;
* ``{"role": "assistant", "content", "tool_calls"}`` with string or None content and a non-empty
  list of ``{"id", "type", "function": {"name", "arguments"}}`` calls (string fields).

This is the first step of :func:`~.normalize.normalize` (so adds, replays and ``trim()`` all read
these shapes the same way) and answers None for anything else: the general reader then decides,
so this can only be faster, never different (property-tested against it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidMessageError
from .record import Message, ToolCall, to_json_text
from .sdk import as_part

__all__ = ["openai_tool_call", "read_common", "read_many"]

_PLAIN_ROLES = frozenset({"user", "assistant", "system", "developer"})

_new_call = tuple.__new__  # ToolCall's own __new__ is Python: this builds the same tuple in C


def _calls(raw: Any) -> tuple[ToolCall, ...]:
    """OpenAI ``tool_calls`` as the general reader reads them, or () for any unusual shape (a
    missing ``id``, ``function`` or ``name`` raises ``KeyError``: "not this shape")."""
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


def read_common(message: Any) -> Message | None:
    """The record of one of the three common shapes, else None (take the general reader)."""
    return read_many((message,))[0]


def read_many(messages: Iterable[Any]) -> list[Message | None]:
    """:func:`read_common` of each message, in one loop (the one implementation: ``trim()``
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


def openai_tool_call(raw: Any, index: int | None) -> ToolCall:
    """One entry of an OpenAI chat message's ``tool_calls`` in any shape the general reader
    takes (an SDK object, a function or a custom tool's call); raises on anything else."""
    raw = as_part(raw, index)
    if not isinstance(raw, Mapping):
        raise InvalidMessageError("each tool_calls entry must be an object", index=index)
    call_id, fn = raw.get("id"), raw.get("function")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidMessageError(
            "tool call without a string 'id'",
            index=index,
            hint="every tool call needs the id its result will reference",
        )
    custom = raw.get("custom") if raw.get("type") == "custom" else None
    if isinstance(custom, Mapping) and isinstance(custom.get("name"), str):  # free-form input
        text = custom.get("input", "")
        return ToolCall(
            call_id, custom["name"], text if isinstance(text, str) else to_json_text(text)
        )
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise InvalidMessageError(
            f"tool call {call_id!r} needs 'function': {{'name': str, 'arguments': str}} "
            "(or, for a custom tool, 'custom': {'name': str, 'input': str})",
            index=index,
        )
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = to_json_text(args)
    return ToolCall(call_id, fn["name"], args)
