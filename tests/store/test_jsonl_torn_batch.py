"""A JSONL batch cut short by a killed writer is read as never written, at every byte.

A batch is one ``os.write``, but the kernel may stop a write of several pages at a page boundary
when the process is killed, leaving the batch's first lines whole. Such a batch was never
acknowledged, so a reader must see none of it and the next writer must remove it. The files
here are cut by hand at every offset a kill could leave, which is what ``kill -9`` does at
random in ``test_async_crash.py``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.store import JsonlLog, copy_session, open_store


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def contents(path: Path) -> list[str]:
    return [m.message["content"] for m in JsonlLog(path, strict=True).restore().messages]


def write_batch(
    path: Path, batch: list[dict[str, Any]], *, integrity: bool = False
) -> tuple[int, int]:
    """Append ``before`` alone, then ``batch`` as one batch; the file's size after each."""
    with JsonlLog(path, integrity=integrity) as log:
        log.append([user("before")])
        size = path.stat().st_size
        log.append(batch)
    return size, path.stat().st_size


BATCHES = {
    "messages": [user("one"), user("two"), user("three"), user("four")],
    # metadata lines are written with Kimi's spacing ({"batch": [1, 4]})
    "with metadata": [
        user("one"),
        {"role": "_usage", "token_count": 5},
        {"role": "_checkpoint", "id": 0},
        user("four"),
    ],
}


@pytest.mark.parametrize("integrity", [False, True])
@pytest.mark.parametrize("kind", sorted(BATCHES))
def test_a_batch_cut_at_any_byte_is_all_or_nothing(
    tmp_path: Path, integrity: bool, kind: str
) -> None:
    batch = BATCHES[kind]
    texts = [r["content"] for r in batch if r["role"] == "user"]
    path = tmp_path / "context.jsonl"
    before, after = write_batch(path, batch, integrity=integrity)
    full = path.read_bytes()
    for cut in range(before, after + 1):
        path.write_bytes(full[:cut])
        # the whole batch once its write ended: its final newline is part of it
        whole = cut == after
        expected = ["before", *texts] if whole else ["before"]
        assert contents(path) == expected, cut
        log = JsonlLog(path, integrity=integrity)
        assert len(log.load().lines) == (1 + len(batch) if whole else 1), cut
        with log:
            assert log.append([user("next")]) == [1 + len(batch) if whole else 1]
        assert contents(path) == [*expected, "next"], cut
        assert all(line.endswith("\n") for line in path.read_text().splitlines(keepends=True))


def test_a_batch_of_pages_cut_at_a_page_boundary_is_removed_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "context.jsonl"
    texts = [f"{n}:" + "x" * 9_000 for n in range(5)]  # records longer than the read window
    before, after = write_batch(path, [user(text) for text in texts])
    full = path.read_bytes()
    first_line_end = full.index(b"\n", before) + 1
    for cut in range(before + 4096, after - 1, 4096):  # where the kernel stops a killed write
        path.write_bytes(full[:cut])
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert contents(path) == ["before"]
        if cut > first_line_end:  # whole records of the batch are there, and ignored
            assert "a batch an interrupted writer left unfinished" in caplog.text
        manager = MessageContextManager.open(str(path), counter="chars")
        assert [m["content"] for m in manager.get_context()] == ["before"]
        manager.add(user("next"))
        manager.store.close()
        assert contents(path) == ["before", "next"]
        assert path.read_bytes().count(b"\n") == 2  # nothing of the torn batch is left


