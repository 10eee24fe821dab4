"""Every message the library makes takes the shape of the conversation it joins: the results
closing interrupted calls (and those ``repair`` fills in or ``close_pending_tool_calls`` adds),
the copies a repair makes without stale results, and pruning's placeholders and cuts. SDK
conversations get SDK objects, built with the real SDK types."""

from __future__ import annotations

import json
from typing import Any

import pytest

from context_manager import Message, MessageContextManager, normalize
from context_manager.messages import ToolCall
from context_manager.messages.groups import INTERRUPTED_RESULT, repair
from context_manager.messages.truncate import rewrite_results
from context_manager.providers import validate

from .agent_shapes import SHAPES, as_json


def interrupted(name: str, answered: int = 0, json_form: bool = False) -> list[Any]:
    """The context after a user turn interrupts three parallel calls, ``answered`` of them
    answered; ``json_form``: the SDK objects written as their JSON."""
    shape = SHAPES[name]()
    ids = ["c1", "c2", "c3"] if shape.ids else ["", "", ""]
    calls = [(ids[0], "read", {"p": 1}), (ids[1], "grep", {"q": "x"}), (ids[2], "read", {"p": 2})]
    results = [(i, n, f"out {k}") for k, (i, n, _a) in enumerate(calls)]
    messages = [shape.user("go"), *shape.calls(1, calls), *shape.results(results[:answered])]
    messages.append(shape.user("stop, do something else"))
    if json_form:
        messages = [as_json(m) for m in messages]
    manager = MessageContextManager(10_000, counter="chars", provider=shape.provider)
    manager.extend(messages)
    context = manager.get_context()
    assert shape.check(context) == [], context
    assert validate(context, shape.provider or "openai") == []
    return context


def test_anthropic_message_calls_are_closed_by_one_user_turn_of_tool_results() -> None:
    context = interrupted("anthropic")
    closure = context[2]
    assert closure["role"] == "user"
    assert [b["type"] for b in closure["content"]] == ["tool_result"] * 3
    assert [b["tool_use_id"] for b in closure["content"]] == ["c1", "c2", "c3"]
    assert all(b["is_error"] for b in closure["content"])
    partly = interrupted("anthropic", answered=1)
    assert [b["tool_use_id"] for b in partly[3]["content"]] == ["c2", "c3"]


def test_openai_sdk_calls_are_closed_by_tool_messages() -> None:
    context = interrupted("openai", answered=1)
    assert [m["tool_call_id"] for m in context[2:5]] == ["c1", "c2", "c3"]
    assert all(m["role"] == "tool" for m in context[2:5])


def test_responses_sdk_calls_get_sdk_output_items_and_dicts_get_dicts() -> None:
    from openai.types.responses.response_input_item import FunctionCallOutput

    context = interrupted("openai-responses", answered=1)
    outputs = [m for m in context if isinstance(m, FunctionCallOutput)]
    assert [o.call_id for o in outputs] == ["c2", "c3"]
    assert all(o.type == "function_call_output" for o in outputs)
    dicts = interrupted("openai-responses", json_form=True)
    closures = [m for m in dicts if isinstance(m, dict) and "interrupted" in str(m.get("output"))]
    assert [c["type"] for c in closures] == ["function_call_output"] * 3


def test_custom_tool_calls_are_answered_by_custom_tool_call_outputs() -> None:
    from openai.types.responses import ResponseCustomToolCall, ResponseCustomToolCallOutput

    call = ResponseCustomToolCall(call_id="k1", input="ls", name="shell", type="custom_tool_call")
    manager = MessageContextManager(10_000, counter="chars")
    manager.extend([{"role": "user", "content": "go"}, call, {"role": "user", "content": "stop"}])
    closure = manager.get_context()[2]
    assert isinstance(closure, ResponseCustomToolCallOutput)
    assert closure.call_id == "k1"


def test_gemini_calls_are_closed_by_one_content_of_function_responses() -> None:
    from google.genai import types

    context = interrupted("gemini")
    closure = context[2]
    assert isinstance(closure, types.Content)
    assert closure.role == "user"
    responses = [p.function_response for p in closure.parts or []]
    assert [r.name for r in responses if r] == ["read", "grep", "read"]
    assert all(r is not None and r.id is None for r in responses)  # paired by position
    as_dicts = interrupted("gemini", json_form=True)
    assert as_dicts[2] == {
        "role": "user",
        "parts": [
            {"function_response": {"name": n, "response": {"error": INTERRUPTED_RESULT}}}
            for n in ("read", "grep", "read")
        ],
    }


