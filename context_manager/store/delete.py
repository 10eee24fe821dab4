"""Delete a session for good: :func:`delete_session` and :func:`adelete_session`.

A user who asks for their data to be deleted means all of it: ``clear`` and ``revert_to`` keep
old generations on purpose (a revert can go back), so deleting is its own operation, on the
store (:class:`~.protocol.DeletableStore`: every generation, the offloaded tool results, the
session's entry in ``sessions()``, in one atomic step per backend). These functions take a
target the way ``open_store`` / ``aopen_store`` do (a path, a URL, a handle, a store) and also
drop the session's parked manager from the handle's :class:`~.warm.SessionCache`, so no
request is served from memory of a deleted conversation. Not on the manager's journal: a
manager is one open conversation, deleting it is an administrative act on the target.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from ..errors import ConfigurationError
from .async_targets import AsyncStoreHandle, aopen_store
from .handle import StoreHandle
from .jsonl import FsyncMode, JsonlLog
from .protocol import AsyncDeletableStore, AsyncStore, DeletableStore, Store
from .targets import open_store

__all__ = ["adelete_session", "delete_session", "deletion_summary"]


def _check_session(store: Store | AsyncStore, session: str | None) -> None:
    if session is not None and session != store.session:
        raise ConfigurationError(
            f"the store given is session {store.session!r}, not {session!r}; pass a target or "
            "a handle to delete another session"
        )


def delete_session(
    target: str | os.PathLike[str] | Store | StoreHandle,
    *,
    session: str | None = None,
    fsync: FsyncMode = "checkpoint",
    **options: Any,
) -> bool:
    """Delete ``session`` of ``target`` for good (every generation, its offloaded results);
    True when there was something to delete. ``target`` and ``options`` are
    :func:`~.targets.open_store`'s; a store passed in is used (and left open), one opened here
    is closed. A writer that still has the session open gets ``StoreConflictError`` on its
    next write."""
    owned = not isinstance(target, Store) or isinstance(target, (str, os.PathLike))
    store = open_store(target, session=session, fsync=fsync, **options)
    try:
        if not owned:
            _check_session(store, session)
        if not isinstance(store, DeletableStore):
            raise ConfigurationError(f"a {type(store).__name__} store cannot delete its session")
        found = store.delete()
    finally:
        if owned:
            store.close()
    if isinstance(target, StoreHandle) and target.cache is not None:
        target.cache.discard(store.session)
    return found


async def adelete_session(
    target: str | os.PathLike[str] | Store | StoreHandle | AsyncStore | AsyncStoreHandle,
    *,
    session: str | None = None,
    fsync: FsyncMode = "checkpoint",
    **options: Any,
) -> bool:
    """:func:`delete_session` for asyncio (targets as :func:`~.async_targets.aopen_store`)."""
    given = isinstance(target, (Store, AsyncStore)) and not isinstance(target, (str, os.PathLike))
    store = await aopen_store(target, session=session, fsync=fsync, **options)
    try:
        if given:
            _check_session(store, session)
        if not isinstance(store, AsyncDeletableStore):
            raise ConfigurationError(f"a {type(store).__name__} store cannot delete its session")
        found = await store.delete()
    finally:
        if not given:
            await store.aclose()
    if isinstance(target, (StoreHandle, AsyncStoreHandle)) and target.cache is not None:
        target.cache.discard(store.session)
    return found


def deletion_summary(
    target: str | os.PathLike[str], *, session: str | None = None, **options: Any
) -> tuple[bool, str]:
    """Whether ``session`` exists, and what :func:`delete_session` would delete in words (or
    that there is no such session); reads the current generation to count its records. The
    target is shown without its password (the store's ``target``)."""
    store = open_store(target, session=session, **options)
    try:
        if store.session not in store.sessions():
            if isinstance(store, JsonlLog) and store.root is not None:
                with contextlib.suppress(OSError):  # only if empty: the open just made it
                    os.rmdir(store.path.parent)
            return False, f"no session {store.session!r} in {store.target}; nothing deleted\n"
        records = len(store.load().lines)
    finally:
        store.close()
    return True, (
        f"session {store.session!r} of {store.target}: {records} records in its current "
        "history, every older generation and its offloaded results"
    )
