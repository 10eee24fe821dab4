"""Copies of tool-result messages with their results edited, in the caller's own shape.

Pruning (placeholders, head+tail trims), the newest-exchange cut and ``repair`` (dropping results
that answer nothing) change what the model sees, never the history: every function here returns
a NEW object of the caller's own type (or ``None`` when there is nothing to change or the shape is
one we cannot rewrite, which the caller leaves intact and reports) and never mutates its argument.
Shapes:

- OpenAI chat ``{"role": "tool", "content": str | [parts]}``;
- Responses ``*_output`` items (``output``), as dicts or as the OpenAI SDK's models;
- Anthropic user turns of ``tool_result`` blocks; Bedrock Converse user turns of ``toolResult``;
- Gemini contents of ``function_response`` parts (dicts or ``types.Content``): a response
  ``{key: text}`` keeps its key, any other becomes ``{"output": text}``; responses are paired with
  their calls as the reader pairs them (by id, else by position);
- pydantic-ai ``ModelRequest`` (and its JSON) with ``ToolReturnPart`` / ``RetryPromptPart``;
- LangChain ``ToolMessage`` (``model_copy``); :class:`~context_manager.messages.Message` records.

An *edit* sees each result as ``(call_id, text, images)`` and answers its new text, ``None``
(unchanged) or :data:`DROP` (remove the result; only where the message holds several parts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from .gemini import positional_ids
from .record import Message, ToolResult, to_json_text
from .sdk import answers_a_call, family, field, is_pydantic_ai_dict, text_of

__all__ = ["DROP", "IMAGE_MARKER", "TextRule", "edit_results", "rewrite_results", "without_results"]

#: Text standing in for an image removed from a pruned result.
IMAGE_MARKER = "[image removed during context pruning]"

#: What an edit answers to remove a result from its message.
DROP: Any = object()

TextRule = Callable[[str, int], str | None]
"""``rule(text, images)`` -> new text for a result (None: leave it as is)."""

Edit = Callable[[str, str, int], Any]
"""``edit(call_id, text, images)`` -> new text, None (unchanged) or :data:`DROP`."""


def rewrite_results(
    message: Any, rule: TextRule, images: str = "clear", only: frozenset[str] | None = None
) -> Any:
    """A copy of ``message`` whose tool results went through ``rule``; None if unsupported/same.

    ``only`` limits the rewrite to results answering those call ids (a user turn may carry
    several results). ``images`` is ``"keep"`` (image blocks stay after the new text) or
    ``"clear"`` (each becomes :data:`IMAGE_MARKER` inside the text).
    """

    def edit(call_id: str, text: str, n: int) -> str | None:
        return rule(text, n) if only is None or call_id in only else None

    return edit_results(message, edit, images)


def without_results(message: Any, call_ids: set[str] | frozenset[str]) -> Any:
    """A copy of ``message`` without the results answering ``call_ids`` (its other parts stay);
    None when the message is one result, or a shape we cannot rewrite."""
    return edit_results(message, lambda cid, _t, _n: DROP if cid in call_ids else None, "keep")


def edit_results(message: Any, edit: Edit, images: str = "clear") -> Any:
    """A copy of ``message`` with each of its results edited (see the module docstring)."""
    if isinstance(message, Message):
        return _edit_record(message, edit, images)
    if isinstance(message, Mapping):
        return _edit_dict(message, edit, images)
    sdk = family(message)
    if sdk == "pydantic_ai":
        return _edit_pydantic_ai(message, edit)
    if sdk == "gemini":
        return _edit_gemini(message, edit)
    if sdk == "openai" and hasattr(message, "output") and hasattr(message, "call_id"):
        new = _edit_output(message.call_id, message.output, edit, images, "input_text")
        return None if new is None else message.model_copy(update={"output": new})
    if getattr(message, "type", None) == "tool" and hasattr(message, "model_copy"):
        new = _edit_output(message.tool_call_id, message.content, edit, images, "text")
        return None if new is None else message.model_copy(update={"content": new})
    return None


# -- content blocks (OpenAI, Anthropic, Responses parts) --------------------------------------
_IMAGES = ("image", "image_url", "input_image")


def _text_of_blocks(blocks: Any, images: str) -> tuple[str, int] | None:
    """Joined text of content blocks and the number of images (None: a block we cannot read)."""
    if isinstance(blocks, str):
        return blocks, 0
    if not isinstance(blocks, list):
        return None
    texts: list[str] = []
    count = 0
    for block in blocks:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, Mapping) and block.get("type") in ("text", "input_text"):
            texts.append(str(block.get("text", "")))
        elif isinstance(block, Mapping) and block.get("type") in _IMAGES:
            count += 1
            if images == "clear":
                texts.append(IMAGE_MARKER)
        else:
            return None
    return "\n".join(texts), count


def _new_content(old: Any, text: str, images: str, text_type: str) -> Any:
    kept = (
        [b for b in old if isinstance(b, Mapping) and b.get("type") in _IMAGES]
        if images == "keep" and isinstance(old, list)
        else []
    )
    if isinstance(old, str) and not kept:
        return text
    return [{"type": text_type, "text": text}, *kept]


def _edit_output(call_id: str, old: Any, edit: Edit, images: str, text_type: str) -> Any:
    """The new content of a one-result message (None: unchanged, unreadable or dropped)."""
    got = _text_of_blocks(old, images)
    new = edit(call_id, *got) if got is not None else None
    if new is None or new is DROP:
        return None
    return _new_content(old, new, images, text_type)


def _edit_dict(message: Mapping[str, Any], edit: Edit, images: str) -> Any:
    if message.get("role") == "tool" or (
        str(message.get("type")).endswith("_output") and "output" in message
    ):
        key = "content" if message.get("role") == "tool" else "output"
        call = message.get("tool_call_id", message.get("call_id"))
        text_type = "text" if key == "content" else "input_text"
        new = _edit_output(str(call), message.get(key), edit, images, text_type)
        return None if new is None else {**message, key: new}
    if is_pydantic_ai_dict(message):
        return _edit_pydantic_ai(message, edit)
    if isinstance(message.get("parts"), list):
        return _edit_gemini(message, edit)
    content = message.get("content")
    if message.get("role") == "user" and isinstance(content, list):
        blocks = _edit_blocks(content, edit, images)
        return None if blocks is None else {**message, "content": blocks}
    return None


def _edit_blocks(content: list[Any], edit: Edit, images: str) -> list[Any] | None:
    """Anthropic ``tool_result`` and Bedrock ``toolResult`` blocks of a user turn, edited."""
    changed = False
    blocks: list[Any] = []
    for block in content:
        new: Any = None
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            inner = block.get("content", "")
            got = _text_of_blocks(inner if inner is not None else "", images)
            new = edit(str(block.get("tool_use_id")), *got) if got is not None else None
            if new is not None and new is not DROP:
                new = {**block, "content": _new_content(inner, new, images, "text")}
        elif isinstance(block, Mapping) and isinstance(block.get("toolResult"), Mapping):
            new = _edit_bedrock(block["toolResult"], edit, images)
        if new is DROP:
            changed = True
        elif new is not None:
            blocks.append(new)
            changed = True
        else:
            blocks.append(block)
    return blocks if changed else None


def _edit_bedrock(result: Mapping[str, Any], edit: Edit, images: str) -> Any:
    blocks = result.get("content")
    if not isinstance(blocks, list):
        return None
    texts: list[str] = []
    kept: list[Any] = []
    for block in blocks:
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, Mapping) and "json" in block:
            texts.append(to_json_text(block["json"]))
        elif isinstance(block, Mapping) and "image" in block:
            kept.append(block)
            if images == "clear":
                texts.append(IMAGE_MARKER)
        else:
            return None
    new = edit(str(result.get("toolUseId")), "\n".join(texts), len(kept))
    if new is None or new is DROP:
        return new
    content = [{"text": new}, *(kept if images == "keep" else [])]
    return {"toolResult": {**result, "content": content}}


# -- Gemini ----------------------------------------------------------------------------------
def _response_text(response: Any) -> tuple[str | None, str]:
    """The key of a ``{key: text}`` response (else None) and the text an edit sees."""
    if isinstance(response, Mapping) and len(response) == 1:
        ((key, value),) = response.items()
        if isinstance(value, str):
            return str(key), value
    return None, to_json_text(response or {})


def _edit_gemini(message: Any, edit: Edit) -> Any:
    """A content's ``function_response`` parts edited (dict parts stay dicts, SDK parts are
    copied with ``model_copy``: their bytes, such as thought signatures, are never re-encoded)."""
    parts = field(message, "parts")
    if not isinstance(parts, list):
        return None
    entries = []  # (part index, key of the response field, response)
    for k, part in enumerate(parts):
        key = (
            "functionResponse"
            if isinstance(part, Mapping) and "functionResponse" in part
            else ("function_response")
        )
        response = field(part, key)
        if response is not None:
            entries.append((k, key, response))
    ids = positional_ids([(str(field(r, "name", "")), field(r, "id")) for _, _, r in entries])
    new_parts: list[Any] = list(parts)
    changed = False
    for call_id, (k, key, response) in zip(ids, entries, strict=True):
        name, text = _response_text(field(response, "response"))
        new = edit(call_id, text, 0)
        if new is None:
            continue
        changed = True
        if new is DROP:
            new_parts[k] = None
            continue
        body = {name or "output": new}
        if isinstance(response, Mapping):
            new_parts[k] = {**parts[k], key: {**response, "response": body}}
        else:
            copy = response.model_copy(update={"response": body})
            new_parts[k] = parts[k].model_copy(update={key: copy})
    if not changed:
        return None
    kept = [p for p in new_parts if p is not None]
    if isinstance(message, Mapping):
        return {**message, "parts": kept}
    return message.model_copy(update={"parts": kept})


# -- pydantic-ai -----------------------------------------------------------------------------
def _edit_pydantic_ai(message: Any, edit: Edit) -> Any:
    parts = field(message, "parts")
    if field(message, "kind") != "request" or not isinstance(parts, list | tuple):
        return None
    new_parts: list[Any] = []
    changed = False
    for part in parts:
        call_id = field(part, "tool_call_id")
        returns = answers_a_call(part, field(part, "part_kind"))
        new = edit(str(call_id), text_of(field(part, "content", "")), 0) if returns else None
        if new is None:
            new_parts.append(part)
            continue
        changed = True
        if new is DROP:
            continue
        if isinstance(part, Mapping):
            new_parts.append({**part, "content": new})
        else:
            new_parts.append(dataclasses.replace(part, content=new))
    if not changed:
        return None
    if isinstance(message, Mapping):
        return {**message, "parts": new_parts}
    return dataclasses.replace(message, parts=new_parts)


# -- records ----------------------------------------------------------------------------------
def _edit_record(rec: Message, edit: Edit, images: str) -> Message | None:
    n_img = len(rec.images) if images == "clear" else 0
    keep_images = rec.images if images == "keep" else ()
    if rec.role == "tool":
        assert rec.tool_call_id is not None
        text = "\n".join([rec.text, *[IMAGE_MARKER] * n_img]) if n_img else rec.text
        new = edit(rec.tool_call_id, text, len(rec.images))
        if new is None or new is DROP:
            return None
        return dataclasses.replace(rec, text=new, images=keep_images)
    if not rec.tool_results:
        return None
    results: list[ToolResult] = []
    changed = False
    for r in rec.tool_results:
        new = edit(r.call_id, r.text, 0)
        if new is not DROP:
            results.append(r if new is None else r._replace(text=new))
        changed = changed or new is not None
    return dataclasses.replace(rec, tool_results=tuple(results)) if changed else None
