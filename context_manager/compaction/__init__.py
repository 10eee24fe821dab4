"""Summary compaction: replace old messages with a summary, keep recent ones verbatim.

``manager.compact()`` / ``await manager.acompact()`` call :func:`compact_manager` /
:func:`acompact_manager`. Policies (``policies.py``) plan the cut with Pi's own rules
(``pi_rules/``); summarizers (``summarizers.py``, offline ``extractive.py``) write the text;
``runner.py`` applies the result; ``triggers.py`` decides when (thresholds, overflow errors, the
flush hook).
"""

from __future__ import annotations

from ..errors import CompactionInProgressError
from .convert import to_pi_entries, to_pi_messages
from .entry import CompactionEntry, CompactionManifest
from .extractive import ExtractiveSummarizer
from .facts import Fact
from .manifest import EvictionRecord, compactions, evictions, watch
from .native import FellBack, NativeCompacted, NativeCompactor, acompact_native, compact_native
from .policies import (
    CompactionPlan,
    CompactionPolicy,
    SimpleCompaction,
    TokenBudgetCompaction,
    kimi_history_text,
)
from .runner import (
    CompactionEvent,
    acompact_manager,
    add_compaction_listener,
    compact_manager,
    remove_compaction_listener,
    restore_compaction,
    summary_message,
)
from .summarizers import (
    AnthropicSummarizer,
    OpenAISummarizer,
    Summarizer,
    SummaryRequest,
    asummarize,
    summarize,
)
from .triggers import (
    CompactionTriggers,
    FlushInfo,
    asend_with_recovery,
    is_context_overflow,
    send_with_recovery,
)

__all__ = [
    "AnthropicSummarizer",
    "CompactionEntry",
    "CompactionEvent",
    "CompactionInProgressError",
    "CompactionManifest",
    "CompactionPlan",
    "CompactionPolicy",
    "CompactionTriggers",
    "EvictionRecord",
    "ExtractiveSummarizer",
    "Fact",
    "FellBack",
    "FlushInfo",
    "NativeCompacted",
    "NativeCompactor",
    "OpenAISummarizer",
    "SimpleCompaction",
    "Summarizer",
    "SummaryRequest",
    "TokenBudgetCompaction",
    "acompact_manager",
    "acompact_native",
    "add_compaction_listener",
    "asend_with_recovery",
    "asummarize",
    "compact_manager",
    "compact_native",
    "compactions",
    "evictions",
    "is_context_overflow",
    "kimi_history_text",
    "remove_compaction_listener",
    "restore_compaction",
    "send_with_recovery",
    "summarize",
    "summary_message",
    "to_pi_entries",
    "to_pi_messages",
    "watch",
]
