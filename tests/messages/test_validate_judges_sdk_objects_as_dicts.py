"""``validate()`` judges SDK objects exactly as it judges the same content written as dicts: for
each SDK, a valid conversation and broken ones (a call left unanswered, a result without its
call, a result in another provider's shape, parts out of order), objects and dicts get the same
verdict, and the broken ones are refused."""

from __future__ import annotations

from typing import Any

import pytest

from context_manager.providers import validate

from .agent_shapes import SHAPES, Shape, as_json


def verdict(messages: list[Any], provider: str) -> list[tuple[int, str]]:
    return [(p.index, p.rule) for p in validate(messages, provider)]


def variants(shape: Shape) -> dict[str, list[Any]]:
    ids = ["c1", "c2"] if shape.ids else ["", ""]
    calls = shape.calls(1, [(ids[0], "read", {"p": 1}), (ids[1], "read", {"p": 2})])
    results = shape.results([(ids[0], "read", "one"), (ids[1], "read", "two")])
    user, reply = shape.user("go"), shape.reply("done")
    foreign = [{"role": "tool", "tool_call_id": i or "~read", "content": "r"} for i in ids]
    out = {
        "valid": [user, *calls, *results, *reply],
        "unanswered": [user, *calls, *reply],
        "orphan": [user, *results, *reply],
        "foreign result": [user, *calls, *foreign, *reply],
    }
    if shape.name in ("openai", "langchain"):
        del out["foreign result"]  # its own shape (LangChain reads OpenAI chat dicts)
    return out


def dict_forms(messages: list[Any], name: str) -> list[list[Any]]:
    if name == "langchain":
        from langchain_core.messages import convert_to_openai_messages

        return [convert_to_openai_messages(messages)]
    forms = [[as_json(m) for m in messages]]
    if name == "gemini":
        forms.append([as_json(m, camel=True) for m in messages])
    return forms


@pytest.mark.parametrize("name", list(SHAPES))
def test_objects_and_dicts_get_the_same_verdict(name: str) -> None:
    shape = SHAPES[name]()
    provider = shape.provider or "openai"
    for label, messages in variants(shape).items():
        expected = verdict(messages, provider)
        assert (expected == []) == (label == "valid"), (label, expected)
        if label == "foreign result":
            assert "result-shape" in {rule for _, rule in expected}, expected
        for form in dict_forms(messages, name):
            assert verdict(form, provider) == expected, (label, form)


def test_an_openai_tool_message_cannot_answer_an_anthropic_call() -> None:
    """The issue's session: ``anthropic.types.Message`` turns closed by ``{"role": "tool"}``."""
    shape = SHAPES["anthropic"]()
    messages = variants(shape)["foreign result"]
    problems = validate(messages, "anthropic")
    assert [p.rule for p in problems] == ["result-shape", "result-shape"]
    assert "c1" in problems[0].reason
    assert verdict([as_json(m) for m in messages], "anthropic") == verdict(messages, "anthropic")


def test_part_order_rules_read_sdk_objects() -> None:
    """Thinking after text in an ``anthropic.types.Message``, text before a result in a
    pydantic-ai request: the same problems as in their dicts."""
    from anthropic.types import Message
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    late_thinking = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
            ],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    messages: list[Any] = [{"role": "user", "content": "hi"}, late_thinking]
    assert verdict(messages, "anthropic") == [(1, "thinking-first")]
    assert verdict([as_json(m) for m in messages], "anthropic") == [(1, "thinking-first")]

    text_first = [
        ModelRequest(parts=[UserPromptPart("go")]),
        ModelResponse(parts=[ToolCallPart("read", {}, "t1")]),
        ModelRequest(parts=[UserPromptPart("also"), ToolReturnPart("read", "x", "t1")]),
    ]
    assert verdict(text_first, "anthropic") == [(2, "results-first")]
    assert verdict([as_json(m) for m in text_first], "anthropic") == [(2, "results-first")]
