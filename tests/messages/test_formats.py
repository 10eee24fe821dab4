"""Every mainstream format in and out, built with the real SDKs exactly as they return objects.

Payloads follow the providers' documented response examples; the SDKs parse them
(``model_validate``), so the objects are the ones a user holds after a real call. Each test
adds them to a manager, checks the context returns the caller's own objects, and reopens a
store to check they come back as the same class with equal values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_manager import InvalidMessageError, MessageContextManager, normalize
from context_manager.messages.codec import decode, encode

openai_types = pytest.importorskip("openai.types.chat")
responses = pytest.importorskip("openai.types.responses")
anthropic_types = pytest.importorskip("anthropic.types")
genai = pytest.importorskip("google.genai.types")
pai = pytest.importorskip("pydantic_ai.messages")
lc = pytest.importorskip("langchain_core.messages")

CHAT_COMPLETION = {
    "id": "chatcmpl-123",
    "object": "chat.completion",
    "created": 1741569952,
    "model": "gpt-4.1-2025-04-14",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "annotations": [],
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'},
                    },
                    {
                        "id": "call_def",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"tz":"CET"}'},
                    },
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99},
}
ANTHROPIC_MESSAGE = {
    "id": "msg_01Aq9w938a90dw8q",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "The user wants weather.", "signature": "EqQBCgIYAhIM"},
        {"type": "text", "text": "I'll check the weather."},
        {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "SF"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 2095, "output_tokens": 503},
}
RESPONSE = {
    "id": "resp_67ccd2bed1ec8190",
    "object": "response",
    "created_at": 1741476542,
    "model": "gpt-5",
    "status": "completed",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "output": [
        {
            "type": "reasoning",
            "id": "rs_67ccd2bf17f0",
            "summary": [{"type": "summary_text", "text": "Two lookups are needed."}],
            "encrypted_content": "gAAAAABo" + "x" * 200,
        },
        {
            "type": "function_call",
            "id": "fc_12345xyz",
            "call_id": "call_12345xyz",
            "name": "get_weather",
            "arguments": '{"location":"Paris, France"}',
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_67890abc",
            "call_id": "call_67890abc",
            "name": "get_weather",
            "arguments": '{"location":"Bogotá, Colombia"}',
            "status": "completed",
        },
    ],
}


def _roundtrip(tmp_path: Path, messages: list[Any], **options: Any) -> MessageContextManager:
    path = tmp_path / "context.jsonl"
    manager = MessageContextManager.open(path, **options)
    for message in messages:
        manager.add(message)
    context = manager.get_context()
    assert all(any(c is m for m in messages) for c in context)  # the caller's own objects
    reopened = MessageContextManager.open(path, **options)
    assert reopened.messages == manager.messages
    assert [type(m) for m in reopened.messages] == [type(m) for m in manager.messages]
    assert reopened.token_count == manager.token_count
    return reopened


def test_openai_chat_completion_message(tmp_path: Path) -> None:
    completion = openai_types.ChatCompletion.model_validate(CHAT_COMPLETION)
    message = completion.choices[0].message
    history = [
        {"role": "user", "content": "Weather and time in Paris?"},
        message,
        {"role": "tool", "tool_call_id": "call_abc", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_def", "content": "14:05"},
    ]
    rec = normalize(message)
    assert [c.id for c in rec.tool_calls] == ["call_abc", "call_def"]
    _roundtrip(tmp_path, history)


def test_openai_refusal_audio_and_legacy_function_call() -> None:
    refusal = openai_types.ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    )
    assert normalize(refusal).text == "I can't help with that."
    manager = MessageContextManager(10_000)
    manager.add({"role": "user", "content": "weather?"})
    manager.add(
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "get_weather", "arguments": "{}"},
        }
    )
    manager.add({"role": "function", "name": "get_weather", "content": "sunny"})
    manager.add({"role": "user", "content": "thanks"})
    assert len(manager.get_context()) == 4


def test_anthropic_message_and_blocks(tmp_path: Path) -> None:
    message = anthropic_types.Message.model_validate(ANTHROPIC_MESSAGE)
    rec = normalize(message)
    assert rec.role == "assistant" and rec.thinking == "The user wants weather."
    assert [c.id for c in rec.tool_calls] == ["toolu_01A"]
    history = [
        {"role": "user", "content": "Weather in SF?"},
        message,
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "15C"}],
        },
    ]
    reopened = _roundtrip(tmp_path, history)
    assert reopened.messages[1].content[0].signature == "EqQBCgIYAhIM"  # signature kept


def test_anthropic_documents_images_and_search_results_dicts(tmp_path: Path) -> None:
    user = {
        "role": "user",
        "content": [
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
            },
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {
                "type": "search_result",
                "source": "https://example.com",
                "title": "T",
                "content": [{"type": "text", "text": "found"}],
            },
            {"type": "text", "text": "Summarize these."},
        ],
    }
    reopened = _roundtrip(tmp_path, [user])
    assert reopened.messages[0] == user  # the URL, the PDF and the result all come back


def test_responses_items_group_reasoning_with_parallel_calls(tmp_path: Path) -> None:
    response = responses.Response.model_validate(RESPONSE)
    history: list[Any] = [{"role": "user", "content": "Weather in Paris and Bogotá?"}]
    history += response.output
    history += [
        {"type": "function_call_output", "call_id": "call_12345xyz", "output": "18C"},
        {"type": "function_call_output", "call_id": "call_67890abc", "output": "22C"},
    ]
    manager = MessageContextManager(100_000, strategy="sliding_window")
    manager.extend(history)
    # one group: reasoning, both calls, both outputs (never a call without its reasoning)
    manager.add({"role": "user", "content": "and now? " + "x " * 200})
    sizes = [manager.count_message(m) for m in history[1:]]
    small = MessageContextManager(sum(sizes) + 400, reserve_tokens=0, strategy="sliding_window")
    small.extend(history)
    small.add({"role": "user", "content": "and now? " + "x " * 200})
    context = small.get_context()
    kept = [m for m in history[1:] if any(m is c for c in context)]
    assert kept in ([], history[1:])
    _roundtrip(tmp_path, history)


def test_gemini_contents_with_function_calls_and_signature(tmp_path: Path) -> None:
    call = genai.Content(
        role="model",
        parts=[
            genai.Part(
                function_call=genai.FunctionCall(name="get_weather", args={"city": "Paris"}),
                thought_signature=b"\x12\x34signature",
            )
        ],
    )
    result = genai.Content(
        role="user",
        parts=[
            genai.Part(
                function_response=genai.FunctionResponse(
                    name="get_weather", response={"temp": "18C"}
                )
            )
        ],
    )
    history = [genai.Content(role="user", parts=[genai.Part(text="Weather?")]), call, result]
    reopened = _roundtrip(tmp_path, history)
    assert reopened.messages[1].parts[0].thought_signature == b"\x12\x34signature"


def test_pydantic_ai_requests_and_responses(tmp_path: Path) -> None:
    history = [
        pai.ModelRequest(parts=[pai.SystemPromptPart("Be brief."), pai.UserPromptPart("Hi")]),
        pai.ModelResponse(parts=[pai.ToolCallPart("get_weather", {"city": "Paris"}, "tc1")]),
        pai.ModelRequest(parts=[pai.ToolReturnPart("get_weather", "18C", "tc1")]),
        pai.ModelResponse(parts=[pai.TextPart("It is 18C.")]),
    ]
    reopened = _roundtrip(tmp_path, history)
    assert reopened.messages[1].parts[0].tool_call_id == "tc1"


def test_langchain_shorthands(tmp_path: Path) -> None:
    history = [
        lc.SystemMessage("sys"),
        ("human", "hi"),
        {"role": "ai", "content": "hello"},
        lc.ChatMessage(role="critic", content="too short"),
        lc.HumanMessage("again"),
    ]
    assert normalize(history[1]).role == "user"
    assert normalize(history[3]).text == "too short"
    manager = MessageContextManager(10_000)
    manager.extend(history[1:])
    assert manager.get_context()[0] is history[1]


def test_system_prompt_is_stored_as_the_message_it_was(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    prompt = {"role": "developer", "name": "ops", "content": [{"type": "text", "text": "Rules."}]}
    manager = MessageContextManager.open(path, system_prompt=prompt)
    manager.add({"role": "user", "content": "hi"})
    reopened = MessageContextManager.open(path)
    assert reopened.get_context()[0] == prompt


def test_unknown_objects_are_refused_saying_what_was_recognised() -> None:
    block = anthropic_types.TextBlock(type="text", text="a block is not a message")
    with pytest.raises(InvalidMessageError, match="anthropic"):
        normalize(block)

    class Custom:
        pass

    with pytest.raises(InvalidMessageError, match="unsupported message type"):
        normalize(Custom())


def test_a_tampered_type_tag_never_imports_anything() -> None:
    with pytest.raises(InvalidMessageError, match="unknown stored message type"):
        decode({"x": 1}, "os.system")


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_MESSAGES = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, _TEXT),
    st.builds(lambda t: {"role": "assistant", "content": [{"type": "text", "text": t}]}, _TEXT),
    st.builds(lambda t: lc.HumanMessage(t), _TEXT),
    st.builds(lambda t: lc.AIMessage(t), _TEXT),
    st.builds(lambda t: genai.Content(role="user", parts=[genai.Part(text=t)]), _TEXT),
    st.builds(lambda t: pai.ModelRequest(parts=[pai.UserPromptPart(t)]), _TEXT),
    st.builds(lambda t: pai.ModelResponse(parts=[pai.TextPart(t)]), _TEXT),
    st.builds(
        lambda t: anthropic_types.Message.model_validate(
            {**ANTHROPIC_MESSAGE, "content": [{"type": "text", "text": t}]}
        ),
        _TEXT,
    ),
    st.builds(
        lambda t: openai_types.ChatCompletionMessage.model_validate(
            {"role": "assistant", "content": t}
        ),
        _TEXT,
    ),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=st.lists(_MESSAGES, max_size=12))
def test_random_histories_round_trip_through_the_store(
    tmp_path_factory: pytest.TempPathFactory, history: list[Any]
) -> None:
    path = tmp_path_factory.mktemp("rt") / "context.jsonl"
    manager = MessageContextManager.open(path)
    for message in history:
        manager.add(message)
    reopened = MessageContextManager.open(path)
    assert reopened.messages == history
    assert [type(m) for m in reopened.messages] == [type(m) for m in history]
    for message in history:
        payload, tag = encode(message)
        assert decode(payload, tag) == message
