"""The JSONL log on its own: format, restore, corruption handling, rotation, fsync modes."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from context_manager.errors import ConfigurationError, StoreCorruptionError
from context_manager.store import CheckpointNotFoundError, JsonlLog
from context_manager.store import jsonl as jsonl_module


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def fill(log: JsonlLog) -> None:
    log.write_system_prompt("sys")
    log.append_message({"role": "user", "content": "a"})
    log.checkpoint()
    log.append_message({"role": "assistant", "content": "b"})
    log.append_usage(11)
    log.checkpoint()
    log.append_message({"role": "user", "content": "c"})
    log.append_usage(22)


def test_each_record_is_one_line_in_kimi_format(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    with JsonlLog(path) as log:
        fill(log)
    assert lines(path) == [
        {"role": "_system_prompt", "content": "sys"},
        {"role": "user", "content": "a"},
        {"role": "_checkpoint", "id": 0},
        {"role": "assistant", "content": "b"},
        {"role": "_usage", "token_count": 11},
        {"role": "_checkpoint", "id": 1},
        {"role": "user", "content": "c"},
        {"role": "_usage", "token_count": 22},
    ]


def test_restore_gives_messages_count_checkpoint_and_prompt(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    with JsonlLog(path) as log:
        fill(log)
    restored = JsonlLog(path).restore()
    assert [m.message["content"] for m in restored.messages] == ["a", "b", "c"]
    assert [m.line for m in restored.messages] == [2, 4, 7]
    assert restored.token_count == 22
    assert restored.next_checkpoint_id == 2
    assert restored.system_prompt == "sys"
    assert restored.compaction is None


def test_missing_file_restores_empty(tmp_path: Path) -> None:
    restored = JsonlLog(tmp_path / "sub" / "context.jsonl").restore()
    assert restored.messages == [] and restored.next_checkpoint_id == 0
    assert restored.system_prompt is None


def test_message_without_content_gets_null_content_so_kimi_can_read_it(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    call = {
        "role": "assistant",
        "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    with JsonlLog(path) as log:
        log.append_message(call)
    assert lines(path) == [{**call, "content": None}]
    assert "content" not in call  # the caller's dict is not mutated


def test_pinned_and_priority_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    with JsonlLog(path) as log:
        log.append_message({"role": "user", "content": "p"}, pinned=True, priority=3)
        log.append_message({"role": "user", "content": "q"})
    assert lines(path)[0]["_cm"] == {"pinned": True, "priority": 3}
    assert "_cm" not in lines(path)[1]
    first, second = JsonlLog(path).restore().messages
    assert (first.pinned, first.priority) == (True, 3)
    assert first.message == {"role": "user", "content": "p"}
    assert (second.pinned, second.priority) == (False, 0)


def test_compaction_entry_is_a_metadata_line(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    entry = {
        "summary": "s",
        "first_kept_index": 1,
        "tokens_before": 9,
        "details": {},
        "reason": "manual",
        "created_at": "2026-01-01T00:00:00Z",
    }
    with JsonlLog(path) as log:
        log.append_message({"role": "user", "content": "a"})
        log.append_message({"role": "user", "content": "b"})
        log.append_compaction(entry)
        log.append_message({"role": "user", "content": "c"})
    assert lines(path)[2] == {"role": "_compaction", "content": None, **entry}
    restored = JsonlLog(path).restore()
    assert restored.compaction == entry
    assert restored.messages_before_compaction == 2
    assert len(restored.messages) == 3


def test_unknown_metadata_roles_are_skipped_silently(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text('{"role":"_future","content":null}\n{"role":"user","content":"a"}\n')
    restored = JsonlLog(path, strict=True).restore()
    assert len(restored.messages) == 1 and restored.skipped_lines == []
    assert caplog.text == ""


CORRUPT_LINES = [
    '{"role":"user","content":"cut in ha',
    "[1, 2]",
    '{"content":"no role"}',
    '{"role":"_usage","token_count":"12"}',
    '{"role":"_checkpoint","id":1.5}',
    '{"role":"_system_prompt","content":7}',
    '{"role":"wizard","content":"unknown role"}',
    '{"role":"tool","content":"no tool_call_id"}',
]


@pytest.mark.parametrize("bad", CORRUPT_LINES)
def test_corrupt_middle_line_is_skipped_with_its_line_number(
    bad: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text('{"role":"user","content":"a"}\n' + bad + '\n{"role":"user","content":"b"}\n')
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        restored = JsonlLog(path).restore()
    assert [m.message["content"] for m in restored.messages] == ["a", "b"]
    assert restored.skipped_lines == [2]
    assert "line 2" in caplog.text and str(path) in caplog.text


@pytest.mark.parametrize("bad", CORRUPT_LINES)
def test_strict_mode_raises_on_a_corrupt_middle_line(bad: str, tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text('{"role":"user","content":"a"}\n' + bad + '\n{"role":"user","content":"b"}\n')
    with pytest.raises(StoreCorruptionError) as info:
        JsonlLog(path, strict=True).restore()
    assert info.value.line == 2 and info.value.path == str(path)
    assert "line 2" in str(info.value)


def test_torn_last_line_is_ignored_with_a_warning_even_in_strict_mode(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text('{"role":"user","content":"a"}\n{"role":"assistant","conte')
    restored = JsonlLog(path, strict=True).restore()
    assert [m.message["content"] for m in restored.messages] == ["a"]
    assert restored.torn_tail and restored.skipped_lines == []
    assert "torn last line 2" in caplog.text


def test_complete_last_record_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text('{"role":"user","content":"a"}\n{"role":"user","content":"b"}')
    restored = JsonlLog(path, strict=True).restore()
    assert [m.message["content"] for m in restored.messages] == ["a", "b"]
    with JsonlLog(path) as log:
        log.append_message({"role": "user", "content": "c"})
    assert [line["content"] for line in lines(path)] == ["a", "b", "c"]


def test_next_append_cuts_off_a_torn_tail(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "context.jsonl"
    with JsonlLog(path) as log:
        log.append_message({"role": "user", "content": "a"})
        with open(path, "ab") as raw:  # another writer died mid-line
            raw.write(b'{"role":"user","content":"half')
        log.append_message({"role": "user", "content": "b"})
    assert [line["content"] for line in lines(path)] == ["a", "b"]
    assert "cutting off 30 bytes" in caplog.text
    assert JsonlLog(path, strict=True).restore().skipped_lines == []


def test_torn_tail_longer_than_the_first_read_window_is_cut_whole(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text('{"role":"user","content":"a"}\n{"role":"user","content":"' + "x" * 50_000)
    with JsonlLog(path) as log:
        log.append_message({"role": "user", "content": "b"})
    assert [line["content"] for line in lines(path)] == ["a", "b"]


def test_torn_tail_that_is_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text('{"role":"us')
    with JsonlLog(path) as log:
        log.append_message({"role": "user", "content": "b"})
    assert lines(path) == [{"role": "user", "content": "b"}]


def test_revert_rotates_and_keeps_lines_before_the_marker(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    log = JsonlLog(path)
    fill(log)
    before = path.read_bytes()
    state = log.revert_to(1)
    assert (tmp_path / "context_1.jsonl").read_bytes() == before
    assert [m.message["content"] for m in state.messages] == ["a", "b"]
    assert state.token_count == 11 and state.next_checkpoint_id == 1
    assert log.checkpoint() == 1  # ids are reused after a revert
    state = log.revert_to(0)
    assert (tmp_path / "context_2.jsonl").exists()
    assert [m.message["content"] for m in state.messages] == ["a"]
    assert state.token_count == 0 and state.system_prompt == "sys"
    assert log.checkpoint() == 0


def test_revert_drops_corrupt_lines_from_the_rewritten_file(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text('{"role":"user","content":"a"}\nGARBAGE\n{"role": "_checkpoint", "id": 0}\n')
    log = JsonlLog(path)
    log.restore()
    log.revert_to(0)
    assert path.read_text() == '{"role":"user","content":"a"}\n'


def test_revert_to_unknown_checkpoint_raises_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    log = JsonlLog(path)
    fill(log)
    before = path.read_bytes()
    for bad in (2, 7, -1):
        with pytest.raises(CheckpointNotFoundError, match=f"checkpoint {bad} does not exist"):
            log.revert_to(bad)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["context.jsonl", "context.jsonl.lock"]


def test_rotation_never_overwrites_and_uses_highest_plus_one(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    (tmp_path / "context_3.jsonl").write_text("precious 3\n")
    (tmp_path / "context_x.jsonl").write_text("not a rotation\n")
    log = JsonlLog(path)
    fill(log)
    log.clear()
    assert (tmp_path / "context_4.jsonl").exists()
    assert (tmp_path / "context_3.jsonl").read_text() == "precious 3\n"
    assert path.read_bytes() == b""
    assert log.checkpoint() == 0
    log.clear()
    assert (tmp_path / "context_5.jsonl").read_text() == '{"role": "_checkpoint", "id": 0}\n'


def test_rotation_skips_a_name_taken_concurrently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "context.jsonl"
    log = JsonlLog(path)
    fill(log)
    real_listdir = os.listdir

    def racing_listdir(directory: str | os.PathLike[str]) -> list[str]:
        names = real_listdir(directory)
        (tmp_path / "context_1.jsonl").write_text("created by someone else\n")
        return names

    monkeypatch.setattr(jsonl_module.os, "listdir", racing_listdir)
    log.clear()
    assert (tmp_path / "context_1.jsonl").read_text() == "created by someone else\n"
    assert (tmp_path / "context_2.jsonl").read_text().startswith('{"role": "_system_prompt"')


def test_a_second_log_object_follows_a_rotation_done_by_the_first(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    writer_a, writer_b = JsonlLog(path), JsonlLog(path)
    writer_a.append_message({"role": "user", "content": "a"})
    writer_b.append_message({"role": "user", "content": "b"})  # b now holds a descriptor
    writer_a.clear()
    writer_b.append_message({"role": "user", "content": "after clear"})
    assert lines(path) == [{"role": "user", "content": "after clear"}]
    assert [x["content"] for x in lines(tmp_path / "context_1.jsonl")] == ["a", "b"]


def test_bad_fsync_mode_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="fsync='sometimes'"):
        JsonlLog(tmp_path / "c.jsonl", fsync="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mode", "expected"),
    # fill() writes 1 prompt + 3 messages + 2 usage + 2 checkpoints = 8 records.
    [("always", 8), ("checkpoint", 3), ("never", 0)],
)
def test_fsync_modes_sync_what_they_promise(
    mode: jsonl_module.FsyncMode, expected: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(jsonl_module.os, "fsync", lambda fd: calls.append(fd))
    log = JsonlLog(tmp_path / "context.jsonl", fsync=mode)
    fill(log)
    assert len(calls) == expected
    calls.clear()
    log.clear()  # temp file + directory, unless "never"
    assert len(calls) == (0 if mode == "never" else 2)


def test_a_new_log_object_continues_checkpoint_ids_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    with JsonlLog(path) as log:
        fill(log)
    with JsonlLog(path) as fresh:  # no restore() call first
        assert fresh.checkpoint() == 2
    assert lines(path)[-1] == {"role": "_checkpoint", "id": 2}
