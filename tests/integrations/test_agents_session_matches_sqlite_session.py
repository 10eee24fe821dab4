"""``ContextManagerSession`` answers the Agents SDK's session calls as the SDK's own
``agents.SQLiteSession`` does: the same calls go to both and the answers are compared (the
expected values come from the real SQLiteSession, never from our session). The session is run
in memory, in a ``sqlite:///`` database and in a session directory (JSONL); the persistent ones
are also reopened.

Where the two differ by design, the sequences avoid it or say so: the manager refuses an output
without its call, hides an open call from the budgeted view (``get_items()`` without a limit)
and answers an open call that a user item interrupts with a synthetic output.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")
from agents import SQLiteSession  # noqa: E402

from context_manager.errors import InvalidMessageError  # noqa: E402
from context_manager.integrations.openai_agents import ContextManagerSession  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error")

OPTIONS: dict[str, Any] = {"max_tokens": 8_000, "counter": "chars"}
BACKENDS = ["memory", "sqlite", "directory"]

SYSTEM = {"role": "system", "content": "You are terse."}
DEVELOPER = {"role": "developer", "content": "Answer in French."}
USER = {"role": "user", "content": "Weather in Paris?"}
NEXT = {"role": "user", "content": "Never mind, what time is it?"}
ANSWER = {"role": "assistant", "content": "It is 18C."}


def call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "weather", "arguments": "{}"}


def output(call_id: str, text: str = "18C") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


Op = tuple[Any, ...]


async def play(session: Any, ops: list[Op]) -> list[Any]:
    """Each op's answer: ``add`` and ``clear`` give None, ``pop`` the item, ``get`` the items."""
    answers: list[Any] = []
    for name, *args in ops:
        if name == "add":
            answers.append(await session.add_items(copy.deepcopy(args[0])))
        elif name == "pop":
            answers.append(await session.pop_item())
        elif name == "clear":
            answers.append(await session.clear_session())
        else:
            answers.append(await session.get_items(*args))
    return answers


Opener = Callable[[], ContextManagerSession]


def opener(backend: str, tmp_path: Path, session_id: str = "u-1", **options: Any) -> Opener:
    """Opens (and reopens) the same session on ``backend``."""
    kwargs: dict[str, Any] = {**OPTIONS, **options}
    if backend == "sqlite":
        kwargs["store"] = f"sqlite:///{tmp_path / 'sessions.db'}"
    elif backend == "directory":
        kwargs["directory"] = tmp_path / "sessions"
    return lambda: ContextManagerSession(session_id, **kwargs)


def reference(ops: list[Op], db: Path | None = None) -> list[Any]:
    session = SQLiteSession("u-1", db_path=db) if db is not None else SQLiteSession("u-1")
    return asyncio.run(play(session, ops))


def ours(open_session: Opener, ops: list[Op]) -> list[Any]:
    return asyncio.run(play(open_session(), ops))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("leading", [SYSTEM, DEVELOPER])
def test_clear_session_forgets_a_leading_system_item(
    tmp_path: Path, backend: str, leading: dict[str, Any]
) -> None:
    ops: list[Op] = [("add", [leading, USER]), ("clear",), ("get",), ("get", 5), ("pop",)]
    open_session = opener(backend, tmp_path)
    assert ours(open_session, ops) == reference(ops) == [None, None, [], [], None]
    if backend != "memory":  # the clear is in the log too
        again: list[Op] = [("get",), ("get", 5)]
        reopened = reference(again, tmp_path / "ref.db")  # empty: never written
        assert ours(open_session, again) == reopened == [[], []]