def test_gemini_camel_case_contents_get_camel_case_responses() -> None:
    shape = SHAPES["gemini"]()
    call = as_json(shape.calls(1, [("", "read", {}), ("", "read", {})])[0], camel=True)
    manager = MessageContextManager(10_000, counter="chars", provider="gemini")
    manager.extend([{"role": "user", "parts": [{"text": "go"}]}, call])
    (closure,) = manager.close_pending_tool_calls("cancelled")
    assert [list(p) for p in closure["parts"]] == [["functionResponse"]] * 2
    assert validate(manager.get_context(), "gemini") == []


def test_gemini_calls_answered_in_part_get_the_rest_by_place() -> None:
    """Two id-less calls to one function, the first answered: the closure's response carries
    no id the API never gave; it answers the second call by its place once the responses are
    sent joined, as Gemini reads them."""
    from google.genai import types

    shape = SHAPES["gemini"]()
    manager = MessageContextManager(10_000, counter="chars", provider="gemini")
    manager.add(shape.user("go"))
    manager.add(shape.calls(1, [("", "read", {"p": 1}), ("", "read", {"p": 2})])[0])
    manager.add(shape.results([("", "read", "first")])[0])
    (closure,) = manager.close_pending_tool_calls()
    assert isinstance(closure, types.Content)
    assert [p.function_response.id for p in closure.parts] == [None]
    context = manager.get_context()
    assert len(context) == 3 and normalize(context[2]).result_ids == ("~read", "~read~2")
    assert validate(context, "gemini") == []


def test_pydantic_ai_calls_are_closed_by_a_model_request_of_tool_returns() -> None:
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    context = interrupted("pydantic-ai")
    closure = context[2]
    assert isinstance(closure, ModelRequest)
    assert all(isinstance(p, ToolReturnPart) for p in closure.parts)
    assert [(p.tool_name, p.tool_call_id) for p in closure.parts] == [
        ("read", "c1"),
        ("grep", "c2"),
        ("read", "c3"),
    ]
    as_dicts = interrupted("pydantic-ai", json_form=True)
    assert [p["part_kind"] for p in as_dicts[2]["parts"]] == ["tool-return"] * 3


def test_bedrock_calls_are_closed_by_one_user_turn_of_tool_results() -> None:
    context = interrupted("bedrock")
    blocks = context[2]["content"]
    results = [b["toolResult"] for b in blocks if "toolResult" in b]
    assert [r["toolUseId"] for r in results] == ["c1", "c2", "c3"]
    assert all(r["status"] == "error" for r in results)
    # Converse alternates strictly: the closure and the user's words travel as one turn
    assert [b for b in blocks if "text" in b] == [{"text": "stop, do something else"}]


def test_langchain_calls_are_closed_by_tool_messages() -> None:
    from langchain_core.messages import ToolMessage

    context = interrupted("langchain", answered=2)
    closure = context[4]
    assert isinstance(closure, ToolMessage)
    assert (closure.tool_call_id, closure.name, closure.status) == ("c3", "read", "error")


def test_records_are_closed_by_records() -> None:
    call = Message("assistant", tool_calls=(ToolCall("r1", "read", "{}"),))
    manager = MessageContextManager(10_000, counter="chars")
    manager.extend([Message("user", "go"), call, Message("user", "stop")])
    assert manager.get_context()[2] == Message(
        "tool", manager.interrupted_result, tool_call_id="r1"
    )


@pytest.mark.parametrize("name", list(SHAPES))
def test_repair_fills_missing_results_in_the_shape_of_their_calls(name: str) -> None:
    shape = SHAPES[name]()
    ids = ["c1", "c2"] if shape.ids else ["", ""]
    calls = shape.calls(1, [(ids[0], "read", {}), (ids[1], "read", {})])
    fixed = repair([shape.user("go"), *calls, *shape.reply("gave up")])
    assert shape.check(fixed) == [], fixed
    assert validate(fixed, shape.provider or "openai") == []


