"""Distinct session ids never share a history: the Agents SDK session's file names are injective.

Earlier versions replaced every character outside letters, digits and ``-_.`` by ``_``, so
``alice@example.com`` read ``alice_example.com``'s conversation. Each group below collided under
that rule (or is another id's new escaped name, or is an id a path would resolve outside the
directory); every id must get, keep and reopen its own history through the real ``Session``
protocol. Files that rule wrote for ids it kept as they were must still open.

Each session lives in a directory of its own, ``<directory>/<name>/context.jsonl``, because the
store rotates a log next to itself on a clear (``user.jsonl`` -> ``user_1.jsonl``): in a flat
directory that rotated file is exactly where the session ``user_1`` would look.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

agents = pytest.importorskip("agents")
from agents import Agent, Runner  # noqa: E402
from agents.memory import Session  # noqa: E402

from context_manager import MessageContextManager  # noqa: E402
from context_manager.errors import ConfigurationError  # noqa: E402
from context_manager.integrations.openai_agents import (  # noqa: E402
    ContextManagerSession,
    session_file_name,
)

from .test_openai_agents import ScriptedModel, read_file  # noqa: E402

OPTIONS: dict[str, Any] = {"max_tokens": 10_000}

COLLIDING = {
    "email": ["alice@example.com", "alice_example.com", "alice%40example.com", "alice+example.com"],
    "slash": ["a/b", "a_b", "a b", "a%2Fb", "a\\b", "a:b"],
    "emoji": ["\N{THUMBS UP SIGN}", "\N{SLIGHTLY SMILING FACE}", "_", "%F0%9F%91%8D"],
    "accents": ["café", "cafe\u0301", "cafe_", "caf%C3%A9", "CAFÉ"],
    "surrogates": ["\ud800", "\udfff", "x\ud800"],
    "dots": ["..", ".", "...", "%2E.", "../escaped", ".._escaped", "_."],
    "nul": ["a\x00b", "a_b", "\x00", "_", "%00", "a\x00\x00b"],
    "long": ["x" * 300 + "1", "x" * 300 + "2", "x" * 201, "x" * 200, "é" * 150, "é" * 151],
    "percent": ["100%", "100%25", "100_"],
    # flat names of earlier versions: a log, its rotations and its lock file, as session ids
    "flat": [
        "user",
        "user_1",
        "user@1",
        "user.jsonl",
        "user%2Ejsonl",
        "user.JSONL",
        "user.jsonl.lock",
        "user_1.jsonl",
        "user.lock",
    ],
}


def _old_name(session_id: str) -> str:
    """The file name earlier versions of this integration used (kept here to write old files)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)


def _write_old(path: Path, item: dict[str, Any]) -> None:
    """Write ``path`` as earlier versions of the session did (same manager options)."""
    old = MessageContextManager.open(path, strategy="sliding_window", provider="openai-responses")
    old.add(item)
    old.store.close()


def _item(session_id: str, n: int) -> dict[str, Any]:
    return {"role": "user", "content": f"turn {n} of {session_id!r}"}


@pytest.mark.parametrize("group", sorted(COLLIDING))
def test_colliding_ids_keep_their_own_history(group: str, tmp_path: Path) -> None:
    ids = COLLIDING[group]
    directory = tmp_path / "sessions"

    async def run() -> None:
        for n in range(2):  # interleaved writes, each through a fresh session object
            for sid in ids:
                session = ContextManagerSession(sid, directory=directory, **OPTIONS)
                assert isinstance(session, Session)
                await session.add_items([_item(sid, n)])
        for sid in ids:  # reopened from the same directory
            reopened = ContextManagerSession(sid, directory=directory, **OPTIONS)
            assert await reopened.get_items() == [_item(sid, 0), _item(sid, 1)]
            assert reopened.session_id == sid

        for sid in ids:  # each undoes its last turn: the log rotates
            session = ContextManagerSession(sid, directory=directory, **OPTIONS)
            assert await session.pop_item() == _item(sid, 1)
        for sid in ids:
            reopened = ContextManagerSession(sid, directory=directory, **OPTIONS)
            assert await reopened.get_items() == [_item(sid, 0)]

    asyncio.run(run())
    if group != "long":  # same character count: the old rule gave these groups shared files
        assert len({_old_name(s) for s in ids}) < len(ids)
    paths = [ContextManagerSession(sid, directory=directory, **OPTIONS).path for sid in ids]
    assert len({p.parent for p in paths if p is not None}) == len(ids)
    for path in paths:  # <directory>/<one directory per id>/context.jsonl
        assert path is not None and path.name == "context.jsonl"
        assert path.parent.parent == directory
    assert [p.name for p in tmp_path.iterdir()] == ["sessions"]  # nothing written outside
    assert all(p.is_dir() for p in directory.iterdir())  # only the sessions' directories


