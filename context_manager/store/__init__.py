"""Persistence: an append-only JSONL log (Kimi CLI compatible), a session index, and the glue
that makes a :class:`~context_manager.manager.MessageContextManager` persist every change.
"""

from __future__ import annotations

from .jsonl import FSYNC_MODES, CheckpointNotFoundError, FsyncMode, JsonlLog
from .records import RestoredLog, StoredMessage

__all__ = [
    "FSYNC_MODES",
    "CheckpointNotFoundError",
    "FsyncMode",
    "JsonlLog",
    "RestoredLog",
    "StoredMessage",
]
