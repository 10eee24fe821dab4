"""Token counters for the LangChain ``trim_messages`` reproduction, on OpenAI-style dicts.

LangChain decides whether a counter takes one message or a list by reading its type annotation.
We do not guess: a plain callable receives a list (as in LangChain), :func:`per_message` marks a
callable that takes one message, a :class:`~context_manager.counting.TokenCounter` is used per
message, and ``"approximate"`` is LangChain Python's ``count_tokens_approximately``.

Per-message counters are *additive*: the trimmer counts every message once and sums prefixes,
instead of recounting whole lists as LangChain does. A list counter is called exactly where
LangChain would call it, so even a non-additive list counter gives LangChain's result.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._config import check_tool_nesting
from .._js import utf16_len
from ..counting.base import TokenCounter
from ..errors import ConfigurationError, InvalidMessageError
from ..messages import normalize

Msg = Mapping[str, Any]
ListCounter = Callable[[list[Msg]], int]

# LangChain's message type ("human", "ai", ...) for each OpenAI role we accept.
ROLE_TO_TYPE = {
    "system": "system",
    "developer": "system",  # LangChain turns a developer dict into a SystemMessage
    "user": "human",
    "assistant": "ai",
    "tool": "tool",
}
_IMAGE_BLOCKS = ("image", "image_url")  # a tuple: a block type may be unhashable


class PerMessage:
    """Marks a callable that counts ONE message; the trimmer sums it over lists."""

    __slots__ = ("count",)

    def __init__(self, count: Callable[[Msg], int]) -> None:
        if not callable(count):
            raise ConfigurationError(f"per_message() needs a callable, got {type(count).__name__}")
        self.count = count


def per_message(count: Callable[[Msg], int]) -> PerMessage:
    """Wrap ``count(message) -> int`` so ``trim_messages`` calls it once per message."""
    return PerMessage(count)


def message_type(message: Msg, index: int | None = None) -> str:
    """LangChain's type name for an OpenAI dict; raises on a role LangChain cannot convert."""
    if not isinstance(message, Mapping):
        raise InvalidMessageError(
            f"expected an OpenAI-style dict, got {type(message).__name__}",
            index=index,
            hint='e.g. {"role": "user", "content": "hi"}',
        )
    role = message.get("role")
    kind = ROLE_TO_TYPE.get(role) if isinstance(role, str) else None
    if kind is None:
        raise InvalidMessageError(
            f"role {role!r} is not one of {sorted(ROLE_TO_TYPE)}",
            index=index,
            hint="pass OpenAI chat dicts: system/developer/user/assistant/tool",
        )
    return kind


def checked_type(message: Any, index: int) -> str:
    """Validate one message the way LangChain's conversion would, and return its type name."""
    kind = message_type(message, index)
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise InvalidMessageError(
            f"content must be a string, a list of parts or None, got {type(content).__name__}",
            index=index,
        )
    if kind == "tool":
        tool_call_id_of(message, index)
    if kind == "ai":
        langchain_tool_calls(message, index)
    return kind


def content_of(message: Msg) -> str | list[Any]:
    """The content LangChain sees: ``None``, a missing key and ``[]`` all become ``""``."""
    content = message.get("content")
    return content or ""


def _parsed_arguments(arguments: Any, index: int | None) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments, strict=False)
    except json.JSONDecodeError as exc:
        raise InvalidMessageError(
            f"tool call arguments are not JSON ({exc.msg})",
            index=index,
            hint="OpenAI tool_calls[].function.arguments must be a JSON object string",
        ) from None


def langchain_tool_calls(message: Msg, index: int | None = None) -> list[dict[str, Any]]:
    """An assistant dict's ``tool_calls`` in LangChain's shape (same key order as its repr)."""
    calls = []
    for raw in message.get("tool_calls") or ():
        function = raw.get("function") if isinstance(raw, Mapping) else None
        if not isinstance(function, Mapping):
            raise InvalidMessageError(
                "tool call lacks a 'function' object",
                index=index,
                hint='use {"id", "type": "function", "function": {"name", "arguments"}}',
            )
        calls.append(
            {
                "name": function.get("name"),
                "args": _parsed_arguments(function.get("arguments"), index),
                "id": raw.get("id"),
                "type": "tool_call",
            }
        )
    return calls