def test_clearing_one_id_leaves_its_old_namesake_alone(tmp_path: Path) -> None:
    """``pop_item`` and ``clear_session`` rewrite only the session's own file."""
    alice = ContextManagerSession("alice@example.com", directory=tmp_path, **OPTIONS)
    other = ContextManagerSession("alice_example.com", directory=tmp_path, **OPTIONS)

    async def run() -> None:
        await alice.add_items([_item("alice", 0), _item("alice", 1)])
        await other.add_items([_item("other", 0)])
        assert await alice.pop_item() == _item("alice", 1)
        await other.clear_session()
        reopened = ContextManagerSession("alice@example.com", directory=tmp_path, **OPTIONS)
        assert await reopened.get_items() == [_item("alice", 0)]
        assert await other.get_items() == []

    asyncio.run(run())


def test_runner_never_shows_one_user_the_history_of_another(tmp_path: Path) -> None:
    model = ScriptedModel()
    agent = Agent(name="coder", instructions="Be useful.", model=model, tools=[read_file])

    async def run() -> None:
        alice = ContextManagerSession("alice@example.com", directory=tmp_path, **OPTIONS)
        await Runner.run(agent, "alice's secret plan", session=alice)
        seen_before = len(model.inputs)
        bob = ContextManagerSession("alice_example.com", directory=tmp_path, **OPTIONS)
        await Runner.run(agent, "bob asks", session=bob)
        for seen in model.inputs[seen_before:]:
            assert "secret" not in str(seen)
        reopened = ContextManagerSession("alice@example.com", directory=tmp_path, **OPTIONS)
        assert "secret" in str(await reopened.get_items())

    asyncio.run(run())


@pytest.mark.parametrize(
    "session_id", ["user-42", "User_42.v2", "0", "a" * 200, "thread-7f3e2b1c-9a4d"]
)
def test_old_safe_ids_keep_their_file_name(session_id: str, tmp_path: Path) -> None:
    """Ids the old rule kept as they were still name their file, so old sessions open."""
    _write_old(tmp_path / f"{_old_name(session_id)}.jsonl", _item(session_id, 0))
    session = ContextManagerSession(session_id, directory=tmp_path, **OPTIONS)
    assert session_file_name(session_id) == session_id
    assert session.path == tmp_path / f"{session_id}.jsonl"
    assert asyncio.run(session.get_items()) == [_item(session_id, 0)]
    assert not (tmp_path / session_id).exists()  # no directory while the flat file is in use


@pytest.mark.parametrize("session_id", [".hidden", "..", "café", "名前", "y" * 230])
def test_old_files_of_renamed_safe_ids_still_open(session_id: str, tmp_path: Path) -> None:
    """Ids the old rule kept but the new one escapes (non-ASCII letters, a leading ``.``, more
    than 200 characters) reopen the file the old rule wrote, and keep writing to it."""
    legacy = tmp_path / f"{_old_name(session_id)}.jsonl"
    _write_old(legacy, _item(session_id, 0))
    assert session_file_name(session_id) != session_id

    async def run() -> None:
        session = ContextManagerSession(session_id, directory=tmp_path, **OPTIONS)
        assert session.path == legacy
        assert await session.get_items() == [_item(session_id, 0)]
        await session.add_items([_item(session_id, 1)])
        again = ContextManagerSession(session_id, directory=tmp_path, **OPTIONS)
        assert await again.get_items() == [_item(session_id, 0), _item(session_id, 1)]

    asyncio.run(run())
    assert not (tmp_path / f"{session_file_name(session_id)}.jsonl").exists()
    assert not (tmp_path / session_file_name(session_id)).exists()


def test_a_new_file_wins_over_an_old_one(tmp_path: Path) -> None:
    """Once a session has a log in its directory, flat files of the same id are ignored."""
    new = ContextManagerSession("café", directory=tmp_path, **OPTIONS)
    asyncio.run(new.add_items([_item("new", 0)]))
    _write_old(tmp_path / "café.jsonl", _item("old", 0))
    _write_old(tmp_path / "caf%C3%A9.jsonl", _item("flat", 0))
    reopened = ContextManagerSession("café", directory=tmp_path, **OPTIONS)
    assert reopened.path == tmp_path / "caf%C3%A9" / "context.jsonl"
    assert asyncio.run(reopened.get_items()) == [_item("new", 0)]


