"""Shared helpers for the compaction tests: Pi fixture loading, a reverse converter, doubles."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from context_manager.compaction import SummaryRequest, to_pi_messages
from context_manager.compaction.pi_rules import estimate_tokens
from context_manager.messages import Message, ToolCall, to_json_text

FIXTURES = Path(__file__).resolve().parents[2] / "compat_fixtures" / "fixtures"


def load_cases(suite: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / f"{suite}.json").read_text("utf-8"))["cases"]  # type: ignore[no-any-return]


def _only_text(blocks: Any) -> str | None:
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, list) or any(
        not isinstance(b, Mapping) or b.get("type") != "text" or not isinstance(b.get("text"), str)
        for b in blocks
    ):
        return None
    if len(blocks) > 1:
        return None
    return blocks[0]["text"] if blocks else ""


def from_pi(message: Mapping[str, Any]) -> Message | None:
    """Our record for a Pi message, or None when the shape has no lossless equivalent."""
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        text = _only_text(content)
        return None if text is None else Message("user", text)
    if role == "custom" and isinstance(content, str):
        return Message("system", content)  # our mid-history system notes become custom ones
    if role == "toolResult":
        text = _only_text(content)
        if text is None or not isinstance(message.get("toolCallId"), str):
            return None
        return Message("tool", text, tool_call_id=message["toolCallId"])
    if role != "assistant" or not isinstance(content, list):
        return None
    texts, thinking, calls = [], [], []
    for block in content:
        if not isinstance(block, Mapping):
            return None
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thinking.append(block["thinking"])
        elif (
            kind == "toolCall"
            and isinstance(block.get("id"), str)
            and isinstance(block.get("name"), str)
            and isinstance(block.get("arguments"), dict)
        ):
            calls.append(ToolCall(block["id"], block["name"], to_json_text(block["arguments"])))
        else:
            return None
    if len(texts) > 1 or len(thinking) > 1 or "" in texts:
        return None  # Pi serializes an empty text block; our records have no such thing
    return Message(
        "assistant",
        texts[0] if texts else "",
        tool_calls=tuple(calls),
        thinking=thinking[0] if thinking else "",
    )


def records_for(entries: Sequence[Mapping[str, Any]]) -> list[Message] | None:
    """Records standing for Pi message entries, when each converts back with an equal estimate."""
    out = []
    names: dict[str, str] = {}
    for entry in entries:
        if entry.get("type") != "message":
            return None
        rec = from_pi(entry["message"])
        if rec is None:
            return None
        back = to_pi_messages(rec, names)
        if len(back) != 1 or estimate_tokens(back[0]) != estimate_tokens(entry["message"]):
            return None
        out.append(rec)
    return out


@dataclass(frozen=True)
class Item:
    """A stand-in for ``manager.history()`` items when testing policies alone."""

    index: int
    record: Message
    tokens: int = 0
    pinned: bool = False
    priority: int = 0


class RecordingSummarizer:
    """A test double for an LLM: records every request, answers with a canned text."""

    def __init__(self, reply: str = "LLM summary") -> None:
        self.requests: list[SummaryRequest] = []
        self.reply = reply

    def __call__(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return f"{self.reply} #{len(self.requests)} ({request.kind})"


def coding_session(turns: int, *, start: int = 0, filler: int = 200) -> list[dict[str, Any]]:
    """OpenAI-shaped turns: a request, a read + edit tool group, a closing reply."""
    out: list[dict[str, Any]] = []
    pad = "x" * filler
    for t in range(start, start + turns):
        out.append({"role": "user", "content": f"Turn {t}: fix parse_{t}() in src/m{t}.py {pad}"})
        calls = [
            {
                "id": f"r{t}",
                "type": "function",
                "function": {"name": "read", "arguments": json.dumps({"path": f"src/m{t}.py"})},
            },
            {
                "id": f"e{t}",
                "type": "function",
                "function": {"name": "edit", "arguments": json.dumps({"path": f"src/e{t}.py"})},
            },
        ]
        out.append({"role": "assistant", "content": "Looking.", "tool_calls": calls})
        out.append({"role": "tool", "tool_call_id": f"r{t}", "content": f"def parse_{t}(): {pad}"})
        out.append({"role": "tool", "tool_call_id": f"e{t}", "content": "ok"})
        out.append({"role": "assistant", "content": f"Fixed parse_{t}(). {pad}"})
    return out
