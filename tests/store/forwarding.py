"""A real sync store behind a wrapper that a test gives one more behaviour (its appends
counted, an operation held in flight): every operation the wrapper does not override is the
real store's, so the manager under test talks to a real backend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from context_manager.store.protocol import Batch, Head, Store


class ForwardingStore:
    """Every :class:`~context_manager.store.protocol.Store` operation passed to ``inner``."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    @property
    def session(self) -> str:
        return self.inner.session

    @property
    def target(self) -> str:
        return self.inner.target

    @property
    def head(self) -> Head | None:
        return self.inner.head

    def load(self, start: int = 0) -> Batch:
        return self.inner.load(start)

    def load_after(self, head: Head) -> Batch | None:
        return self.inner.load_after(head)

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        return self.inner.append(records, durable=durable)

    def checkpoint(self) -> int:
        return self.inner.checkpoint()

    def revert_to(self, checkpoint_id: int) -> object:
        return self.inner.revert_to(checkpoint_id)

    def clear(self) -> None:
        self.inner.clear()

    def sessions(self) -> list[str]:
        return self.inner.sessions()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:  # anything else (batch support, ...) as well
        return getattr(self.inner, name)
