"""Closing a call a new user turn interrupted gives a request the provider accepts, whatever mix
of SDK objects and dicts the conversation holds (each SDK takes both forms).

- Gemini counts the ``function_response`` parts of the content after a call turn against its
  ``function_call`` parts (a 400 otherwise), and pairs id-less responses by their place among
  the responses to the same function.
- Anthropic merges consecutive user turns; the merged turn after a ``tool_use`` must hold its
  ``tool_result`` blocks first.
- OpenAI Responses: each synthetic ``*_output`` item is one the openai SDK's
  ``ResponseInputItemParam`` accepts; a ``computer_call`` can only be answered by a screenshot.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from context_manager import MessageContextManager, repair, trim
from context_manager.errors import InvalidMessageError
from context_manager.providers import validate

from .helpers import manager_context

# -- Gemini ---------------------------------------------------------------------------------


def _as_content(message: Any) -> types.Content:
    """What the google-genai SDK sends for a content given either way."""
    return message if isinstance(message, types.Content) else types.Content.model_validate(message)


def _gemini_turns_ok(context: list[Any]) -> None:
    """Gemini's rule read from the SDK's own objects: the content after each call turn holds
    as many function responses as the turn has calls, to the same functions."""
    contents = [_as_content(c) for c in context]
    for k, content in enumerate(contents):
        calls = [p.function_call.name for p in content.parts or [] if p.function_call]
        if not calls:
            continue
        after = contents[k + 1]
        answers = [p.function_response.name for p in after.parts or [] if p.function_response]
        assert after.role == "user" and sorted(answers) == sorted(calls)
    for content in contents:
        if any(p.function_response for p in content.parts or []):
            previous = contents[contents.index(content) - 1]
            assert any(p.function_call for p in previous.parts or [])


@pytest.mark.parametrize("ids", [None, ("c1", "c2")])
def test_gemini_dict_response_and_closure_of_an_sdk_call_turn_are_one_content(
    ids: tuple[str, str] | None,
) -> None:
    call_ids = ids or (None, None)
    call_turn = types.Content(
        role="model",
        parts=[
            types.Part(function_call=types.FunctionCall(name=n, args={}, id=i))
            for n, i in zip(("read", "grep"), call_ids, strict=True)
        ],
    )
    response: dict[str, Any] = {"name": "read", "response": {"out": "a=1"}}
    if ids:
        response["id"] = ids[0]
    held = [
        types.Content(role="user", parts=[types.Part(text="compare a and b")]),
        call_turn,
        {"role": "user", "parts": [{"function_response": response}]},
        types.Content(role="user", parts=[types.Part(text="stop")]),
    ]
    manager = MessageContextManager(6000, counter="chars", provider="gemini")
    manager.extend(held)
    sent = manager.get_context()
    assert len(sent) == 4 and validate(sent, "gemini") == []
    _gemini_turns_ok(sent)
    joined = _as_content(sent[2])
    answered = [(p.function_response.name, p.function_response.id) for p in joined.parts or []]
    assert answered == [("read", call_ids[0]), ("grep", call_ids[1])]
    assert sent[2]["parts"][0] is held[2]["parts"][0]  # the caller's response part, first
    assert trim(manager.messages, 6000, counter="chars", provider="gemini") == sent


def test_gemini_sdk_response_joins_a_dict_closure_in_its_own_form() -> None:
    """The other way round: a dict call turn, the caller's response a ``types.Content``."""
    held = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"function_call": {"name": "read", "args": {}}},
                {"function_call": {"name": "grep", "args": {}}},
            ],
        },
        types.Content(
            role="user",
            parts=[
                types.Part(function_response=types.FunctionResponse(name="read", response={"o": 1}))
            ],
        ),
        {"role": "user", "parts": [{"text": "stop"}]},
    ]
    sent = manager_context(held, 6000, "gemini")
    assert len(sent) == 4 and validate(sent, "gemini") == []
    assert isinstance(sent[2], types.Content)
    assert sent[2].parts[0] is held[2].parts[0]
    _gemini_turns_ok(sent)


def _fc(name: str) -> dict[str, Any]:
    return {"function_call": {"name": name, "args": {}}}


