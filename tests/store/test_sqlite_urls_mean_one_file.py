"""A ``sqlite:///`` URL names one file: its path as written, nothing else accepted.

``?mode=ro`` / ``?cache=shared`` / ``#frag`` used to become part of a new file's name (the
writes went there, not to ``chat.db``), and ``sqlite:///:memory:`` made a file named
``:memory:`` in the working directory that separate opens shared. Now a query, a fragment,
``:memory:`` or an empty path is a ``ConfigurationError`` raised before any file is created. The
path is not percent-decoded (as before): a file written as ``a%20b.db`` keeps its name, and a
``%2F`` in a name an application filtered for ``/`` never becomes a directory.
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
    "query mode=ro": ("/chat.db?mode=ro", "query string"),
    "query cache=shared": ("/chat.db?cache=shared", "query string"),
    "empty query": ("/chat.db?", "query string"),
    "fragment": ("/chat.db#frag", "fragment"),
    "fragment holding a ?": ("/chat.db#a?b", "fragment"),
}
# Relative URLs (the working directory is tmp_path): nothing names a file.
NO_FILE = ["sqlite:///:memory:", "sqlite:///", "sqlite://"]


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
    assert hint in message
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


def test_a_percent_sign_is_part_of_the_name(tmp_path: Path) -> None:
    """As before: ``odd%20dir`` is a directory of that name, ``%2F`` never a separator."""
    for name in ("odd%20dir/chat.db", "50%.db", "a%2Fb.db"):
        url = f"sqlite:///{tmp_path}/{name}"
        target = _write(url, name)
        assert (tmp_path / name).is_file()
        assert target == url
        assert [m["content"] for m in _read(target)] == [name]
        assert [m["content"] for m in _through_connect(url)] == [name]
    assert sorted(os.listdir(tmp_path)) == ["50%.db", "a%2Fb.db", "odd%20dir"]