def count_tokens_approximately(
    messages: Iterable[Msg],
    *,
    chars_per_token: float = 4.0,
    extra_tokens_per_message: float = 3.0,
    count_name: bool = True,
    tokens_per_image: int = 85,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> int:
    """LangChain Python's ``count_tokens_approximately`` on OpenAI dicts, to the token.

    Per message: ``ceil(chars / chars_per_token) + extra_tokens_per_message`` plus
    ``tokens_per_image`` per image part. ``chars`` counts Python characters (code points, not
    UTF-16 units) of the text, the role, the name, the tool_call_id, and for an assistant message
    with string content the ``repr`` of its LangChain tool calls. Unknown parts count their
    ``repr``. ``tools`` (dicts) add ``ceil(len(json.dumps(tool)) / chars_per_token)`` in total.
    LangChain.js 1.4.0 has no such function; ``usage_metadata`` scaling is not offered because
    OpenAI dicts carry no usage.
    """
    if chars_per_token <= 0:
        raise ConfigurationError(f"chars_per_token must be > 0, got {chars_per_token}")
    total = 0.0
    if tools:
        check_tool_nesting(list(tools))  # a cyclic or too deep schema: typed, before dumps
        tool_chars = sum(len(json.dumps(dict(tool))) for tool in tools)
        total += math.ceil(tool_chars / chars_per_token)
    for index, message in enumerate(messages):
        chars, images = _approximate_chars(message, index, count_name)
        total += images * tokens_per_image
        total += math.ceil(chars / chars_per_token)
        total += extra_tokens_per_message
    return math.ceil(total)


def _approximate_chars(message: Msg, index: int | None, count_name: bool) -> tuple[int, int]:
    """Characters LangChain charges for one message, and its number of image parts."""
    kind = message_type(message, index)
    content = content_of(message)
    chars = images = 0
    if isinstance(content, str):
        chars += len(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                chars += len(block)
            elif isinstance(block, Mapping) and block.get("type", "") in _IMAGE_BLOCKS:
                images += 1
            elif isinstance(block, Mapping) and block.get("type", "") == "text":
                chars += len(block.get("text", ""))
            else:
                chars += len(repr(block))
    else:
        raise InvalidMessageError(
            f"content must be a string, a list of parts or None, got {type(content).__name__}",
            index=index,
        )
    if kind == "ai" and isinstance(content, str) and message.get("tool_calls"):
        chars += len(repr(langchain_tool_calls(message, index)))
    if kind == "tool":
        chars += len(tool_call_id_of(message, index))
    chars += len(message["role"])
    name = message.get("name")
    if name and count_name:
        chars += len(name)
    return chars, images


def tool_call_id_of(message: Msg, index: int | None) -> str:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str):
        raise InvalidMessageError(
            "tool message lacks a string 'tool_call_id'",
            index=index,
            hint="LangChain's ToolMessage requires it",
        )
    return call_id


def approximate_tokens(message: Msg) -> int:
    """``count_tokens_approximately([message])`` with LangChain's defaults."""
    return count_tokens_approximately((message,))


def chars4_tokens(message: Msg) -> int:
    """The fixtures' deterministic counter, implemented identically in ``gen/langchain.mjs``.

    ``ceil(units / 4) + 3 + 85 per image part``, where ``units`` is the UTF-16 length of the text
    (string content, or the ``text`` of text parts), the name, each tool call's id, name and
    arguments JSON, and the tool_call_id.
    """
    content = content_of(message)
    units = images = 0
    if isinstance(content, str):
        units += utf16_len(content)
    else:
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                units += utf16_len(block.get("text") or "")
            elif isinstance(block, Mapping) and block.get("type") in _IMAGE_BLOCKS:
                images += 1
    for text in (message.get("name"), message.get("tool_call_id")):
        if isinstance(text, str):
            units += utf16_len(text)
    for call in message.get("tool_calls") or ():
        function = call["function"]
        units += utf16_len(call.get("id") or "") + utf16_len(function["name"])
        units += utf16_len(function["arguments"])
    return -(-units // 4) + 3 + 85 * images


class ResolvedCounter:
    """What the trimmer needs from any counter: a list count, and a per-message one if additive."""

    __slots__ = ("each", "list_count")

    def __init__(self, list_count: ListCounter, each: Callable[[Msg], int] | None) -> None:
        self.list_count = list_count
        self.each = each


def resolve_counter(token_counter: Any) -> ResolvedCounter:
    """Turn every accepted ``token_counter`` form into a :class:`ResolvedCounter`."""
    if isinstance(token_counter, str):
        if token_counter != "approximate":
            raise ConfigurationError(
                f"unknown token_counter {token_counter!r}; the only shortcut is 'approximate'"
            )
        return _additive(approximate_tokens)
    if isinstance(token_counter, PerMessage):
        return _additive(token_counter.count)
    if isinstance(token_counter, TokenCounter):
        counter = token_counter
        return _additive(lambda message: counter.count_message(normalize(message)))
    if callable(token_counter):
        return ResolvedCounter(token_counter, None)
    raise ConfigurationError(
        f"token_counter must be 'approximate', a callable on a list of messages, per_message(fn) "
        f"or a TokenCounter; got {type(token_counter).__name__}"
    )


def _additive(each: Callable[[Msg], int]) -> ResolvedCounter:
    return ResolvedCounter(lambda messages: sum(each(m) for m in messages), each)