def test_a_cleared_file_session_stays_empty_when_reopened(tmp_path: Path) -> None:
    """The reference itself reopened: a SQLiteSession file after add and clear."""
    db = tmp_path / "ref.db"
    reference([("add", [SYSTEM, USER]), ("clear",)], db)
    for backend in ("sqlite", "directory"):
        open_session = opener(backend, tmp_path)
        ours(open_session, [("add", [SYSTEM, USER]), ("clear",)])
        assert ours(open_session, [("get",)]) == reference([("get",)], db) == [[]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "ops",
    [
        [("add", [DEVELOPER, USER]), ("pop",), ("pop",), ("pop",), ("get",)],
        [("add", [SYSTEM]), ("get",), ("pop",), ("get",), ("pop",)],
        [("add", [SYSTEM, USER, DEVELOPER]), ("get",), ("pop",), ("get",), ("pop",), ("pop",)],
        [("add", [SYSTEM]), ("pop",), ("add", [DEVELOPER, USER]), ("get",), ("get", 1)],
    ],
    ids=["developer-then-user", "system-alone", "two-system-items", "pop-then-new-system"],
)
def test_pop_item_pops_a_leading_system_item(tmp_path: Path, backend: str, ops: list[Op]) -> None:
    assert ours(opener(backend, tmp_path), ops) == reference(ops)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "before",
    [[], [USER, ANSWER], [SYSTEM, USER, ANSWER], [DEVELOPER]],
    ids=["empty", "a-turn", "system-and-a-turn", "developer-alone"],
)
def test_a_refused_batch_leaves_the_session_as_it_was(
    tmp_path: Path, backend: str, before: list[Any]
) -> None:
    """SQLiteSession stores the orphan output; the manager refuses it, and then the session must
    be as SQLiteSession was before the batch, a system item of the batch included."""
    refused = [SYSTEM, USER, output("nope")]
    open_session = opener(backend, tmp_path)
    session = open_session()
    if before:
        asyncio.run(session.add_items(copy.deepcopy(before)))
    with pytest.raises(InvalidMessageError, match="unknown tool call id"):
        asyncio.run(session.add_items(copy.deepcopy(refused)))
    after: list[Op] = [("get",), ("get", 10), ("add", [NEXT]), ("get",), ("pop",), ("pop",)]
    expected = reference([("add", before), *after])[1:]
    assert asyncio.run(play(session, after)) == expected


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("stored", "late"),
    [
        ([USER, call("c1")], [output("c1", "real result"), ANSWER]),
        ([USER, call("c1"), call("c2"), output("c1")], [output("c2", "real 2"), ANSWER]),
        ([SYSTEM, USER, call("c1")], [output("c1", "real result")]),
    ],
    ids=["one-call", "parallel-calls-one-answered", "after-a-system-item"],
)
def test_popping_a_user_item_reopens_the_calls_it_interrupted(
    tmp_path: Path, backend: str, stored: list[Any], late: list[Any]
) -> None:
    """The user item made the session store an "interrupted" output for each open call; popping
    it removes them, so the real outputs still go in, as with SQLiteSession."""
    first: list[Op] = [("add", stored), ("add", [NEXT]), ("pop",)]
    then: list[Op] = [("add", late), ("get",), ("get", 2)]
    open_session = opener(backend, tmp_path)
    assert ours(open_session, [*first, *then]) == reference([*first, *then])
    if backend != "memory":  # the same after a reopen between the add and the pop
        open_session = opener(backend, tmp_path, "u-2")
        ours(open_session, first[:2])
        assert ours(open_session, [first[2], *then]) == reference([*first, *then])[2:]


@pytest.mark.parametrize("backend", BACKENDS)
def test_popping_a_user_item_keeps_the_real_outputs_before_it(tmp_path: Path, backend: str) -> None:
    ops: list[Op] = [("add", [USER, call("c1"), output("c1")]), ("add", [NEXT]), ("pop",)]
    ops += [("get",), ("pop",), ("get", 10)]  # (the view would hide the open call)
    assert ours(opener(backend, tmp_path), ops) == reference(ops)


