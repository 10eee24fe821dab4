"""``validate()`` knows each provider's rule for signed reasoning, in dicts and SDK objects:
Anthropic's last tool-calling turn keeps its thinking first and unmodified, Gemini's current
turn keeps its thought signatures, an OpenAI Responses reasoning item stays directly before
the call it made. With ``source=`` (the messages a context was made from) it also sees a
reasoning block that was removed or changed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from context_manager.providers import validate

from .agent_shapes import as_json
from .signed_reasoning import signed_shape

CALLS = [("call_1", "read", {"path": "a"}), ("call_2", "grep", {"q": "b"})]


def _rules(found: list[Any]) -> set[str]:
    return {p.rule for p in found}


def _anthropic(as_dicts: bool) -> tuple[list[Any], Any, Any]:
    shape = signed_shape("anthropic-dicts" if as_dicts else "anthropic")
    turn = shape.calls(3, CALLS)[0]
    source = [shape.user("go"), turn, *shape.results([(i, n, "out") for i, n, _ in CALLS])]
    data = as_json(turn)
    without = {**data, "content": [b for b in data["content"] if b["type"] == "tool_use"]}
    changed_block = {**data["content"][0], "thinking": "edited"}
    changed = {**data, "content": [changed_block, *data["content"][1:]]}
    if not as_dicts:
        without, changed = (
            type(turn).model_validate({**turn.model_dump(), **without}),
            type(turn).model_validate({**turn.model_dump(), **changed}),
        )
    return source, without, changed


@pytest.mark.parametrize("as_dicts", [True, False], ids=["dicts", "sdk"])
def test_anthropic_last_calling_turn_keeps_its_thinking(as_dicts: bool) -> None:
    source, without, changed = _anthropic(as_dicts)
    assert validate(source, "anthropic", source=source) == []
    for broken in (without, changed):
        context = [source[0], broken, source[2]]
        assert "thinking-kept" in _rules(validate(context, "anthropic", source=source))


def test_pydantic_ai_thinking_part_is_judged_like_anthropic_blocks() -> None:
    from pydantic_ai.messages import ModelResponse

    shape = signed_shape("pydantic-ai")
    turn = shape.calls(3, CALLS)[0]
    source = [shape.user("go"), turn, *shape.results([(i, n, "out") for i, n, _ in CALLS])]
    stripped = ModelResponse(parts=turn.parts[1:])
    assert validate(source, "anthropic", source=source) == []
    found = validate([source[0], stripped, source[2]], "anthropic", source=source)
    assert "thinking-kept" in _rules(found)


@pytest.mark.parametrize("as_dicts", [True, False], ids=["dicts", "sdk"])
def test_gemini_current_turn_calls_keep_their_signatures(as_dicts: bool) -> None:
    from google.genai import types

    shape = signed_shape("gemini-dicts" if as_dicts else "gemini")
    first = shape.calls(2, CALLS[:1])[0]
    second = shape.calls(3, CALLS[1:])[0]
    source = [
        shape.user("go"),
        first,
        *shape.results([(i, n, "out") for i, n, _ in CALLS[:1]]),
        second,
        *shape.results([(i, n, "out") for i, n, _ in CALLS[1:]]),
    ]
    assert validate(source, "gemini", source=source) == []
    data = copy.deepcopy(as_json(second))
    data["parts"] = [
        {k: v for k, v in p.items() if k != "thought_signature"} for p in data["parts"]
    ]
    unsigned = data if as_dicts else types.Content.model_validate(data)
    context = [*source[:3], unsigned, source[4]]
    assert "thought-signature" in _rules(validate(context, "gemini"))  # list alone
    alone = [source[0], unsigned, source[4]]
    assert validate(alone, "gemini") == []  # no signature left to show thinking is on
    assert "thought-signature" in _rules(validate(alone, "gemini", source=source))


@pytest.mark.parametrize("as_dicts", [True, False], ids=["dicts", "sdk"])
def test_responses_reasoning_item_stays_before_its_call(as_dicts: bool) -> None:
    shape = signed_shape("openai-responses-dicts" if as_dicts else "openai-responses")
    reasoning, *calls = shape.calls(3, CALLS)
    outputs = shape.results([(i, n, "out") for i, n, _ in CALLS])
    source = [shape.user("go"), reasoning, *calls, *outputs]
    assert validate(source, "openai-responses", source=source) == []
    dropped = [source[0], *calls, *outputs]
    assert "reasoning-before-output" in _rules(validate(dropped, "openai-responses", source=source))
    moved = [source[0], *calls, reasoning, *outputs]  # before a tool output, not a call
    assert "reasoning-before-output" in _rules(validate(moved, "openai-responses"))
