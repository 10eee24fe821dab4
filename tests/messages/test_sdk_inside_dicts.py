"""The SDKs' own idioms mix their objects into dicts: ``{"role": "assistant", "content":
response.content}`` (Anthropic's tool-use docs), ``tool_calls=message.tool_calls`` (OpenAI),
``parts=[types.Part(...)]`` (google-genai). Each is read exactly as the same content written as
plain dicts: same count, same groups, same verdict from ``validate()``, same kept context."""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import MessageContextManager, count_tokens, normalize, trim
from context_manager.providers import validate


def anthropic_response() -> Any:
    from anthropic.types import Message

    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "Read the file first.", "signature": "c2ln"},
                {"type": "text", "text": "Let me read it."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def as_dicts(value: Any) -> Any:
    """The same content with every SDK object replaced by the JSON it sends."""
    if isinstance(value, dict):
        return {k: as_dicts(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_dicts(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def conversations() -> dict[str, tuple[list[Any], str]]:
    from google.genai import types
    from openai.types.chat import ChatCompletionMessage

    response = anthropic_response()
    anthropic_turns = [
        {"role": "user", "content": "Read a.py"},
        {"role": "assistant", "content": response.content},  # Anthropic's documented idiom
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1"}],
        },
    ]
    openai_message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        }
    )
    openai_turns = [
        {"role": "user", "content": "call both"},
        {"role": "assistant", "content": None, "tool_calls": openai_message.tool_calls},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
    ]
    gemini_turns = [
        {"role": "user", "parts": [types.Part(text="weather?")]},
        {
            "role": "model",
            "parts": [types.Part(function_call=types.FunctionCall(id="w1", name="w", args={}))],
        },
        {
            "role": "user",
            "parts": [
                types.Part(
                    function_response=types.FunctionResponse(id="w1", name="w", response={"t": 20})
                )
            ],
        },
    ]
    return {
        "anthropic": (anthropic_turns, "anthropic"),
        "openai": (openai_turns, "openai"),
        "gemini": (gemini_turns, "gemini"),
    }


@pytest.mark.parametrize("name", ["anthropic", "openai", "gemini"])
def test_sdk_objects_inside_dicts_read_as_the_same_content_in_dicts(name: str) -> None:
    mixed, provider = conversations()[name]
    plain = as_dicts(mixed)
    assert [normalize(m) for m in mixed] == [normalize(m) for m in plain]
    assert count_tokens(mixed, None, counter="chars") == count_tokens(plain, None, counter="chars")
    assert validate(mixed, provider) == validate(plain, provider) == []
    assert validate(mixed[1:], provider) == validate(plain[1:], provider)  # judged alike
    for budget in (40, 80, 200, 10_000):
        kept = trim(mixed, budget, provider=provider, counter="chars")
        assert as_dicts(kept) == trim(plain, budget, provider=provider, counter="chars")
        assert all(any(k is m for m in mixed) for k in kept)  # the caller's own objects


def test_the_anthropic_idiom_in_a_manager_returns_the_callers_objects() -> None:
    mixed, _ = conversations()["anthropic"]
    manager = MessageContextManager(4_000, provider="anthropic")
    manager.extend(mixed)
    context = manager.get_context()
    assert [id(m) for m in context] == [id(m) for m in mixed]
    assert context[1]["content"][0].signature == "c2ln"  # the signed block, untouched


@pytest.mark.parametrize("name", ["anthropic", "openai", "gemini"])
def test_dicts_holding_sdk_objects_are_stored_and_restored_as_they_were(
    name: str, tmp_path: Any
) -> None:
    mixed, provider = conversations()[name]
    path = tmp_path / "session.jsonl"
    manager = MessageContextManager.open(path, max_tokens=100_000, provider=provider)
    manager.extend(mixed)
    manager.store.close()
    restored = MessageContextManager.open(path, max_tokens=100_000, provider=provider).messages
    assert restored == mixed  # equal dicts, and inside them equal objects of the same classes
    for got, want in zip(restored, mixed, strict=True):
        for key, value in want.items():
            if isinstance(value, list):
                assert [type(v) for v in got[key]] == [type(v) for v in value]
