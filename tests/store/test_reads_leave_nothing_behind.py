"""Reading a JSONL session that does not exist leaves nothing behind.

A listing, a copy or a compaction report run on a mistyped session id used to create the
session's directory and lock file, so the typo then showed up as an empty session in every
listing. The directory is now made by the first write only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from context_manager import MessageContextManager
from context_manager.cli import main
from context_manager.errors import ConfigurationError
from context_manager.store import connect, open_store


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["compactions", "{d}", "--session", "typo"], 1),  # "no session 'typo'"
        (["sessions", "copy", "{d}", "{e}", "--session", "typo"], 1),  # "nothing copied"
        (["sessions", "list", "{d}"], 0),
    ],
)
def test_read_only_commands_create_no_session(
    tmp_path: Path, argv: list[str], status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "d").mkdir()
    real = MessageContextManager.open(tmp_path / "d", session="real", max_tokens=1_000)
    real.add({"role": "user", "content": "hello"})
    real.store.close()
    before = tree(tmp_path)
    args = [a.format(d=tmp_path / "d", e=tmp_path / "e") for a in argv]
    assert main(args) == status
    assert tree(tmp_path) == before
    capsys.readouterr()
    assert main(["sessions", "list", str(tmp_path / "d")]) == 0
    assert capsys.readouterr().out.split() == ["real"]


def test_a_store_reads_a_missing_session_as_empty_and_the_first_write_creates_it(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path, session="later")
    assert store.load().lines == []
    assert store.sessions() == []
    assert tree(tmp_path) == []
    manager = MessageContextManager.open(tmp_path, session="later", max_tokens=1_000)
    assert tree(tmp_path) == []  # opening reads: still nothing
    manager.add({"role": "user", "content": "now"})
    assert "later/context.jsonl" in tree(tmp_path)
    assert MessageContextManager.open(tmp_path, session="later", max_tokens=1_000).messages == [
        {"role": "user", "content": "now"}
    ]
    store.close()
    manager.store.close()


@pytest.mark.parametrize("command", [["compactions"], ["sessions", "list"]])
def test_a_conversation_file_is_not_read_as_a_session_log(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A conversation saved as an indented JSON array (what ``trim`` reads) has lines that are
    not JSON objects: it used to be reported as a log of corrupt lines, "0 compaction(s)", exit
    0, with a lock file left beside it."""
    chat = tmp_path / "chat.json"
    chat.write_text('[\n {"role": "user", "content": "hi"}\n]\n')
    before = tree(tmp_path)
    assert main([*command, str(chat)]) == 2
    error = capsys.readouterr().err
    assert "not a session log" in error and "corrupt" not in error
    assert tree(tmp_path) == before


def test_opening_a_conversation_file_as_a_session_leaves_it_untouched(tmp_path: Path) -> None:
    """``MessageContextManager.open("chat.json")`` on a saved conversation used to read it as
    a log of corrupt lines (an empty session, warnings only), cut its closing ``]`` as a torn
    last line, and append the next message to it as JSONL: the user's file was broken."""
    chat = tmp_path / "chat.json"
    chat.write_text('[\n  {"role": "user", "content": "hi"}\n]')  # no final newline
    before = chat.read_bytes()
    with pytest.raises(ConfigurationError, match="not a session log"):
        MessageContextManager.open(chat, max_tokens=1_000)
    with pytest.raises(ConfigurationError, match="not a session log"):
        open_store(str(chat))
    assert chat.read_bytes() == before
    assert tree(tmp_path) == ["chat.json"]


def test_a_conversation_file_in_a_session_directory_is_left_untouched(tmp_path: Path) -> None:
    """The same file where a session's log lives (``<root>/<session>/context.jsonl``), opened
    by root and session id, used to be read as corrupt lines, cut as a torn tail and replaced
    by the next record."""
    (tmp_path / "s").mkdir()
    log = tmp_path / "s" / "context.jsonl"
    log.write_text('[{"role":"user","content":"hello"}]')
    before = log.read_bytes()
    with pytest.raises(ConfigurationError, match="not a session log"):
        MessageContextManager.open(tmp_path, session="s", max_tokens=1_000)
    assert log.read_bytes() == before


