"""Compaction policies: which messages to summarize, which to keep verbatim.

Both policies are pure planners over history items (stable index + normalized record + tokens);
they never call a summarizer. :class:`TokenBudgetCompaction` (Pi) runs Pi's own
``find_cut_point`` on our records converted by ``convert.py``; :class:`SimpleCompaction` (Kimi
CLI) keeps the last N user/assistant messages. Neither cuts on a message carrying tool results,
so a tool call and its results are never split. File tracking is Pi's for both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from .._config import check_int
from ..errors import CompactionError, ConfigurationError, NothingToCompactError
from ..messages import Message
from .convert import PiView, as_records, to_pi_entries
from .pi_rules import (
    DEFAULT_COMPACTION_SETTINGS,
    FileOps,
    PiMessage,
    compute_file_lists,
    convert_to_llm,
    estimate_tokens,
    extract_file_ops_from_message,
    find_cut_point,
    format_file_operations,
    serialize_conversation,
)
from .prompts import (
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SYSTEM_PROMPT,
    file_blocks_start,
    summary_request_text,
    turn_prefix_request_text,
)
from .summarizers import SummaryRequest


class HistoryLike(Protocol):
    """What a policy reads from ``manager.history()`` items."""

    @property
    def index(self) -> int: ...
    @property
    def record(self) -> Message: ...
    @property
    def tokens(self) -> int: ...


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What one compaction will do, decided before any summarizer runs.

    ``to_summarize`` feeds the main summary; with a split turn ``turn_prefix`` (the cut turn's
    start up to ``first_kept_index``) gets its own summary. Texts are ready to send.
    """

    first_kept_index: int
    to_summarize: tuple[Message, ...]
    turn_prefix: tuple[Message, ...]
    is_split_turn: bool
    conversation: str
    prefix_conversation: str
    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]
    summary_max_tokens: int
    prefix_max_tokens: int

    def requests(self, previous_summary: str | None, focus: str | None) -> list[SummaryRequest]:
        """The main request (skipped when only a split turn's prefix is new), then the prefix."""
        out = []
        if self.to_summarize:
            out.append(
                SummaryRequest(
                    SYSTEM_PROMPT,
                    summary_request_text(self.conversation, previous_summary, focus),
                    self.summary_max_tokens,
                    "summary",
                    self.to_summarize,
                    previous_summary,
                    focus,
                )
            )
        if self.is_split_turn:
            out.append(
                SummaryRequest(
                    SYSTEM_PROMPT,
                    turn_prefix_request_text(self.prefix_conversation),
                    self.prefix_max_tokens,
                    "turn_prefix",
                    self.turn_prefix,
                    None,
                    focus,
                )
            )
        return out

    def combine(self, texts: Sequence[str], previous_summary: str | None) -> str:
        """One summary text: main part, split-turn part, then the file-list blocks."""
        texts = list(texts)
        if self.to_summarize:
            summary = texts.pop(0)
        else:  # nothing new before the turn: the previous summary still holds
            summary = (
                previous_summary[: file_blocks_start(previous_summary)]
                if previous_summary
                else NO_PRIOR_HISTORY
            )
        if self.is_split_turn:
            summary += SPLIT_TURN_SEPARATOR + texts.pop(0)
        read, modified, left_out = cap_file_lists(
            self.read_files, self.modified_files, self.summary_max_tokens
        )
        note = f"\n\n({left_out} more files not listed)" if left_out else ""
        return summary + format_file_operations(read, modified) + note


def cap_file_lists(
    read: Sequence[str], modified: Sequence[str], budget_tokens: int
) -> tuple[list[str], list[str], int]:
    """Deduplicated lists within about a quarter of ``budget_tokens`` (4 chars a token).

    Pi appends every file ever read after the summary; after ~1,000 reads that alone exceeds a
    small window. Modified files go first (they matter more), most recent last in each list;
    the count of those left out is returned so the summary can say so.
    """
    room = max(budget_tokens, 64)  # chars: a quarter of the tokens x 4 chars per token
    out_mod: list[str] = []
    out_read: list[str] = []
    seen: set[str] = set()
    total = dropped = 0
    for path, out in [*((p, out_mod) for p in modified), *((p, out_read) for p in read)]:
        if path in seen:
            continue
        seen.add(path)
        if total + len(path) + 1 > room:
            dropped += 1
            continue
        total += len(path) + 1
        out.append(path)
    return out_read, out_mod, dropped


class CompactionPolicy(Protocol):
    """Decides the cut; ``previous_details`` carries file lists from the last round."""

    @property
    def name(self) -> str: ...

    def plan(
        self,
        items: Sequence[HistoryLike],
        previous_details: Mapping[str, Sequence[str]] | None = None,
    ) -> CompactionPlan: ...


FILE_TOOL_KINDS = ("read", "write", "edit")
_PATH_KEYS = ("path", "file_path", "filePath", "filename")


