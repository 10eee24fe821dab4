"""``manager.store.batch(atomic=True)``: an error inside stores nothing of the batch, and memory
goes back to what the store holds (a plain batch stores what came before the error)."""

from __future__ import annotations

import asyncio

import pytest

from context_manager import MessageContextManager
from context_manager.errors import InvalidMessageError

from .backends import Backend, contents, user


def test_an_error_inside_an_atomic_batch_stores_nothing(backend: Backend) -> None:
    manager = backend.manager("s")
    manager.add(user("kept"))
    with pytest.raises(InvalidMessageError), manager.store.batch(atomic=True):
        manager.add(user("dropped"))
        manager.add({"role": "tool", "tool_call_id": "nope", "content": "orphan"})
    assert [m["content"] for m in manager.messages] == ["kept"]
    manager.add(user("next"))
    manager.store.close()
    assert contents(backend.target, "s", store_options=dict(backend.options)) == ["kept", "next"]


def test_a_plain_batch_still_stores_what_came_before_the_error(backend: Backend) -> None:
    manager = backend.manager("s")
    with pytest.raises(InvalidMessageError), manager.store.batch():
        manager.add(user("before"))
        manager.add({"role": "tool", "tool_call_id": "nope", "content": "orphan"})
    manager.store.close()
    assert contents(backend.target, "s", store_options=dict(backend.options)) == ["before"]


def test_an_error_inside_an_atomic_async_batch_stores_nothing(backend: Backend) -> None:
    async def run() -> list[str]:
        manager = await MessageContextManager.aopen(
            backend.target, session="s", max_tokens=10_000, store_options=dict(backend.options)
        )
        async with manager.store.batch():
            manager.add(user("kept"))
        with pytest.raises(InvalidMessageError):
            async with manager.store.batch(atomic=True):
                manager.add(user("dropped"))
                manager.add({"role": "tool", "tool_call_id": "nope", "content": "orphan"})
        held = [m["content"] for m in manager.messages]
        await manager.store.aclose()
        return held

    assert asyncio.run(run()) == ["kept"]
    assert contents(backend.target, "s", store_options=dict(backend.options)) == ["kept"]
