"""The CLI reads what the library writes (session logs holding SDK objects), provider request
bodies, and refuses a file with no message; every expected value comes from the public library
call on the same messages, or from the provider's documented request shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager, count_tokens, trim
from context_manager.cli import main


def anthropic_turns() -> list[Any]:
    """A tool loop as the Anthropic SDK returns it: ``Message`` objects and tool_result dicts."""
    from anthropic.types import Message

    call = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "Let me read it."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"}],
    }
    return [{"role": "user", "content": "Read a.py"}, call, result]


def written_session(tmp_path: Path) -> tuple[Path, list[Any]]:
    path = tmp_path / "session.jsonl"
    manager = MessageContextManager.open(path, max_tokens=100_000, system_prompt="Be brief.")
    turns = anthropic_turns()
    for turn in turns:
        manager.add(turn)
    manager.store.close()
    return path, turns


def test_check_and_count_read_a_session_log_of_sdk_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, turns = written_session(tmp_path)
    assert main(["check", str(path), "--provider", "anthropic"]) == 0
    assert "0 problem(s)" in capsys.readouterr().err
    assert main(["count", str(path), "--json", "--counter", "chars"]) == 0
    counted = json.loads(capsys.readouterr().out)
    expected = [{"role": "system", "content": "Be brief."}, *turns]
    assert counted["counter"] == "chars/4"  # Pi's arithmetic, named
    assert [r["tokens"] for r in counted["messages"]] == [
        count_tokens([message], None, counter="chars") - count_tokens([], None, counter="chars")
        for message in expected
    ]


def test_trim_writes_a_session_log_s_objects_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, turns = written_session(tmp_path)
    assert main(["trim", str(path), "--budget-tokens", "1000"]) == 0
    kept = json.loads(capsys.readouterr().out)
    expected = trim([{"role": "system", "content": "Be brief."}, *turns], 1000)
    assert len(kept) == len(expected) == 4
    assert kept[2]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "read",
        "input": {"path": "a.py"},
    }


REQUESTS = {
    "openai": (
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        [{"role": "user", "content": "hi"}],
    ),
    "anthropic": (
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "system": [{"type": "text", "text": "Be brief."}],
            "messages": [{"role": "user", "content": "hi"}],
        },
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
    ),
    "responses": (
        {"model": "gpt-4o", "instructions": "Be brief.", "input": "hi"},
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
    ),
    "gemini": (
        {
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        },
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "parts": [{"text": "hi"}]},
        ],
    ),
}


@pytest.mark.parametrize("shape", sorted(REQUESTS))
def test_a_request_body_is_read_as_its_messages_system_first(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body, messages = REQUESTS[shape]
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body, indent=2))
    assert main(["count", str(path), "--json", "--counter", "chars"]) == 0
    counted = json.loads(capsys.readouterr().out)
    chars = count_tokens(messages, None, counter="chars") - count_tokens([], None, counter="chars")
    assert counted["total"] == chars
    assert len(counted["messages"]) == len(messages)


@pytest.mark.parametrize("content", ["", "\n  \n", "[]", '{"messages": []}'])
@pytest.mark.parametrize("command", ["count", "trim", "stats", "check"])
def test_a_file_without_messages_is_an_error(
    command: str, content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.json"
    path.write_text(content)
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error" in err


def test_an_object_that_is_neither_a_message_nor_a_request_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "odd.json"
    path.write_text('{\n "model": "gpt-4o",\n "prompt": "hi"\n}\n')
    assert main(["count", str(path)]) == 2
    assert "invalid JSON line" in capsys.readouterr().err


def test_a_compacted_session_log_reads_as_the_restored_manager_sends_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI read every message line and dropped the summary: `count` and `stats` reported a
    conversation no restore holds (63 messages where the manager held 13)."""
    path = tmp_path / "session.jsonl"
    manager = MessageContextManager.open(path, max_tokens=100_000, system_prompt="Be brief.")
    for i in range(10):
        manager.add({"role": "user", "content": f"question {i}"})
        manager.add({"role": "assistant", "content": f"answer {i}"})
    manager.apply_compaction({"role": "user", "content": "what the first eight turns said"}, 16)
    manager.add({"role": "user", "content": "and now?"})
    manager.store.close()
    sent = MessageContextManager.open(path, max_tokens=100_000).get_context()
    assert [m["content"] for m in sent[:3]] == [
        "Be brief.",
        "what the first eight turns said",
        "question 8",
    ]
    assert main(["count", str(path), "--json", "--counter", "chars"]) == 0
    assert len(json.loads(capsys.readouterr().out)["messages"]) == len(sent) == 7
    assert main(["trim", str(path), "--budget-tokens", "100000"]) == 0
    assert json.loads(capsys.readouterr().out) == sent
