"""Chat Completions custom tool calls (``{"type": "custom", "custom": {"name", "input"}}``, the
SDK's ``ChatCompletionMessageCustomToolCall``) are read like function calls.

``docs/guide/messages.md`` lists them as accepted, but every form a caller holds (the SDK
object, ``tool_calls=message.tool_calls``, ``model_dump()``) raised ``InvalidMessageError``:
"needs 'function'". Only the Responses form (``custom_tool_call``) was read.
"""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage

from context_manager import MessageContextManager, trim
from context_manager.compaction.pruning import ToolResultPruning
from context_manager.providers import validate

PATCH = "*** Begin Patch\n*** Update File: a.py\n" + "+x = 1\n" * 400 + "*** End Patch"


def reply(call_id: str) -> ChatCompletionMessage:
    return ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "custom",
                    "custom": {"name": "apply_patch", "input": PATCH},
                }
            ],
        }
    )


FORMS = {
    "sdk object": lambda m: m,
    "tool_calls of the sdk": lambda m: {
        "role": "assistant",
        "content": None,
        "tool_calls": m.tool_calls,
    },
    "model_dump": lambda m: m.model_dump(exclude_none=True),
    "model_dump json": lambda m: m.model_dump(mode="json"),
}


def session(form: str, turns: int, output: str = "applied") -> list[Any]:
    history: list[Any] = []
    for t in range(turns):
        history += [
            {"role": "user", "content": f"patch {t}"},
            FORMS[form](reply(f"call_{t}")),
            {"role": "tool", "tool_call_id": f"call_{t}", "content": f"{output} {t}"},
        ]
    return [*history, {"role": "user", "content": "thanks"}]


@pytest.mark.parametrize("form", list(FORMS))
def test_a_custom_call_is_counted_and_kept_with_its_result(form: str) -> None:
    history = session(form, 6)
    everything = trim(history, 1_000_000, counter="chars")
    assert everything == history
    kept = trim(history, 2_500, counter="chars", provider="openai")
    assert 4 <= len(kept) < len(history)  # the patch (about 2,800 chars) is counted
    assert validate(kept, "openai") == []
    calls = [m for m in kept if m is not None and m in history[1::3]]
    assert all(history[history.index(c) + 1] in kept for c in calls)  # each with its result


def test_pruning_clears_a_custom_calls_input_not_its_name() -> None:
    history = session("model_dump", 6, output="ok\n" * 2_000)
    pruning = ToolResultPruning.anthropic(trigger_tokens=5_000, clear_tool_inputs=True)
    manager = MessageContextManager(60_000, counter="chars", pruning=pruning)
    for message in history:
        manager.add(message)
    sent = manager.get_context()
    first = sent[1]["tool_calls"][0]
    assert first["custom"]["name"] == "apply_patch" and first["custom"]["input"] != PATCH
    assert "function" not in first
    assert sent[-3]["tool_calls"][0]["custom"]["input"] == PATCH  # the newest stays whole