def test_a_flat_file_under_the_name_wins_over_one_under_the_id(tmp_path: Path) -> None:
    """Of two flat files of one id, the one under its escaped name (the later version) is used."""
    _write_old(tmp_path / "café.jsonl", _item("old", 0))
    _write_old(tmp_path / "caf%C3%A9.jsonl", _item("flat", 0))
    session = ContextManagerSession("café", directory=tmp_path, **OPTIONS)
    assert session.path == tmp_path / "caf%C3%A9.jsonl"
    assert asyncio.run(session.get_items()) == [_item("flat", 0)]


def test_fresh_renamed_ids_use_only_the_new_name(tmp_path: Path) -> None:
    session = ContextManagerSession(".fresh", directory=tmp_path, **OPTIONS)
    asyncio.run(session.add_items([_item(".fresh", 0)]))
    assert session.path == tmp_path / "%2Efresh" / "context.jsonl"
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_a_collapsed_old_file_belongs_to_the_id_it_is_named_after(tmp_path: Path) -> None:
    """The old rule wrote ``alice@example.com`` to ``alice_example.com.jsonl``; that name is
    ambiguous, so it stays with the id it spells and the other id starts empty (the docs say how
    to move such a file to its new name)."""
    _write_old(tmp_path / f"{_old_name('alice@example.com')}.jsonl", _item("alice@example.com", 0))
    alice = ContextManagerSession("alice@example.com", directory=tmp_path, **OPTIONS)
    namesake = ContextManagerSession("alice_example.com", directory=tmp_path, **OPTIONS)
    assert asyncio.run(alice.get_items()) == []
    assert asyncio.run(namesake.get_items()) == [_item("alice@example.com", 0)]


def _tree(directory: Path) -> list[str]:
    """Every file and directory under ``directory`` (lock files left out), relative, sorted."""
    return sorted(
        p.relative_to(directory).as_posix()
        for p in directory.rglob("*")
        if not p.name.endswith(".lock")
    )


async def _undo(session: ContextManagerSession, how: str) -> None:
    if how == "clear_session":
        await session.clear_session()
    else:
        assert await session.pop_item() is not None


@pytest.mark.parametrize("how", ["clear_session", "pop_item"])
@pytest.mark.parametrize("layout", ["directory", "flat"])
def test_a_rotated_history_never_reaches_another_session(
    how: str, layout: str, tmp_path: Path
) -> None:
    """``user`` clears (or pops, which clears and adds back): its old history is rotated to a
    ``..._1`` file, which session ``user_1`` must not open, whether ``user`` lives in its
    directory or in a flat file an earlier version wrote."""
    secret = {"role": "user", "content": "user's secret plan"}
    if layout == "flat":
        _write_old(tmp_path / "user.jsonl", secret)

    async def run() -> None:
        user = ContextManagerSession("user", directory=tmp_path, **OPTIONS)
        if layout == "directory":
            await user.add_items([secret])
        await user.add_items([_item("user", 1), _item("user", 2)])
        await _undo(user, how)
        await _undo(user, how)  # a second rotation: ..._2
        for other in ("user_1", "user_2", "user_3"):
            session = ContextManagerSession(other, directory=tmp_path, **OPTIONS)
            assert await session.get_items() == []
            await session.add_items([_item(other, 0)])
            reopened = ContextManagerSession(other, directory=tmp_path, **OPTIONS)
            assert await reopened.get_items() == [_item(other, 0)]
        again = ContextManagerSession("user", directory=tmp_path, **OPTIONS)
        left = [] if how == "clear_session" else [secret]  # pop twice: the secret stays
        assert await again.get_items() == left

    asyncio.run(run())
    if layout == "flat":  # the flat log rotated next to itself, and stays in use
        assert {"user.jsonl", "user_1.jsonl", "user_2.jsonl"} <= set(_tree(tmp_path))
        assert "secret" in (tmp_path / "user_1.jsonl").read_text(encoding="utf-8")
    for other in ("user_1", "user_2", "user_3"):
        log = tmp_path / other / "context.jsonl"
        assert "secret" not in log.read_text(encoding="utf-8")


