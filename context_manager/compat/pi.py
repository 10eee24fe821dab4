"""Pi's compaction rules, reproduced exactly (``@mariozechner/pi-coding-agent`` / ``pi-ai`` 0.73.1).

Inputs are Pi's own JSON shapes, camelCase as Pi writes them: agent messages (``role`` user,
assistant, toolResult, bashExecution, custom, branchSummary, compactionSummary) and session
entries (``{"type": "message", "id", "parentId", "timestamp", "message"}`` and the other entry
types). Outputs equal what the TypeScript functions return, which ``compat_fixtures/gen/pi.mjs``
records by running the real packages; ``FIXTURE_SUITES`` below replays every recorded case.

This module is the one implementation of Pi's cut-point rules in the library: compaction code
calls :func:`find_cut_point` / :func:`prepare_compaction` rather than re-deriving them. Lengths are
UTF-16 code units, JSON is JS ``JSON.stringify`` and truthiness is JS truthiness (see ``js.py``).

A key that is absent stands for JS ``undefined`` and a ``None`` value for ``null``; where Pi would
throw on malformed input (e.g. a ``null`` content block) we raise ``InvalidMessageError``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import ConfigurationError, ContextManagerError, InvalidMessageError
from .js import (
    js_date_ms,
    js_len,
    js_object_keys,
    js_regex,
    js_slice,
    js_sort_key,
    js_string,
    js_stringify,
    js_truthy,
)

__all__ = [
    "DEFAULT_COMPACTION_SETTINGS",
    "OVERFLOW_PATTERN_SOURCES",
    "CompactionPreparation",
    "ContextEstimate",
    "CutPoint",
    "FileOps",
    "SessionContext",
    "bash_execution_to_text",
    "build_session_context",
    "calculate_context_tokens",
    "compute_file_lists",
    "convert_to_llm",
    "create_file_ops",
    "estimate_context_tokens",
    "estimate_tokens",
    "extract_file_ops_from_message",
    "find_cut_point",
    "find_turn_start_index",
    "format_file_operations",
    "get_last_assistant_usage",
    "get_overflow_patterns",
    "is_context_overflow",
    "prepare_compaction",
    "serialize_conversation",
    "should_compact",
]

PiMessage = Mapping[str, Any]
"""An agent message in Pi's JSON shape (``role`` plus role-specific fields)."""
PiEntry = Mapping[str, Any]
"""A session entry in Pi's JSON shape (``type``, ``id``, ``parentId``, ``timestamp``, ...)."""
Usage = Mapping[str, Any]
"""Pi's usage record: ``input``, ``output``, ``cacheRead``, ``cacheWrite``, ``totalTokens``."""

DEFAULT_COMPACTION_SETTINGS: Mapping[str, Any] = MappingProxyType(
    {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000}
)

IMAGE_CHARS = 4800
"""Characters Pi charges per image block in tool results and custom messages (1200 tokens)."""
TOOL_RESULT_MAX_CHARS = 2000
"""Tool results longer than this (UTF-16 units) are cut when serialized for summarization."""

_ABSENT: Any = object()  # JS ``undefined``: distinct from ``None`` (JS ``null``)


def _blocks(content: Any, where: str, *, strings_iterate: bool = True
            ) -> Iterator[Mapping[str, Any]]:
    """Content blocks as Pi walks them: objects are used, other scalars have no ``type``.

    ``for (const b of content)`` accepts a string (its characters are no blocks), while
    ``content.filter(...)`` throws on one: ``strings_iterate`` picks which of the two Pi uses.
    """
    if isinstance(content, str):
        if strings_iterate:
            return
        raise InvalidMessageError(f"{where}: content must be a list of blocks here, not a string",
                                  hint="Pi calls content.filter(), which strings lack")
    if not isinstance(content, Sequence):
        raise InvalidMessageError(f"{where}: content must be a string or a list of blocks",
                                  hint=f"got {type(content).__name__}")
    for block in content:
        if block is None:
            raise InvalidMessageError(f"{where}: content holds a null block",
                                      hint="Pi throws on null blocks; drop them")
        if isinstance(block, Mapping):
            yield block


