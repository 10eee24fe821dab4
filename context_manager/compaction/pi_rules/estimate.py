"""Pi's token estimates and compaction trigger (``estimateTokens``, ``shouldCompact``, usage).

Lengths are UTF-16 code units and truthiness is JS truthiness (see :mod:`context_manager._js`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._js import js_len, js_stringify, js_truthy
from ...errors import InvalidMessageError
from ._shapes import (
    _ABSENT,
    DEFAULT_COMPACTION_SETTINGS,
    IMAGE_CHARS,
    PiEntry,
    PiMessage,
    Usage,
    _blocks,
    _setting_number,
    _text_len,
)


def estimate_tokens(message: PiMessage) -> int:
    """Pi's ``estimateTokens``: ``ceil(chars / 4)`` with chars counted per role.

    user: text (string or text blocks); assistant: text + thinking + tool name + compact JSON of
    the arguments; toolResult/custom: text + 4800 per image; bashExecution: command + output;
    branch/compaction summaries: the summary. Other roles cost 0.
    """
    role = message.get("role")
    chars = 0
    if role == "user":
        content = message.get("content")
        if isinstance(content, str):
            chars = js_len(content)
        elif isinstance(content, Sequence):
            for block in _blocks(content, "user message"):
                text = block.get("text")
                if block.get("type") == "text" and js_truthy(text):
                    chars += _text_len(text, "user text block")
    elif role == "assistant":
        for block in _blocks(message.get("content", _ABSENT), "assistant message"):
            kind = block.get("type")
            if kind == "text":
                chars += _text_len(block.get("text"), "assistant text block")
            elif kind == "thinking":
                chars += _text_len(block.get("thinking"), "assistant thinking block")
            elif kind == "toolCall":
                if "arguments" not in block:
                    raise InvalidMessageError(
                        "tool call without arguments", hint="Pi needs an arguments object, even {}"
                    )
                chars += _text_len(block.get("name"), "tool call name")
                chars += js_len(js_stringify(block["arguments"]))
    elif role in ("custom", "toolResult"):
        content = message.get("content", _ABSENT)
        if isinstance(content, str):
            chars = js_len(content)
        else:
            for block in _blocks(content, f"{role} message"):
                kind = block.get("type")
                text = block.get("text")
                if kind == "text" and js_truthy(text):
                    chars += _text_len(text, f"{role} text block")
                if kind == "image":
                    chars += IMAGE_CHARS
    elif role == "bashExecution":
        chars = _text_len(message.get("command"), "bash command") + _text_len(
            message.get("output"), "bash output"
        )
    elif role in ("branchSummary", "compactionSummary"):
        chars = _text_len(message.get("summary"), f"{role} summary")
    return -(-chars // 4)


def calculate_context_tokens(usage: Usage) -> int | float:
    """``usage.totalTokens || input + output + cacheRead + cacheWrite`` (0 falls back too)."""
    total: int | float = usage.get("totalTokens", 0)
    if js_truthy(total):
        return total
    try:
        parts: tuple[int | float, ...] = (
            usage["input"],
            usage["output"],
            usage["cacheRead"],
            usage["cacheWrite"],
        )
    except KeyError as exc:
        raise InvalidMessageError(f"usage lacks {exc.args[0]!r} and has no totalTokens") from None
    return parts[0] + parts[1] + parts[2] + parts[3]


def should_compact(
    context_tokens: float,
    context_window: float,
    settings: Mapping[str, Any] = DEFAULT_COMPACTION_SETTINGS,
) -> bool:
    """True when enabled and ``context_tokens > context_window - reserveTokens`` (strictly)."""
    if not js_truthy(settings.get("enabled")):
        return False
    return bool(context_tokens > context_window - _setting_number(settings, "reserveTokens"))


def _assistant_usage(message: PiMessage) -> Usage | None:
    """Usage of a completed assistant reply; aborted and errored replies carry none worth using."""
    if message.get("role") == "assistant" and "usage" in message:
        usage = message["usage"]
        if message.get("stopReason") not in ("aborted", "error") and js_truthy(usage):
            return usage  # type: ignore[no-any-return]
    return None


def get_last_assistant_usage(entries: Sequence[PiEntry]) -> Usage | None:
    """Usage of the newest message entry that is a completed assistant reply, else None."""
    for entry in reversed(entries):
        if entry.get("type") == "message":
            usage = _assistant_usage(entry["message"])
            if usage is not None:
                return usage
    return None


@dataclass(frozen=True, slots=True)
class ContextEstimate:
    """Pi's ``estimateContextTokens`` result: last reported usage plus estimates after it."""

    tokens: int | float
    usage_tokens: int | float
    trailing_tokens: int
    last_usage_index: int | None

    def to_pi(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "usageTokens": self.usage_tokens,
            "trailingTokens": self.trailing_tokens,
            "lastUsageIndex": self.last_usage_index,
        }


def estimate_context_tokens(
    messages: Sequence[PiMessage],
    estimate: Callable[[PiMessage], int] = estimate_tokens,
) -> ContextEstimate:
    """Context size as Pi judges it: the newest usage report, plus estimates of later messages."""
    for index in range(len(messages) - 1, -1, -1):
        usage = _assistant_usage(messages[index])
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing = sum(estimate(m) for m in messages[index + 1 :])
            return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
    estimated = sum(estimate(m) for m in messages)
    return ContextEstimate(estimated, 0, estimated, None)
