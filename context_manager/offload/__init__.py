"""Oversized tool results kept out of the context and read back on demand (issue 40).

A tool result can be larger than the whole window (a log, a file, a database dump). Cutting it
head+tail, or clearing it when it ages, throws away what the model may need later. With an
*offload area* attached, the full result is stored under a *handle* and the context keeps a
head+tail *stub* naming the handle; the model reads more with the ``recall`` tool (by lines,
bytes or a search text, within a token cap), paging on the total size it is told.

- :class:`OffloadArea`: the protocol (``put`` / ``get`` / ``delete_entries``, plus the revert
  bookkeeping ``retire`` / ``revive``); :class:`MemoryOffload` is the caller-owned in-memory
  area (bounded by bytes, oldest evicted); the store-backed areas (JSONL, SQLite, PostgreSQL,
  Redis) are in ``context_manager.store.offload``.
- :func:`offload_results`: a copy of a tool-result message with results over a threshold
  replaced by stubs (apply it before ``add`` or ``trim``); :func:`stub_handle` reads the
  handle a stub names.
- ``ToolResultPruning(offload=area)`` / :class:`OffloadOnly`: pruned and newest-cut results in
  the view become stubs instead of vanishing.
- :func:`recall` and the tool schemas (``schemas.py``) for every SDK.

docs/guide/offload.md has the walkthrough.
"""

from __future__ import annotations

from .area import HANDLE_PREFIX, BaseArea, OffloadArea, Slice
from .attach import attach_offload
from .memory import MemoryOffload
from .recall import DEFAULT_RECALL_TOKENS, recall, recall_text, run_recall
from .stub import Offloader, OffloadOnly, offload_results, stub_handle

__all__ = [
    "DEFAULT_RECALL_TOKENS",
    "HANDLE_PREFIX",
    "BaseArea",
    "MemoryOffload",
    "OffloadArea",
    "OffloadOnly",
    "Offloader",
    "Slice",
    "attach_offload",
    "offload_results",
    "recall",
    "recall_text",
    "run_recall",
    "stub_handle",
]