def _setting_number(settings: Mapping[str, Any], key: str) -> float:
    """A numeric setting as JS arithmetic sees it: absent is NaN (all comparisons false),
    ``null`` is 0."""
    value = settings.get(key, math.nan)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(f"compaction setting {key!r} must be a number, got {value!r}")
    return value


def _text_len(value: Any, where: str) -> int:
    if not isinstance(value, str):
        raise InvalidMessageError(f"{where} must be a string, got {type(value).__name__}")
    return js_len(value)


# --- Token estimates and triggers ----------------------------------------------------------------


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
                    raise InvalidMessageError("tool call without arguments",
                                              hint="Pi needs an arguments object, even {}")
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
            message.get("output"), "bash output")
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
            usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"])
    except KeyError as exc:
        raise InvalidMessageError(f"usage lacks {exc.args[0]!r} and has no totalTokens") from None
    return parts[0] + parts[1] + parts[2] + parts[3]


def should_compact(context_tokens: float, context_window: float,
                   settings: Mapping[str, Any] = DEFAULT_COMPACTION_SETTINGS) -> bool:
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
        return {"tokens": self.tokens, "usageTokens": self.usage_tokens,
                "trailingTokens": self.trailing_tokens, "lastUsageIndex": self.last_usage_index}


def estimate_context_tokens(messages: Sequence[PiMessage],
                            estimate: Callable[[PiMessage], int] = estimate_tokens,
                            ) -> ContextEstimate:
    """Context size as Pi judges it: the newest usage report, plus estimates of later messages."""
    for index in range(len(messages) - 1, -1, -1):
        usage = _assistant_usage(messages[index])
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing = sum(estimate(m) for m in messages[index + 1:])
            return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
    estimated = sum(estimate(m) for m in messages)
    return ContextEstimate(estimated, 0, estimated, None)


# --- Cut points ------------------------------------------------------------------------------

_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary",
                        "compactionSummary"})
_USERLIKE_ENTRY_TYPES = frozenset({"branch_summary", "custom_message"})


@dataclass(frozen=True, slots=True)
class CutPoint:
    """Where to cut: keep entries from ``first_kept_entry_index`` on.

    ``is_split_turn`` says the cut falls inside a turn whose start (a user-like entry) sits at
    ``turn_start_index``; that turn's prefix then needs its own summary. ``-1`` means none.
    """

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool

    def to_pi(self) -> dict[str, Any]:
        """Pi's object shape ``{firstKeptEntryIndex, turnStartIndex, isSplitTurn}``."""
        return {"firstKeptEntryIndex": self.first_kept_entry_index,
                "turnStartIndex": self.turn_start_index, "isSplitTurn": self.is_split_turn}


def _entry(entries: Sequence[PiEntry], index: int) -> PiEntry:
    if not 0 <= index < len(entries):  # Pi would read `undefined` here and throw
        raise ConfigurationError(f"entry index {index} is outside 0..{len(entries) - 1}")
    return entries[index]


def _is_valid_cut(entry: PiEntry) -> bool:
    """A cut may land on any user-visible turn piece except a tool result (it needs its call)."""
    kind = entry.get("type")
    if kind == "message":
        return entry["message"].get("role") in _CUT_ROLES
    return kind in _USERLIKE_ENTRY_TYPES


def _starts_turn(entry: PiEntry) -> bool:
    kind = entry.get("type")
    if kind in _USERLIKE_ENTRY_TYPES:
        return True
    return kind == "message" and entry["message"].get("role") in ("user", "bashExecution")


def find_turn_start_index(entries: Sequence[PiEntry], entry_index: int, start_index: int) -> int:
    """Index of the user / bashExecution / branch_summary / custom_message entry that starts the
    turn holding ``entry_index``, searching back to ``start_index``; ``-1`` if there is none."""
    for i in range(entry_index, start_index - 1, -1):
        if _starts_turn(_entry(entries, i)):
            return i
    return -1


