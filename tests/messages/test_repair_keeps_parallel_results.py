"""``repair=True`` keeps the real results of parallel calls that arrive one call per item (the
Responses API and the Agents SDK write them so); it only closes calls nobody answered."""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import MessageContextManager, normalize, trim
from context_manager.messages.groups import repair
from context_manager.providers import validate


def items(sdk: bool) -> list[Any]:
    calls: list[Any] = [
        {"type": "function_call", "call_id": c, "name": n, "arguments": "{}"}
        for c, n in (("a", "read"), ("b", "grep"))
    ]
    if sdk:
        from openai.types.responses import ResponseFunctionToolCall

        calls = [ResponseFunctionToolCall.model_validate(c) for c in calls]
    return [
        {"role": "user", "content": "look at both"},
        *calls,
        {"type": "function_call_output", "call_id": "a", "output": "real A"},
        {"type": "function_call_output", "call_id": "b", "output": "real B"},
        {"type": "message", "role": "assistant", "content": "done"},
    ]


@pytest.mark.parametrize("sdk", [False, True], ids=["dicts", "sdk"])
def test_answered_parallel_calls_are_left_as_they_are(sdk: bool) -> None:
    history = items(sdk)
    manager = MessageContextManager(10_000, counter="chars", repair=True)
    manager.extend(history)
    assert manager.get_context() == history
    assert trim(history, 10_000, counter="chars", repair=True) == history
    assert repair(history) == history


@pytest.mark.parametrize("sdk", [False, True], ids=["dicts", "sdk"])
def test_unanswered_parallel_calls_are_closed_together(sdk: bool) -> None:
    history = [*items(sdk)[:3], {"role": "user", "content": "never mind"}]
    out = trim(history, 10_000, counter="chars", repair=True)
    answered = [rid for m in out for rid in normalize(m).result_ids]
    assert answered == ["a", "b"]
    assert out[-1] is history[-1]
    assert validate(out, "openai-responses") == []
