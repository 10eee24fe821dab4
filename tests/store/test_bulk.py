"""A bulk ``extend()`` is one atomic write on every backend: all of it is stored, or (when that
write fails) none of it, with memory put back as the store has it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import InvalidMessageError, StoreConflictError
from context_manager.store.protocol import Store

from .backends import Backend, user
from .forwarding import ForwardingStore


class CountingStore(ForwardingStore):
    """A real store, with its appends counted (what the server would see as round trips)."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.appends: list[int] = []

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        self.appends.append(len(records))
        return super().append(records, durable=durable)


def test_extend_of_2000_messages_is_one_append(backend: Backend) -> None:
    store = CountingStore(backend.store())
    manager = MessageContextManager.open(store, max_tokens=10_000_000)
    messages = [user(f"message {i}") for i in range(2000)]
    manager.extend(messages)
    assert store.appends == [2000]
    store.close()
    reopened = backend.manager()
    assert reopened.messages == messages
    reopened.store.close()


def test_an_invalid_message_keeps_those_before_it_stored(backend: Backend) -> None:
    manager = backend.manager()
    good = [user(f"ok {i}") for i in range(5)]
    with pytest.raises(InvalidMessageError):
        manager.extend([*good, {"role": "robot", "content": "no"}, user("never")])
    assert manager.messages == good
    manager.store.close()
    reopened = backend.manager()
    assert reopened.messages == good
    reopened.store.close()


def test_a_failed_bulk_write_stores_nothing_and_memory_follows_the_store(
    backend: Backend,
) -> None:
    mine, other = backend.manager(), backend.manager()
    mine.add(user("first"))
    other.store.reload(other)
    other.add(user("other worker"))  # mine's view is now stale: its bulk write conflicts
    with pytest.raises(StoreConflictError):
        mine.extend([user(f"bulk {i}") for i in range(50)])
    assert [m["content"] for m in mine.messages] == ["first", "other worker"]
    mine.store.close()
    other.store.close()
    reopened = backend.manager()
    assert [m["content"] for m in reopened.messages] == ["first", "other worker"]
    reopened.store.close()
