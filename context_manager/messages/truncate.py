"""Head+tail cuts of tool results, and copies of assistant turns without their inputs or
thinking, in the caller's own format.

Pruning and the default oversize fallback change what the model sees, never the history: every
function here returns a NEW object (or ``None`` when the format is not one we can rewrite) and
never mutates its argument. The results themselves are rewritten by
:func:`~context_manager.messages.results.rewrite_results` (every result shape, SDK objects
included), re-exported here beside the cuts it applies.

Lengths and cuts are in UTF-16 code units (JavaScript ``.length``), never splitting a surrogate
pair, so a head+tail trim matches OpenClaw's to the character.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .._js import utf16_len
from .record import Message
from .results import IMAGE_MARKER, TextRule, rewrite_results
from .shapes import THINKING_KINDS

__all__ = [
    "CUT_SEPARATOR",
    "DEFAULT_TRIM_MARKER",
    "IMAGE_MARKER",
    "TextRule",
    "clear_call_inputs",
    "head_tail",
    "rewrite_results",
    "slice_utf16",
    "strip_thinking",
]

#: Marker appended after a head+tail trim; fields: head, tail, total (UTF-16 units), cut.
DEFAULT_TRIM_MARKER = (
    "\n\n[Tool result trimmed: kept first {head} chars and last {tail} chars of {total} chars.]"
)


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


#: What :func:`head_tail` puts between the head and the tail (ASCII: its length is its units).
CUT_SEPARATOR = "\n...\n"


def head_tail(text: str, head: int, tail: int, marker: str = DEFAULT_TRIM_MARKER) -> str:
    """``head`` units, :data:`CUT_SEPARATOR`, ``tail`` units, then the marker saying what was
    cut."""
    total = utf16_len(text)
    kept = slice_utf16(text, 0, head) + CUT_SEPARATOR + (slice_utf16(text, -tail) if tail else "")
    return kept + marker.format(head=head, tail=tail, total=total, cut=max(total - head - tail, 0))


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
                # a function's JSON arguments, or a custom tool's text input
                key, field = ("custom", "input") if "custom" in call else ("function", "arguments")
                inner = call.get(key)
                new_calls.append(
                    {**call, key: {**inner, field: placeholder}}
                    if isinstance(inner, Mapping)
                    else call
                )
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
    """A copy of an assistant ``message`` without thinking blocks / reasoning (None: nothing to
    strip). A turn that holds nothing but its thinking (a reply stopped at ``max_tokens`` while
    thinking) keeps it: stripped, it would be an empty turn, which Anthropic and Gemini refuse."""
    if isinstance(message, Message):
        rest = message.text or message.tool_calls or message.tool_results or message.other
        if not message.thinking or not (rest or message.images or message.media):
            return None
        return replace(message, thinking="")
    if not isinstance(message, Mapping):
        return None
    out = dict(message)
    changed = False
    content = message.get("content")
    if isinstance(content, list):
        kept = [
            b for b in content if not (isinstance(b, Mapping) and b.get("type") in THINKING_KINDS)
        ]
        if not kept and content:
            return None  # nothing but thinking
        if len(kept) != len(content):
            out["content"] = kept
            changed = True
    elif not content and not message.get("tool_calls"):
        return None  # its reasoning is all it says
    for key in ("reasoning_content", "reasoning"):
        if key in out:
            del out[key]
            changed = True
    return out if changed else None
