"""OpenClaw's session-pruning rules on OpenClaw-shaped messages (the parity reference).

Messages are OpenClaw agent messages (``role`` user / assistant / toolResult, content blocks
``text`` / ``image`` / ``toolCall`` / ``thinking``). Uses the same config object, glob rules and
head+tail trimming as the manager's engine; the fixtures in ``compat_fixtures`` were produced by
the real pruner extracted from the published ``openclaw`` package. Chars are UTF-16 units; CJK
weighting of OpenClaw's estimator is not reproduced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..._js import js_stringify, utf16_len
from ...messages.shapes import THINKING_KINDS
from ...messages.truncate import IMAGE_MARKER, head_tail
from .config import ToolResultPruning


def _block_text(block: Any, strict: bool) -> str | None:
    if isinstance(block, Mapping) and block.get("type") == "text":
        text = block.get("text")
        if isinstance(text, str):
            return text
        return js_stringify(block) if strict else None
    return None


def message_chars(message: Mapping[str, Any], config: ToolResultPruning) -> int:
    """OpenClaw's char estimate of one message (images count ``config.image_chars``)."""
    role, content = message.get("role"), message.get("content")
    if role == "user" and isinstance(content, str):
        return utf16_len(content)
    if role not in ("user", "assistant", "toolResult"):
        return 256
    total = 0
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        text = _block_text(block, role != "assistant")
        if text is not None:
            total += utf16_len(text)
        elif block.get("type") == "image":
            total += config.image_chars
        elif role == "assistant" and block.get("type") in THINKING_KINDS:
            for key in ("thinking", "thinkingSignature", "data"):
                value = block.get(key)
                if isinstance(value, str) and (key != "data" or block["type"] != "thinking"):
                    total += utf16_len(value)
        elif role == "assistant" and block.get("type") == "toolCall":
            total += utf16_len(js_stringify(block.get("arguments", {})))
    return total


def _soft(message: Mapping[str, Any], config: ToolResultPruning) -> Mapping[str, Any]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    has_image = any(isinstance(b, Mapping) and b.get("type") == "image" for b in blocks)
    parts: list[str] = []
    for b in blocks:
        text = _block_text(b, True)
        if text is not None:
            parts.append(text)
        elif isinstance(b, Mapping) and b.get("type") == "image":
            parts.append(IMAGE_MARKER)
    joined = "\n".join(parts)
    limit = config.max_chars or 0
    if not has_image and utf16_len(joined) <= limit:
        return message
    if utf16_len(joined) > limit:
        joined = head_tail(joined, config.head_chars, config.tail_chars, config.marker)
    return {**message, "content": [{"type": "text", "text": joined}]}


def openclaw_prune(
    messages: Sequence[Mapping[str, Any]], window_tokens: int, config: ToolResultPruning
) -> list[Mapping[str, Any]]:
    """One pruning round (TTL expired, fresh session); returns new messages, input untouched."""
    out = list(messages)
    assistants = [i for i, m in enumerate(out) if m.get("role") == "assistant"]
    first_user = next((i for i, m in enumerate(out) if m.get("role") == "user"), -1)
    if len(assistants) < config.keep_last or config.keep_last == 0 or first_user < 0:
        return out
    cutoff = assistants[-config.keep_last]
    chars = [message_chars(m, config) for m in out]
    total = sum(chars)
    budget = window_tokens * 4
    if config.soft_ratio is not None and total / budget < config.soft_ratio:
        return out
    prunable: list[int] = []
    for i in range(first_user, cutoff):
        m = out[i]
        name = m.get("toolName")
        if m.get("role") != "toolResult" or not config.prunable(
            name if isinstance(name, str) else ""
        ):
            continue
        prunable.append(i)
        if config.max_chars is None:
            continue
        new = _soft(m, config)
        if new is not m:
            n = message_chars(new, config)
            total += n - chars[i]
            chars[i] = n
            out[i] = new
    hard = config.hard_ratio if config.hard_ratio is not None else 1.0
    if (
        total / budget >= hard
        and config.hard_clear
        and sum(chars[i] for i in prunable) >= config.min_prunable_chars
    ):
        for i in prunable:
            if total / budget < hard:
                break
            new = {**out[i], "content": [{"type": "text", "text": config.placeholder}]}
            total += message_chars(new, config) - chars[i]
            out[i] = new
    return out


def config_from_openclaw(settings: Mapping[str, Any]) -> ToolResultPruning:
    """``ToolResultPruning.openclaw()`` from an OpenClaw ``contextPruning`` config object."""
    tools = settings.get("tools") or {}
    hard = settings.get("hardClear") or {}
    placeholder = hard.get("placeholder")
    overrides: dict[str, object] = {
        "exclude_tools": tuple(tools.get("deny") or ()),
        "only_tools": tuple(tools.get("allow") or ()),
        "hard_clear": bool(hard.get("enabled", True)),
    }
    if isinstance(placeholder, str) and placeholder.strip():
        overrides["placeholder"] = placeholder.strip()
    return ToolResultPruning.openclaw(**overrides)
