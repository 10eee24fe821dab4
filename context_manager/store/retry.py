"""Retrying a write on a shared session: the loop every multi-worker backend needs, written once.

Several workers writing one session meet two typed errors (docs/guide/stores.md):

- ``StoreConflictError``: another worker wrote first; nothing was written. Catch up and redo.
- ``StoreOutcomeUnknownError``: the connection broke with the write in flight; it may have been
  applied. Catch up, and redo only if the write's record ids are not in the session.

:func:`retrying` does both with a jittered exponential backoff (so 16 workers retrying at once
spread out instead of colliding again in lockstep) and a cap on attempts, and catches up by
reading only the records after what the worker last saw (``SessionStore.reload``), so a retry
costs the records others wrote, not the whole session. The delays come from a
:class:`random.Random` the caller may pass (tests pass a seeded one); nothing is global.

The loop is one flow (``_drive.py``) with four steps (wait, catch up, ask whether a write
landed, make the change): :func:`retrying` performs them on a sync journal and
:func:`aretrying` on an async one (``MessageContextManager.aopen``), where the change runs inside
``async with manager.store.batch():`` and the waits are ``asyncio.sleep``.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import (
    ConfigurationError,
    StoreConflictError,
    StoreError,
    StoreOutcomeUnknownError,
)
from ..host import ManagerHost
from ._drive import Flow, adrive, drive
from .async_session import AsyncSessionStore
from .session import SessionStore

__all__ = ["aretrying", "retrying"]

M = TypeVar("M", bound=ManagerHost)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Wait:
    seconds: float


@dataclass(frozen=True, slots=True)
class _Landed:
    record_ids: tuple[str, ...]


class _Reload:
    pass


class _Change:
    pass


_RELOAD = _Reload()
_CHANGE = _Change()


def _checked(
    attempts: object, first_delay: object, max_delay: object, rng: random.Random | None
) -> random.Random:
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ConfigurationError(f"attempts must be a positive integer, got {attempts!r}")
    for name, value in (("first_delay", first_delay), ("max_delay", max_delay)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 3600:
            raise ConfigurationError(f"{name} must be a number of seconds in [0, 3600)")
    return rng if rng is not None else random.Random()


def _loop(attempts: int, first_delay: float, max_delay: float, jitter: random.Random) -> Flow[Any]:
    # ``unknown``: the lost-reply error of a write not yet known to have landed or not. While it
    # is set, a failed catch-up must not replace it: the caller then gets that error, with the
    # record ids that make a later redo safe, not a plain "unreachable" that hides the write.
    pending: tuple[str, ...] | None = None  # ids of a write whose outcome is unknown
    unknown: StoreOutcomeUnknownError | None = None
    last: StoreError | None = None
    for attempt in range(attempts):
        if attempt:
            # Full jitter: a uniform delay up to the exponential bound, so workers that
            # collided do not collide again in lockstep.
            yield _Wait(jitter.uniform(0, min(max_delay, first_delay * 2**attempt)))
            try:  # catch up first: only the records after what this worker last saw
                if pending is not None:
                    if (yield _Landed(pending)):
                        return None
                    pending = unknown = None
                else:
                    yield _RELOAD
            except StoreError as exc:  # a conflict, or the server is unreachable: wait, retry
                last = exc
                continue
        try:
            return (yield _CHANGE)
        except StoreOutcomeUnknownError as exc:
            pending, unknown, last = exc.record_ids, exc, exc
        except StoreConflictError as exc:
            last = exc
    if unknown is not None:  # the last write may still have landed: say so, with its ids
        raise unknown
    assert last is not None
    raise last


def retrying(
    manager: M,
    change: Callable[[M], T],
    *,
    attempts: int = 10,
    first_delay: float = 0.005,
    max_delay: float = 0.5,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T | None:
    """Run ``change(manager)``; on a conflict or a lost reply, catch up and run it again.

    ``change`` should make one write (one ``add``, ``extend``, ``record_usage``, ``checkpoint``):
    a function that makes several and fails after the first would redo the first. Returns what
    ``change`` returned, or None when a write whose reply was lost turned out to have landed (the
    catch-up brought it into memory). After ``attempts`` tries the last error is raised; while
    a write whose reply was lost is still not known to have landed or not (the catch-ups
    failed too), that is its ``StoreOutcomeUnknownError``, with the ids a later redo needs.
    """
    store = getattr(manager, "store", None)
    if not isinstance(store, SessionStore):
        hint = " (an async store: use aretrying)" if isinstance(store, AsyncSessionStore) else ""
        raise ConfigurationError(
            f"retrying() needs a manager opened on a store (MessageContextManager.open){hint}"
        )
    jitter = _checked(attempts, first_delay, max_delay, rng)

    def perform(step: Any) -> Any:
        if isinstance(step, _Wait):
            return sleep(step.seconds)
        if isinstance(step, _Landed):
            return store.landed(manager, step.record_ids)
        if step is _RELOAD:
            return store.reload(manager)
        return change(manager)

    result: T | None = drive(_loop(attempts, first_delay, max_delay, jitter), perform)
    return result


async def aretrying(
    manager: M,
    change: Callable[[M], T | Awaitable[T]],
    *,
    attempts: int = 10,
    first_delay: float = 0.005,
    max_delay: float = 0.5,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> T | None:
    """:func:`retrying` for a manager opened with ``MessageContextManager.aopen``: each try
    runs ``change(manager)`` (awaited if it returns an awaitable) inside
    ``async with manager.store.batch():``, so its changes are stored in one append when it
    returns; the same rules, the same loop."""
    store = getattr(manager, "store", None)
    if not isinstance(store, AsyncSessionStore):
        raise ConfigurationError(
            "aretrying() needs a manager opened on an async store (MessageContextManager.aopen)"
        )
    jitter = _checked(attempts, first_delay, max_delay, rng)

    async def perform(step: Any) -> Any:
        if isinstance(step, _Wait):
            return await sleep(step.seconds)
        if isinstance(step, _Landed):
            return await store.alanded(step.record_ids)
        if step is _RELOAD:
            return await store.areload()
        async with store.batch():
            result = change(manager)
            if inspect.isawaitable(result):
                result = await result
        return result

    result: T | None = await adrive(_loop(attempts, first_delay, max_delay, jitter), perform)
    return result