def find_cut_point(entries: Sequence[PiEntry], start_index: int, end_index: int,
                   keep_recent_tokens: float,
                   estimate: Callable[[PiMessage], int] = estimate_tokens) -> CutPoint:
    """Pi's ``findCutPoint`` over ``entries[start_index:end_index]``.

    Walks back from the newest entry summing message estimates; once the sum reaches
    ``keep_recent_tokens`` the cut goes to the first valid cut point at or after that entry (if
    there is none, Pi keeps everything from the first valid cut point). The cut then extends back
    over non-message entries until a message or compaction entry. ``estimate`` lets callers pass
    cached per-message counts; it must agree with :func:`estimate_tokens` to stay Pi-exact.
    Cost: O(entries walked back) plus a short forward scan.
    """
    if start_index < end_index and (start_index < 0 or end_index > len(entries)):
        # Pi reads `undefined` there and throws; Python would wrap or raise IndexError.
        raise ConfigurationError(
            f"cut range {start_index}..{end_index} is outside the {len(entries)} entries")
    first_valid = next((i for i in range(start_index, end_index)
                        if _is_valid_cut(entries[i])), None)
    if first_valid is None:
        return CutPoint(start_index, -1, False)
    cut = first_valid
    accumulated = 0
    for i in range(end_index - 1, start_index - 1, -1):
        entry = entries[i]
        if entry.get("type") != "message":
            continue
        accumulated += estimate(entry["message"])
        if accumulated >= keep_recent_tokens:
            cut = next((c for c in range(i, end_index) if _is_valid_cut(entries[c])), cut)
            break
    while cut > start_index:
        previous = entries[cut - 1].get("type")
        if previous in ("compaction", "message"):
            break
        cut -= 1
    cut_entry = entries[cut]
    is_user = cut_entry.get("type") == "message" and cut_entry["message"].get("role") == "user"
    turn_start = -1 if is_user else find_turn_start_index(entries, cut, start_index)
    return CutPoint(cut, turn_start, not is_user and turn_start != -1)


# --- Overflow detection ------------------------------------------------------------------------

OVERFLOW_PATTERN_SOURCES: tuple[tuple[str, str], ...] = (
    ("prompt is too long", "i"),  # Anthropic
    ("request_too_large", "i"),  # Anthropic HTTP 413
    ("input is too long for requested model", "i"),  # Amazon Bedrock
    ("exceeds the context window", "i"),  # OpenAI
    ("input token count.*exceeds the maximum", "i"),  # Google Gemini
    ("maximum prompt length is \\d+", "i"),  # xAI
    ("reduce the length of the messages", "i"),  # Groq
    ("maximum context length is \\d+ tokens", "i"),  # OpenRouter
    ("exceeds the limit of \\d+", "i"),  # GitHub Copilot
    ("exceeds the available context size", "i"),  # llama.cpp
    ("greater than the context length", "i"),  # LM Studio
    ("context window exceeds limit", "i"),  # MiniMax
    ("exceeded model token limit", "i"),  # Kimi For Coding
    ("too large for model with \\d+ maximum context length", "i"),  # Mistral
    ("model_context_window_exceeded", "i"),  # z.ai
    ("prompt too long; exceeded (?:max )?context length", "i"),  # Ollama
    ("context[_ ]length[_ ]exceeded", "i"),  # generic
    ("too many tokens", "i"),  # generic
    ("token limit exceeded", "i"),  # generic
    ("^4(?:00|13)\\s*(?:status code)?\\s*\\(no body\\)", "i"),  # Cerebras
)
"""Pi's provider error patterns as (JS source, JS flags), in Pi's order."""
_NON_OVERFLOW_PATTERN_SOURCES: tuple[tuple[str, str], ...] = (
    ("^(Throttling error|Service unavailable):", "i"),  # AWS Bedrock
    ("rate limit", "i"),
    ("too many requests", "i"),
)
_OVERFLOW = tuple(js_regex(s, f) for s, f in OVERFLOW_PATTERN_SOURCES)
_NON_OVERFLOW = tuple(js_regex(s, f) for s, f in _NON_OVERFLOW_PATTERN_SOURCES)


def get_overflow_patterns() -> list[re.Pattern[str]]:
    """Compiled equivalents of Pi's ``getOverflowPatterns()`` (JS regex semantics kept)."""
    return list(_OVERFLOW)