def _fr(name: str, out: str) -> dict[str, Any]:
    return {"function_response": {"name": name, "response": {"out": out}}}


def _split_same_name(sdk: bool) -> list[Any]:
    """Two id-less calls to one function, each answered in its own content."""
    held: list[Any] = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [_fc("bash"), _fc("bash")]},
        {"role": "user", "parts": [_fr("bash", "a")]},
        {"role": "user", "parts": [_fr("bash", "b")]},
        {"role": "user", "parts": [{"text": "next"}]},
    ]
    return [types.Content.model_validate(m) for m in held] if sdk else held


@pytest.mark.parametrize("sdk", [False, True])
def test_gemini_idless_calls_to_one_function_answered_apart_pair_in_order(sdk: bool) -> None:
    held = _split_same_name(sdk)
    manager = MessageContextManager(6000, counter="chars", provider="gemini")
    manager.extend(held)  # the second response answers the second call, not "arrives after"
    sent = manager.get_context()
    assert len(sent) == 4 and validate(sent, "gemini") == []
    _gemini_turns_ok(sent)
    outs = [p.function_response.response["out"] for p in _as_content(sent[2]).parts or []]
    assert outs == ["a", "b"]  # in the order given: Gemini pairs them by place
    assert trim(held, 6000, counter="chars", provider="gemini") == sent
    # Sent apart, Gemini counts one response for two calls: the split is the only problem.
    assert [p.rule for p in validate(held, "gemini")] == ["one-response-turn"]
    repaired = MessageContextManager(6000, counter="chars", provider="gemini", repair=True)
    repaired.extend(held)
    assert len(repaired.messages) == len(held)  # nothing dropped as a late result


def test_gemini_idless_interruption_after_one_of_two_same_name_calls() -> None:
    held = _split_same_name(False)
    del held[3]
    manager = MessageContextManager(6000, counter="chars", provider="gemini")
    manager.extend(held)
    closure = manager.messages[3]
    assert "id" not in closure["parts"][0]["function_response"]  # no id the API never gave
    sent = manager.get_context()
    assert validate(sent, "gemini") == []
    _gemini_turns_ok(sent)


def _repaired_context(held: list[Any]) -> list[Any]:
    manager = MessageContextManager(6000, counter="chars", provider="gemini", repair=True)
    manager.extend(held)
    return manager.get_context()


def _answers_one_and_speaks(sdk: bool, ids: bool) -> list[Any]:
    """Two parallel calls to one function; the next user content answers the first and says
    more (what ``chat.send_message([response_part, text])`` sends): the second is interrupted."""
    first, second = _fc("read"), _fc("read")
    answer = _fr("read", "a = 1")
    if ids:
        first["function_call"]["id"], second["function_call"]["id"] = "c0", "c1"
        answer["function_response"]["id"] = "c0"
    held: list[Any] = [
        {"role": "user", "parts": [{"text": "Compare a and b."}]},
        {"role": "model", "parts": [first, second]},
        {"role": "user", "parts": [answer, {"text": "Skip b, tell me about a."}]},
    ]
    return [types.Content.model_validate(m) for m in held] if sdk else held


@pytest.mark.parametrize("ids", [False, True])
@pytest.mark.parametrize("sdk", [False, True])
def test_gemini_turn_answering_some_calls_and_speaking_is_one_content_with_the_closure(
    sdk: bool, ids: bool
) -> None:
    """The closure of the interrupted call follows the turn's own response and both are sent
    as one content, the text last: Gemini reads every response from the content after the call
    turn, and an id-less response answers the first open call of its name, so the given answer
    stays first (it answers the first call) and the closure answers the second."""
    held = _answers_one_and_speaks(sdk, ids)
    repaired = repair(held)
    for how, sent in (
        ("manager", manager_context(held, 6000, "gemini")),
        ("repair", _repaired_context(held)),
        ("repair()", repaired),
        ("trim(repair=True)", trim(held, 6000, counter="chars", provider="gemini", repair=True)),
    ):
        assert len(sent) == 3, how
        _gemini_turns_ok(sent)
        turn = _as_content(sent[2])
        kinds = ["response" if p.function_response else "text" for p in turn.parts or []]
        assert kinds == ["response", "response", "text"], how
        first, second = (p.function_response for p in (turn.parts or [])[:2])
        assert first.response == {"out": "a = 1"}, how  # the given answer, to the first call
        assert "error" in (second.response or {}), how  # the closure, to the second
        assert turn.parts[2].text == "Skip b, tell me about a.", how
        assert validate(sent, "gemini") == [], how


