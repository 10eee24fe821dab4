"""One converter from our normalized :class:`Message` records to Pi's message / entry shapes.

Pi's rules (``pi_rules/``) are proven equal to the TypeScript by fixtures; compaction runs
them on converted entries instead of re-deriving them. One record may become several Pi
messages: an Anthropic-style user turn carrying ``tool_result`` blocks becomes one ``toolResult``
message per result, then a ``user`` message for any text. ``owners[k]`` maps Pi entry ``k`` back
to the position of the record it came from.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError
from ..messages import Message, message_list, normalize

#: Pi's image block, content-free: estimates charge a fixed size per image, never its bytes.
_IMAGE_BLOCK: dict[str, Any] = {"type": "image", "data": "", "mimeType": "image/png"}


def _arguments(text: str) -> Any:
    """Tool-call arguments as the object Pi holds; unparseable text stays a string value."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_value": value}


def _text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}] if text else []


def _assistant(rec: Message) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if rec.thinking:
        content.append({"type": "thinking", "thinking": rec.thinking})
    content.extend(_text_blocks(rec.text))
    content.extend(
        {"type": "toolCall", "id": c.id, "name": c.name, "arguments": _arguments(c.arguments)}
        for c in rec.tool_calls
    )
    return {
        "role": "assistant",
        "content": content,
        "stopReason": "toolUse" if rec.tool_calls else "stop",
    }


def _tool_result(call_id: str, name: str, text: str, is_error: bool, images: int) -> dict[str, Any]:
    content = _text_blocks(text) + [dict(_IMAGE_BLOCK) for _ in range(images)]
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": content,
        "isError": is_error,
    }


def as_records(records: object) -> list[Message]:
    """``records`` checked at the door: a list of messages, each a :class:`Message` or any
    message :func:`~context_manager.messages.normalize` accepts (``ConfigurationError`` /
    ``InvalidMessageError`` otherwise, naming the index). Records pass through as given."""
    return [
        rec if isinstance(rec, Message) else normalize(rec, i)
        for i, rec in enumerate(message_list(records))
    ]


def to_pi_messages(rec: Message, call_names: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The Pi message(s) standing for ``rec`` (a :class:`Message`, or any accepted message);
    ``call_names`` maps call ids to tool names and is filled with the calls ``rec`` makes."""
    if not isinstance(rec, Message):
        rec = normalize(rec)
    if call_names is not None and not isinstance(call_names, dict):
        raise ConfigurationError(
            f"call_names must be a dict of call id to tool name, got {type(call_names).__name__}"
        )
    names = call_names if call_names is not None else {}
    role = rec.role
    if role == "assistant":
        for call in rec.tool_calls:
            names[call.id] = call.name
        return [_assistant(rec)]
    if role == "tool":
        call_id = rec.tool_call_id or ""
        name = rec.name or names.get(call_id, "")
        return [_tool_result(call_id, name, rec.text, False, len(rec.images))]
    if role == "user":
        if not rec.tool_results:
            content = _text_blocks(rec.text) + [dict(_IMAGE_BLOCK) for _ in rec.images]
            return [{"role": "user", "content": content if rec.images else rec.text}]
        # Images inside tool_result blocks are pooled on the record; charge them to the last.
        last = len(rec.tool_results) - 1
        out = [
            _tool_result(
                r.call_id,
                names.get(r.call_id, ""),
                r.text,
                r.is_error,
                len(rec.images) if k == last else 0,
            )
            for k, r in enumerate(rec.tool_results)
        ]
        if rec.text:
            out.append({"role": "user", "content": rec.text})
        return out
    # system / developer messages inside the history: Pi has no such role; a custom message is
    # a valid cut point, is estimated by its text and reaches the summarizer as user text.
    return [{"role": "custom", "customType": role, "content": rec.text, "display": False}]


@dataclass(frozen=True, slots=True)
class PiView:
    """Pi session entries for a run of records, and which record each entry came from."""

    entries: list[dict[str, Any]]
    owners: list[int]

    def messages(self, start: int, end: int) -> list[dict[str, Any]]:
        """Pi messages of the records at positions ``start <= position < end``."""
        return [
            e["message"] for e, o in zip(self.entries, self.owners, strict=True) if start <= o < end
        ]


def to_pi_entries(records: Sequence[Message], indices: Sequence[int] | None = None) -> PiView:
    """Session entries (``type: "message"``) for ``records``; ids are the history indices."""
    records = as_records(records)
    if indices is not None:
        if not isinstance(indices, Sequence) or isinstance(indices, str | bytes):
            raise ConfigurationError(f"indices must be a list of ints: {type(indices).__name__}")
        if len(indices) != len(records):
            raise ConfigurationError(
                f"indices must hold one index per record: {len(indices)} for {len(records)}"
            )
    entries: list[dict[str, Any]] = []
    owners: list[int] = []
    names: dict[str, str] = {}
    parent: str | None = None
    for position, rec in enumerate(records):
        base = str(indices[position] if indices is not None else position)
        for k, message in enumerate(to_pi_messages(rec, names)):
            entry_id = base if k == 0 else f"{base}.{k}"
            entries.append(
                {"type": "message", "id": entry_id, "parentId": parent, "message": message}
            )
            owners.append(position)
            parent = entry_id
    return PiView(entries, owners)