def _check_file_tools(file_tools: Mapping[str, str] | None) -> None:
    for name, kind in (file_tools or {}).items():
        if kind not in FILE_TOOL_KINDS:
            raise ConfigurationError(
                f"file_tools maps {name!r} to {kind!r}; map tool names to one of "
                f"{', '.join(FILE_TOOL_KINDS)}"
            )


def _aliased(message: PiMessage, file_tools: Mapping[str, str]) -> PiMessage:
    """A copy whose aliased tool calls look like Pi's read / write / edit calls."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return message
    blocks = []
    for block in content:
        kind = file_tools.get(block.get("name", "")) if block.get("type") == "toolCall" else None
        if kind is not None:
            args = block.get("arguments")
            path = next(
                (
                    args[k]
                    for k in _PATH_KEYS
                    if isinstance(args, Mapping) and isinstance(args.get(k), str)
                ),
                None,
            )
            block = {**block, "name": kind, "arguments": {"path": path} if path else {}}
        blocks.append(block)
    return {**message, "content": blocks}


def _file_lists(
    pi_messages: Sequence[PiMessage],
    previous_details: Mapping[str, Sequence[str]] | None,
    file_tools: Mapping[str, str] | None = None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Pi's rule: earlier read files stay read, earlier modified ones count as edited.

    Pi tracks tools named read / write / edit with a ``path`` argument; ``file_tools`` maps
    other tool names (e.g. ``{"read_file": "read"}``) onto those, taking the path from
    ``path``, ``file_path``, ``filePath`` or ``filename``.
    """
    ops = FileOps()
    if previous_details:
        ops.read.update(dict.fromkeys(previous_details.get("read_files", ())))
        ops.edited.update(dict.fromkeys(previous_details.get("modified_files", ())))
    for message in pi_messages:
        extract_file_ops_from_message(_aliased(message, file_tools) if file_tools else message, ops)
    read, modified = compute_file_lists(ops)
    return tuple(read), tuple(modified)


def _group_start(items: Sequence[HistoryLike], position: int) -> int:
    """Move back off messages carrying tool results: the cut lands on the group's start."""
    while 0 < position < len(items) and items[position].record.result_ids:
        position -= 1
    return position


class HistoryCut(NamedTuple):
    """A cut in item positions: keep from ``first``; ``turn`` starts a split turn (else -1)."""

    first: int
    turn: int
    is_split_turn: bool


def _nothing_to_compact(why: str) -> CompactionError:
    return NothingToCompactError(f"nothing to compact: {why}")