def _is_zero(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def is_context_overflow(message: PiMessage, context_window: float | None = None) -> bool:
    """Pi's ``isContextOverflow`` for an assistant reply.

    True when (1) it is an error whose text matches a provider overflow pattern and no
    rate-limit / throttling pattern; (2) given a window, a "stop" reply whose
    ``input + cacheRead`` exceeds it (silent overflow); or (3) given a window, a "length" stop
    with zero output whose ``input + cacheRead`` is at least 99% of it. A window of 0 is "none".
    """
    stop = message.get("stopReason")
    error_text = message.get("errorMessage")
    if stop == "error" and js_truthy(error_text):
        text = js_string(error_text)
        if (not any(p.search(text) for p in _NON_OVERFLOW)
                and any(p.search(text) for p in _OVERFLOW)):
            return True
    if not js_truthy(context_window) or stop not in ("stop", "length"):
        return False
    assert context_window is not None
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        raise InvalidMessageError(f"a {stop!r} reply without a usage object",
                                  hint="Pi reads usage.input / usage.cacheRead here")
    # A missing number is `undefined` in JS: the sum becomes NaN and every comparison false.
    used = usage.get("input", math.nan) + usage.get("cacheRead", math.nan)
    if stop == "stop":
        return bool(used > context_window)
    return _is_zero(usage.get("output")) and bool(used >= context_window * 0.99)


# --- Conversion and serialization --------------------------------------------------------------

COMPACTION_SUMMARY_PREFIX = ("The conversation history before this point was compacted into the "
                             "following summary:\n\n<summary>\n")
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = ("The following is a summary of a branch that this conversation came "
                         "back from:\n\n<summary>\n")
BRANCH_SUMMARY_SUFFIX = "</summary>"


def bash_execution_to_text(message: PiMessage) -> str:
    """The user-message text Pi shows the model for a ``!command`` the user ran."""
    text = f"Ran `{js_string(message.get('command'))}`\n"
    output = message.get("output")
    text += f"```\n{js_string(output)}\n```" if js_truthy(output) else "(no output)"
    code = message.get("exitCode")
    if js_truthy(message.get("cancelled")):
        text += "\n\n(command cancelled)"
    elif code is not None and (isinstance(code, bool) or code != 0):
        text += f"\n\nCommand exited with code {js_string(code)}"
    path = message.get("fullOutputPath")
    if js_truthy(message.get("truncated")) and js_truthy(path):
        text += f"\n\n[Output truncated. Full output: {js_string(path)}]"
    return text


def _with_timestamp(out: dict[str, Any], message: PiMessage) -> dict[str, Any]:
    if "timestamp" in message:  # an absent (undefined) timestamp is dropped by JSON, as in Pi
        out["timestamp"] = message["timestamp"]
    return out


def _as_user(text: str, message: PiMessage) -> dict[str, Any]:
    return _with_timestamp({"role": "user", "content": [{"type": "text", "text": text}]}, message)


def convert_to_llm(messages: Sequence[PiMessage]) -> list[PiMessage]:
    """Pi's ``convertToLlm``: agent-only roles become user messages; unknown roles are dropped.

    user / assistant / toolResult messages pass through as the same objects.
    """
    out: list[PiMessage] = []
    for message in messages:
        role = message.get("role")
        if role in ("user", "assistant", "toolResult"):
            out.append(message)
        elif role == "bashExecution":
            if not js_truthy(message.get("excludeFromContext")):
                out.append(_as_user(bash_execution_to_text(message), message))
        elif role == "custom":
            converted: dict[str, Any] = {"role": "user"}
            if "content" in message:  # undefined content stays undefined (dropped by JSON)
                content = message["content"]
                is_text = isinstance(content, str)
                converted["content"] = [{"type": "text", "text": content}] if is_text else content
            out.append(_with_timestamp(converted, message))
        elif role == "branchSummary":
            summary = js_string(message.get("summary"))
            out.append(_as_user(BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX, message))
        elif role == "compactionSummary":
            summary = js_string(message.get("summary"))
            out.append(_as_user(COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX,
                                message))
    return out


def _join_texts(content: Any, where: str, sep: str = "") -> str:
    """``content.filter(c => c.type === "text").map(c => c.text).join(sep)``."""
    return sep.join("" if (t := b.get("text")) is None else js_string(t)
                    for b in _blocks(content, where, strings_iterate=False)
                    if b.get("type") == "text")


def _truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    length = js_len(text)
    if length <= max_chars:
        return text
    return f"{js_slice(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _format_tool_call(block: Mapping[str, Any]) -> str:
    args = block.get("arguments")
    if not isinstance(args, Mapping):
        raise InvalidMessageError("tool call arguments must be an object",
                                  hint=f"got {type(args).__name__}")
    rendered = ", ".join(f"{key}={js_stringify(args[key] if key in args else args[int(key)])}"
                         for key in js_object_keys(args))
    return f"{js_string(block.get('name'))}({rendered})"


def serialize_conversation(messages: Sequence[PiMessage]) -> str:
    """Pi's ``serializeConversation`` over LLM messages (run :func:`convert_to_llm` first).

    Produces ``[User]:``, ``[Assistant thinking]:``, ``[Assistant]:``,
    ``[Assistant tool calls]:`` and ``[Tool result]:`` blocks joined by blank lines; tool results
    over 2000 UTF-16 units are cut (possibly mid-surrogate, as in Pi) with a note of the rest.
    """
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else _join_texts(content, "user message")
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            texts: list[str] = []
            thinking: list[str] = []
            calls: list[str] = []
            for block in _blocks(message.get("content", _ABSENT), "assistant message"):
                kind = block.get("type")
                if kind == "text":
                    texts.append("" if block.get("text") is None else js_string(block["text"]))
                elif kind == "thinking":
                    value = block.get("thinking")
                    thinking.append("" if value is None else js_string(value))
                elif kind == "toolCall":
                    calls.append(_format_tool_call(block))
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif role == "toolResult":
            text = _join_texts(message.get("content", _ABSENT), "toolResult message")
            if text:
                parts.append(f"[Tool result]: {_truncate_for_summary(text)}")
    return "\n\n".join(parts)


# --- File operations -----------------------------------------------------------------------------


@dataclass(slots=True)
class FileOps:
    """Paths touched by read / write / edit tool calls, in first-seen order (JS ``Set``s)."""

    read: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)

    def to_pi(self) -> dict[str, list[str]]:
        return {"read": list(self.read), "written": list(self.written),
                "edited": list(self.edited)}


