"""Damaged lines in a Kimi-format ``context.jsonl`` are reported, never silently changed: bytes
that are not UTF-8, and a compaction that points past the messages before it or carries a summary
message that is no message. With ``strict=True`` the open raises ``StoreCorruptionError`` naming
the line; without it the line is skipped with a warning and every other message stays.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreCorruptionError

HEAD = b'{"role":"user","content":"first"}\n{"role":"assistant","content":"second"}\n'
TAIL = b'{"role":"user","content":"third"}\n'


def compaction(first_kept: object, summary_message: str = "") -> bytes:
    extra = f',"summary_message":{summary_message}' if summary_message else ""
    return (
        '{"role":"_compaction","content":null,"summary":"what happened",'
        f'"first_kept_index":{first_kept},"tokens_before":10{extra}}}\n'
    ).encode()


DAMAGED = {
    "not UTF-8": (b'{"role":"user","content":"caf\xe9"}\n', 3),
    "kept index past the end": (compaction(99), 3),
    "negative kept index": (compaction(-1), 3),
    "summary message not a message": (compaction(1, "5"), 3),
}


def session(tmp_path: Path, line: bytes) -> Path:
    where = tmp_path / "s"
    where.mkdir()
    (where / "context.jsonl").write_bytes(HEAD + line + TAIL)
    return tmp_path


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_strict_open_names_the_damaged_line(case: str, tmp_path: Path) -> None:
    line, number = DAMAGED[case]
    root = session(tmp_path, line)
    with pytest.raises(StoreCorruptionError) as info:
        MessageContextManager.open(str(root), session="s", max_tokens=10_000, strict=True)
    assert info.value.line == number


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_open_skips_the_damaged_line_with_a_warning_and_keeps_the_rest(
    case: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    line, number = DAMAGED[case]
    root = session(tmp_path, line)
    with caplog.at_level(logging.WARNING, logger="context_manager"):
        manager = MessageContextManager.open(str(root), session="s", max_tokens=10_000)
    assert [m["content"] for m in manager.get_context()] == ["first", "second", "third"]
    assert any(f"line {number}" in r.getMessage() for r in caplog.records), caplog.text


def test_a_compaction_that_keeps_nothing_before_it_applies(tmp_path: Path) -> None:
    """Kimi CLI's own form: the index may name the end (every earlier message summarized)."""
    root = session(tmp_path, compaction(2))
    manager = MessageContextManager.open(str(root), session="s", max_tokens=10_000, strict=True)
    context = manager.get_context()
    assert "what happened" in str(context[0]["content"])
    assert [m["content"] for m in context[1:]] == ["third"]
