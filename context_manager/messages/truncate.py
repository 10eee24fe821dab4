"""New copies of tool-result messages with shorter content, in the caller's own format.

Pruning and the default oversize fallback change what the model sees, never the history: every
function here returns a NEW object (or ``None`` when the format is not one we can rewrite) and
never mutates its argument. Supported shapes:

- OpenAI chat ``{"role": "tool", "content": str | [parts]}`` dicts (Responses
  ``function_call_output`` items too, via their ``output``);
- Anthropic turns ``{"role": "user", "content": [{"type": "tool_result", ...}, ...]}``;
- :class:`~context_manager.messages.Message` records;
- LangChain ``ToolMessage`` objects (``model_copy``).

Other objects (SDK classes, pydantic-ai parts) are returned as ``None``: the caller leaves them
intact and reports them as skipped, so nothing is cut silently.

Lengths and cuts are in UTF-16 code units (JavaScript ``.length``), never splitting a surrogate
pair, so a head+tail trim matches OpenClaw's to the character.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from .._js import utf16_len
from .record import Message, ToolResult

#: Marker appended after a head+tail trim; fields: head, tail, total (UTF-16 units), cut.
DEFAULT_TRIM_MARKER = (
    "\n\n[Tool result trimmed: kept first {head} chars and last {tail} chars of {total} chars.]"
)
#: Text standing in for an image removed from a pruned result.
IMAGE_MARKER = "[image removed during context pruning]"

TextRule = Callable[[str, int], str | None]
"""``rule(text, images)`` -> new text for a result (None: leave it as is)."""


def _units(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def slice_utf16(text: str, start: int, end: int | None = None) -> str:
    """``text.slice(start, end)`` in UTF-16 units, moved inward so no surrogate pair is split."""
    if text.isascii():
        return text[start:end]
    data = _units(text)
    n = len(data) // 2
    a = max(n + start, 0) if start < 0 else min(start, n)
    b = n if end is None else (max(n + end, 0) if end < 0 else min(end, n))
    if b <= a:
        return ""

    def unit(i: int) -> int:
        return data[2 * i] | (data[2 * i + 1] << 8)

    if 0 < a < n and 0xDC00 <= unit(a) <= 0xDFFF and 0xD800 <= unit(a - 1) <= 0xDBFF:
        a += 1
    if 0 < b < n and 0xD800 <= unit(b - 1) <= 0xDBFF and 0xDC00 <= unit(b) <= 0xDFFF:
        b -= 1
    return data[2 * a : 2 * b].decode("utf-16-le", "surrogatepass")


def head_tail(text: str, head: int, tail: int, marker: str = DEFAULT_TRIM_MARKER) -> str:
    """``head`` units, ``\\n...\\n``, ``tail`` units, then the marker saying what was cut."""
    total = utf16_len(text)
    kept = slice_utf16(text, 0, head) + "\n...\n" + (slice_utf16(text, -tail) if tail else "")
    return kept + marker.format(head=head, tail=tail, total=total, cut=max(total - head - tail, 0))


# -- per-format rewriting -----------------------------------------------------------------------
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
        elif isinstance(block, Mapping) and block.get("type") in ("image", "image_url"):
            count += 1
            if images == "clear":
                texts.append(IMAGE_MARKER)
        else:
            return None
    return "\n".join(texts), count


def _image_blocks(blocks: Any) -> list[Any]:
    if not isinstance(blocks, list):
        return []
    return [b for b in blocks if isinstance(b, Mapping) and b.get("type") in ("image", "image_url")]


def _new_content(old: Any, text: str, images: str) -> Any:
    kept = _image_blocks(old) if images == "keep" else []
    if isinstance(old, str) and not kept:
        return text
    return [{"type": "text", "text": text}, *kept]


def rewrite_results(
    message: Any, rule: TextRule, images: str = "clear", only: frozenset[str] | None = None
) -> Any:
    """A copy of ``message`` whose tool results went through ``rule``; None if unsupported/same.

    ``only`` limits the rewrite to results answering those call ids (Anthropic turns may carry
    several results). ``images`` is ``"keep"`` (image blocks stay after the new text) or
    ``"clear"`` (each becomes :data:`IMAGE_MARKER` inside the text).
    """
    if isinstance(message, Message):
        return _rewrite_record(message, rule, images, only)
    if isinstance(message, Mapping):
        if message.get("role") == "tool" or message.get("type") == "function_call_output":
            key = "content" if "content" in message else "output"
            call = message.get("tool_call_id", message.get("call_id"))
            if only is not None and call not in only:
                return None
            got = _text_of_blocks(message.get(key), images)
            if got is None:
                return None
            new = rule(*got)
            if new is None:
                return None
            return {**message, key: _new_content(message.get(key), new, images)}
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            return _rewrite_anthropic(message, content, rule, images, only)
        return None
    if getattr(message, "type", None) == "tool" and hasattr(message, "model_copy"):
        if only is not None and getattr(message, "tool_call_id", None) not in only:
            return None
        got = _text_of_blocks(message.content, images)
        if got is None:
            return None
        new = rule(*got)
        if new is None:
            return None
        return message.model_copy(update={"content": _new_content(message.content, new, images)})
    return None


def _rewrite_anthropic(
    message: Mapping[str, Any],
    content: list[Any],
    rule: TextRule,
    images: str,
    only: frozenset[str] | None,
) -> Any:
    changed = False
    blocks: list[Any] = []
    for block in content:
        if (
            isinstance(block, Mapping)
            and block.get("type") == "tool_result"
            and (only is None or block.get("tool_use_id") in only)
        ):
            inner = block.get("content", "")
            got = _text_of_blocks(inner if inner is not None else "", images)
            new = rule(*got) if got is not None else None
            if new is not None:
                blocks.append({**block, "content": _new_content(inner, new, images)})
                changed = True
                continue
        blocks.append(block)
    return {**message, "content": blocks} if changed else None


def _rewrite_record(
    rec: Message, rule: TextRule, images: str, only: frozenset[str] | None
) -> Message | None:
    n_img = len(rec.images) if images == "clear" else 0
    keep_images = rec.images if images == "keep" else ()
    if rec.role == "tool":
        if only is not None and rec.tool_call_id not in only:
            return None
        text = "\n".join([rec.text, *[IMAGE_MARKER] * n_img]) if n_img else rec.text
        new = rule(text, len(rec.images))
        return None if new is None else replace(rec, text=new, images=keep_images)
    if not rec.tool_results:
        return None
    results: list[ToolResult] = []
    changed = False
    for r in rec.tool_results:
        new = rule(r.text, 0) if only is None or r.call_id in only else None
        results.append(r if new is None else r._replace(text=new))
        changed = changed or new is not None
    return replace(rec, tool_results=tuple(results)) if changed else None


def clear_call_inputs(message: Any, call_ids: frozenset[str], placeholder: str = "{}") -> Any:
    """A copy of an assistant ``message`` whose calls in ``call_ids`` carry ``placeholder`` args.

    Returns None for formats we cannot rewrite or when no call matched.
    """
    if isinstance(message, Message):
        calls = tuple(
            c._replace(arguments=placeholder) if c.id in call_ids else c for c in message.tool_calls
        )
        return replace(message, tool_calls=calls) if calls != message.tool_calls else None
    if not isinstance(message, Mapping):
        return None
    changed = False
    out: dict[str, Any] = dict(message)
    calls_raw = message.get("tool_calls")
    if isinstance(calls_raw, list):
        new_calls = []
        for call in calls_raw:
            if isinstance(call, Mapping) and call.get("id") in call_ids:
                fn = call.get("function")
                fn = {**fn, "arguments": placeholder} if isinstance(fn, Mapping) else fn
                new_calls.append({**call, "function": fn})
                changed = True
            else:
                new_calls.append(call)
        out["tool_calls"] = new_calls
    content = message.get("content")
    if isinstance(content, list):
        blocks = []
        for block in content:
            if (
                isinstance(block, Mapping)
                and block.get("type") == "tool_use"
                and block.get("id") in call_ids
            ):
                blocks.append({**block, "input": {}})
                changed = True
            else:
                blocks.append(block)
        out["content"] = blocks
    return out if changed else None


def strip_thinking(message: Any) -> Any:
    """A copy of an assistant ``message`` without thinking blocks / reasoning (None: nothing)."""
    if isinstance(message, Message):
        return replace(message, thinking="") if message.thinking else None
    if not isinstance(message, Mapping):
        return None
    out = dict(message)
    changed = False
    for key in ("reasoning_content", "reasoning"):
        if key in out:
            del out[key]
            changed = True
    content = message.get("content")
    if isinstance(content, list):
        kept = [
            b
            for b in content
            if not (isinstance(b, Mapping) and b.get("type") in ("thinking", "redacted_thinking"))
        ]
        if len(kept) != len(content):
            out["content"] = kept
            changed = True
    return out if changed else None
