"""Gemini ``contents`` (google-genai ``Content`` or its dict), read as records.

A content has ``role`` ``user`` or ``model`` and ``parts``: ``text`` (``thought: true`` marks a
thought summary), ``function_call`` ``{name, args, id?}``, ``function_response``
``{name, response, id?}``, ``inline_data`` / ``file_data`` (media) and an opaque
``thought_signature`` that Gemini 3 requires back (it is kept in the caller's object, and its
size is counted). Gemini pairs a response with its call by ``id`` when the API gave one, else by
name: such calls get the id ``~name``, which the tool protocol lets repeat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidMessageError
from .media import image_of, media_of
from .record import Image, Media, Message, ToolCall, ToolResult, to_json_text
from .sdk import as_part

__all__ = ["from_content", "is_gemini_content"]


def is_gemini_content(message: Mapping[str, Any]) -> bool:
    return "parts" in message and message.get("role") in ("user", "model", None)


def _call_id(part: Mapping[str, Any]) -> str:
    given = part.get("id")
    return given if isinstance(given, str) and given else f"~{part.get('name', '')}"


def from_content(message: Mapping[str, Any], index: int | None) -> Message:
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise InvalidMessageError("Gemini content needs a list of 'parts'", index=index)
    role = "assistant" if message.get("role") == "model" else "user"
    texts: list[str] = []
    thoughts: list[str] = []
    other: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    images: list[Image] = []
    media: list[Media] = []
    for part in map(as_part, parts, [index] * len(parts)):
        if not isinstance(part, Mapping):
            raise InvalidMessageError("Gemini parts must be objects", index=index)
        if isinstance(part.get("text"), str):
            (thoughts if part.get("thought") else texts).append(part["text"])
        call = part.get("function_call") or part.get("functionCall")
        if isinstance(call, Mapping):
            name = call.get("name")
            if not isinstance(name, str):
                raise InvalidMessageError("function_call needs a string 'name'", index=index)
            calls.append(ToolCall(_call_id(call), name, to_json_text(call.get("args") or {})))
        response = part.get("function_response") or part.get("functionResponse")
        if isinstance(response, Mapping):
            results.append(
                ToolResult(_call_id(response), to_json_text(response.get("response") or {}))
            )
        blob = part.get("inline_data") or part.get("inlineData") or part.get("file_data")
        if blob:
            _media(blob, images, media)
        signature = part.get("thought_signature") or part.get("thoughtSignature")
        if isinstance(signature, str):
            other.append(signature)
    return Message(
        role,
        text="\n".join(texts),
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        images=tuple(images),
        thinking="\n".join(thoughts),
        other="\n".join(other),
        media=tuple(media),
    )


def _media(blob: Any, images: list[Image], media: list[Media]) -> None:
    """An ``inline_data`` / ``file_data`` blob: an image by its mime type, else a document
    (PDF), audio or video; sizes, pages and durations are read from inline bytes."""
    if not isinstance(blob, Mapping):
        images.append(Image())
        return
    mime = blob.get("mime_type", blob.get("mimeType"))
    if isinstance(mime, str) and mime.startswith("image/"):
        images.append(image_of(blob))
    else:
        media.append(media_of(blob, "document", 0))
