"""A session whose store was closed takes no more writes, on every backend alike.

Before, SQLite refused them while JSONL, Redis and PostgreSQL reconnected and wrote: code that
kept a manager after closing its store (which the stores guide says not to do) worked or failed
by backend. Reading what memory holds still works.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreError

from .backends import Backend, user

WRITES: dict[str, Callable[[MessageContextManager], Any]] = {
    "add": lambda m: m.add(user("late")),
    "usage": lambda m: m.record_usage(10),
    "system prompt": lambda m: m.set_system_prompt("new"),
    "compaction": lambda m: m.apply_compaction(user("summary"), 1),
    "checkpoint": lambda m: m.checkpoint(),
    "clear": lambda m: m.clear(),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_after_close_is_refused_and_changes_nothing(backend: Backend, write: str) -> None:
    manager = backend.manager("s")
    manager.add(user("a"))
    manager.add(user("b"))
    manager.store.close()
    with pytest.raises(StoreError, match="closed"):
        WRITES[write](manager)
    assert [m["content"] for m in manager.messages] == ["a", "b"]  # memory unchanged
    reopened = backend.manager("s")
    assert [m["content"] for m in reopened.messages] == ["a", "b"]  # nothing stored
    assert reopened.system_prompt is None
    reopened.store.close()


def test_an_async_write_after_close_is_refused(backend: Backend) -> None:
    async def main() -> list[str]:
        manager = await MessageContextManager.aopen(
            backend.target, session="s", store_options=dict(backend.options), max_tokens=10_000
        )
        async with manager.store.batch():
            manager.add(user("a"))
        await manager.store.aclose()
        with pytest.raises(StoreError, match="closed"):
            async with manager.store.batch():
                manager.add(user("late"))
        reopened = backend.manager("s")
        try:
            return [m["content"] for m in reopened.messages]
        finally:
            reopened.store.close()

    assert asyncio.run(main()) == ["a"]


def said(manager: MessageContextManager) -> list[Any]:
    return [m["content"] for m in manager.messages]


@pytest.mark.parametrize("step", ["revert", "reload"])
def test_a_revert_or_reload_after_close_is_refused_and_another_workers_message_stays(
    backend: Backend, step: str
) -> None:
    """A revert starts a new generation: run from a closed store, it dropped the message another
    worker had added since (acknowledged to that worker). A reload would move a manager a
    session cache may hold."""
    manager = backend.manager("s")
    manager.add(user("a"))
    checkpoint = manager.checkpoint()
    manager.add(user("b"))
    manager.store.close()
    other = backend.manager("s")
    other.add(user("from another worker"))
    other.store.close()
    with pytest.raises(StoreError, match="closed"):
        if step == "revert":
            manager.revert_to(checkpoint)
        else:
            manager.store.reload(manager)
    assert said(manager) == ["a", "b"]
    reopened = backend.manager("s")
    assert said(reopened) == ["a", "b", "from another worker"]
    reopened.store.close()


@pytest.mark.parametrize("step", ["acheckpoint", "arevert_to", "areload"])
def test_an_async_checkpoint_revert_or_reload_after_close_is_refused(
    backend: Backend, step: str
) -> None:
    async def main() -> list[str]:
        manager = await MessageContextManager.aopen(
            backend.target, session="s", store_options=dict(backend.options), max_tokens=10_000
        )
        async with manager.store.batch():
            manager.add(user("a"))
        checkpoint = await manager.store.acheckpoint()
        async with manager.store.batch():
            manager.add(user("b"))
        await manager.store.aclose()
        other = backend.manager("s")
        other.add(user("from another worker"))
        other.store.close()
        with pytest.raises(StoreError, match="closed"):
            if step == "acheckpoint":
                await manager.store.acheckpoint()
            elif step == "arevert_to":
                await manager.store.arevert_to(checkpoint)
            else:
                await manager.store.areload()
        reopened = backend.manager("s")
        try:
            return said(reopened)
        finally:
            reopened.store.close()

    assert asyncio.run(main()) == ["a", "b", "from another worker"]
