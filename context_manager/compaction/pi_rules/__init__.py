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

from . import cut_points as _cut_points
from . import estimate as _estimate
from . import file_ops as _file_ops
from . import overflow as _overflow
from . import prepare as _prepare
from . import serialize as _serialize
from . import session_context as _session_context
from ._door import door
from ._shapes import DEFAULT_COMPACTION_SETTINGS, PiEntry, PiMessage, Usage
from .cut_points import CutPoint
from .estimate import ContextEstimate
from .file_ops import FileOps
from .overflow import OVERFLOW_PATTERN_SOURCES
from .prepare import CompactionPreparation
from .session_context import SessionContext

# The public functions, each behind the door (typed errors for what is not Pi's shape).
find_cut_point = door(_cut_points.find_cut_point)
find_turn_start_index = door(_cut_points.find_turn_start_index)
calculate_context_tokens = door(_estimate.calculate_context_tokens)
estimate_context_tokens = door(_estimate.estimate_context_tokens)
estimate_tokens = door(_estimate.estimate_tokens)
get_last_assistant_usage = door(_estimate.get_last_assistant_usage)
should_compact = door(_estimate.should_compact)
compute_file_lists = door(_file_ops.compute_file_lists)
create_file_ops = door(_file_ops.create_file_ops)
extract_file_ops_from_message = door(_file_ops.extract_file_ops_from_message)
format_file_operations = door(_file_ops.format_file_operations)
get_overflow_patterns = door(_overflow.get_overflow_patterns)
is_context_overflow = door(_overflow.is_context_overflow)
prepare_compaction = door(_prepare.prepare_compaction)
bash_execution_to_text = door(_serialize.bash_execution_to_text)
convert_to_llm = door(_serialize.convert_to_llm)
serialize_conversation = door(_serialize.serialize_conversation)
build_session_context = door(_session_context.build_session_context)

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
