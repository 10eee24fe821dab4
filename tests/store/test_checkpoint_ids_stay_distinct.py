"""Checkpoint ids stay distinct across writers: a writer that caught up with another's records
(a retry's reload, a session cache's catch-up, an async retry) hands out the id after the last
checkpoint in the store, so ``revert_to`` of its own checkpoint lands where it made it.

SQLite, Redis and PostgreSQL assign ids inside their write; JSONL hands them out from what the
writer has read, which once missed the markers an incremental catch-up read: it wrote a second
checkpoint 0, and ``revert_to(0)`` dropped what came after the first one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.store import JsonlLog, SessionCache, aretrying, connect, retrying

from .aio import aopen, run
from .backends import Backend, user


def said(manager: MessageContextManager) -> list[Any]:
    return [m["content"] for m in manager.messages]


def test_a_retried_checkpoint_after_another_writers_gets_the_next_id(backend: Backend) -> None:
    one, two = backend.manager("s"), backend.manager("s")
    one.add(user("a"))
    retrying(two, lambda m: m.add(user("b")))
    theirs = retrying(two, lambda m: m.checkpoint())
    two.add(user("c"))
    mine = retrying(one, lambda m: m.checkpoint())  # conflicts, catches up, checkpoints
    one.add(user("d"))
    assert (theirs, mine) == (0, 1)
    assert theirs is not None and mine is not None
    one.revert_to(mine)
    assert said(one) == ["a", "b", "c"]
    fresh = backend.manager("s")
    assert said(fresh) == ["a", "b", "c"]
    fresh.revert_to(theirs)
    assert said(fresh) == ["a", "b"]
    for manager in (one, two, fresh):
        manager.store.close()


def test_a_reloaded_writer_checkpoints_after_the_markers_it_read(backend: Backend) -> None:
    one, two = backend.manager("s"), backend.manager("s")
    one.add(user("a"))
    two.store.reload(two)
    assert [two.checkpoint() for _ in range(3)] == [0, 1, 2]
    two.add(user("b"))
    one.store.reload(one)  # reads the three markers and "b" written after its view
    assert one.checkpoint() == 3
    one.add(user("c"))
    one.revert_to(2)
    assert said(one) == ["a"]
    one.store.close()
    two.store.close()


def test_a_cached_manager_checkpoints_after_what_it_caught_up_with(backend: Backend) -> None:
    cached = connect(backend.target, cache=SessionCache(), **backend.options)
    other = backend.manager("s")
    manager = MessageContextManager.open(cached, session="s", max_tokens=1_000_000)
    manager.add(user("a"))
    manager.store.close()  # parked
    other.store.reload(other)
    assert other.checkpoint() == 0
    other.add(user("b"))
    again = MessageContextManager.open(cached, session="s", max_tokens=1_000_000)
    assert again is manager  # the parked manager, caught up with "b"
    assert said(again) == ["a", "b"]
    assert again.checkpoint() == 1
    again.add(user("c"))
    again.revert_to(1)
    assert said(again) == ["a", "b"]
    again.store.close()
    other.store.close()
    cached.close()


def test_an_async_retried_checkpoint_gets_the_next_id(backend: Backend) -> None:
    async def scenario() -> tuple[Any, Any, list[Any]]:
        one, two = await aopen(backend, "s"), await aopen(backend, "s")
        async with one.store.batch():
            one.add(user("a"))
        await aretrying(two, lambda m: m.add(user("b")))
        theirs = await aretrying(two, lambda m: m.store.acheckpoint())
        async with two.store.batch():
            two.add(user("c"))
        mine = await aretrying(one, lambda m: m.store.acheckpoint())
        async with one.store.batch():
            one.add(user("d"))
        await one.store.arevert_to(mine)
        reverted = said(one)
        await one.store.aclose()
        await two.store.aclose()
        return theirs, mine, reverted

    assert run(scenario()) == (0, 1, ["a", "b", "c"])


def test_blind_jsonl_writers_never_hand_out_the_same_id(tmp_path: Path) -> None:
    """Two logs on one file without conflict detection: each checkpoint reads the markers the
    other wrote since (the file moved), so the ids go on 0, 1, 2, 3."""
    path = tmp_path / "log.jsonl"
    with JsonlLog(path) as first, JsonlLog(path) as second:
        assert [first.checkpoint(), second.checkpoint()] == [0, 1]
        assert [first.checkpoint(), second.checkpoint()] == [2, 3]
        first.revert_to(2)
        assert second.checkpoint() == 2  # the revert reuses ids from 2 on, as documented
    assert JsonlLog(path).restore().next_checkpoint_id == 3


def test_a_damaged_checkpoint_record_is_skipped_and_takes_no_id(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """A ``_checkpoint`` record whose id no reader takes (another tool wrote it, or damage) is
    stored as written through any backend's ``append``; every reader skips it with a warning,
    so no backend indexes it as a checkpoint: the next id follows the last valid marker."""
    store = backend.store("s")
    store.append([user("a")])
    assert store.checkpoint() == 0
    store.append([{"role": "_checkpoint", "content": None, "id": "1"}, user("b")])
    store.close()
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        manager = backend.manager("s")
    assert caplog.text.count("needs an integer 'id'") == 1
    assert said(manager) == ["a", "b"]
    assert manager.checkpoint() == 1
    manager.add(user("c"))
    manager.revert_to(1)
    assert said(manager) == ["a", "b"]
    manager.revert_to(0)
    assert said(manager) == ["a"]
    manager.store.close()
