"""MessageContextManager.open: every change persisted, restored on reopen, revert and clear."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from context_manager.compaction.entry import CompactionEntry
from context_manager.errors import InvalidMessageError, StoreConflictError, StoreCorruptionError
from context_manager.manager import MessageContextManager
from context_manager.messages import Message
from context_manager.store import CheckpointNotFoundError

KIMI_DIR = Path(__file__).resolve().parents[2] / "compat_fixtures" / "kimi"
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}


def records(path: Path) -> list[dict[str, Any]]:
    """The file's records without their record ids and message counts, each id checked to be
    one and distinct, each count to be ``[tokens, 12 hex digits]``."""
    out = [json.loads(line) for line in path.read_text().splitlines()]
    ids = []
    for record in out:
        attrs = record.get("_cm")
        if isinstance(attrs, dict) and "id" in attrs:
            ids.append(attrs.pop("id"))
            count = attrs.pop("count", [0, "0" * 12])
            assert type(count[0]) is int and re.fullmatch("[0-9a-f]{12}", count[1]), count
            if not attrs:
                del record["_cm"]
    assert all(isinstance(i, str) and len(i) == 22 for i in ids)
    assert len(set(ids)) == len(ids)
    return out


def open_manager(path: Path, **options: Any) -> MessageContextManager:
    return MessageContextManager.open(path, max_tokens=100_000, **options)


def test_every_add_is_persisted_and_restored(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    manager = open_manager(path, system_prompt="be brief")
    manager.add({"role": "user", "content": "hi"})
    manager.add(CALL, pinned=True)
    manager.add(RESULT, priority=2)
    manager.record_usage(1234)
    assert [r["role"] for r in records(path)] == [
        "_system_prompt",
        "user",
        "assistant",
        "tool",
        "_usage",
    ]
    assert records(path)[2]["_cm"] == {"pinned": True}
    assert records(path)[3]["_cm"] == {"priority": 2}

    reopened = open_manager(path)
    assert reopened.system_prompt == "be brief"
    assert reopened.messages == manager.messages
    assert reopened.used_tokens == manager.used_tokens == 1234
    assert reopened.token_count == manager.token_count
    assert reopened.store.restored.token_count == 1234
    assert records(path)[-1]["role"] == "_usage"  # reopening wrote nothing


def test_restored_pinned_message_survives_trimming(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    small = {"max_tokens": 60, "reserve_tokens": 0}
    manager = MessageContextManager.open(path, **small)
    manager.add({"role": "user", "content": "PINNED " + "p" * 40}, pinned=True)
    for i in range(6):
        manager.add({"role": "user", "content": f"filler {i} " + "f" * 40})
    reopened = MessageContextManager.open(path, **small)
    context = reopened.get_context()
    assert context[0]["content"].startswith("PINNED")
    assert context == manager.get_context()
    assert len(context) < 7


def test_system_prompt_option_overrides_and_is_persisted(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    open_manager(path, system_prompt="old").add({"role": "user", "content": "x"})
    same = open_manager(path, system_prompt="old")
    assert same.system_prompt == "old"
    assert sum(r["role"] == "_system_prompt" for r in records(path)) == 1
    changed = open_manager(path, system_prompt="new")
    assert changed.system_prompt == "new"
    assert open_manager(path).system_prompt == "new"


def test_checkpoint_and_revert_rebuild_the_manager(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    manager = open_manager(path, system_prompt="sys")
    manager.add({"role": "user", "content": "one"})
    first = manager.checkpoint()
    manager.add({"role": "assistant", "content": "1"})
    manager.record_usage(50)
    second = manager.checkpoint()
    manager.add({"role": "user", "content": "two"})
    assert (first, second) == (0, 1)

    manager.revert_to(second)
    assert [m["content"] for m in manager.messages] == ["one", "1"]
    assert manager.used_tokens == 50
    assert (tmp_path / "context_1.jsonl").exists()
    assert manager.checkpoint() == 1  # ids reused after revert
    manager.add({"role": "user", "content": "after revert"})  # listener re-attached

    manager.revert_to(first)
    assert [m["content"] for m in manager.messages] == ["one"]
    assert manager.system_prompt == "sys"
    reopened = open_manager(path)
    assert reopened.messages == manager.messages and reopened.system_prompt == "sys"
    with pytest.raises(CheckpointNotFoundError):
        manager.revert_to(5)


def test_clear_rotates_and_keeps_the_system_prompt_on_request(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    manager = open_manager(path, system_prompt="sys")
    manager.add({"role": "user", "content": "old"})
    manager.clear()
    assert records(path) == [{"role": "_system_prompt", "content": "sys"}]
    assert [r["role"] for r in records(tmp_path / "context_1.jsonl")] == ["_system_prompt", "user"]
    manager.clear(keep_system_prompt=False)
    assert path.read_text() == ""
    assert open_manager(path).system_prompt is None


def test_non_dict_messages_come_back_as_the_same_objects(tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    path = tmp_path / "context.jsonl"
    manager = open_manager(path)
    added = [
        HumanMessage("hello"),
        AIMessage("", tool_calls=[{"id": "t1", "name": "f", "args": {"x": 1}}]),
        ToolMessage("done", tool_call_id="t1"),
        Message(role="user", text="from a record"),
    ]
    for message in added:
        manager.add(message)
    lines = records(path)
    # Kimi-readable wrappers (role, content null); the object itself travels in _cm
    assert [(r["role"], r["content"]) for r in lines] == [
        ("user", None),
        ("assistant", None),
        ("tool", None),
        ("user", None),
    ]
    assert [r["_cm"]["type"] for r in lines] == ["langchain"] * 3 + ["record"]
    reopened = open_manager(path)
    assert reopened.messages == added
    assert [type(m) for m in reopened.messages] == [type(m) for m in added]
    assert reopened.token_count == manager.token_count


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"metadata": {1, 2}}, "['metadata']"),  # a set
        ({"at": __import__("datetime").datetime(2026, 1, 1)}, "['at']"),
        ({"score": float("nan")}, "['score']"),
        ({"parts": [{"text": "a\ud800b"}]}, "['parts'][0]['text']"),  # a lone surrogate
    ],
)
def test_a_dict_that_is_not_exact_json_is_refused_before_anything_changes(
    tmp_path: Path, extra: dict[str, object], field: str
) -> None:
    path = tmp_path / "context.jsonl"
    manager = open_manager(path)
    manager.add({"role": "user", "content": "kept"})
    with pytest.raises(InvalidMessageError, match=re.escape(field)):
        manager.add({"role": "user", "content": "x", **extra})
    assert [m["content"] for m in manager.messages] == ["kept"]
    assert records(path) == [{"role": "user", "content": "kept"}]
    assert open_manager(path).messages == manager.messages


@pytest.mark.parametrize("how", ["set_system_prompt", "add"])
def test_a_system_prompt_with_a_lone_surrogate_is_refused_like_a_message(
    tmp_path: Path, how: str
) -> None:
    """The prompt was written with the surrogate escaped, where a message holding it is refused
    (the docs: text must be valid Unicode to be stored)."""
    path = tmp_path / "context.jsonl"
    manager = open_manager(path)
    manager.set_system_prompt("be brief")
    prompt = "You are \udc00 helpful"
    with pytest.raises(InvalidMessageError, match="lone surrogate"):
        if how == "add":
            manager.clear(keep_system_prompt=False)
            manager.add({"role": "system", "content": prompt})
        else:
            manager.set_system_prompt(prompt)
    expected = None if how == "add" else "be brief"
    assert manager.system_prompt == expected
    assert open_manager(path).system_prompt == expected


def test_corrupt_line_skipped_with_warning_or_strict_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "context.jsonl"
    manager = open_manager(path)
    manager.add({"role": "user", "content": "a"})
    with open(path, "a") as handle:
        handle.write("{oops\n")
        handle.write(json.dumps(RESULT) + "\n")  # a result whose call is missing
    with pytest.raises(StoreConflictError):  # another writer changed the file: nothing written
        manager.add({"role": "user", "content": "b"})
    manager.store.reload(manager)
    manager.add({"role": "user", "content": "b"})
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = open_manager(path)
    assert [m["content"] for m in reopened.messages] == ["a", "b"]
    assert "corrupt line 2" in caplog.text
    assert "line 3 the manager rejected" in caplog.text
    with pytest.raises(StoreCorruptionError) as info:
        open_manager(path, strict=True)
    assert info.value.line == 2


def test_store_options_reach_the_log(tmp_path: Path) -> None:
    manager = open_manager(tmp_path / "c.jsonl", fsync="always", strict=True)
    assert manager.store.log.fsync == "always" and manager.store.log.strict


def test_compaction_is_persisted_and_replayed_in_place(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    manager = open_manager(path, system_prompt="sys")
    for text in ("a", "b", "c"):
        manager.add({"role": "user", "content": text})
    entry = {
        "summary": "S",
        "first_kept_index": 2,
        "tokens_before": 10,
        "details": {"read_files": ["a.py"], "modified_files": []},
        "reason": "threshold",
        "created_at": "2026-01-01T00:00:00.000Z",
    }
    summary = {"role": "user", "content": "Summary of earlier turns: S"}
    manager.apply_compaction(summary, 2, CompactionEntry.from_dict(entry))
    manager.add({"role": "user", "content": "d"})
    assert records(path)[4] == {
        "role": "_compaction",
        "content": None,
        **entry,
        "summary_message": summary,
        # the cut and the first message still held, in history indices: where a reader starts
        "_cm": {"history": [2, 2, []]},
    }
    assert [m["content"] for m in manager.messages] == ["c", "d"]

    reopened = open_manager(path)
    assert reopened.messages == manager.messages
    assert reopened.summary == summary
    assert reopened.get_context() == manager.get_context()
    assert reopened.token_count == manager.token_count
    assert reopened.store.restored.compaction["first_kept_index"] == 2
    assert reopened.compaction == CompactionEntry.from_dict({**entry, "first_kept_index": 2})
    assert records(path)[-1] == {"role": "user", "content": "d"}  # reopening wrote nothing


def test_compaction_replay_maps_past_skipped_lines(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    lines = [
        {"role": "user", "content": "a"},
        {"role": "tool", "tool_call_id": "nope", "content": "orphan: rejected on replay"},
        {"role": "user", "content": "b"},
        {"role": "user", "content": "c"},
        {
            "role": "_compaction",
            "content": None,
            "first_kept_index": 3,
            "summary_message": {"role": "user", "content": "S"},
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    manager = open_manager(path)
    assert [m["content"] for m in manager.messages] == ["c"]
    assert manager.summary == {"role": "user", "content": "S"}


def test_manager_opens_a_file_written_by_kimi(tmp_path: Path) -> None:
    source = KIMI_DIR / "kimi_written" / "revert_then_continue"
    shutil.copyfile(source / "context.jsonl", tmp_path / "context.jsonl")
    expected = json.loads((source / "kimi_restore.json").read_text())
    manager = open_manager(tmp_path / "context.jsonl")
    assert manager.messages == expected["history"]
    assert manager.system_prompt == expected["system_prompt"]
    assert manager.store.restored.token_count == expected["token_count"]
    # Like Kimi's token_count_with_pending: the last usage plus what was added after it.
    after_usage = manager.count_message(
        {"role": "user", "content": "second revert, second rotated file"}
    )
    assert manager.used_tokens == expected["token_count"] + after_usage
    assert manager.checkpoint() == expected["n_checkpoints"]
