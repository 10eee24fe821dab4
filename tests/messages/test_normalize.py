"""Normalization of every accepted message shape, and the errors bad input gets."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from context_manager import InvalidMessageError, Message, MessageContextManager, normalize
from context_manager.counting import CharEstimator, utf16_len
from context_manager.messages import ToolCall, ToolResult


def test_openai_string_and_parts() -> None:
    rec = normalize(
        {
            "role": "user",
            "name": "ann",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:...", "detail": "low"}},
                {"type": "text", "text": "here"},
            ],
        }
    )
    assert rec.role == "user" and rec.text == "look\nhere" and rec.name == "ann"
    assert len(rec.images) == 1 and rec.images[0].detail == "low"


def test_openai_tool_call_and_result() -> None:
    call = normalize(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": {"a": 1}}},
            ],
        }
    )
    assert call.tool_calls == (ToolCall("c1", "f", "{}"), ToolCall("c2", "g", '{"a":1}'))
    result = normalize({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    assert result.result_ids == ("c1",) and result.text == "ok"


def test_anthropic_blocks() -> None:
    call = normalize(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "checking"},
                {"type": "tool_use", "id": "tu1", "name": "read", "input": {"path": "é.py"}},
            ],
        }
    )
    assert call.thinking == "hmm" and call.text == "checking"
    assert call.tool_calls == (ToolCall("tu1", "read", '{"path":"é.py"}'),)
    results = normalize(
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "tu1",
                    "content": [{"type": "text", "text": "x"}],
                },
                {"type": "text", "text": "and also"},
            ],
        }
    )
    assert results.role == "user" and results.text == "and also"
    assert results.tool_results == (ToolResult("tu1", "x", False),)
    assert results.result_ids == ("tu1",)


def test_langchain_objects_are_accepted_as_they_are() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    ai = messages.AIMessage(content="", tool_calls=[{"name": "f", "args": {"q": "v"}, "id": "lc1"}])
    tool = messages.ToolMessage(content="res", tool_call_id="lc1")
    human = messages.HumanMessage(content="hi")
    system = messages.SystemMessage(content="be brief")
    # arguments as LangChain sends them (json.dumps, spaces included), so they count as sent
    assert normalize(ai).tool_calls == (ToolCall("lc1", "f", '{"q": "v"}'),)
    assert normalize(tool).result_ids == ("lc1",)
    assert normalize(human).role == "user" and normalize(system).role == "system"
    manager = MessageContextManager(1000)
    manager.extend([system, human, ai, tool])
    assert manager.get_context() == [system, human, ai, tool]
    assert manager.get_context()[2] is ai


def test_own_message_passes_through() -> None:
    m = Message("user", "hello")
    assert normalize(m) is m


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"role": "wizard", "content": "x"}, "unknown role 'wizard'"),
        (Message("wizard", "x"), "unknown role 'wizard'"),  # a caller's own record
        ({"type": "reasoning", "summary": 5}, "'summary' must be a list of parts"),
        ({"type": "reasoning", "summary": [], "content": "x"}, "'content' must be a list"),
        ({"role": "user", "content": 42}, "content must be a string or a list"),
        ({"role": "tool", "content": "x"}, "tool_call_id"),
        (
            {"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]},
            "without a string 'id'",
        ),
        ({"role": "assistant", "tool_calls": [{"id": "a", "function": {}}]}, "needs 'function'"),
        ({"role": "user", "content": [{"type": "tool_result"}]}, "tool_use_id"),
        ({"role": "user", "content": [7]}, "content parts must be objects"),
        (object(), "unsupported message type"),
    ],
)
def test_bad_input_names_what_and_where(message: Any, fragment: str) -> None:
    manager = MessageContextManager(1000)
    manager.add({"role": "user", "content": "first"})
    with pytest.raises(InvalidMessageError) as info:
        manager.add(message)
    assert fragment in str(info.value)
    assert info.value.index == 1
    assert str(info.value).startswith("message 1: ")


def test_utf16_length_matches_javascript() -> None:
    # JS: "😀".length === 2, "中".length === 1, "e\u0301".length === 2
    assert utf16_len("😀") == 2 and utf16_len("中") == 1 and utf16_len("e\u0301") == 2
    assert utf16_len("abc😀中") == 6


def test_estimator_counts_tool_calls_results_and_images() -> None:
    counter = CharEstimator()
    call = normalize(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "abcd", "arguments": "1234"}}
            ],
        }
    )
    assert counter.count_message(call) == 2 + 3  # ceil(8/4) + overhead
    image = normalize(
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}
    )
    assert counter.count_message(image) == 0 + 3 + 85
    assert counter.count_prompt([call, image]) == 5 + 88 + 3
    unknown = normalize({"role": "user", "content": [{"type": "audio", "data": "xxxx"}]})
    assert counter.count_message(unknown) > 3


def test_input_is_never_mutated() -> None:
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "r"},
    ]
    before = copy.deepcopy(msgs)
    manager = MessageContextManager(1000)
    manager.extend(msgs)
    out = manager.get_context()
    assert msgs == before
    assert all(a is b for a, b in zip(out, msgs, strict=True))
