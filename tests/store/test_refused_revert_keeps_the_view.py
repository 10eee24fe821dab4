"""A refused ``revert_to`` (no such checkpoint) changes nothing: not the store, not memory, and
not the position a worker believes it has read up to.

A worker that has not seen another's write asks to revert to a checkpoint that does not exist.
On every backend its next write must then conflict (and a reload bring the other's write), as
it would have without the refused revert; a store that silently moved its view past the unseen
write would accept the next write and leave that worker's memory short of a message every
fresh open has.
"""

from __future__ import annotations

import pytest

from context_manager import MessageContextManager
from context_manager.errors import CheckpointNotFoundError, StoreConflictError
from context_manager.store import SessionCache, connect

from .backends import Backend, user


def said(manager: MessageContextManager) -> list[str]:
    return [m["content"] for m in manager.messages]


def test_a_stale_worker_conflicts_after_a_refused_revert(backend: Backend) -> None:
    other, stale = backend.manager(), backend.manager()
    other.add(user("one"))  # the stale worker has not seen it
    with pytest.raises(CheckpointNotFoundError):
        stale.revert_to(7)
    assert said(stale) == []
    with pytest.raises(StoreConflictError):
        stale.add(user("two"))
    stale.store.reload(stale)
    stale.add(user("two"))
    fresh = backend.manager()
    assert said(stale) == said(fresh) == ["one", "two"]
    for manager in (other, stale, fresh):
        manager.store.close()


def test_a_refused_revert_parks_the_position_the_worker_had(backend: Backend) -> None:
    stores = connect(backend.target, cache=SessionCache(), **backend.options)
    stale = MessageContextManager.open(stores, session="s1", max_tokens=100_000)
    other = backend.manager()
    other.add(user("one"))
    with pytest.raises(CheckpointNotFoundError):
        stale.revert_to(7)
    stale.store.close()  # parked in the cache at the position it had read up to
    again = MessageContextManager.open(stores, session="s1", max_tokens=100_000)
    again.add(user("two"))  # the parked journal catches up (or conflicts) before it appends
    fresh = backend.manager()
    assert said(again) == said(fresh) == ["one", "two"]
    for manager in (other, again, fresh):
        manager.store.close()
    stores.close()
