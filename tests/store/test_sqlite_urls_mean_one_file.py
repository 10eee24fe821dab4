"""A ``sqlite:///`` URL names one file: its path percent-decoded, nothing else accepted.

The URL used to be taken literally: ``?mode=ro`` / ``?cache=shared`` / ``#frag`` became part of
a new file's name (the writes went there, not to ``chat.db``), ``sqlite:///:memory:`` made a
file named ``:memory:`` in the working directory that separate opens shared, and ``%20`` was
not decoded (a directory ``odd%20dir``) while PostgreSQL and Redis URLs are. Now the path is
decoded as theirs are, and a query, a fragment, ``:memory:`` or an empty path is a
``ConfigurationError`` raised before any file is created.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from context_manager import MessageContextManager
from context_manager.errors import ConfigurationError
from context_manager.store import connect

PASSWORD = "S3cr3tPW"


def _open(url: str) -> MessageContextManager:
    return MessageContextManager.open(url, session="s", max_tokens=8000, counter="chars")


def _write(url: str, text: str) -> str:
    """Write one message through ``url``; the target the store shows."""
    manager = _open(url)
    manager.add({"role": "user", "content": text})
    target = manager.store.target
    manager.store.close()
    return target


def _read(url: str) -> list[object]:
    manager = _open(url)
    try:
        return list(manager.messages)
    finally:
        manager.store.close()


def _through_connect(url: str) -> list[object]:
    with connect(url) as stores:
        manager = MessageContextManager.open(stores, session="s", max_tokens=8000)
        return list(manager.messages)


OPENS: dict[str, Callable[[str], object]] = {"open": _open, "connect": connect}

# (URL after the directory, what the message must say)
REFUSED = {
    "query mode=ro": ("/chat.db?mode=ro", "%3F"),
    "query cache=shared": ("/chat.db?cache=shared", "%3F"),
    "empty query": ("/chat.db?", "%3F"),
    "fragment": ("/chat.db#frag", "%23"),
    "fragment holding a ?": ("/chat.db#a?b", "%23"),
}
# Relative URLs (the working directory is tmp_path): nothing names a file.
NO_FILE = ["sqlite:///:memory:", "sqlite:///%3Amemory%3A", "sqlite:///", "sqlite://"]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path as the working directory, holding a real ``chat.db`` with one message."""
    monkeypatch.chdir(tmp_path)
    _write(f"sqlite:///{tmp_path}/chat.db", "already here")
    return tmp_path


@pytest.mark.parametrize("how", OPENS)
@pytest.mark.parametrize("case", REFUSED)
def test_a_query_or_fragment_is_refused_before_any_file_exists(
    workdir: Path, case: str, how: str
) -> None:
    tail, hint = REFUSED[case]
    url = f"sqlite:///{workdir}{tail}"
    before = sorted(os.listdir(workdir))
    with pytest.raises(ConfigurationError) as raised:
        OPENS[how](url)
    message = str(raised.value)
    assert message.count(url) == 1  # names what was given, once
    assert message.count(str(workdir)) == 1  # no path repeated beyond the URL
    assert "query string" in message if "?" in tail.split("#")[0] else "fragment" in message
    assert "%3F" in message and "%23" in message and hint in message
    assert sorted(os.listdir(workdir)) == before
    assert [m["content"] for m in _read(f"sqlite:///{workdir}/chat.db")] == ["already here"]


@pytest.mark.parametrize("how", OPENS)
@pytest.mark.parametrize("url", NO_FILE)
def test_memory_and_an_empty_path_are_refused(workdir: Path, url: str, how: str) -> None:
    before = sorted(os.listdir(workdir))
    with pytest.raises(ConfigurationError) as raised:
        OPENS[how](url)
    message = str(raised.value)
    assert message.startswith(f"{url}: a store needs a file") and "in-memory" in message
    assert sorted(os.listdir(workdir)) == before


def test_a_credential_in_the_query_is_not_shown(workdir: Path) -> None:
    before = sorted(os.listdir(workdir))
    with pytest.raises(ConfigurationError) as raised:
        _open(f"sqlite:///{workdir}/chat.db?password={PASSWORD}")
    assert PASSWORD not in str(raised.value) and "query string" in str(raised.value)
    assert sorted(os.listdir(workdir)) == before


def test_a_percent_encoded_space_names_the_decoded_directory(tmp_path: Path) -> None:
    encoded = f"sqlite:///{tmp_path}/odd%20dir/chat.db"
    plain = f"sqlite:///{tmp_path}/odd dir/chat.db"
    target = _write(encoded, "one")
    assert (tmp_path / "odd dir" / "chat.db").is_file()
    assert not (tmp_path / "odd%20dir").exists()
    _write(plain, "two")
    assert sorted(os.listdir(tmp_path)) == ["odd dir"]
    for url in (encoded, plain, target):
        assert [m["content"] for m in _read(url)] == ["one", "two"]
    assert [m["content"] for m in _through_connect(encoded)] == ["one", "two"]
    with connect(encoded) as stores:
        assert stores.target == target == plain


@pytest.mark.parametrize(("encoded", "name"), [("a%3Fb.db", "a?b.db"), ("a%23b.db", "a#b.db")])
def test_an_encoded_question_mark_or_hash_is_part_of_the_name(
    tmp_path: Path, encoded: str, name: str
) -> None:
    url = f"sqlite:///{tmp_path}/{encoded}"
    target = _write(url, "kept")
    assert sorted(p for p in os.listdir(tmp_path) if p.endswith(".db")) == [name]
    assert target == url  # shown encoded: given back, it names the same file
    assert [m["content"] for m in _read(target)] == ["kept"]


def test_a_literal_percent_is_written_percent_25(tmp_path: Path) -> None:
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ConfigurationError, match="%25"):
        _open(f"sqlite:///{tmp_path}/50%.db")
    with pytest.raises(ConfigurationError, match="UTF-8"):
        _open(f"sqlite:///{tmp_path}/%FF.db")
    assert sorted(os.listdir(tmp_path)) == before
    target = _write(f"sqlite:///{tmp_path}/50%25.db", "half")
    assert os.listdir(tmp_path) == ["50%.db"]
    assert [m["content"] for m in _read(target)] == ["half"]
