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
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from ..errors import (
    ConfigurationError,
    StoreConflictError,
    StoreError,
    StoreOutcomeUnknownError,
)
from ..host import ManagerHost
from .session import SessionStore

__all__ = ["retrying"]

M = TypeVar("M", bound=ManagerHost)
T = TypeVar("T")


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
    catch-up brought it into memory). After ``attempts`` tries the last error is raised.
    """
    store = getattr(manager, "store", None)
    if not isinstance(store, SessionStore):
        raise ConfigurationError(
            "retrying() needs a manager opened on a store (MessageContextManager.open)"
        )
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ConfigurationError(f"attempts must be a positive integer, got {attempts!r}")
    for name, value in (("first_delay", first_delay), ("max_delay", max_delay)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 3600:
            raise ConfigurationError(f"{name} must be a number of seconds in [0, 3600)")
    jitter = rng if rng is not None else random.Random()
    pending: tuple[str, ...] | None = None  # ids of a write whose outcome is unknown
    last: StoreError | None = None
    for attempt in range(attempts):
        if attempt:
            # Full jitter: a uniform delay up to the exponential bound, so workers that
            # collided do not collide again in lockstep.
            sleep(jitter.uniform(0, min(max_delay, first_delay * 2**attempt)))
            try:  # catch up first: only the records after what this worker last saw
                if pending is not None:
                    if store.landed(manager, pending):
                        return None
                    pending = None
                else:
                    store.reload(manager)
            except (StoreConflictError, StoreOutcomeUnknownError) as exc:
                last = exc
                continue
            except StoreError as exc:  # the server is unreachable: wait and try again
                last = exc
                continue
        try:
            return change(manager)
        except StoreOutcomeUnknownError as exc:
            pending, last = exc.record_ids, exc
        except StoreConflictError as exc:
            last = exc
    assert last is not None
    raise last
