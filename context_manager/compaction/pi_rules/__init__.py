"""Pi's compaction rules, reproduced exactly (``@mariozechner/pi-coding-agent`` / ``pi-ai`` 0.73.1).

The one implementation of these rules in the library (compaction calls them rather than
re-deriving them): token estimates and the trigger (:mod:`.estimate`), cut points
(:mod:`.cut_points`), overflow detection (:mod:`.overflow`), serialization for the summarizer
(:mod:`.serialize`), file operations (:mod:`.file_ops`), the session context
(:mod:`.session_context`) and compaction preparation (:mod:`.prepare`). Inputs and outputs are
Pi's own camelCase JSON shapes; ``context_manager.parity.pi`` replays the fixtures recorded from
the real packages (``compat_fixtures/gen/pi.mjs``).
"""

from __future__ import annotations

from ._shapes import DEFAULT_COMPACTION_SETTINGS, PiEntry, PiMessage, Usage
from .cut_points import CutPoint, find_cut_point, find_turn_start_index
from .estimate import (
    ContextEstimate,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
    should_compact,
)
from .file_ops import (
    FileOps,
    compute_file_lists,
    create_file_ops,
    extract_file_ops_from_message,
    format_file_operations,
)
from .overflow import OVERFLOW_PATTERN_SOURCES, get_overflow_patterns, is_context_overflow
from .prepare import CompactionPreparation, prepare_compaction
from .serialize import bash_execution_to_text, convert_to_llm, serialize_conversation
from .session_context import SessionContext, build_session_context

__all__ = [
    "DEFAULT_COMPACTION_SETTINGS",
    "OVERFLOW_PATTERN_SOURCES",
    "CompactionPreparation",
    "ContextEstimate",
    "CutPoint",
    "FileOps",
    "PiEntry",
    "PiMessage",
    "SessionContext",
    "Usage",
    "bash_execution_to_text",
    "build_session_context",
    "calculate_context_tokens",
    "compute_file_lists",
    "convert_to_llm",
    "create_file_ops",
    "estimate_context_tokens",
    "estimate_tokens",
    "extract_file_ops_from_message",
    "find_cut_point",
    "find_turn_start_index",
    "format_file_operations",
    "get_last_assistant_usage",
    "get_overflow_patterns",
    "is_context_overflow",
    "prepare_compaction",
    "serialize_conversation",
    "should_compact",
]
