"""Pi's ``prepareCompaction``: what to summarize, what to keep, previous summary, file lists."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._js import js_truthy
from ...errors import InvalidMessageError
from ._shapes import DEFAULT_COMPACTION_SETTINGS, PiEntry, PiMessage, _setting_number
from .cut_points import find_cut_point
from .estimate import estimate_context_tokens, estimate_tokens
from .file_ops import FileOps, create_file_ops, extract_file_ops_from_message
from .session_context import (
    _same,
    build_session_context,
    create_branch_summary_message,
    create_custom_message,
)


def _message_for_compaction(entry: PiEntry) -> PiMessage | None:
    """The message an entry contributes to a summary; earlier compactions contribute none."""
    kind = entry.get("type")
    if kind == "message":
        return entry["message"]  # type: ignore[no-any-return]
    if kind == "custom_message":
        return create_custom_message(entry)
    if kind == "branch_summary":
        return create_branch_summary_message(entry)
    return None


@dataclass(frozen=True, slots=True)
class CompactionPreparation:
    """Everything a summarizer needs, as Pi's ``prepareCompaction`` computes it.

    ``messages_to_summarize`` go into the main summary; with a split turn,
    ``turn_prefix_messages`` (turn start up to the cut) get their own prefix summary.
    ``previous_summary`` is the last compaction's summary, to be updated rather than redone.
    """

    first_kept_entry_id: Any
    messages_to_summarize: list[PiMessage]
    turn_prefix_messages: list[PiMessage]
    is_split_turn: bool
    tokens_before: int | float
    previous_summary: str | None
    file_ops: FileOps
    settings: Mapping[str, Any]

    def to_pi(self) -> dict[str, Any]:
        """Pi's object shape, with the file-op ``Set``s as lists."""
        out: dict[str, Any] = {
            "firstKeptEntryId": self.first_kept_entry_id,
            "messagesToSummarize": self.messages_to_summarize,
            "turnPrefixMessages": self.turn_prefix_messages,
            "isSplitTurn": self.is_split_turn,
            "tokensBefore": self.tokens_before,
            "fileOps": self.file_ops.to_pi(),
            "settings": dict(self.settings),
        }
        if self.previous_summary is not None:
            out["previousSummary"] = self.previous_summary
        return out


def _string_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list):
        return []  # Pi ignores anything that is not an array
    if not all(isinstance(v, str) for v in value):
        raise InvalidMessageError(f"{where} must hold file paths (strings)")
    return value


def prepare_compaction(
    path_entries: Sequence[PiEntry],
    settings: Mapping[str, Any] = DEFAULT_COMPACTION_SETTINGS,
    estimate: Callable[[PiMessage], int] = estimate_tokens,
) -> CompactionPreparation | None:
    """Pi's ``prepareCompaction`` (pure part of ``compact``): what to summarize and keep.

    Returns None when the path already ends in a compaction or the first kept entry has no id.
    A previous compaction bounds the search: it starts at that compaction's first kept entry,
    and its summary and file lists carry over.
    """
    if path_entries and path_entries[-1].get("type") == "compaction":
        return None
    prev_index = next(
        (
            i
            for i in range(len(path_entries) - 1, -1, -1)
            if path_entries[i].get("type") == "compaction"
        ),
        -1,
    )
    previous_summary: str | None = None
    boundary_start = 0
    if prev_index >= 0:
        previous = path_entries[prev_index]
        previous_summary = previous.get("summary")
        kept = next(
            (i for i, e in enumerate(path_entries) if _same(e, "id", previous, "firstKeptEntryId")),
            -1,
        )
        boundary_start = kept if kept >= 0 else prev_index + 1
    tokens_before = estimate_context_tokens(
        build_session_context(path_entries).messages, estimate
    ).tokens
    cut = find_cut_point(
        path_entries,
        boundary_start,
        len(path_entries),
        _setting_number(settings, "keepRecentTokens"),
        estimate,
    )
    first_kept = (
        path_entries[cut.first_kept_entry_index]
        if cut.first_kept_entry_index < len(path_entries)
        else None
    )
    if first_kept is None or not js_truthy(first_kept.get("id")):
        return None  # Pi: the session needs migration
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index

    def messages_between(start: int, end: int) -> list[PiMessage]:
        found = (_message_for_compaction(path_entries[i]) for i in range(start, end))
        return [m for m in found if m is not None]

    to_summarize = messages_between(boundary_start, history_end)
    turn_prefix = (
        messages_between(cut.turn_start_index, cut.first_kept_entry_index)
        if cut.is_split_turn
        else []
    )
    file_ops = create_file_ops()
    if prev_index >= 0:
        previous = path_entries[prev_index]
        details = previous.get("details")
        if (
            not js_truthy(previous.get("fromHook"))
            and js_truthy(details)
            and isinstance(details, Mapping)
        ):
            for path in _string_list(details.get("readFiles"), "details.readFiles"):
                file_ops.read.setdefault(path, None)
            for path in _string_list(details.get("modifiedFiles"), "details.modifiedFiles"):
                file_ops.edited.setdefault(path, None)
    for message in (*to_summarize, *turn_prefix):
        extract_file_ops_from_message(message, file_ops)
    return CompactionPreparation(
        first_kept.get("id"),
        to_summarize,
        turn_prefix,
        cut.is_split_turn,
        tokens_before,
        previous_summary,
        file_ops,
        settings,
    )
