"""What a store accepts of a dict message, now checked in one walk: plain JSON is stored as
itself; SDK objects inside are stored apart; a field with no JSON form is refused by its path
(also beside an object), before anything changes."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import TextBlock

from context_manager.errors import InvalidMessageError
from context_manager.manager import MessageContextManager

BLOCK = TextBlock(type="text", text="hi")


def open_manager(path: Path) -> MessageContextManager:
    return MessageContextManager.open(path, max_tokens=100_000)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_plain_dict_is_stored_as_itself(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    message = {"role": "user", "content": [{"type": "text", "text": "héllo ✓"}], "n": [1, 2.5]}
    open_manager(path).add(message)
    (line,) = lines(path)
    assert {k: v for k, v in line.items() if k != "_cm"} == message
    assert open_manager(path).messages == [message]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (
            {"role": "assistant", "content": [BLOCK], "at": datetime.date(2026, 1, 1)},
            "['at'] is a date",
        ),
        ({"role": "assistant", "content": [BLOCK], "tags": {"a"}}, "['tags'] is a set"),
        ({"role": "assistant", "content": (BLOCK,)}, "['content'][0] is a TextBlock"),
        ({"role": "user", "content": "x", "meta": {1: "a"}}, "non-string key 1"),
        ({"role": "user", "content": "a\ud800"}, "['content'] holds a lone surrogate"),
    ],
)
def test_a_field_with_no_json_form_is_refused_by_its_path(
    tmp_path: Path, message: dict[str, Any], reason: str
) -> None:
    path = tmp_path / "c.jsonl"
    manager = open_manager(path)
    manager.add({"role": "user", "content": "kept"})
    with pytest.raises(InvalidMessageError) as info:
        manager.add(message)
    assert reason in str(info.value)
    assert [m["content"] for m in manager.messages] == ["kept"]
    assert [line["content"] for line in lines(path)] == ["kept"]


def test_sdk_objects_beside_plain_fields_come_back_as_added(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    message = {"role": "assistant", "content": [BLOCK, {"type": "text", "text": "plain"}]}
    open_manager(path).add(message)
    (restored,) = open_manager(path).messages
    assert restored == message
    assert type(restored["content"][0]) is TextBlock