@pytest.mark.parametrize(
    "content",
    [b"notes: call Bob\nbuy milk", b"role,content\nuser,hi", b"\x1f\x8b\x08\x00gzip"],
    ids=["text", "csv", "gzip"],
)
def test_any_file_that_does_not_start_as_a_log_is_left_untouched(
    tmp_path: Path, content: bytes
) -> None:
    """Each was read as a log of corrupt lines, its last line cut as a torn tail."""
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(ConfigurationError, match="not a session log"):
        MessageContextManager.open(path, max_tokens=1_000)
    assert path.read_bytes() == content
    assert tree(tmp_path) == ["notes.txt"]


def test_an_empty_file_is_a_new_log(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    manager = MessageContextManager.open(path, max_tokens=1_000)
    manager.add({"role": "user", "content": "hi"})
    manager.store.close()
    assert MessageContextManager.open(path, max_tokens=1_000).messages == [
        {"role": "user", "content": "hi"}
    ]


def test_an_sqlite_file_given_as_a_path_is_named_with_its_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "chat.db"
    manager = MessageContextManager.open(f"sqlite:///{db}", max_tokens=1_000)
    manager.add({"role": "user", "content": "hi"})
    manager.store.close()
    before = tree(tmp_path)
    assert main(["sessions", "list", str(db)]) == 2
    hint = capsys.readouterr().err.strip().rsplit(" ", 1)[-1]
    assert tree(tmp_path) == before
    assert main(["sessions", "list", hint]) == 0  # the URL it names lists the session
    assert capsys.readouterr().out.split() == ["default"]


def test_a_log_with_a_damaged_first_line_is_still_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crash can leave a zero-filled block in a log; the CLI still lists what it holds (the
    store skips the bad line) rather than calling the file a conversation."""
    log = tmp_path / "s.jsonl"
    manager = MessageContextManager.open(log, max_tokens=1_000)
    manager.add({"role": "user", "content": "hi"})
    manager.store.close()
    log.write_bytes(b"\x00" * 64 + b"\n" + log.read_bytes())
    assert main(["sessions", "list", str(log)]) == 0
    captured = capsys.readouterr()
    assert captured.out.split() == ["s"] and "not a session log" not in captured.err


def test_a_sessions_own_directory_is_not_a_directory_of_sessions(tmp_path: Path) -> None:
    """Opened as a root, ``sessions/user-42`` (Kimi's layout: it holds ``context.jsonl``) got
    an empty session nested inside it; new messages went there, and deleting ``user-42`` was
    then refused for the foreign files in it."""
    root = tmp_path / "sessions"
    first = MessageContextManager.open(root, session="user-42", max_tokens=1_000)
    first.add({"role": "user", "content": "my earlier history"})
    first.store.close()
    before = tree(tmp_path)
    for session in (None, "default"):
        with pytest.raises(ConfigurationError, match="session='user-42'"):
            MessageContextManager.open(root / "user-42", session=session, max_tokens=1_000)
    with pytest.raises(ConfigurationError, match="a session's own directory"):
        connect(root / "user-42")
    assert tree(tmp_path) == before
    log = MessageContextManager.open(root / "user-42" / "context.jsonl", max_tokens=1_000)
    assert log.messages == [{"role": "user", "content": "my earlier history"}]
    log.store.close()


def test_the_cli_copies_one_log_file_and_says_when_a_session_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Kimi CLI ``context.jsonl`` is one session: ``sessions copy`` read it as a directory
    ("Not a directory"), while a mistyped session id copied 0 records and exited 0."""
    log = tmp_path / "kimi" / "context.jsonl"
    log.parent.mkdir()
    log.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n')
    db = f"sqlite:///{tmp_path}/x.db"
    assert main(["sessions", "copy", str(log), db, "--session", "imported"]) == 0
    copied = MessageContextManager.open(db, session="imported", max_tokens=1_000)
    assert [m["content"] for m in copied.messages] == ["hi", "yo"]
    copied.store.close()
    capsys.readouterr()
    assert main(["sessions", "copy", str(log.parent.parent), db, "--session", "typo"]) == 1
    assert "no session 'typo'" in capsys.readouterr().err