@dataclass(frozen=True, slots=True)
class TokenBudgetCompaction:
    """Pi's policy: keep the newest ``keep_recent_tokens``, cut only at valid cut points.

    Cut points come from Pi's ``find_cut_point`` on the converted history, so they equal Pi's.
    ``token_source="pi"`` (default) walks Pi's chars/4 estimates, exactly as Pi does;
    ``"manager"`` walks the counts the manager's own counter made. The summary may use
    ``0.8 * reserve_tokens`` output tokens, a split turn's prefix summary ``0.5 *``.
    ``file_tools`` maps your tool names onto Pi's read / write / edit for file tracking.
    ``keep_facts`` (default on) appends the facts the summary lost (see ``manifest.py``).
    """

    keep_recent_tokens: int = int(DEFAULT_COMPACTION_SETTINGS["keepRecentTokens"])
    reserve_tokens: int = int(DEFAULT_COMPACTION_SETTINGS["reserveTokens"])
    token_source: Literal["pi", "manager"] = "pi"
    file_tools: Mapping[str, str] | None = field(default=None, hash=False)
    name: str = "token_budget"
    keep_facts: bool = True

    def __post_init__(self) -> None:
        _check_file_tools(self.file_tools)
        check_int("keep_recent_tokens", self.keep_recent_tokens)
        check_int("reserve_tokens", self.reserve_tokens, 2)
        if self.token_source not in ("pi", "manager"):
            raise ConfigurationError(
                f"token_source must be 'pi' or 'manager', got {self.token_source!r}"
            )

    @classmethod
    def for_budget(cls, budget_tokens: int) -> TokenBudgetCompaction:
        """Pi's defaults, scaled to a quarter of the budget each when the budget is small."""
        if budget_tokens >= 80_000:
            return cls()
        quarter = max(2, budget_tokens // 4)
        return cls(keep_recent_tokens=quarter, reserve_tokens=quarter)

    def find_cut(self, items: Sequence[HistoryLike]) -> tuple[PiView, HistoryCut]:
        """Pi's cut over ``items`` (positions into ``items``), moved to a group start."""
        view = to_pi_entries([it.record for it in items], [it.index for it in items])
        entries = view.entries
        estimate = estimate_tokens
        if self.token_source == "manager":
            counted: dict[int, int] = {}
            seen: set[int] = set()
            for entry, owner in zip(entries, view.owners, strict=True):
                # a record split into several Pi messages is charged once, on its first one
                counted[id(entry["message"])] = 0 if owner in seen else items[owner].tokens
                seen.add(owner)
            estimate = lambda message: counted[id(message)]  # noqa: E731
        cut = find_cut_point(entries, 0, len(entries), self.keep_recent_tokens, estimate)
        first = view.owners[cut.first_kept_entry_index] if entries else 0
        first = _group_start(items, first)
        turn = view.owners[cut.turn_start_index] if cut.is_split_turn else -1
        split = cut.is_split_turn and turn < first
        return view, HistoryCut(first, turn if split else -1, split)

    def plan(
        self,
        items: Sequence[HistoryLike],
        previous_details: Mapping[str, Sequence[str]] | None = None,
    ) -> CompactionPlan:
        view, cut = self.find_cut(items)
        first, turn, split = cut
        history_end = turn if split else first
        if first == 0:
            raise _nothing_to_compact(
                f"the newest {self.keep_recent_tokens} tokens already hold the whole history "
                "(lower keep_recent_tokens or add more messages)"
            )
        summarize_pi = view.messages(0, history_end)
        prefix_pi = view.messages(turn, first) if split else []
        read, modified = _file_lists([*summarize_pi, *prefix_pi], previous_details, self.file_tools)
        return CompactionPlan(
            first_kept_index=items[first].index,
            to_summarize=tuple(it.record for it in items[:history_end]),
            turn_prefix=tuple(it.record for it in items[turn:first]) if split else (),
            is_split_turn=split,
            conversation=serialize_conversation(convert_to_llm(summarize_pi)),
            prefix_conversation=serialize_conversation(convert_to_llm(prefix_pi)),
            read_files=read,
            modified_files=modified,
            summary_max_tokens=int(0.8 * self.reserve_tokens),
            prefix_max_tokens=int(0.5 * self.reserve_tokens),
        )


def _kimi_content(rec: Message) -> str:
    """A record's content as one text (tool calls and results spelled out)."""
    parts = [rec.text] if rec.text else []
    parts += [f"[tool call {c.id}] {c.name}({c.arguments})" for c in rec.tool_calls]
    if rec.tool_call_id:
        parts = [f"[tool result {rec.tool_call_id}] {rec.text}"]
    parts += [
        f"[tool result {r.call_id}{' error' if r.is_error else ''}] {r.text}"
        for r in rec.tool_results
    ]
    return "\n".join(parts)


def kimi_history_text(records: Sequence[Message]) -> str:
    """Kimi CLI's layout: ``## Message i`` / ``Role: …`` / ``Content: …`` blocks, 1-based.

    ``records`` are :class:`Message` records or any accepted messages (checked at the door)."""
    return "\n\n".join(
        f"## Message {i}\nRole: {rec.role}\nContent: {_kimi_content(rec)}"
        for i, rec in enumerate(as_records(records), 1)
    )


@dataclass(frozen=True, slots=True)
class SimpleCompaction:
    """Kimi CLI's policy: keep the last ``max_preserved_messages`` user/assistant messages and
    everything after them; summarize the rest (the summary may use ``max_summary_tokens``).

    Messages carrying tool results are not counted (they belong to their call's group), so the
    kept part never starts inside a tool group. ``file_tools`` and ``keep_facts`` as in
    :class:`TokenBudgetCompaction`.
    """

    max_preserved_messages: int = 2
    max_summary_tokens: int = 8192
    file_tools: Mapping[str, str] | None = field(default=None, hash=False)
    name: str = "simple"
    keep_facts: bool = True

    def __post_init__(self) -> None:
        _check_file_tools(self.file_tools)
        check_int("max_preserved_messages", self.max_preserved_messages, 1)
        check_int("max_summary_tokens", self.max_summary_tokens, 1)

    def plan(
        self,
        items: Sequence[HistoryLike],
        previous_details: Mapping[str, Sequence[str]] | None = None,
    ) -> CompactionPlan:
        found, start = 0, len(items)
        for position in range(len(items) - 1, -1, -1):
            rec = items[position].record
            if rec.role in ("user", "assistant") and not rec.result_ids:
                found += 1
                if found == self.max_preserved_messages:
                    start = position
                    break
        start = _group_start(items, start)
        if found < self.max_preserved_messages or start == 0:
            raise _nothing_to_compact(
                f"the last {self.max_preserved_messages} user/assistant messages already start "
                "the history"
            )
        records = tuple(it.record for it in items[:start])
        view = to_pi_entries(records)
        read, modified = _file_lists(
            [e["message"] for e in view.entries], previous_details, self.file_tools
        )
        return CompactionPlan(
            first_kept_index=items[start].index,
            to_summarize=records,
            turn_prefix=(),
            is_split_turn=False,
            conversation=kimi_history_text(records),
            prefix_conversation="",
            read_files=read,
            modified_files=modified,
            summary_max_tokens=self.max_summary_tokens,
            prefix_max_tokens=0,
        )
