"""Pi's ``convertToLlm`` and ``serializeConversation``: the text a summarizer reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..._js import js_len, js_object_keys, js_slice, js_string, js_stringify, js_truthy
from ...errors import InvalidMessageError
from ...messages import message_list
from ._shapes import _ABSENT, TOOL_RESULT_MAX_CHARS, PiMessage, _blocks, _pi_object

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the "
    "following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
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
    for i, item in enumerate(message_list(messages)):
        message = _pi_object(item, f"message {i}")
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
            out.append(
                _as_user(COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX, message)
            )
    return out


def _join_texts(content: Any, where: str, sep: str = "") -> str:
    """``content.filter(c => c.type === "text").map(c => c.text).join(sep)``."""
    return sep.join(
        "" if (t := b.get("text")) is None else js_string(t)
        for b in _blocks(content, where, strings_iterate=False)
        if b.get("type") == "text"
    )


def _truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    length = js_len(text)
    if length <= max_chars:
        return text
    return f"{js_slice(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _format_tool_call(block: Mapping[str, Any]) -> str:
    args = block.get("arguments")
    if not isinstance(args, Mapping):
        raise InvalidMessageError(
            "tool call arguments must be an object", hint=f"got {type(args).__name__}"
        )
    rendered = ", ".join(
        f"{key}={js_stringify(args[key] if key in args else args[int(key)])}"
        for key in js_object_keys(args)
    )
    return f"{js_string(block.get('name'))}({rendered})"


def serialize_conversation(messages: Sequence[PiMessage]) -> str:
    """Pi's ``serializeConversation`` over LLM messages (run :func:`convert_to_llm` first).

    Produces ``[User]:``, ``[Assistant thinking]:``, ``[Assistant]:``,
    ``[Assistant tool calls]:`` and ``[Tool result]:`` blocks joined by blank lines; tool results
    over 2000 UTF-16 units are cut (possibly mid-surrogate, as in Pi) with a note of the rest.
    """
    parts: list[str] = []
    for i, item in enumerate(message_list(messages)):
        message = _pi_object(item, f"message {i}")
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