def test_a_manager_batch_torn_by_a_kill_is_not_restored(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    manager = MessageContextManager.open(str(path), counter="chars")
    manager.add(user("kept"))
    with manager.store.batch():
        for text in ("a", "b", "c"):
            manager.add(user(text))
    manager.store.close()
    full = path.read_bytes()
    second_line_end = full.index(b"\n", full.index(b'"a"')) + 1
    path.write_bytes(full[:second_line_end])  # only the batch's first record reached the disk
    manager = MessageContextManager.open(str(path), counter="chars")
    assert [m["content"] for m in manager.get_context()] == ["kept"]
    manager.add(user("after"))
    manager.store.close()
    manager = MessageContextManager.open(str(path), counter="chars")
    assert [m["content"] for m in manager.get_context()] == ["kept", "after"]
    manager.store.close()


def test_a_revert_to_a_checkpoint_inside_a_batch_keeps_the_records_before_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "context.jsonl"
    for integrity in (False, True):
        with JsonlLog(path, integrity=integrity) as log:
            log.clear()
            log.append([user("a"), user("b"), {"role": "_checkpoint", "id": 0}, user("c")])
            log.revert_to(0)
        assert contents(path) == ["a", "b"]
        with JsonlLog(path, integrity=integrity) as log:
            log.append([user("d")])
        assert contents(path) == ["a", "b", "d"]


def test_the_batch_place_stays_in_the_jsonl_file(tmp_path: Path) -> None:
    source = tmp_path / "context.jsonl"
    write_batch(source, [user("one"), user("two")])
    copy_session(str(source), f"sqlite:///{tmp_path}/copy.db", to_session="s")
    copied = open_store(f"sqlite:///{tmp_path}/copy.db", session="s")
    assert [json.loads(line) for _, line in copied.load().lines] == [
        user("before"),
        user("one"),
        user("two"),
    ]
    copied.close()
    # and back into a JSONL log, one record at a time: no stale place makes it look unfinished
    back = tmp_path / "back.jsonl"
    copy_session(f"sqlite:///{tmp_path}/copy.db", JsonlLog(back), session="s")
    with JsonlLog(back) as log:
        for text in ("x", "y"):
            log.append([{**user(text), "_cm": {"batch": [0, 3]}}])
    assert contents(back) == ["before", "one", "two", "x", "y"]


def test_a_place_that_does_not_match_its_batch_start_is_read_as_written(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text(
        json.dumps(user("a")) + "\n" + json.dumps({**user("b"), "_cm": {"batch": [1, 5]}}) + "\n"
    )
    assert contents(path) == ["a", "b"]  # line 1 is not [0, 5]: not a batch a writer left
    path.write_text(json.dumps({**user("b"), "_cm": {"batch": [7, 9]}}) + "\n")
    assert contents(path) == ["b"]  # the place counts more lines than the file has


def test_a_reader_that_saw_an_unfinished_batch_reads_it_whole_once_it_is_sent_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "context.jsonl"
    batch = [user("a"), user("b"), user("c")]
    write_batch(path, batch)
    full = path.read_bytes()
    path.write_bytes(full[: full.index(b"\n", full.index(b'"b"')) + 1])  # a, b whole; c lost
    reader = JsonlLog(path)
    assert [json.loads(line)["content"] for _, line in reader.load().lines] == ["before"]
    head = reader.head
    assert head is not None
    with JsonlLog(path) as writer:
        assert writer.append(batch) == [1, 2, 3]  # the retry: same records, same bytes
    after = reader.load_after(head)
    assert after is not None
    assert [(p, json.loads(line)["content"]) for p, line in after.lines] == [
        (1, "a"),
        (2, "b"),
        (3, "c"),
    ]


def test_a_retry_is_not_taken_as_stored_from_the_first_lines_of_an_unfinished_batch(
    tmp_path: Path,
) -> None:
    path = tmp_path / "context.jsonl"
    with_ids = [{**user(f"b{i}"), "_cm": {"id": f"id-{i}"}} for i in range(4)]
    worker = JsonlLog(path)
    worker.append([user("before")])
    with JsonlLog(path) as other:
        other.append(with_ids)
    full = path.read_bytes()
    path.write_bytes(full[: full.index(b"\n", full.index(b'"b1"')) + 1])  # b0, b1 whole
    assert worker.append(with_ids[:2]) == [1, 2]  # written now, not found in the torn batch
    assert worker.append([user("next")]) == [3]
    worker.close()
    assert contents(path) == ["before", "b0", "b1", "next"]


def test_a_place_given_with_a_single_record_is_not_taken_as_a_batch(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    with JsonlLog(path) as log:
        log.append_message(user("hi"))
        log.append_message(user("tagged"), extra={"batch": [0, 2]})
    assert contents(path) == ["hi", "tagged"]
    with JsonlLog(path) as log:
        assert log.append([user("next")]) == [2]
    assert contents(path) == ["hi", "tagged", "next"]
