"""Tool-call protocol enforcement and explicit repair of broken histories."""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import InvalidMessageError, MessageContextManager, repair
from context_manager.errors import ConfigurationError
from context_manager.messages.groups import INTERRUPTED_RESULT, MISSING_RESULT_TEXT


def call(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
        ],
    }


def result(i: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": i, "content": f"result {i}"}


USER = {"role": "user", "content": "go"}


@pytest.mark.parametrize(
    ("history", "fragment", "index"),
    [
        ([USER, result("nope")], "unknown tool call id 'nope'", 1),
        ([USER, call("a"), result("a"), result("a")], "duplicate result for tool call 'a'", 3),
        (
            [USER, call("a", "b"), result("a"), {"role": "assistant", "content": "x"}],
            "tool call(s) b still await results",
            3,
        ),
        ([USER, call("a", "a"), result("a")], "tool call id 'a' appears twice in one message", 1),
    ],
)
def test_protocol_errors(history: list[Any], fragment: str, index: int) -> None:
    manager = MessageContextManager(10_000)
    with pytest.raises(InvalidMessageError) as info:
        manager.extend(history)
    assert fragment in str(info.value) and info.value.index == index
    assert "repair=True" in str(info.value)


def test_open_group_is_held_back_until_complete() -> None:
    manager = MessageContextManager(10_000)
    manager.extend([USER, call("a", "b"), result("a")])
    assert manager.get_context() == [USER]
    manager.add(result("b"))
    assert len(manager.get_context()) == 4


def test_repair_drops_orphans_and_fills_missing_results() -> None:
    broken = [USER, result("ghost"), call("a", "b"), result("a"), USER, result("b")]
    fixed = repair(broken)
    assert fixed[0] is USER
    assert fixed[1] is broken[2] and fixed[2] is broken[3]
    # The user turn interrupted call "b": its closure says so.
    assert fixed[3] == {"role": "tool", "tool_call_id": "b", "content": INTERRUPTED_RESULT}
    assert fixed[4] is USER and len(fixed) == 5  # late "b" result and the orphan are gone
    manager = MessageContextManager(10_000)
    manager.extend(fixed)  # valid now
    assert manager.get_context() == fixed


def test_repair_in_anthropic_shape_and_mixed_turns() -> None:
    tool_use = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
    }
    mixed_orphan = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "zzz", "content": "?"},
            {"type": "text", "text": "keep me"},
        ],
    }
    fixed = repair([USER, tool_use, mixed_orphan])
    filler = fixed[2]
    assert filler["role"] == "user" and filler["content"][0]["tool_use_id"] == "t"
    assert filler["content"][0]["is_error"] is True
    assert fixed[3] == {"role": "user", "content": [{"type": "text", "text": "keep me"}]}
    assert mixed_orphan["content"][0]["tool_use_id"] == "zzz"  # input untouched


def test_manager_repair_option() -> None:
    manager = MessageContextManager(10_000, repair=True)
    manager.extend([USER, result("ghost"), call("a"), USER])
    ctx = manager.get_context()
    assert [m.get("tool_call_id") for m in ctx] == [None, None, "a", None]
    assert ctx[2]["content"] == INTERRUPTED_RESULT


def test_repair_closes_an_interrupted_call_with_the_managers_text() -> None:
    """``interrupted_result`` names the closure a user turn causes, with repair on or off; a
    call closed for another reason (the stream ends, an assistant turn follows) says no result
    was recorded."""
    for repairing in (True, False):
        manager = MessageContextManager(
            10_000, repair=repairing, interrupted_result="Cancelled by the user."
        )
        manager.extend([USER, call("a"), USER])
        assert manager.get_context()[2]["content"] == "Cancelled by the user."
    before_assistant = repair([USER, call("a"), {"role": "assistant", "content": "done"}])
    assert before_assistant[2]["content"] == MISSING_RESULT_TEXT
    at_the_end = repair([USER, call("a")])
    assert at_the_end[2]["content"] == MISSING_RESULT_TEXT


@pytest.mark.parametrize("value", [None, 5, "text", {"role": "user", "content": "x"}])
def test_repair_refuses_a_value_that_is_not_a_list_of_messages(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="must be a list of messages"):
        repair(value)
