"""Pi's loader skips a line it cannot parse; a line nested deeper than Python's JSON parser goes
is one such line (it raised a bare ``RecursionError`` before), whatever else the file holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_manager.interop.pi_sessions import (
    parse_session_lines,
    read_pi_session,
    session_context_from_text,
)

HEADER = '{"type":"session","version":3,"id":"s"}'
HELLO = '{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}'


def _deep(depth: int) -> str:
    return '{"type":"message","id":"b","parentId":"a","message":' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_a_line_nested_too_deep_is_skipped(tmp_path: Path, depth: int) -> None:
    text = "\n".join([HEADER, HELLO, _deep(depth)])
    entries = parse_session_lines(text)
    assert [e["type"] for e in entries] == ["session", "message"]
    context = session_context_from_text(text)
    assert [(m["role"], m["content"]) for m in context["messages"]] == [("user", "hi")]
    path = tmp_path / "s.jsonl"
    path.write_text(text, encoding="utf-8")
    assert read_pi_session(path) == context


def test_a_deep_but_parseable_line_is_kept() -> None:
    """Only what the parser cannot read is skipped: 200 levels is an ordinary entry."""
    deep = '{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"x",'
    deep += '"extra":' + "[" * 200 + "]" * 200 + "}}"
    context = session_context_from_text("\n".join([HEADER, HELLO, deep]))
    assert [m["content"] for m in context["messages"]] == ["hi", "x"]