def create_file_ops() -> FileOps:
    return FileOps()


def extract_file_ops_from_message(message: PiMessage, file_ops: FileOps) -> None:
    """Record the ``path`` of each read / write / edit tool call of an assistant message."""
    if message.get("role") != "assistant":
        return
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, Mapping) or block.get("type", _ABSENT) != "toolCall":
            continue
        if "arguments" not in block or "name" not in block:
            continue
        args = block["arguments"]
        path = args.get("path") if isinstance(args, Mapping) else None
        if not isinstance(path, str) or not path:
            continue
        target = {"read": file_ops.read, "write": file_ops.written,
                  "edit": file_ops.edited}.get(block["name"]) if isinstance(
                      block["name"], str) else None
        if target is not None:
            target.setdefault(path, None)


def compute_file_lists(file_ops: FileOps) -> tuple[list[str], list[str]]:
    """``(read_files, modified_files)``: read-only paths and edited-or-written paths, each
    sorted by UTF-16 code units as JS ``sort()`` does."""
    modified = dict.fromkeys([*file_ops.edited, *file_ops.written])
    read_only = sorted((f for f in file_ops.read if f not in modified), key=js_sort_key)
    return read_only, sorted(modified, key=js_sort_key)


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """``<read-files>`` / ``<modified-files>`` blocks to append to a summary, or ``""``."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


# --- Session context and compaction preparation ------------------------------------------------


def _copy_present(out: dict[str, Any], source: Mapping[str, Any], *pairs: tuple[str, str]
                  ) -> dict[str, Any]:
    """Copy ``source[src]`` to ``out[dst]`` when present (absent means JS ``undefined``)."""
    for dst, src in pairs:
        if src in source:
            out[dst] = source[src]
    return out


def _entry_time(entry: PiEntry) -> int | None:
    """``new Date(entry.timestamp).getTime()``. Pi never throws here, so a timestamp whose JS
    reading we do not reproduce (non-ISO text, a date-time without offset) becomes NaN too."""
    if "timestamp" not in entry:
        return None
    return js_date_ms(entry["timestamp"], unreproduced_as_nan=True)


def create_custom_message(entry: PiEntry) -> dict[str, Any]:
    """The agent message a ``custom_message`` entry stands for."""
    out = _copy_present({"role": "custom"}, entry, ("customType", "customType"),
                        ("content", "content"), ("display", "display"), ("details", "details"))
    out["timestamp"] = _entry_time(entry)
    return out


def create_branch_summary_message(entry: PiEntry) -> dict[str, Any]:
    """The agent message a ``branch_summary`` entry stands for."""
    out = _copy_present({"role": "branchSummary"}, entry, ("summary", "summary"),
                        ("fromId", "fromId"))
    out["timestamp"] = _entry_time(entry)
    return out


def create_compaction_summary_message(entry: PiEntry) -> dict[str, Any]:
    """The agent message a ``compaction`` entry stands for (the summary the model sees)."""
    out = _copy_present({"role": "compactionSummary"}, entry, ("summary", "summary"),
                        ("tokensBefore", "tokensBefore"))
    out["timestamp"] = _entry_time(entry)
    return out


def _same(a: Mapping[str, Any], a_key: str, b: Mapping[str, Any], b_key: str) -> bool:
    """JS ``a[a_key] === b[b_key]`` for JSON values: absent only equals absent."""
    if (a_key in a) != (b_key in b):
        return False
    return a.get(a_key) == b.get(b_key) and type(a.get(a_key)) is type(b.get(b_key))


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What the model sees for a session path: messages, thinking level, current model.

    ``thinking_level`` is None when the last ``thinking_level_change`` had no level (JS
    ``undefined``, which ``to_pi`` then leaves out, as ``JSON.stringify`` does).
    """

    messages: list[PiMessage]
    thinking_level: Any
    model: dict[str, Any] | None
    thinking_level_given: bool = field(default=True, repr=False)

    def to_pi(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": self.messages}
        if self.thinking_level_given:
            out["thinkingLevel"] = self.thinking_level
        out["model"] = self.model
        return out


def _path_to(entries: Sequence[PiEntry], leaf_id: Any) -> list[PiEntry]:
    """Root-to-leaf path; an unknown, falsy or omitted leaf id means the last entry."""
    by_id: dict[Any, PiEntry] = {}
    for entry in entries:
        if "id" in entry:
            by_id[entry["id"]] = entry
    leaf = by_id.get(leaf_id) if leaf_id is not _ABSENT and js_truthy(leaf_id) else None
    if leaf is None:
        if not entries:
            return []
        leaf = entries[-1]
    path: list[PiEntry] = []
    current: PiEntry | None = leaf
    while current is not None:
        path.append(current)
        if len(path) > len(entries) + 1:
            raise InvalidMessageError("session entries form a parentId cycle",
                                      hint="each parentId must point to an earlier entry")
        parent = current.get("parentId")
        current = by_id.get(parent) if js_truthy(parent) else None
    path.reverse()
    return path


def build_session_context(entries: Sequence[PiEntry], leaf_id: str | None = _ABSENT
                          ) -> SessionContext:
    """Pi's ``buildSessionContext``: walk parentIds from the leaf to the root.

    ``leaf_id`` omitted, unknown or empty means the last entry; ``None`` means "before the first
    entry" (no messages). With a compaction on the path the model sees its summary, then the kept
    entries from ``firstKeptEntryId`` up to the compaction, then everything after it. A parentId
    cycle (Pi would loop forever) raises ``InvalidMessageError``.
    """
    if leaf_id is None:
        return SessionContext([], "off", None)
    path = _path_to(entries, leaf_id)
    thinking_level: Any = "off"
    model: dict[str, Any] | None = None
    compaction: PiEntry | None = None
    for entry in path:
        kind = entry.get("type")
        if kind == "thinking_level_change":
            thinking_level = entry.get("thinkingLevel", _ABSENT)
        elif kind == "model_change":
            model = _copy_present({}, entry, ("provider", "provider"), ("modelId", "modelId"))
        elif kind == "message" and entry["message"].get("role") == "assistant":
            model = _copy_present({}, entry["message"], ("provider", "provider"),
                                  ("modelId", "model"))
        elif kind == "compaction":
            compaction = entry
    messages: list[PiMessage] = []

    def append(entry: PiEntry) -> None:
        kind = entry.get("type")
        if kind == "message":
            messages.append(entry["message"])
        elif kind == "custom_message":
            messages.append(create_custom_message(entry))
        elif kind == "branch_summary" and js_truthy(entry.get("summary")):
            messages.append(create_branch_summary_message(entry))

    if compaction is None:
        for entry in path:
            append(entry)
    else:
        messages.append(create_compaction_summary_message(compaction))
        at = next((i for i, e in enumerate(path)
                   if e.get("type") == "compaction" and _same(e, "id", compaction, "id")), -1)
        found_first_kept = False
        for entry in path[:max(at, 0)]:
            found_first_kept = found_first_kept or _same(entry, "id", compaction,
                                                         "firstKeptEntryId")
            if found_first_kept:
                append(entry)
        for entry in path[at + 1:]:
            append(entry)
    if thinking_level is _ABSENT:
        return SessionContext(messages, None, model, thinking_level_given=False)
    return SessionContext(messages, thinking_level, model)


def _message_for_compaction(entry: PiEntry) -> PiMessage | None:
    """The message an entry contributes to a summary; earlier compactions contribute none."""
    kind = entry.get("type")
    if kind == "message":
        return entry["message"]  # type: ignore[no-any-return]
    if kind == "custom_message":
        return create_custom_message(entry)
    if kind == "branch_summary":
        return create_branch_summary_message(entry)
    return None


@dataclass(frozen=True, slots=True)
class CompactionPreparation:
    """Everything a summarizer needs, as Pi's ``prepareCompaction`` computes it.

    ``messages_to_summarize`` go into the main summary; with a split turn,
    ``turn_prefix_messages`` (turn start up to the cut) get their own prefix summary.
    ``previous_summary`` is the last compaction's summary, to be updated rather than redone.
    """

    first_kept_entry_id: Any
    messages_to_summarize: list[PiMessage]
    turn_prefix_messages: list[PiMessage]
    is_split_turn: bool
    tokens_before: int | float
    previous_summary: str | None
    file_ops: FileOps
    settings: Mapping[str, Any]

    def to_pi(self) -> dict[str, Any]:
        """Pi's object shape, with the file-op ``Set``s as lists."""
        out: dict[str, Any] = {
            "firstKeptEntryId": self.first_kept_entry_id,
            "messagesToSummarize": self.messages_to_summarize,
            "turnPrefixMessages": self.turn_prefix_messages,
            "isSplitTurn": self.is_split_turn,
            "tokensBefore": self.tokens_before,
            "fileOps": self.file_ops.to_pi(),
            "settings": dict(self.settings),
        }
        if self.previous_summary is not None:
            out["previousSummary"] = self.previous_summary
        return out


def _string_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list):
        return []  # Pi ignores anything that is not an array
    if not all(isinstance(v, str) for v in value):
        raise InvalidMessageError(f"{where} must hold file paths (strings)")
    return value