def test_rotated_generations_stay_in_the_session_directory(tmp_path: Path) -> None:
    directory = tmp_path / "sessions"

    async def run() -> None:
        session = ContextManagerSession("user", directory=directory, **OPTIONS)
        await session.add_items([_item("user", 0), _item("user", 1)])
        assert await session.pop_item() == _item("user", 1)
        await session.clear_session()
        await session.add_items([_item("user", 2)])

    asyncio.run(run())
    assert _tree(tmp_path) == [
        "sessions",
        "sessions/user",
        "sessions/user/context.jsonl",
        "sessions/user/context_1.jsonl",
        "sessions/user/context_2.jsonl",
    ]
    first = (directory / "user" / "context_1.jsonl").read_text(encoding="utf-8")
    assert "turn 1 of 'user'" in first  # the history before the pop, kept on disk
    session = ContextManagerSession("user", directory=directory, **OPTIONS)
    assert session.path == directory / "user" / "context.jsonl"
    assert asyncio.run(session.get_items()) == [_item("user", 2)]


def test_runner_after_a_clear_never_shows_the_old_history_to_another_id(tmp_path: Path) -> None:
    model = ScriptedModel()
    agent = Agent(name="coder", instructions="Be useful.", model=model, tools=[read_file])

    async def run() -> None:
        alice = ContextManagerSession("alice", directory=tmp_path, **OPTIONS)
        await Runner.run(agent, "alice's secret plan", session=alice)
        await alice.clear_session()
        seen_before = len(model.inputs)
        bob = ContextManagerSession("alice_1", directory=tmp_path, **OPTIONS)
        await Runner.run(agent, "bob asks", session=bob)
        assert len(model.inputs) > seen_before
        for seen in model.inputs[seen_before:]:
            assert "secret" not in str(seen)

    asyncio.run(run())


@pytest.mark.parametrize("owner_present", [True, False])
@pytest.mark.parametrize("session_id", ["user_1", "user_20", "café_3", "a_1_2"])
def test_flat_files_that_may_be_rotations_are_never_opened(
    session_id: str, owner_present: bool, tmp_path: Path
) -> None:
    """A flat ``<stem>_<digits>.jsonl`` may be another log's rotation, whether or not that log
    is still next to it (it may have been moved or deleted): the id starts in its directory and
    the flat file is left as it is."""
    owner = session_id.rsplit("_", 1)[0]
    if owner_present:
        _write_old(tmp_path / f"{_old_name(owner)}.jsonl", _item(owner, 0))
    flat = [tmp_path / f"{session_file_name(session_id)}.jsonl", tmp_path / f"{session_id}.jsonl"]
    for path in flat:
        if not path.exists():
            _write_old(path, _item(owner, 1))
    before = {path: path.read_bytes() for path in flat}

    async def run() -> None:
        session = ContextManagerSession(session_id, directory=tmp_path, **OPTIONS)
        assert session.path == tmp_path / session_file_name(session_id) / "context.jsonl"
        assert await session.get_items() == []
        await session.add_items([_item(session_id, 0)])
        await session.clear_session()

    asyncio.run(run())
    assert {path: path.read_bytes() for path in flat} == before


def test_a_flat_file_known_to_be_the_session_s_own_can_be_moved_in(tmp_path: Path) -> None:
    """The migration the docs give for such an id: move the flat file into its directory."""
    _write_old(tmp_path / "build_7.jsonl", _item("build_7", 0))
    assert asyncio.run(ContextManagerSession("build_7", directory=tmp_path).get_items()) == []
    name = session_file_name("build_7")
    target = tmp_path / name / "context.jsonl"
    (tmp_path / name).mkdir(mode=0o700, exist_ok=True)
    assert not (target.exists() and target.stat().st_size > 0)
    os.replace(tmp_path / f"{name}.jsonl", target)
    session = ContextManagerSession("build_7", directory=tmp_path, **OPTIONS)
    assert session.path == target
    assert asyncio.run(session.get_items()) == [_item("build_7", 0)]


