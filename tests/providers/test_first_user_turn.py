"""A provider rule met in the field, with the real SDK shapes.

- A context for a provider whose first turn must be a user turn (Bedrock Converse, Anthropic)
  never opens with the assistant: when the latest user turn rides on tool results (``toolResult``
  + text), its call's group opens with the assistant's ``toolUse``; the cut moves back to the
  user turn before it when that fits, else the overflow is raised. The manager's
  ``get_context()`` and ``trim(provider=...)`` agree.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.session import get_session
from botocore.validate import ParamValidator

from context_manager import ContextOverflowError, trim
from context_manager.providers import validate

from .helpers import manager_context


def _converse_ok(messages: list[dict[str, Any]]) -> None:
    """botocore's own check of a Converse request's shape, then the first-turn rule."""
    model = get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("Converse").input_shape
    request = {"modelId": "m", "messages": messages}
    report = ParamValidator().validate(request, shape)
    assert not report.has_errors(), report.generate_report()
    assert messages[0]["role"] == "user"  # "A conversation must start with a user message"


def _tool_use(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": call_id, "name": "read", "input": {"p": call_id}}}],
    }


def _result_and_text(call_id: str, result: str, text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": call_id, "content": [{"text": result}]}},
            {"text": text},
        ],
    }


# -- A: the first turn is a user turn -----------------------------------------------------------


def test_bedrock_overflows_rather_than_open_with_the_tool_use() -> None:
    """The reviewer's case: the turn before the call does not fit with it, so nothing valid fits."""
    history = [
        {"role": "user", "content": [{"text": "Read the file. " + "context " * 150}]},
        _tool_use("t1"),
        _result_and_text("t1", "x = 1\n" * 20, "also, hurry"),
    ]
    with pytest.raises(ContextOverflowError) as from_manager:
        manager_context(history, 150, "bedrock")
    with pytest.raises(ContextOverflowError) as from_trim:
        trim(history, 150, counter="chars", provider="bedrock")
    assert from_manager.value.required == from_trim.value.required > 150
    assert from_manager.value.budget == from_trim.value.budget == 150


def bedrock_loop() -> list[dict[str, Any]]:
    """An older exchange, a short question, a call whose result carries the user's new words,
    a long second call and the assistant's answer. Under these budgets the window keeps the
    call with the user's words apart, and the turn before it is brought back with it."""
    return [
        {"role": "user", "content": [{"text": "old question " * 40}]},
        {"role": "assistant", "content": [{"text": "old answer " * 40}]},
        {"role": "user", "content": [{"text": "Read a."}]},
        _tool_use("t1"),
        _result_and_text("t1", "a = 1", "then read b"),
        _tool_use("t2"),
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t2", "content": [{"text": "b " * 300}]}}],
        },
        {"role": "assistant", "content": [{"text": "Both read."}]},
    ]


@pytest.mark.parametrize("budget", [80, 150])
def test_bedrock_cut_moves_back_to_the_user_turn(budget: int) -> None:
    history = bedrock_loop()
    sent = manager_context(history, budget, "bedrock")
    _converse_ok(sent)
    assert validate(sent, "bedrock") == []
    assert history[2] in sent and history[4] in sent and sent[-1] is history[-1]
    assert sent == trim(history, budget, counter="chars", provider="bedrock")


def anthropic_loop() -> list[dict[str, Any]]:
    def call(call_id: str) -> dict[str, Any]:
        block = {"type": "tool_use", "id": call_id, "name": "read", "input": {}}
        return {"role": "assistant", "content": [block]}

    return [
        {"role": "user", "content": "old question " * 40},
        {"role": "assistant", "content": "old answer " * 40},
        {"role": "user", "content": "Read a."},
        call("toolu_1"),
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a = 1"},
                {"type": "text", "text": "then read b"},
            ],
        },
        call("toolu_2"),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "b " * 300}],
        },
        {"role": "assistant", "content": "Both read."},
    ]


@pytest.mark.parametrize("budget", [100, 180])
def test_anthropic_has_the_rule_too(budget: int) -> None:
    from anthropic.types import MessageParam  # the SDK's request shape

    history: list[MessageParam] = anthropic_loop()  # type: ignore[assignment]
    sent = manager_context(list(history), budget, "anthropic")
    assert sent[0]["role"] == "user" and validate(sent, "anthropic") == []
    assert history[2] in sent and sent[-1] is history[-1]
    assert sent == trim(list(history), budget, counter="chars", provider="anthropic")
