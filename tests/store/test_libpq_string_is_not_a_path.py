"""A libpq key=value connection string given as a target is refused, never made a directory.

``host=db user=app password=pw dbname=chat`` is how libpq (and ``PostgresStore``) spell a
connection without a URL. Given to ``open`` / ``connect`` / the CLI, it used to be taken as a
JSONL path: a directory named after the password was created, and ``store.target``, the
handle's ``repr`` and ``sessions list`` showed it. Store targets are paths and URLs
(docs/guide/stores.md), so it is now a ``ConfigurationError`` that names the
``postgresql://`` URL to write instead (without the password), before anything is created.
So is a database URL that lost a slash (``postgresql:/app:pw@db/chat``), which became a local
directory named after it the same way.
"""

from __future__ import annotations

import asyncio
import os
import re
import traceback
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from context_manager import MessageContextManager
from context_manager.cli import main
from context_manager.errors import ConfigurationError
from context_manager.store import aconnect, connect, copy_session, delete_session, open_store

PASSWORD = "S3cr3tPW"
DSN = f"host=db.internal port=5432 user=app password={PASSWORD} dbname=chat"
#: The same connection in other spellings libpq accepts.
SPELLINGS = [
    DSN,
    f"  dbname = chat   password = '{PASSWORD}'  host=db.internal ",
    f"password={PASSWORD}",  # a credential alone is enough
    f"host=db.internal password='{PASSWORD} with spaces' sslmode=require",
    f"HOST=db.internal PASSWORD={PASSWORD}",  # libpq wants lowercase; still no directory
    # libpq refuses these whole (a stray token), but they name a password: still no directory
    f"host=db.internal user=app password={PASSWORD} 2 dbname=chat",
    f"host=db.internal password={PASSWORD} dbname=chat sslmode=require x",
]


def _opens() -> dict[str, Callable[[str], object]]:
    async def through_aopen(target: str) -> object:
        return await MessageContextManager.aopen(target, session="user-42", max_tokens=8000)

    async def through_aconnect(target: str) -> object:
        return await aconnect(target)

    return {
        "open": lambda t: MessageContextManager.open(t, session="user-42", max_tokens=8000),
        "open_store": lambda t: open_store(t, session="user-42"),
        "connect": connect,
        "aopen": lambda t: asyncio.run(through_aopen(t)),
        "aconnect": lambda t: asyncio.run(through_aconnect(t)),
        "delete_session": lambda t: delete_session(t, session="user-42"),
        "copy_session to it": lambda t: copy_session(_SOURCE, t, session="s"),
    }


#: A database URL that lost a slash or both: read as a path, it became a local directory named
#: after the URL (password included), where no other worker would ever read the sessions.
TYPOS = [
    f"postgresql:/app:{PASSWORD}@db.internal/chat",
    f"postgres:app:{PASSWORD}@db.internal/chat",
    f"redis:/:{PASSWORD}@cache:6379/0",
    f"REDISS:{PASSWORD}@cache:6380",
    "sqlite:/srv/chat.db",
]

_SOURCE = "sqlite:///source.db"


def _shown(exc: BaseException) -> str:
    return f"{exc} {exc!r} " + "".join(traceback.format_exception(exc))