def test_session_directories_never_take_the_place_of_flat_files(tmp_path: Path) -> None:
    """Ids spelling a flat log, its rotation or its lock file (``user.jsonl``,
    ``user_1.jsonl``, ``user.jsonl.lock``) get a directory beside them, never in their place."""
    _write_old(tmp_path / "user.jsonl", _item("user", 0))
    ids = ["user.jsonl", "user.JSONL", "user_1.jsonl", "user.jsonl.lock", "user.lock"]

    async def run() -> None:
        legacy = ContextManagerSession("user", directory=tmp_path, **OPTIONS)
        await legacy.clear_session()  # creates user_1.jsonl next to user.jsonl
        await legacy.add_items([_item("user", 1)])
        for sid in ids:
            session = ContextManagerSession(sid, directory=tmp_path, **OPTIONS)
            assert await session.get_items() == []
            await session.add_items([_item(sid, 0)])
            await session.clear_session()
            await session.add_items([_item(sid, 1)])
        for sid in ids:
            session = ContextManagerSession(sid, directory=tmp_path, **OPTIONS)
            assert await session.get_items() == [_item(sid, 1)]
            assert session.path is not None and session.path.name == "context.jsonl"
            assert session.path.parent.is_dir() and session.path.parent.parent == tmp_path
        reopened = ContextManagerSession("user", directory=tmp_path, **OPTIONS)
        assert reopened.path == tmp_path / "user.jsonl"
        assert await reopened.get_items() == [_item("user", 1)]

    asyncio.run(run())
    assert (tmp_path / "user.jsonl").is_file() and (tmp_path / "user.jsonl.lock").is_file()
    assert (tmp_path / "user_1.jsonl").is_file()


_PIECES = st.sampled_from(["u", "_", "1", "2", ".", "jsonl", "lock", "%2E", "é", "@"])


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(_PIECES, min_size=1, max_size=5).map("".join), min_size=1, max_size=3),
    st.lists(st.sampled_from(["clear_session", "pop_item"]), min_size=1, max_size=3),
)
def test_ids_keep_their_own_history_through_any_rotations(
    bases: list[str], undos: list[str]
) -> None:
    """Ids built from rotation and flat-file name pieces, each followed by the names its
    rotations would have in a flat directory: after any mix of clears and pops by every id (in
    that order, so a rotation exists before its namesake opens), each sees exactly its history."""
    derived = [f"{base}{end}" for base in bases for end in ("_1", "_2", ".jsonl")]
    ids = list(dict.fromkeys(bases + derived))
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)

        async def run() -> None:
            expected: dict[str, list[dict[str, Any]]] = {}
            for sid in ids:
                session = ContextManagerSession(sid, directory=directory, **OPTIONS)
                items = [_item(sid, n) for n in range(len(undos) + 1)]
                await session.add_items(items)
                for how in undos:
                    if how == "clear_session":
                        await session.clear_session()
                        items = []
                    else:
                        assert await session.pop_item() == (items[-1] if items else None)
                        items = items[:-1]
                expected[sid] = items
            for sid in ids:
                reopened = ContextManagerSession(sid, directory=directory, **OPTIONS)
                assert await reopened.get_items() == expected[sid]

        asyncio.run(run())
        assert all(p.is_dir() for p in directory.iterdir())


@pytest.mark.parametrize("bad", ["", None, 42, b"alice", ["a"]])
def test_ids_that_are_not_text_are_refused(bad: Any, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        ContextManagerSession(bad, directory=tmp_path)
    with pytest.raises(ConfigurationError):
        session_file_name(bad)
    assert list(tmp_path.iterdir()) == []


_NAME = re.compile(r"[A-Za-z0-9_.%~-]{1,200}")


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=()), min_size=1, max_size=300))
def test_every_name_is_a_safe_file_name_that_only_its_id_has(session_id: str) -> None:
    """Safe: short ASCII, no separator, never hidden. Only this id: a name without ``~``
    decodes back to the id, and ``~`` (escaped everywhere else) comes before the id's SHA-256."""
    name = session_file_name(session_id)
    assert _NAME.fullmatch(name) and not name.startswith(".")
    if "~" in name:
        prefix, digest = name.split("~")
        assert digest == hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
        assert session_id.startswith(unquote(prefix, errors="surrogatepass"))
    else:
        assert unquote(name, errors="surrogatepass") == session_id


# ids built from what the old rule collapsed and from the new escapes, short and hashed
_TRICKY = st.sampled_from(["a", "_", "-", ".", "@", "/", " ", "%", "2", "E", "~", "é", "\x00"])
_IDS = st.one_of(st.text(_TRICKY, min_size=1, max_size=12), st.text(_TRICKY, min_size=195))


@given(st.lists(_IDS, min_size=2, max_size=30, unique=True))
def test_distinct_ids_get_distinct_names(ids: list[str]) -> None:
    assert len({session_file_name(s) for s in ids}) == len(ids)