REASONING = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "e"}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "a", "annotations": []}],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "items",
    [
        [USER, call("c1"), output("c1")],
        [USER, REASONING, MESSAGE],
        [USER, REASONING, call("c1"), output("c1"), MESSAGE],
        [SYSTEM, USER, ANSWER],
        [USER, call("c1")],
    ],
    ids=["ends-on-an-output", "reasoning-and-message", "reasoning-call", "system", "open-call"],
)
def test_limit_returns_the_last_n_items(tmp_path: Path, backend: str, items: list[Any]) -> None:
    ops: list[Op] = [("add", items), *[("get", n) for n in range(len(items) + 2)]]
    assert ours(opener(backend, tmp_path), ops) == reference(ops)


@pytest.mark.parametrize("backend", BACKENDS)
def test_limit_reads_the_history_beyond_the_budget(tmp_path: Path, backend: str) -> None:
    """A window of 2,000 tokens (1,600 for input) and a history of about 6,000: the view
    holds a part of it, ``limit`` counts in the history."""
    items = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"{n} " + "x" * 400}
        for n in range(60)
    ]
    ops: list[Op] = [("add", items), ("get", 50), ("get", 60), ("get", 100)]
    open_session = opener(backend, tmp_path, max_tokens=2_000)
    assert len(asyncio.run(open_session().get_items())) < 20
    assert ours(open_session, ops) == reference(ops)


@pytest.mark.parametrize("backend", BACKENDS)
def test_items_given_and_returned_are_copies(tmp_path: Path, backend: str) -> None:
    """Editing a dict after adding it, or an item ``get_items`` returned (nested parts too),
    changes nothing stored."""
    given = [{"role": "user", "content": [{"type": "input_text", "text": "hello"}]}, ANSWER]

    async def edit(session: Any) -> list[Any]:
        items = copy.deepcopy(given)
        await session.add_items(items)
        items[0]["content"][0]["text"] = "edited"
        items[1]["content"] = "edited"
        for read in (await session.get_items(), await session.get_items(limit=2)):
            read[0]["content"][0]["text"] = "x" * 10_000
            read[1]["content"] = "edited"
            read.clear()
        return [await session.get_items(), await session.get_items(limit=1)]

    open_session = opener(backend, tmp_path)
    expected = asyncio.run(edit(SQLiteSession("u-1")))
    assert asyncio.run(edit(open_session())) == expected == [given, given[1:]]
    if backend != "memory":
        assert ours(open_session, [("get",)]) == [given]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_system_prompt_option_stays_through_clears_and_pops(tmp_path: Path, backend: str) -> None:
    """The option is configuration, not an item: the items around it still answer as
    SQLiteSession's, with the prompt in front where the session's view puts it."""
    prompt = {"role": "system", "content": "Configured."}
    open_session = opener(backend, tmp_path, system_prompt=prompt["content"])
    ops: list[Op] = [("add", [USER, ANSWER]), ("pop",), ("pop",), ("pop",), ("get", 5)]
    ops += [("add", [USER]), ("clear",), ("get", 5), ("add", [NEXT]), ("get", 1)]
    expected = reference(ops)
    expected[4], expected[7] = [prompt, *expected[4]], [prompt, *expected[7]]
    assert ours(open_session, ops) == expected
    if backend != "memory":
        assert ours(open_session, [("get",)]) == [[prompt, NEXT]]


def test_store_takes_a_database_url_or_a_handle(tmp_path: Path) -> None:
    from context_manager.errors import ConfigurationError
    from context_manager.store import connect

    handle = connect(f"sqlite:///{tmp_path / 'sessions.db'}")
    ops: list[Op] = [("add", [USER, ANSWER]), ("get",)]
    assert ours(lambda: ContextManagerSession("a", store=handle, **OPTIONS), ops) == reference(ops)
    assert ours(lambda: ContextManagerSession("b", store=handle, **OPTIONS), [("get",)]) == [[]]
    for bad in (str(tmp_path / "log.jsonl"), "ftp://host/x", 42):
        with pytest.raises(ConfigurationError, match="store must be a URL"):
            ContextManagerSession("a", store=bad, **OPTIONS)
    with pytest.raises(ConfigurationError, match="not both"):
        ContextManagerSession("a", store=handle, directory=tmp_path, **OPTIONS)
