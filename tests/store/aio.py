"""Helpers for the asyncio store tests: open a manager on a backend through ``aopen``, read
what a session stores through the sync API, and an ``AsyncStore`` wrapper that fails on cue."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from context_manager import MessageContextManager
from context_manager.store import AsyncStore, Batch, Head

from .backends import Backend


async def aopen(backend: Backend, session: str = "s1", **options: Any) -> MessageContextManager:
    options.setdefault("max_tokens", 1_000_000)
    return await MessageContextManager.aopen(
        backend.target, session=session, store_options=dict(backend.options), **options
    )


def without_id(line: bytes) -> dict[str, Any]:
    """A stored record as it would be from any writer: its random record id taken out."""
    record = json.loads(line)
    attrs = record.get("_cm")
    if isinstance(attrs, dict):
        attrs.pop("id", None)
        if not attrs:
            del record["_cm"]
    return dict(record)


def stored(backend: Backend, session: str = "s1") -> list[dict[str, Any]]:
    """The current generation's records (without ids), read through the sync API."""
    store = backend.store(session)
    try:
        return [without_id(line) for _, line in store.load().lines]
    finally:
        store.close()


def contents(backend: Backend, session: str = "s1") -> list[Any]:
    return [r.get("content") for r in stored(backend, session) if not r["role"].startswith("_")]


Hook = Callable[[Sequence[Mapping[str, Any]]], Awaitable[None]]


class Wrapped:
    """An ``AsyncStore`` around a real one; ``before`` / ``after`` run around each append (to
    hang, fail, or fail after the records were stored: a lost reply)."""

    def __init__(self, inner: AsyncStore) -> None:
        self.inner = inner
        self.before: Hook | None = None
        self.after: Hook | None = None

    @property
    def session(self) -> str:
        return self.inner.session

    @property
    def target(self) -> str:
        return self.inner.target

    @property
    def head(self) -> Head | None:
        return self.inner.head

    async def load(self, start: int = 0) -> Batch:
        return await self.inner.load(start)

    async def load_after(self, head: Head) -> Batch | None:
        return await self.inner.load_after(head)

    async def append(
        self, records: Sequence[Mapping[str, Any]], *, durable: bool = False
    ) -> list[int]:
        if self.before is not None:
            await self.before(records)
        positions = await self.inner.append(records, durable=durable)
        if self.after is not None:
            await self.after(records)
        return positions

    async def checkpoint(self) -> int:
        return await self.inner.checkpoint()

    async def revert_to(self, checkpoint_id: int) -> object:
        return await self.inner.revert_to(checkpoint_id)

    async def clear(self) -> None:
        await self.inner.clear()

    async def sessions(self) -> list[str]:
        return await self.inner.sessions()

    async def aclose(self) -> None:
        await self.inner.aclose()


def run(coroutine: Awaitable[Any]) -> Any:
    """A real event loop per test (no plugin): ``asyncio.run``."""
    return asyncio.run(coroutine)  # type: ignore[arg-type]