def prepare_compaction(path_entries: Sequence[PiEntry],
                       settings: Mapping[str, Any] = DEFAULT_COMPACTION_SETTINGS,
                       estimate: Callable[[PiMessage], int] = estimate_tokens,
                       ) -> CompactionPreparation | None:
    """Pi's ``prepareCompaction`` (pure part of ``compact``): what to summarize and keep.

    Returns None when the path already ends in a compaction or the first kept entry has no id.
    A previous compaction bounds the search: it starts at that compaction's first kept entry,
    and its summary and file lists carry over.
    """
    if path_entries and path_entries[-1].get("type") == "compaction":
        return None
    prev_index = next((i for i in range(len(path_entries) - 1, -1, -1)
                       if path_entries[i].get("type") == "compaction"), -1)
    previous_summary: str | None = None
    boundary_start = 0
    if prev_index >= 0:
        previous = path_entries[prev_index]
        previous_summary = previous.get("summary")
        kept = next((i for i, e in enumerate(path_entries)
                     if _same(e, "id", previous, "firstKeptEntryId")), -1)
        boundary_start = kept if kept >= 0 else prev_index + 1
    tokens_before = estimate_context_tokens(build_session_context(path_entries).messages,
                                            estimate).tokens
    cut = find_cut_point(path_entries, boundary_start, len(path_entries),
                         _setting_number(settings, "keepRecentTokens"), estimate)
    first_kept = (path_entries[cut.first_kept_entry_index]
                  if cut.first_kept_entry_index < len(path_entries) else None)
    if first_kept is None or not js_truthy(first_kept.get("id")):
        return None  # Pi: the session needs migration
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index

    def messages_between(start: int, end: int) -> list[PiMessage]:
        found = (_message_for_compaction(path_entries[i]) for i in range(start, end))
        return [m for m in found if m is not None]

    to_summarize = messages_between(boundary_start, history_end)
    turn_prefix = (messages_between(cut.turn_start_index, cut.first_kept_entry_index)
                   if cut.is_split_turn else [])
    file_ops = create_file_ops()
    if prev_index >= 0:
        previous = path_entries[prev_index]
        details = previous.get("details")
        if (not js_truthy(previous.get("fromHook")) and js_truthy(details)
                and isinstance(details, Mapping)):
                for path in _string_list(details.get("readFiles"), "details.readFiles"):
                    file_ops.read.setdefault(path, None)
                for path in _string_list(details.get("modifiedFiles"), "details.modifiedFiles"):
                    file_ops.edited.setdefault(path, None)
    for message in (*to_summarize, *turn_prefix):
        extract_file_ops_from_message(message, file_ops)
    return CompactionPreparation(first_kept.get("id"), to_summarize, turn_prefix,
                                 cut.is_split_turn, tokens_before, previous_summary, file_ops,
                                 settings)


