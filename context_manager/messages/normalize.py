"""Normalize every accepted message shape, once, at the door.

Callers hand us OpenAI chat dicts and SDK objects, OpenAI Responses / Agents SDK items, Anthropic
messages, Gemini contents, pydantic-ai and LangChain messages, ``(role, text)`` tuples, or our own
:class:`Message`. Everything downstream (counting, grouping, compaction, persistence) reads one
normalized record, so format quirks live here and nowhere else. The caller's object is kept
untouched beside the record and is what ``get_context()`` gives back.

Detection order (first match wins): the three common chat dicts (``chat_dicts.py``);
:class:`Message`; dicts (Responses items by ``type``, pydantic-ai's JSON by ``kind`` and
``parts``, Gemini by ``parts``, then chat roles); objects of a known SDK by their class's module
(OpenAI, Anthropic, google-genai, pydantic-ai, LangChain); LangChain-style ``(role, text)``
tuples. Anything else is refused with
what was recognised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._js import utf16_len
from ..errors import InvalidMessageError
from .chat_dicts import openai_tool_call, read_common
from .gemini import from_content, is_gemini_content
from .media import add_blob, image_of, media_of
from .nesting import describe_nesting
from .record import _ROLE_SET, ROLES, Image, Media, Message, ToolCall, ToolResult, to_json_text
from .responses import ITEM_TYPES, from_item
from .sdk import as_part, family, is_pydantic_ai_dict, langchain_calls, pydantic_ai_record, sdk_dict

# Role spellings that mean one of ours: LangChain's shorthands, Gemini's "model".
_ROLE_ALIASES = {"human": "user", "ai": "assistant", "model": "assistant"}

# LangChain message ``type`` values and the chat role they stand for.
_LANGCHAIN_TYPES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "developer": "developer",
    "tool": "tool",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
}
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
_IMAGE_PART_TYPES = frozenset({"image_url", "image", "input_image"})
# Parts billed by pages or duration (Anthropic document, OpenAI file / input_file / input_audio,
# LangChain standard blocks); a text-source document stays text (its JSON is counted).
_MEDIA_PART_TYPES = {
    "document": "document",
    "file": "document",
    "input_file": "document",
    "input_audio": "audio",
    "audio": "audio",
    "video": "video",
}


class _Parts:
    __slots__ = (
        "compaction",
        "images",
        "media",
        "other",
        "result_media",
        "results",
        "signed",
        "texts",
        "thinking",
        "tool_calls",
    )

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.images: list[Image] = []
        self.media: list[Media] = []
        self.result_media: list[Media] = []  # from tool_result blocks (their own text groups)
        self.tool_calls: list[ToolCall] = []
        self.results: list[ToolResult] = []
        self.thinking: list[str] = []
        self.other: list[str] = []
        self.signed = False
        self.compaction = ""


def _joined_media(media: list[Media], others: int) -> list[Media]:
    """Media taken out of a newline-joined text group of ``others`` other items.

    Each part's ``chars`` is its JSON plus the newline joining it; when nothing else is in the
    group, one newline fewer (so chars/4 charges exactly what the joined text used to hold). A
    part with no JSON form (a Bedrock blob of bytes: ``chars`` 0) joined no text.
    """
    first = next((i for i, item in enumerate(media) if item.chars), None)  # JSON-priced parts
    if first is not None and not others:
        media[first] = media[first]._replace(chars=media[first].chars - 1)
    return media


def _result_text(content: Any, index: int | None, parts: _Parts) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        inner = _Parts()
        for part in content:
            _part(part, index, inner)
        parts.images.extend(inner.images)
        others = len(inner.texts) + len(inner.other)
        parts.result_media += _joined_media(inner.media, others) + inner.result_media
        return "\n".join(inner.texts + inner.other)
    raise InvalidMessageError(
        f"tool_result content must be a string or a list of blocks, got {type(content).__name__}",
        index=index,
    )


def _tool_use(part: Mapping[str, Any], index: int | None) -> ToolCall:
    call_id, name = part.get("id"), part.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
        raise InvalidMessageError(
            "tool_use block needs string 'id' and 'name'", index=index, hint=f"got {dict(part)!r}"
        )
    return ToolCall(call_id, name, to_json_text(part.get("input", {})))


def _part(part: Any, index: int | None, out: _Parts) -> None:
    part = as_part(part, index)
    if isinstance(part, str):
        out.texts.append(part)
        return
    if not isinstance(part, Mapping):
        raise InvalidMessageError(
            f"content parts must be objects or strings, got {type(part).__name__}", index=index
        )
    kind = part.get("type")
    if not isinstance(kind, str):
        kind = None  # an unhashable or odd "type" is no known part type
        if len(part) == 1 and _bedrock_part(part, index, out):
            return
    if kind in _TEXT_PART_TYPES:
        text = part.get("text", "")
        if not isinstance(text, str):
            raise InvalidMessageError("text part needs a string 'text'", index=index)
        out.texts.append(text)
    elif kind in _IMAGE_PART_TYPES:
        out.images.append(image_of(part))
    elif kind in _MEDIA_PART_TYPES and _is_media(part):
        chars = utf16_len(to_json_text(part)) + 1
        out.media.append(media_of(part, _MEDIA_PART_TYPES[kind], chars))
    elif kind == "tool_use":
        out.tool_calls.append(_tool_use(part, index))
    elif kind == "tool_result":
        call_id = part.get("tool_use_id")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidMessageError("tool_result block needs a string 'tool_use_id'", index=index)
        text = _result_text(part.get("content"), index, out)
        out.results.append(ToolResult(call_id, text, bool(part.get("is_error", False))))
    elif kind == "thinking":
        out.thinking.append(str(part.get("thinking", "")))
        out.signed = out.signed or bool(part.get("signature"))
    elif kind == "refusal":
        out.texts.append(str(part.get("refusal", "")))
    elif kind == "compaction":
        _compaction_block(part, out)
    else:
        out.signed = out.signed or kind == "redacted_thinking"
        out.other.append(to_json_text(part))


def _compaction_block(part: Mapping[str, Any], out: _Parts) -> None:
    """An Anthropic server-compaction block: its summary is read as text (what it costs), its
    opaque ``encrypted_content`` by its length; the turn is then sent as given or not at all
    (the API checks the summary against its ``signature``). Only a block with a summary is a
    compaction: ``content: null`` is one that failed, which the API reads as a no-op (its SDK's
    ``BetaCompactionBlock``), so the turns before it are still the conversation."""
    content, encrypted = part.get("content"), part.get("encrypted_content")
    if isinstance(content, str):
        out.texts.append(content)
        out.compaction = "anthropic"
    if isinstance(encrypted, str):
        out.other.append(encrypted)
    out.signed = True


def _bedrock_part(part: Mapping[str, Any], index: int | None, out: _Parts) -> bool:
    """A Bedrock Converse content block (one key naming its kind, no ``type``): ``{"text"}``,
    ``{"toolUse"}``, ``{"toolResult"}``, ``{"reasoningContent"}``; False for anything else.

    Converse pairs a ``toolResult`` (in a user turn) with the ``toolUse`` of the same
    ``toolUseId`` (in the assistant turn before it), as Anthropic pairs its blocks, so both
    become the records' tool calls and results and every rule reads them the same way.
    """
    ((key, body),) = part.items()
    if key == "text" and isinstance(body, str):
        out.texts.append(body)
    elif key == "toolUse" and isinstance(body, Mapping):
        call_id, name = body.get("toolUseId"), body.get("name")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
            raise InvalidMessageError(
                "toolUse block needs string 'toolUseId' and 'name'", index=index
            )
        out.tool_calls.append(ToolCall(call_id, name, to_json_text(body.get("input", {}))))
    elif key == "toolResult" and isinstance(body, Mapping):
        call_id = body.get("toolUseId")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidMessageError("toolResult block needs a string 'toolUseId'", index=index)
        blocks = body.get("content", [])
        if not isinstance(blocks, Sequence) or isinstance(blocks, str):
            raise InvalidMessageError("toolResult content must be a list of blocks", index=index)
        texts = []
        for block in blocks:
            if isinstance(block, Mapping) and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif isinstance(block, Mapping) and len(block) == 1 and _bedrock_media(block, out):
                continue  # an image or document a tool returned: priced as one, not as text
            elif isinstance(block, Mapping) and "json" in block:
                texts.append(to_json_text(block["json"]))
            else:
                texts.append(to_json_text(block))
        out.results.append(ToolResult(call_id, "\n".join(texts), body.get("status") == "error"))
    elif key == "reasoningContent" and isinstance(body, Mapping):
        reasoning = body.get("reasoningText")
        if not isinstance(reasoning, Mapping):
            reasoning = {}
        text = reasoning.get("text")
        if isinstance(text, str):
            out.thinking.append(text)
            out.signed = out.signed or bool(reasoning.get("signature"))
        else:  # redacted reasoning: opaque bytes, charged as the block's JSON
            out.other.append(to_json_text(part))
            out.signed = True
    else:
        return _bedrock_media(part, out)
    return True


#: Bedrock Converse media blocks by key, and the family of their mime type: ``{"image":
#: {"format": "png", "source": {"bytes": ...}}}`` (raw bytes through boto3, base64 in the HTTP
#: API; or an ``s3Location``).
_BEDROCK_MEDIA = {
    "image": ("image", "image"),
    "document": ("document", "application"),
    "video": ("video", "video"),
}


def _bedrock_media(part: Mapping[str, Any], out: _Parts) -> bool:
    """An image / document / video block priced as one (``media.add_blob``)."""
    ((key, body),) = part.items()
    if key not in _BEDROCK_MEDIA or not isinstance(body, Mapping):
        return False
    kind, family = _BEDROCK_MEDIA[key]
    fmt, source = body.get("format"), body.get("source")
    mime = f"{family}/{fmt}" if isinstance(fmt, str) else None
    data = source.get("bytes") if isinstance(source, Mapping) else None
    add_blob(out.images, out.media, mime, data, kind)
    return True


def _is_media(part: Mapping[str, Any]) -> bool:
    source = part.get("source")
    return not (isinstance(source, Mapping) and source.get("type") in ("text", "content"))


def _content(content: Any, index: int | None, parts: _Parts) -> None:
    if content is None:
        return
    if isinstance(content, str):
        parts.texts.append(content)
    elif isinstance(content, list | tuple):
        for part in content:
            _part(part, index, parts)
    else:
        raise InvalidMessageError(
            f"content must be a string or a list of parts, got {type(content).__name__}",
            index=index,
        )


def _build(
    role: str, parts: _Parts, index: int | None, name: Any, call_id: Any, item: bool = False
) -> Message:
    if name is not None and not isinstance(name, str):
        raise InvalidMessageError("'name' must be a string", index=index)
    if role == "tool":
        if not isinstance(call_id, str) or not call_id:
            raise InvalidMessageError(
                "tool message without a string 'tool_call_id'",
                index=index,
                hint="set it to the id of the assistant tool call it answers",
            )
    else:
        call_id = None
    if parts.results and role != "user":
        raise InvalidMessageError(
            f"a tool_result block in a {role} message",
            index=index,
            hint="tool results go in the user turn that follows the call",
        )
    if parts.tool_calls and role not in ("assistant",):
        raise InvalidMessageError(
            f"a tool call in a {role} message",
            index=index,
            hint="only assistant turns call tools",
        )
    text = parts.texts[0] if len(parts.texts) == 1 else "\n".join(parts.texts)
    return Message(
        role=role,
        text=text,
        name=name,
        tool_calls=tuple(parts.tool_calls),
        tool_call_id=call_id,
        tool_results=tuple(parts.results),
        images=tuple(parts.images),
        thinking="\n".join(parts.thinking),
        other="\n".join(parts.other),
        media=tuple(_joined_media(parts.media, len(parts.other)) + parts.result_media),
        signed=parts.signed,
        compaction=parts.compaction,
        item=item,
    )


def _from_mapping(msg: Mapping[str, Any], index: int | None) -> Message:
    role = msg.get("role")
    kind = msg.get("type")
    if not isinstance(kind, str):
        kind = None
    if kind in ITEM_TYPES and (role is None or kind != "message"):
        return from_item(msg, index)
    if is_gemini_content(msg):
        if is_pydantic_ai_dict(msg):
            return pydantic_ai_record(msg, index)
        return from_content(msg, index)
    if role == "function":  # the legacy OpenAI function-calling result
        name = msg.get("name")
        if not isinstance(name, str):
            raise InvalidMessageError(
                "a 'function' message needs its function's 'name'", index=index
            )
        parts = _Parts()
        _content(msg.get("content"), index, parts)
        return _build("tool", parts, index, None, f"~{name}")
    if isinstance(role, str):
        role = _ROLE_ALIASES.get(role, role)
    if not isinstance(role, str) or role not in _ROLE_SET:
        raise InvalidMessageError(
            f"unknown role {role!r}",
            index=index,
            hint=f"use one of {', '.join(ROLES)}"
            + (f"; a {kind!r} item is not a message" if isinstance(kind, str) else ""),
        )
    parts = _Parts()
    _content(msg.get("content"), index, parts)
    raw_calls = msg.get("tool_calls")
    if raw_calls is not None:
        if role != "assistant" or not isinstance(raw_calls, list):
            raise InvalidMessageError(
                "'tool_calls' must be a list on an assistant message", index=index
            )
        parts.tool_calls.extend(openai_tool_call(c, index) for c in raw_calls)
    legacy = msg.get("function_call")
    if isinstance(legacy, Mapping) and role == "assistant":
        name = legacy.get("name")
        args = legacy.get("arguments", "")
        if isinstance(name, str):
            text = args if isinstance(args, str) else to_json_text(args)
            parts.tool_calls.append(ToolCall(f"~{name}", name, text))
    for key in ("reasoning_content", "reasoning", "refusal"):
        value = msg.get(key)
        if isinstance(value, str) and value:
            (parts.texts if key == "refusal" else parts.thinking).append(value)
    audio = msg.get("audio")
    if isinstance(audio, Mapping):  # a previous audio reply: billed as audio, by its length
        chars = utf16_len(to_json_text({"id": audio.get("id")})) + 1  # what chars/4 charged
        parts.media.append(media_of(audio, "audio", chars))
    output_item = kind == "message" and role == "assistant" and _responses_output(msg)
    return _build(role, parts, index, msg.get("name"), msg.get("tool_call_id"), output_item)


#: The part types of a Responses output message (an Anthropic reply is ``"type": "message"``
#: too, with ``text`` / ``tool_use`` / ``thinking`` blocks).
_OUTPUT_PARTS = frozenset({"output_text", "refusal"})


def _responses_output(msg: Mapping[str, Any]) -> bool:
    """Whether an assistant ``"type": "message"`` mapping is a Responses output message: an
    item of its response, so a call item right after it belongs to the same response (see
    ``groups.leads_calls``)."""
    content = msg.get("content")
    if isinstance(content, str):
        return True
    return (
        isinstance(content, list | tuple)
        and bool(content)
        and all(isinstance(p, Mapping) and p.get("type") in _OUTPUT_PARTS for p in content)
    )


def _from_langchain(msg: Any, index: int | None) -> Message:
    kind = msg.type
    role: str | None
    if kind == "chat":  # ChatMessage: a custom role reads as the nearest of ours
        custom = str(msg.role)
        role = custom if custom in _ROLE_SET else _ROLE_ALIASES.get(custom, "user")
    else:
        role = _LANGCHAIN_TYPES.get(kind)
    if role is None or role not in _ROLE_SET:
        raise InvalidMessageError(
            f"unsupported LangChain message type {kind!r}",
            index=index,
            hint="use HumanMessage, AIMessage, SystemMessage or ToolMessage",
        )
    parts = _Parts()
    _content(msg.content, index, parts)
    parts.tool_calls.extend(langchain_calls(msg, {c.id for c in parts.tool_calls}, index))
    return _build(
        role, parts, index, getattr(msg, "name", None), getattr(msg, "tool_call_id", None)
    )


def normalize(message: Any, index: int | None = None) -> Message:
    """Turn one accepted message into a :class:`Message`; raise ``InvalidMessageError`` if not.

    Every reader of a message funnels through here, so this is where a message that nests too
    deeply or contains itself becomes a typed error naming ``index`` and the field: the readers
    below recurse (Python stops them after a bounded number of frames, so the cost stays linear)
    and :func:`~.nesting.describe_nesting` finds the field without recursing. An error raised
    without an index (e.g. by ``to_json_text``) gets ``index`` added.
    """
    if type(message) is dict:  # the three common chat dicts first (``chat_dicts.py``)
        common = read_common(message)
        if common is not None:
            return common
    try:
        return _read(message, index)
    except RecursionError:
        error = InvalidMessageError(describe_nesting(message), index=index)
    except InvalidMessageError as exc:
        if isinstance(exc.__cause__, RecursionError):  # from to_json_text: name it from the root
            error = InvalidMessageError(describe_nesting(message), index=index)
        else:
            with_index(exc, index)
            raise
    raise error  # outside the handler: no thousand-frame RecursionError chained to it


def with_index(exc: InvalidMessageError, index: int | None) -> InvalidMessageError:
    """``exc``, now naming message ``index`` if it named none (a field path alone is no "where")."""
    if exc.index is None and index is not None:
        exc.index = index
        exc.args = (f"message {index}: {exc.args[0] if exc.args else exc.reason}",)
    return exc


def _read(message: Any, index: int | None) -> Message:
    if isinstance(message, Message):
        return message.checked(index)
    if isinstance(message, Mapping):
        return _from_mapping(message, index)
    sdk = family(message)
    if sdk == "langchain" and hasattr(message, "type") and hasattr(message, "content"):
        return _from_langchain(message, index)
    if sdk == "pydantic_ai":
        return pydantic_ai_record(message, index)
    if sdk in ("openai", "anthropic", "gemini"):
        data = sdk_dict(message, index)
        if "role" in data or "parts" in data or _str_or_none(data.get("type")) in ITEM_TYPES:
            return _from_mapping(data, index)
    if sdk is not None and sdk != "langchain":
        raise InvalidMessageError(
            f"{type(message).__module__}.{type(message).__qualname__} is recognised as a {sdk} "
            "object, but not as a message",
            index=index,
            hint="add whole messages (e.g. response.choices[0].message, an Anthropic Message, a "
            "Responses output item, a google-genai Content), not their parts",
        )
    if isinstance(message, tuple) and len(message) == 2 and isinstance(message[0], str):
        return _from_mapping({"role": message[0], "content": message[1]}, index)
    if sdk is None and hasattr(message, "type") and hasattr(message, "content"):
        return _from_langchain(message, index)  # a LangChain-compatible message class
    where = type(message).__module__
    raise InvalidMessageError(
        f"unsupported message type {where}.{type(message).__qualname__}"
        + (f" (recognised as {sdk}, but not as a message)" if sdk else ""),
        index=index,
        hint="pass a chat dict ({'role', 'content'}), a Responses item, a Gemini content, an "
        "OpenAI / Anthropic / google-genai / pydantic-ai / LangChain message object, a "
        "(role, text) tuple or context_manager.Message; for another pydantic model pass "
        ".model_dump()",
    )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
