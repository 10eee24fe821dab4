"""Persistence: one record-level :class:`Store` protocol with four backends (a Kimi-compatible
JSONL log, SQLite, Redis, PostgreSQL; ``open_store``), a ``sessions.json`` index, and the glue
that makes a :class:`~context_manager.manager.MessageContextManager` persist every change
(``MessageContextManager.open``; ``aopen`` / ``aconnect`` for asyncio).
docs/guide/stores.md: which backend when; docs/guide/persistence.md: the format and guarantees.
"""

from __future__ import annotations

from ..errors import CheckpointNotFoundError, StoreConflictError, StoreOutcomeUnknownError
from .async_session import AsyncJournalError, AsyncSessionStore, aopen_session
from .async_targets import AsyncStoreHandle, ThreadedStore, aconnect, aopen_store
from .compactions import list_compactions
from .copy import copy_session
from .delete import adelete_session, delete_session
from .handle import StoreHandle
from .index import ResetPolicy, SessionEntry, SessionIndex
from .jsonl import FSYNC_MODES, FsyncMode, JsonlLog
from .log import StoreLog
from .protocol import AsyncDeletableStore, AsyncStore, Batch, DeletableStore, Head, Store
from .replayer import RestoredLog, StoredMessage
from .retry import aretrying, retrying
from .session import SessionStore, open_session
from .targets import connect, open_store
from .warm import SessionCache

__all__ = [
    "FSYNC_MODES",
    "AsyncDeletableStore",
    "AsyncJournalError",
    "AsyncSessionStore",
    "AsyncStore",
    "AsyncStoreHandle",
    "Batch",
    "CheckpointNotFoundError",
    "DeletableStore",
    "FsyncMode",
    "Head",
    "JsonlLog",
    "ResetPolicy",
    "RestoredLog",
    "SessionCache",
    "SessionEntry",
    "SessionIndex",
    "SessionStore",
    "Store",
    "StoreConflictError",
    "StoreHandle",
    "StoreLog",
    "StoreOutcomeUnknownError",
    "StoredMessage",
    "ThreadedStore",
    "aconnect",
    "adelete_session",
    "aopen_session",
    "aopen_store",
    "aretrying",
    "connect",
    "copy_session",
    "delete_session",
    "list_compactions",
    "open_session",
    "open_store",
    "retrying",
]