# --- Fixture runners ---------------------------------------------------------------------------


def _run_file_operations(messages: Sequence[PiMessage]) -> dict[str, Any]:
    ops = create_file_ops()
    for message in messages:
        extract_file_ops_from_message(message, ops)
    read_files, modified_files = compute_file_lists(ops)
    return {"fileOps": ops.to_pi(), "readFiles": read_files, "modifiedFiles": modified_files,
            "formatted": format_file_operations(read_files, modified_files)}


def _run_prepare(case: Mapping[str, Any]) -> dict[str, Any] | None:
    prepared = prepare_compaction(case["entries"], case["settings"])
    return None if prepared is None else prepared.to_pi()


_MALFORMED_TARGETS: dict[str, Callable[..., Any]] = {
    "estimateTokens": estimate_tokens,
    "serializeConversation": lambda messages: serialize_conversation(convert_to_llm(messages)),
    "findCutPoint": lambda *args: find_cut_point(*args).to_pi(),
    "findTurnStartIndex": find_turn_start_index,
    "isContextOverflow": is_context_overflow,
}


def _run_malformed(case: Mapping[str, Any]) -> dict[str, Any]:
    """Where Pi throws we must raise one of our typed errors; elsewhere return what Pi does."""
    try:
        value = _MALFORMED_TARGETS[case["fn"]](*case["args"])
    except ContextManagerError:
        return {"throws": True}
    return {"throws": False, "value": value}


