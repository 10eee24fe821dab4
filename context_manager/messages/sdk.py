"""SDK objects (OpenAI, Anthropic, google-genai, pydantic-ai, LangChain) recognised by type.

Detection is by the class's home module, checked in a fixed order, never by loose duck typing:
an Anthropic ``Message`` has ``type`` and ``content`` like a LangChain message, and must not be
read as one. Pydantic models of the provider SDKs are read through ``model_dump(mode="json")``
(the same JSON the SDK sends), so their shapes reuse the dict readers; pydantic-ai's dataclasses
are read part by part. The caller's object itself is what the manager keeps and returns.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from ..errors import InvalidMessageError
from .media import add_blob
from .record import Image, Media, Message, ToolCall, ToolResult, to_json_text

__all__ = [
    "answers_a_call",
    "as_part",
    "family",
    "field",
    "is_pydantic_ai_dict",
    "langchain_calls",
    "pydantic_ai_record",
    "sdk_dict",
    "text_of",
]

# Module prefix -> SDK family, in the order they are tried.
_FAMILIES = (
    ("openai.", "openai"),
    ("anthropic.", "anthropic"),
    ("google.genai.", "gemini"),
    ("pydantic_ai.", "pydantic_ai"),
    ("langchain_core.", "langchain"),
)


def family(obj: Any) -> str | None:
    """Which SDK ``obj`` comes from (by its class's module), or None."""
    module = type(obj).__module__
    for prefix, name in _FAMILIES:
        if module.startswith(prefix):
            return name
    return None


def sdk_dict(obj: Any, index: int | None) -> dict[str, Any]:
    """The JSON an OpenAI / Anthropic / google-genai pydantic model stands for."""
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        raise InvalidMessageError(
            f"{type(obj).__module__}.{type(obj).__qualname__} is not a message",
            index=index,
            hint="pass a message object (e.g. response.choices[0].message, a Responses output "
            "item, an Anthropic Message) or its dict",
        )
    try:
        data = dump(mode="json", by_alias=True, exclude_none=True)
    except (ValueError, TypeError) as exc:  # pydantic's "Circular reference detected", ...
        raise InvalidMessageError(
            f"{type(obj).__name__} cannot be read as JSON: {exc}", index=index
        ) from None
    if not isinstance(data, dict):  # pragma: no cover - pydantic models dump to dicts
        raise InvalidMessageError(f"{type(obj).__name__} did not dump to an object", index=index)
    return data


def as_part(value: Any, index: int | None) -> Any:
    """``value`` itself, or the JSON of a provider SDK model found inside a dict message (an
    Anthropic ``ThinkingBlock`` in ``{"role": "assistant", "content": response.content}``, an
    OpenAI tool call object in ``tool_calls``, a google-genai ``Part`` in ``parts``): the SDKs'
    own documented idioms mix their objects into dicts, and every reader then sees one shape."""
    if isinstance(value, Mapping | str) or family(value) not in ("openai", "anthropic", "gemini"):
        return value
    return sdk_dict(value, index)


def text_of(content: Any) -> str:
    """The text a record holds for a pydantic-ai part's content (strings as they are, else JSON)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "\n".join(c if isinstance(c, str) else _text(c) for c in content)
    return _text(content)


def _text(value: Any) -> str:
    """A non-text value as text: its JSON, or the string its JSON is (a date reads as it will
    once stored and read back, where it is that string)."""
    jsonable = _jsonable(value)
    return jsonable if isinstance(jsonable, str) else to_json_text(jsonable)


def _jsonable(value: Any) -> Any:
    """``value`` as pydantic-ai's own JSON has it (a date as ISO text, a model or dataclass as
    an object, bytes as base64), so an object and its stored JSON read, and cost, the same."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    try:  # pydantic-ai objects imply pydantic; its serializer is pydantic-ai's own
        from pydantic_core import to_jsonable_python
    except ImportError:  # pragma: no cover - a non-JSON value comes from an SDK object
        return repr(value)
    try:
        return to_jsonable_python(value, bytes_mode="base64", fallback=repr)
    except (ValueError, TypeError, RecursionError):  # a cycle, an unencodable value
        return repr(value)


