"""Persistence: an append-only JSONL log (Kimi CLI compatible), a ``sessions.json`` index, and
the glue that makes a :class:`~context_manager.manager.MessageContextManager` persist every
change (``MessageContextManager.open``). README.md ("Persistence") has the format and guarantees.
"""

from __future__ import annotations

from ..errors import CheckpointNotFoundError
from .index import ResetPolicy, SessionEntry, SessionIndex
from .jsonl import FSYNC_MODES, FsyncMode, JsonlLog
from .records import RestoredLog, StoredMessage
from .session import SessionStore, open_session

__all__ = [
    "FSYNC_MODES",
    "CheckpointNotFoundError",
    "FsyncMode",
    "JsonlLog",
    "ResetPolicy",
    "RestoredLog",
    "SessionEntry",
    "SessionIndex",
    "SessionStore",
    "StoredMessage",
    "open_session",
]
