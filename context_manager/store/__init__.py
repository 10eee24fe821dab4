"""Persistence: one record-level :class:`Store` protocol with four backends (a Kimi-compatible
JSONL log, SQLite, Redis, PostgreSQL; ``open_store``), a ``sessions.json`` index, and the glue
that makes a :class:`~context_manager.manager.MessageContextManager` persist every change
(``MessageContextManager.open``). docs/guide/stores.md: which backend when;
docs/guide/persistence.md: the format and guarantees.
"""

from __future__ import annotations

from ..errors import CheckpointNotFoundError, StoreConflictError, StoreOutcomeUnknownError
from .copy import copy_session
from .handle import StoreHandle
from .index import ResetPolicy, SessionEntry, SessionIndex
from .jsonl import FSYNC_MODES, FsyncMode, JsonlLog
from .log import StoreLog
from .protocol import Batch, Head, Store
from .records import RestoredLog, StoredMessage
from .retry import retrying
from .session import SessionStore, open_session
from .targets import connect, open_store

__all__ = [
    "FSYNC_MODES",
    "Batch",
    "CheckpointNotFoundError",
    "FsyncMode",
    "Head",
    "JsonlLog",
    "ResetPolicy",
    "RestoredLog",
    "SessionEntry",
    "SessionIndex",
    "SessionStore",
    "Store",
    "StoreConflictError",
    "StoreHandle",
    "StoreLog",
    "StoreOutcomeUnknownError",
    "StoredMessage",
    "connect",
    "copy_session",
    "open_session",
    "open_store",
    "retrying",
]
