"""Fixture runners for the Pi suites (``compat_fixtures/fixtures/pi.*.json``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..compaction.pi_rules import (
    DEFAULT_COMPACTION_SETTINGS,
    build_session_context,
    calculate_context_tokens,
    compute_file_lists,
    convert_to_llm,
    create_file_ops,
    estimate_context_tokens,
    estimate_tokens,
    extract_file_ops_from_message,
    find_cut_point,
    find_turn_start_index,
    format_file_operations,
    get_last_assistant_usage,
    is_context_overflow,
    prepare_compaction,
    serialize_conversation,
    should_compact,
)
from ..compaction.pi_rules._shapes import PiMessage
from ..compaction.pi_rules.overflow import OVERFLOW_PATTERN_SOURCES
from ..errors import ContextManagerError


def _run_file_operations(messages: Sequence[PiMessage]) -> dict[str, Any]:
    ops = create_file_ops()
    for message in messages:
        extract_file_ops_from_message(message, ops)
    read_files, modified_files = compute_file_lists(ops)
    return {
        "fileOps": ops.to_pi(),
        "readFiles": read_files,
        "modifiedFiles": modified_files,
        "formatted": format_file_operations(read_files, modified_files),
    }


def _run_prepare(case: Mapping[str, Any]) -> dict[str, Any] | None:
    prepared = prepare_compaction(case["entries"], case["settings"])
    return None if prepared is None else prepared.to_pi()


_MALFORMED_TARGETS: dict[str, Callable[..., Any]] = {
    "estimateTokens": estimate_tokens,
    "serializeConversation": lambda messages: serialize_conversation(convert_to_llm(messages)),
    "findCutPoint": lambda *args: find_cut_point(*args).to_pi(),
    "findTurnStartIndex": find_turn_start_index,
    "isContextOverflow": is_context_overflow,
}


def _run_malformed(case: Mapping[str, Any]) -> dict[str, Any]:
    """Where Pi throws we must raise one of our typed errors; elsewhere return what Pi does."""
    try:
        value = _MALFORMED_TARGETS[case["fn"]](*case["args"])
    except ContextManagerError:
        return {"throws": True}
    return {"throws": False, "value": value}


FIXTURE_SUITES: dict[str, Callable[[Any], Any]] = {
    "pi.estimateTokens": estimate_tokens,
    "pi.findCutPoint": lambda c: find_cut_point(
        c["entries"], c["startIndex"], c["endIndex"], c["keepRecentTokens"]
    ).to_pi(),
    "pi.findTurnStartIndex": lambda c: find_turn_start_index(
        c["entries"], c["entryIndex"], c["startIndex"]
    ),
    "pi.shouldCompact": lambda c: should_compact(
        c["contextTokens"], c["contextWindow"], c["settings"]
    ),
    "pi.calculateContextTokens": calculate_context_tokens,
    "pi.getLastAssistantUsage": get_last_assistant_usage,
    "pi.estimateContextTokens": lambda messages: estimate_context_tokens(messages).to_pi(),
    "pi.convertToLlm": convert_to_llm,
    "pi.serializeConversation": lambda messages: serialize_conversation(convert_to_llm(messages)),
    "pi.isContextOverflow": lambda c: is_context_overflow(c["message"], c.get("contextWindow")),
    "pi.getOverflowPatterns": lambda _: [
        {"source": s, "flags": f} for s, f in OVERFLOW_PATTERN_SOURCES
    ],
    "pi.defaultCompactionSettings": lambda _: dict(DEFAULT_COMPACTION_SETTINGS),
    "pi.fileOperations": _run_file_operations,
    "pi.sessionContext": lambda entries: build_session_context(entries).to_pi(),
    "pi.prepareCompaction": _run_prepare,
    "pi.malformedInput": _run_malformed,
}