#: pydantic-ai's multimodal prompt items by ``kind``: images are priced as images, the rest as
#: media (pages, seconds) by what the counter knows, never as the text of their bytes.
_PYDANTIC_AI_MEDIA = {
    "binary": "document",
    "image-url": "image",
    "document-url": "document",
    "audio-url": "audio",
    "video-url": "video",
}


def _prompt_item(item: Any, texts: list[str], images: list[Image], media: list[Media]) -> None:
    """One item of a pydantic-ai user prompt: text, or an image / medium (object or JSON)."""
    kind = None if isinstance(item, str) else field(item, "kind")
    if kind not in _PYDANTIC_AI_MEDIA:
        texts.append(text_of(item))
        return
    data = field(item, "data") if kind == "binary" else None  # bytes, or base64 in its JSON
    add_blob(images, media, field(item, "media_type"), data, _PYDANTIC_AI_MEDIA[kind])


def field(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` of a dict, ``obj.key`` of an object (``default`` when absent)."""
    return obj.get(key, default) if isinstance(obj, Mapping) else getattr(obj, key, default)


def is_pydantic_ai_dict(message: Mapping[str, Any]) -> bool:
    """A pydantic-ai message as its JSON (``ModelMessagesTypeAdapter``): ``kind`` and ``parts``."""
    return (
        message.get("kind") in ("request", "response")
        and "parts" in message
        and "role" not in message
    )


def pydantic_ai_record(message: Any, index: int | None) -> Message:
    """A pydantic-ai ``ModelRequest`` / ``ModelResponse`` as a record, part by part; its JSON
    (``ModelMessagesTypeAdapter.dump_python(mode="json")``) reads the same."""
    kind = field(message, "kind")
    parts = field(message, "parts")
    if kind not in ("request", "response") or not isinstance(parts, list | tuple):
        raise InvalidMessageError(
            f"unsupported pydantic-ai object {type(message).__name__}",
            index=index,
            hint="pass ModelRequest / ModelResponse messages",
        )
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    images: list[Image] = []
    media: list[Media] = []
    other: list[str] = []
    system_only = kind == "request" and bool(parts)
    signed = False
    for part in parts:
        part_kind = field(part, "part_kind")
        if part_kind != "system-prompt":
            system_only = False
        content = field(part, "content", "")
        if part_kind == "user-prompt" and isinstance(content, list | tuple):
            prompt: list[str] = []
            for item in content:
                _prompt_item(item, prompt, images, media)
            texts.append("\n".join(prompt))
        elif part_kind in ("system-prompt", "user-prompt", "text"):
            texts.append(text_of(content))
        elif part_kind == "thinking":
            thinking.append(str(field(part, "content", "")))
            signed = signed or bool(field(part, "signature"))
        elif part_kind == "tool-call":
            args = field(part, "args")
            text = args if isinstance(args, str) else to_json_text(_jsonable(args or {}))
            call_id, name = str(field(part, "tool_call_id")), str(field(part, "tool_name"))
            calls.append(ToolCall(call_id, name, text))
        elif answers_a_call(part, part_kind):
            is_error = part_kind == "retry-prompt"
            content = text_of(field(part, "content", ""))
            results.append(ToolResult(str(field(part, "tool_call_id")), content, is_error))
        elif part_kind in ("retry-prompt", "retry-feedback"):  # feedback to the model, no tool
            texts.append(text_of(field(part, "content", "")))
        elif part_kind in ("file", "speech"):  # a generated file; realtime audio + transcript
            prompt = [] if part_kind == "file" else [text_of(field(part, "transcript") or "")]
            blob = field(part, "content" if part_kind == "file" else "audio")
            if blob is not None:
                _prompt_item(blob, prompt, images, media)
            if any(prompt):
                texts.append("\n".join(prompt))
        elif part_kind not in _NOT_SENT:
            other.append(_other_of(part, part_kind))
    role = "assistant" if kind == "response" else ("system" if system_only else "user")
    return Message(
        role,
        text="\n".join(texts),
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        images=tuple(images),
        thinking="\n".join(thinking),
        media=tuple(media),
        signed=signed,
        other="\n".join(other),
    )


#: Part kinds pydantic-ai records in its history but never sends to a model (their docstrings
#: say so: ``prepare_messages`` drops them). Every other part kind we do not model is sent in
#: some form, so it costs its JSON (``other``), never nothing.
_NOT_SENT = frozenset({"capability-load-delta", "instruction-baseline"})


def _other_of(part: Any, part_kind: object) -> str:
    """The compact JSON a part we do not model as text, call or result costs.

    A provider-run tool's call and return (``NativeToolCallPart`` / ``NativeToolReturnPart``,
    ``builtin-tool-*`` in their JSON: web search, code execution) are sent back to their
    provider (Anthropic ``server_tool_use`` / ``web_search_tool_result`` blocks), so their
    arguments and content are input tokens. They are not function calls the client answers,
    so they never become ``tool_calls`` / results the tool-call protocol would pair. Any other
    part is its JSON, without the fields left empty.
    """
    name = field(part, "tool_name")
    if part_kind == "builtin-tool-call":
        return to_json_text({"name": name, "input": _jsonable(field(part, "args") or {})})
    if part_kind == "builtin-tool-return":
        return to_json_text({"name": name, "content": _jsonable(field(part, "content"))})
    data = _jsonable(part)
    if isinstance(data, Mapping):
        data = {k: v for k, v in data.items() if v not in (None, "", [], {})}
    return to_json_text(data)


def answers_a_call(part: Any, part_kind: object) -> bool:
    """A pydantic-ai request part that answers a tool call: a tool return, or a retry prompt
    naming its tool (one without ``tool_name`` is feedback, sent to the model as user text,
    though an in-memory one still carries a generated ``tool_call_id``)."""
    if not field(part, "tool_call_id"):
        return False
    return part_kind == "tool-return" or (
        part_kind == "retry-prompt" and bool(field(part, "tool_name"))
    )


def langchain_calls(message: Any, seen: Collection[str], index: int | None) -> list[ToolCall]:
    """A LangChain ``AIMessage``'s calls not already read from its content (ids in ``seen``),
    in the order langchain-openai sends them in ``tool_calls``: the valid ones, then those
    whose arguments did not parse (``invalid_tool_calls``, their raw text as arguments). Those
    are calls on the wire too, and ``create_agent`` answers each with a ``ToolMessage``, so
    they pair like any other call (one without an id, which nothing can answer, is left out)."""
    calls: list[ToolCall] = []
    for raw in getattr(message, "tool_calls", None) or ():
        if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
            raise InvalidMessageError("LangChain tool call needs an 'id'", index=index)
        if raw["id"] not in seen:
            args = _langchain_args(raw.get("args", {}))
            calls.append(ToolCall(raw["id"], str(raw.get("name", "")), args))
    for raw in getattr(message, "invalid_tool_calls", None) or ():
        if not isinstance(raw, Mapping):
            raise InvalidMessageError("LangChain invalid tool call must be a dict", index=index)
        call_id, given = raw.get("id"), raw.get("args")
        if isinstance(call_id, str) and call_id and call_id not in seen:
            text = (
                given if isinstance(given, str) else "" if given is None else _langchain_args(given)
            )
            calls.append(ToolCall(call_id, str(raw.get("name") or ""), text))
    return calls


def _langchain_args(args: Any) -> str:
    """The arguments as LangChain sends them to OpenAI-style APIs (``json.dumps(args,
    ensure_ascii=False)``, spaces after ``:`` and ``,``), so they are counted as sent."""
    try:
        return json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return to_json_text(args)  # raises the typed error naming what cannot be written