# -- Anthropic ------------------------------------------------------------------------------


def test_anthropic_sdk_call_dict_result_and_closure_merge_into_a_valid_turn() -> None:
    from anthropic.types import Message as AnthropicMessage

    call = AnthropicMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [
                {"type": "tool_use", "id": "t1", "name": "read", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "grep", "input": {}},
            ],
        }
    )
    held = [
        {"role": "user", "content": "go"},
        call,
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
        {"role": "user", "content": "stop"},
    ]
    sent = manager_context(held, 8000, "anthropic")
    assert validate(sent, "anthropic") == []
    # The API merges consecutive user turns: the turn after the call, merged, answers both
    # calls before any text.
    merged: list[dict[str, Any]] = []
    for message in sent[2:]:
        content = message["content"]
        merged += [{"type": "text", "text": content}] if isinstance(content, str) else content
    kinds = [(b["type"], b.get("tool_use_id")) for b in merged]
    assert kinds == [("tool_result", "t1"), ("tool_result", "t2"), ("text", None)]


# -- OpenAI Responses -----------------------------------------------------------------------

_CALLS: dict[str, dict[str, Any]] = {
    "function_call": {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    "custom_tool_call": {"type": "custom_tool_call", "call_id": "c1", "name": "g", "input": "x"},
    "local_shell_call": {
        "type": "local_shell_call",
        "id": "ls1",
        "call_id": "c1",
        "action": {"type": "exec", "command": ["ls"], "env": {}},
        "status": "completed",
    },
    "shell_call": {
        "type": "shell_call",
        "call_id": "c1",
        "action": {"commands": ["ls"]},
        "status": "completed",
    },
    "apply_patch_call": {
        "type": "apply_patch_call",
        "call_id": "c1",
        "status": "completed",
        "operation": {"type": "update_file", "path": "a.py", "diff": "@@\n-a\n+b"},
    },
}
_COMPUTER_CALL = {
    "type": "computer_call",
    "id": "cu1",
    "call_id": "c1",
    "action": {"type": "screenshot"},
    "pending_safety_checks": [],
    "status": "completed",
}


@pytest.mark.parametrize("kind", sorted(_CALLS))
def test_responses_closures_are_input_items_the_openai_sdk_accepts(kind: str) -> None:
    held = [
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        _CALLS[kind],
        {"role": "user", "content": "stop"},
    ]
    sent = manager_context(held, 4000, "openai-responses")
    assert validate(sent, "openai-responses") == []
    (closure,) = [m for m in sent if str(m.get("type", "")).endswith("_output")]
    item = TypeAdapter(ResponseInputItemParam).validate_python(closure)
    assert item["type"] == f"{kind}_output"
    names = item.get("call_id", item.get("id"))  # LocalShellCallOutput names it by ``id``
    assert names == "c1"


def test_an_interrupted_computer_call_asks_for_its_screenshot() -> None:
    """No text is a valid ``computer_call_output`` (its output is a screenshot): the user turn
    is refused with a typed error, nothing changes, and the caller's screenshot closes it."""
    manager = MessageContextManager(4000, counter="chars", provider="openai-responses")
    manager.extend([{"role": "user", "content": "go"}, _COMPUTER_CALL])
    before = list(manager.messages)
    with pytest.raises(InvalidMessageError, match="screenshot"):
        manager.add({"role": "user", "content": "stop"})
    assert manager.messages == before  # the call still awaits its output (added below)
    screenshot = {
        "type": "computer_call_output",
        "call_id": "c1",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AAAA"},
    }
    TypeAdapter(ResponseInputItemParam).validate_python(screenshot)
    manager.add(screenshot)
    manager.add({"role": "user", "content": "stop"})
    assert validate(manager.get_context(), "openai-responses") == []


def test_gemini_dict_response_the_sdk_model_refuses_is_joined_as_given() -> None:
    """A dict response whose ``response`` is no object (types.Part refuses it) joins the SDK
    response in the dict form, kept as given, instead of failing every later request."""
    call = types.Content(
        role="model",
        parts=[
            types.Part(function_call=types.FunctionCall(name="f", args={})),
            types.Part(function_call=types.FunctionCall(name="g", args={})),
        ],
    )
    answer = types.FunctionResponse(name="f", response={"ok": 1})
    first = types.Content(role="user", parts=[types.Part(function_response=answer)])
    odd = {"role": "user", "parts": [{"function_response": {"name": "g", "response": "done"}}]}
    manager = MessageContextManager(100_000, counter="chars", provider="gemini")
    manager.extend([{"role": "user", "parts": [{"text": "go"}]}, call, first, odd])
    context = manager.get_context()
    assert len(context) == 3 and context[1] is call
    joined = context[2]
    assert joined["parts"][1] is odd["parts"][0]  # the caller's part, as given
    assert joined["parts"][0]["function_response"]["name"] == "f"


def test_gemini_call_id_with_a_non_ascii_digit_is_read_not_raised() -> None:
    """``str.isdigit`` accepts "²", ``int`` does not: an id or name ending so is an ordinary id."""
    call = {"role": "model", "parts": [{"function_call": {"name": "f~²", "args": {}}}]}
    result = {"role": "user", "parts": [{"function_response": {"name": "f~²", "response": {}}}]}
    messages = [{"role": "user", "parts": [{"text": "go"}]}, call, result]
    manager = MessageContextManager(100_000, counter="chars", provider="gemini")
    manager.extend(messages)
    assert manager.get_context() == messages
    assert validate(messages, "gemini") == []


def test_gemini_repair_drops_only_the_extra_idless_response() -> None:
    """Two id-less calls to ``f``; the first answered alone, then a content with two responses
    to ``f``, one more than is still open. Gemini pairs by place: the first of those answers the
    open call, the second answers nothing. A repair keeps the real answer, drops the extra."""
    from context_manager.messages.groups import repair

    call = {"role": "model", "parts": [_fc("f"), _fc("f")]}
    first = {"role": "user", "parts": [_fr("f", "first")]}
    late = {"role": "user", "parts": [_fr("f", "second"), _fr("f", "extra")]}
    history = [{"role": "user", "parts": [{"text": "go"}]}, call, first, late]

    def answers(messages: list[Any]) -> list[Any]:
        return [
            p["function_response"]["response"]
            for m in messages
            for p in m["parts"]
            if "function_response" in p
        ]

    expected = [{"out": "first"}, {"out": "second"}]
    assert answers(repair(history)) == expected
    manager = MessageContextManager(100_000, counter="chars", provider="gemini", repair=True)
    manager.extend(history)
    assert answers(manager.get_context()) == expected


def _idless_answered_apart(n: int) -> list[Any]:
    """One model turn of ``n`` id-less calls to one function, each answered in its own content."""
    call = {"role": "model", "parts": [_fc("f") for _ in range(n)]}
    answers = [{"role": "user", "parts": [_fr("f", str(k))]} for k in range(n)]
    return [{"role": "user", "parts": [{"text": "go"}]}, call, *answers]


def test_idless_responses_answered_apart_cost_what_they_are() -> None:
    """Adding and validating n responses costs O(n) calls, not O(n^2): each response content
    reads the open calls only as far as its own place."""
    from ..linear_time import python_calls

    def cost(n: int) -> tuple[int, int]:
        messages = _idless_answered_apart(n)
        manager = MessageContextManager(10**7, counter="chars", provider="gemini")
        return (
            python_calls(lambda: manager.extend(messages)),
            python_calls(lambda: validate(messages, "gemini")),
        )

    (add_small, check_small), (add_big, check_big) = cost(200), cost(800)
    assert add_big < 6 * add_small and check_big < 6 * check_small  # 4x the input, not 16x
