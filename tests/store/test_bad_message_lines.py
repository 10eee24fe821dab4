"""A stored message line the manager cannot read is reported like any corrupt line: by its
number, as a warning (and skipped) or, with ``strict=True``, as ``StoreCorruptionError``; on
every backend, when a manager is opened, reloaded or restored without a manager."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from context_manager.errors import StoreCorruptionError
from context_manager.manager import MessageContextManager
from context_manager.store import JsonlLog, open_store

GOOD_A = {"role": "user", "content": "a"}
GOOD_B = {"role": "assistant", "content": "b"}
BAD_MESSAGES = [
    {"role": "wizard", "content": "an unknown role"},
    {"role": "tool", "content": "a result without its tool_call_id"},
    {"role": "user", "content": 7},
    {"role": "assistant", "content": None, "tool_calls": "not a list"},
    # an object stored losslessly whose payload is no message
    {"role": "user", "content": None, "_cm": {"type": "dict", "payload": {"type": "nope"}}},
]
BACKENDS = ["jsonl", "sqlite"]


def target(backend: str, tmp_path: Path) -> str:
    if backend == "jsonl":
        return str(tmp_path / "context.jsonl")
    return f"sqlite:///{tmp_path / 'sessions.db'}"


def write(where: str, records: list[dict[str, Any]]) -> None:
    """Lines written by another tool, through the record-level store (no manager checks)."""
    store = open_store(where, session="s")
    try:
        store.append(records)
    finally:
        store.close()


def open_manager(where: str, **options: Any) -> MessageContextManager:
    return MessageContextManager.open(where, session="s", max_tokens=100_000, **options)


def contents(manager: MessageContextManager) -> list[Any]:
    return [m["content"] for m in manager.messages]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad", BAD_MESSAGES, ids=range(len(BAD_MESSAGES)))
def test_open_skips_an_unreadable_message_line_by_its_number(
    backend: str, bad: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    where = target(backend, tmp_path)
    write(where, [GOOD_A, bad, GOOD_B])
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        manager = open_manager(where)
    assert contents(manager) == ["a", "b"]
    assert "skipping corrupt line 2: invalid message" in caplog.text
    assert manager.store.restored.skipped_lines == [2]
    assert [m.line for m in manager.store.restored.messages] == [1, 3]
    manager.store.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad", BAD_MESSAGES, ids=range(len(BAD_MESSAGES)))
def test_strict_open_names_the_unreadable_message_line(
    backend: str, bad: dict[str, Any], tmp_path: Path
) -> None:
    where = target(backend, tmp_path)
    write(where, [GOOD_A, bad, GOOD_B])
    with pytest.raises(StoreCorruptionError) as info:
        open_manager(where, strict=True)
    assert info.value.line == 2
    assert "line 2 is corrupt: invalid message" in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reload_skips_an_unreadable_message_another_writer_stored(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    where = target(backend, tmp_path)
    manager = open_manager(where)
    manager.add(GOOD_A)
    write(where, [BAD_MESSAGES[0], GOOD_B])
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        manager.store.reload(manager)
    assert contents(manager) == ["a", "b"]
    assert "skipping corrupt line 2: invalid message" in caplog.text
    manager.add({"role": "user", "content": "c"})
    manager.store.close()
    assert contents(open_manager(where)) == ["a", "b", "c"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_strict_reload_refuses_before_memory_changes(backend: str, tmp_path: Path) -> None:
    where = target(backend, tmp_path)
    manager = open_manager(where, strict=True)
    manager.add(GOOD_A)
    write(where, [GOOD_B, BAD_MESSAGES[1]])
    with pytest.raises(StoreCorruptionError) as info:
        manager.store.reload(manager)
    assert info.value.line == 3
    assert contents(manager) == ["a"]
    manager.store.close()


def test_a_restore_without_a_manager_still_reads_every_message(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    where = tmp_path / "context.jsonl"
    with JsonlLog(where) as log:
        log.append([GOOD_A, *BAD_MESSAGES[:4], GOOD_B])
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        restored = JsonlLog(where).restore()
    assert [m.message["content"] for m in restored.messages] == ["a", "b"]
    assert restored.skipped_lines == [2, 3, 4, 5]
    with pytest.raises(StoreCorruptionError) as info:
        JsonlLog(where, strict=True).restore()
    assert info.value.line == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_aopen_reports_an_unreadable_message_line_as_open_does(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    where = target(backend, tmp_path)
    write(where, [GOOD_A, BAD_MESSAGES[2], GOOD_B])

    async def reopen(strict: bool) -> list[Any]:
        manager = await MessageContextManager.aopen(
            where, session="s", max_tokens=100_000, strict=strict
        )
        try:
            assert manager.store.restored.skipped_lines == [2]
            return contents(manager)
        finally:
            await manager.store.aclose()

    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        assert asyncio.run(reopen(False)) == ["a", "b"]
    assert "skipping corrupt line 2: invalid message" in caplog.text
    with pytest.raises(StoreCorruptionError) as info:
        asyncio.run(reopen(True))
    assert info.value.line == 2