@pytest.mark.parametrize("name", ["anthropic", "bedrock", "gemini", "pydantic-ai"])
def test_repair_drops_stale_results_from_a_turn_and_keeps_its_other_parts(name: str) -> None:
    """A user turn holding a result of no open call and text: the text stays (a copy of the
    turn, in its own shape, without the stale result)."""
    shape = SHAPES[name]()
    (stale,) = shape.results([("old" if shape.ids else "", "gone", "late")])
    words = normalize(shape.user("and also this"))
    turn = _with_text(stale, words.text)
    fixed = repair([shape.user("go"), *shape.reply("ok"), turn])
    assert len(fixed) == 3
    assert type(fixed[2]) is type(turn)
    rec = normalize(fixed[2])
    assert (rec.text, rec.result_ids) == ("and also this", ())
    assert normalize(turn).result_ids  # the caller's turn is untouched


def _with_text(turn: Any, text: str) -> Any:
    """``turn`` (a result turn) with a text part after its results, in its own shape."""
    if isinstance(turn, dict):
        return {**turn, "content": [*turn["content"], {"text": text}]}
    if type(turn).__module__.startswith("pydantic_ai."):
        from pydantic_ai.messages import ModelRequest, UserPromptPart

        return ModelRequest(parts=[*turn.parts, UserPromptPart(text)])
    from google.genai import types

    return types.Content(role="user", parts=[*(turn.parts or []), types.Part(text=text)])


# -- cuts and placeholders -----------------------------------------------------------------
def _placeholder(_text: str, _images: int) -> str:
    return "[cleared]"


@pytest.mark.parametrize("name", list(SHAPES))
@pytest.mark.parametrize("json_form", [False, True], ids=["objects", "json"])
def test_cleared_results_are_copies_in_the_callers_shape(name: str, json_form: bool) -> None:
    shape = SHAPES[name]()
    ids = ["c1", "c2"] if shape.ids else ["", ""]
    calls = shape.calls(1, [(ids[0], "read", {}), (ids[1], "read", {})])
    results = shape.results([(ids[0], "read", "x" * 500), (ids[1], "read", "y" * 500)])
    if json_form:
        calls, results = [as_json(m) for m in calls], [as_json(m) for m in results]
    before = [json.dumps(as_json(m), sort_keys=True, default=str) for m in results]
    cleared = [rewrite_results(m, _placeholder) for m in results]
    assert all(c is not None for c in cleared), cleared
    assert [type(c) for c in cleared] == [type(m) for m in results]
    texts = [t for c in cleared for t in _result_texts(c)]
    assert texts and all("[cleared]" in t for t in texts), texts
    after = [json.dumps(as_json(m), sort_keys=True, default=str) for m in results]
    assert before == after  # the caller's objects are not mutated
    context = [shape.user("go"), *calls, *cleared, *shape.reply("done")]
    assert shape.check(context) == [], context


def _result_texts(message: Any) -> list[str]:
    rec = normalize(message)
    return [rec.text] if rec.tool_call_id else [r.text for r in rec.tool_results]


def test_only_the_named_gemini_response_is_cleared() -> None:
    shape = SHAPES["gemini"]()
    (content,) = shape.results([("", "read", "one"), ("", "read", "two")])
    new = rewrite_results(content, _placeholder, only=frozenset({"~read~2"}))
    texts = [r.text for r in normalize(new).tool_results]
    assert texts == ['{"output":"one"}', '{"output":"[cleared]"}']


@pytest.mark.parametrize("name", list(SHAPES))
def test_closures_are_stored_and_restored_as_they_were_made(name: str, tmp_path: Any) -> None:
    shape = SHAPES[name]()
    ids = ["c1", "c2"] if shape.ids else ["", ""]
    calls = shape.calls(1, [(ids[0], "read", {}), (ids[1], "read", {})])
    path = tmp_path / "session.jsonl"
    manager = MessageContextManager.open(path, max_tokens=10_000, counter="chars")
    manager.extend([shape.user("go"), *calls, shape.user("stop")])
    reopened = MessageContextManager.open(path, max_tokens=10_000, counter="chars")
    assert [type(m) for m in reopened.messages] == [type(m) for m in manager.messages]
    assert reopened.messages == manager.messages
