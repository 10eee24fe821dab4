"""Token-count parity runners: our tiktoken counters against npm gpt-tokenizer and js-tiktoken.

Fixtures come from ``compat_fixtures/gen/tokens.mjs``. Chat inputs are gpt-tokenizer's
``ChatMessage`` shape (``role``, ``name``, ``content``, legacy ``function_call``); we feed them
through the same ``normalize`` every caller's messages go through (a ``function_call`` becomes one
OpenAI tool call), so the proof covers the real path, not a side door.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..counting.tiktoken_counter import TiktokenCounter
from ..messages import Message, normalize

_counters: dict[tuple[str, str], TiktokenCounter] = {}


def _counter(model: str, chat_format: str) -> TiktokenCounter:
    key = (model, chat_format)
    if key not in _counters:
        _counters[key] = TiktokenCounter(model, chat_format=chat_format)
    return _counters[key]


def _message(raw: Mapping[str, Any], index: int) -> Message:
    data: dict[str, Any] = {k: v for k, v in raw.items() if k != "function_call"}
    call = raw.get("function_call")
    if isinstance(call, Mapping):
        data["tool_calls"] = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": call.get("name", ""), "arguments": call.get("arguments", "")},
            }
        ]
    return normalize(data, index)


def _chat_runner(model: str, chat_format: str) -> Callable[[Any], Any]:
    def run(case: Mapping[str, Any]) -> int:
        messages = [_message(m, i) for i, m in enumerate(case["messages"])]
        return _counter(model, chat_format).count_prompt(messages)

    return run


def _raw_runner(encoding: str) -> Callable[[Any], Any]:
    def run(case: Mapping[str, Any]) -> int:
        key = (f"encoding:{encoding}", "openai")
        if key not in _counters:
            _counters[key] = TiktokenCounter(encoding=encoding)
        return _counters[key].count_text(case["text"])

    return run


FIXTURE_SUITES: dict[str, Callable[[Any], Any]] = {
    "tokens.encodeChat.gpt-4o": _chat_runner("gpt-4o", "chatml"),
    "tokens.encodeChat.gpt-4": _chat_runner("gpt-4", "chatml"),
    "tokens.countChatCompletionTokens.gpt-4o": _chat_runner("gpt-4o", "openai"),
    "tokens.rawText.o200k_base": _raw_runner("o200k_base"),
    "tokens.rawText.cl100k_base": _raw_runner("cl100k_base"),
}