FIXTURE_SUITES: dict[str, Callable[[Any], Any]] = {
    "pi.estimateTokens": estimate_tokens,
    "pi.findCutPoint": lambda c: find_cut_point(
        c["entries"], c["startIndex"], c["endIndex"], c["keepRecentTokens"]).to_pi(),
    "pi.findTurnStartIndex": lambda c: find_turn_start_index(
        c["entries"], c["entryIndex"], c["startIndex"]),
    "pi.shouldCompact": lambda c: should_compact(
        c["contextTokens"], c["contextWindow"], c["settings"]),
    "pi.calculateContextTokens": calculate_context_tokens,
    "pi.getLastAssistantUsage": get_last_assistant_usage,
    "pi.estimateContextTokens": lambda messages: estimate_context_tokens(messages).to_pi(),
    "pi.convertToLlm": convert_to_llm,
    "pi.serializeConversation": lambda messages: serialize_conversation(convert_to_llm(messages)),
    "pi.isContextOverflow": lambda c: is_context_overflow(c["message"], c.get("contextWindow")),
    "pi.getOverflowPatterns": lambda _: [{"source": s, "flags": f}
                                         for s, f in OVERFLOW_PATTERN_SOURCES],
    "pi.defaultCompactionSettings": lambda _: dict(DEFAULT_COMPACTION_SETTINGS),
    "pi.fileOperations": _run_file_operations,
    "pi.sessionContext": lambda entries: build_session_context(entries).to_pi(),
    "pi.prepareCompaction": _run_prepare,
    "pi.malformedInput": _run_malformed,
}