@pytest.mark.parametrize("how", list(_opens()))
@pytest.mark.parametrize(
    ("target", "why"),
    [(t, "libpq key=value") for t in SPELLINGS]
    + [(t, "without '//' is not a path") for t in TYPOS],
)
def test_a_database_target_written_as_a_path_is_refused_before_anything_is_created(
    how: str, target: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    if how == "copy_session to it":
        source = MessageContextManager.open(_SOURCE, session="s", max_tokens=100)
        source.add({"role": "user", "content": "hi"})
        source.store.close()
    with pytest.raises(ConfigurationError, match=re.escape(why)) as info:
        _opens()[how](target)
    assert PASSWORD not in _shown(info.value)
    assert "://" in str(info.value)  # the URL to write instead
    created = [name for name in os.listdir(tmp_path) if not name.startswith("source.db")]
    assert created == []  # no directory named after the DSN


def test_the_error_names_the_url_without_the_password(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as info:
        connect(DSN)
    assert "postgresql://app@db.internal:5432/chat" in str(info.value)
    assert PASSWORD not in _shown(info.value)


def test_the_url_it_names_opens_the_same_database(postgres_url: str) -> None:
    """The suggestion is the connection the string described: against the real server, a
    session written through it is read back through the URL the tests connect with."""
    server = urlsplit(postgres_url)
    dsn = (
        f"host={server.hostname} port={server.port} user={server.username} "
        f"password={PASSWORD} dbname={server.path.lstrip('/')}"
    )
    with pytest.raises(ConfigurationError) as info:
        MessageContextManager.open(dsn, session="libpq-hint", max_tokens=1000)
    found = re.search(r"postgresql://\S+", str(info.value))
    assert found is not None, str(info.value)
    store_options = {"prefix": "libpq_hint_"}
    written = MessageContextManager.open(
        found.group(0), session="libpq-hint", max_tokens=1000, store_options=store_options
    )
    try:
        written.clear()
        written.add({"role": "user", "content": "through the suggested URL"})
    finally:
        written.store.close()
    again = MessageContextManager.open(
        postgres_url, session="libpq-hint", max_tokens=1000, store_options=store_options
    )
    try:
        assert again.messages == [{"role": "user", "content": "through the suggested URL"}]
    finally:
        again.store.close()


@pytest.mark.parametrize("existing", [False, True])
def test_sessions_list_refuses_it_without_printing_the_password(
    existing: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Also when an older version already made the directory (it exited 0 listing it)."""
    monkeypatch.chdir(tmp_path)
    if existing:
        (tmp_path / DSN / "user-42").mkdir(parents=True)
        (tmp_path / DSN / "user-42" / "context.jsonl").write_text("")
    before = sorted(os.listdir(tmp_path))
    assert main(["sessions", "list", DSN]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("context-manager: error: ")
    assert PASSWORD not in captured.err
    assert sorted(os.listdir(tmp_path)) == before


@pytest.mark.parametrize(
    "name",
    [
        "service=prod",  # one setting that is no credential: a partition-style directory
        "runs/host=a password=b",  # a directory before it: a path
        "./host=a port=1",  # the way to say "a path" for a name that reads like a DSN
        "user data=2024",  # not every word is key=value
        "a=b c=d",  # no libpq keyword
    ],
)
def test_paths_that_only_hold_an_equals_sign_stay_paths(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    manager = MessageContextManager.open(name, session="s", max_tokens=1000)
    manager.add({"role": "user", "content": "hi"})
    manager.store.close()
    assert (tmp_path / name / "s" / "context.jsonl").is_file()
    with connect(name) as handle:
        assert handle.session("s").sessions() == ["s"]


def test_a_path_object_is_a_path_whatever_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``Path`` is a path by the caller's own word (and ``Path("./x")`` drops the ``./``)."""
    monkeypatch.chdir(tmp_path)
    manager = MessageContextManager.open(Path("host=a port=1"), session="s", max_tokens=1000)
    manager.add({"role": "user", "content": "hi"})
    manager.store.close()
    assert (tmp_path / "host=a port=1" / "s" / "context.jsonl").is_file()


@pytest.mark.parametrize("command", [["sessions", "list"], ["compactions"]])
def test_the_cli_refuses_a_url_that_lost_a_slash_without_printing_the_password(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*command, TYPOS[0]]) == 2
    captured = capsys.readouterr()
    assert "postgresql://" in captured.err and PASSWORD not in captured.err
    assert os.listdir(tmp_path) == []


def test_a_directory_named_like_a_scheme_is_given_as_a_dot_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    manager = MessageContextManager.open("./redis:cache", session="s", max_tokens=1000)
    manager.add({"role": "user", "content": "hi"})
    manager.store.close()
    assert (tmp_path / "redis:cache" / "s" / "context.jsonl").is_file()
