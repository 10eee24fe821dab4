"""Replaying a session's lines into what a restore needs: the messages with their attributes
and counts, and the metadata a manager is rebuilt from (``Replayer``, shared by restore and
revert so both read lines identically). The line format itself is in ``records.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._config import SAFE_INT
from ..errors import ContextManagerError, InvalidMessageError
from ..messages import codec
from ._line_ends import COMPACTION_LINE, MESSAGE_LINE, METADATA_LINES, LineEnds
from ._lines import corrupt_line
from .protocol import Skipped, Tail
from .records import (
    ATTRS_KEY,
    CHECKPOINT,
    COMPACTION,
    COUNT_KEY,
    HISTORY_KEY,
    ID_KEY,
    SYSTEM_PROMPT,
    USAGE,
    _Invalid,
    _is_int,
    parse_record,
    read_record,
)

logger = logging.getLogger("context_manager.store")


@dataclass(slots=True)
class StoredMessage:
    """A message as persisted, with the attributes it was added with and its 1-based line."""

    message: Any
    pinned: bool = False
    priority: int = 0
    line: int = 0
    #: The client-made id the line carried (None for lines written by other tools).
    record_id: str | None = None
    #: ``(tokens, counter fingerprint)`` the writer counted it at (None: not recorded).
    count: tuple[int, str] | None = None
    #: Its history index, when messages before it were skipped (read from a compaction on).
    index: int | None = None


class Resume(NamedTuple):
    """What a reader needs to leave the oldest message lines unread (``_replay.resume_key``).

    ``fingerprint``: the manager's counter's (a count stored under it is the manager's own).
    ``reach``: when the manager keeps every message and sends the newest that fit, the stored
    tokens of the newest messages to read at least; the lines before them are left unread
    (:class:`UnreadRun`). None: start only at the latest compaction.
    """

    fingerprint: str
    reach: int | None = None


@dataclass(slots=True)
class UnreadRun:
    """Consecutive message lines an open left unread (older than what a request can reach),
    with what the manager needs of them before it reads them: how many, and their tokens.

    ``lines``: the lines, when the open fetched them; else the open was a SQL store's
    ``tail``, and the session's store reads them (``JournalCore.read_older``)."""

    lines: list[tuple[int, bytes, bool]]
    tokens: int = 0
    count: int = 0
    tail: Tail | None = None


#: What a read yields, in file order: messages, runs of message lines left unread, and metadata
#: records (each with its line number as ``"_line"``).
Item = StoredMessage | UnreadRun | dict[str, Any]
Records = list[Item]


@dataclass
class RestoredLog:
    """What a log replays to: the quantities Kimi CLI's ``Context.restore`` yields, plus ours."""

    messages: list[StoredMessage] = field(default_factory=list)
    token_count: int = 0
    next_checkpoint_id: int = 0
    system_prompt: str | None = None
    #: The system prompt as it was set (a message object or dict), when it was not plain text.
    system_message: Any = None
    compaction: dict[str, Any] | None = None
    # How many messages preceded the latest compaction line (its entry's indices refer to them).
    messages_before_compaction: int = 0
    skipped_lines: list[int] = field(default_factory=list)
    torn_tail: bool = False
    #: Messages in the manager's history since the log's last clear (its next history index),
    #: and, for each message record the manager did not take into its history (one it
    #: rejected, or a system message it made its prompt), the history index it stood before.
    #: A compaction's ``first_kept_index`` is written in message records of the log, not in
    #: history indices, so a reader that replays the same records finds the same cut.
    history: int = 0
    history_gaps: list[int] = field(default_factory=list)
    #: Message records left out before the first one read (the reader started at the latest
    #: compaction: :meth:`Replayer.of_lines`); they are all in the history, so the first message
    #: read has this history index.
    history_start: int = 0
    #: ``(line, reason, complete)`` of the lines skipped but not yet reported: a read from a
    #: compaction on reports them once its replay succeeded (:func:`report_lines`), so an open
    #: that falls back to every record reports each line once.
    unreported: list[tuple[int, str, bool]] = field(default_factory=list)

    @property
    def n_checkpoints(self) -> int:
        return self.next_checkpoint_id


_REPLAY_ERRORS = (
    ContextManagerError,
    TypeError,
    ValueError,
    KeyError,
    AttributeError,
    RecursionError,
    OverflowError,
)


class Replayer:
    """Applies records in order; shared by restore and revert so both read lines identically."""

    def __init__(self, path: str, *, strict: bool, defer_messages: bool = False) -> None:
        self.path = path
        self.strict = strict
        # Deferred: a message line is read once, by the manager it is replayed into (strict
        # reads stay eager, so a strict open or reload fails before memory changes).
        self._check_messages = strict or not defer_messages
        self.state = RestoredLog()
        #: Report skipped lines later (``RestoredLog.unreported``), not as they are met.
        self.defer_reports = False
        # Every valid record in file order (messages as StoredMessage), for ordered replay.
        self.sequence: Records = []

    @classmethod
    def of_rows(
        cls,
        path: str,
        rows: Iterable[tuple[int, bytes]],
        *,
        strict: bool,
        resume: Resume | None = None,
    ) -> Replayer:
        """A store's ``(position, line)`` rows replayed for a manager (which reads each message
        itself: ``defer_messages``); every row is complete (databases store whole records)."""
        lines = [(position + 1, raw, True) for position, raw in rows]
        return cls.of_lines(path, lines, strict=strict, defer_messages=True, resume=resume)

    @classmethod
    def of_lines(
        cls,
        path: str,
        lines: Sequence[tuple[int, bytes, bool]],
        *,
        strict: bool,
        defer_messages: bool,
        resume: Resume | None = None,
    ) -> Replayer:
        """``(number, line, complete)`` lines replayed; with ``resume`` (for a manager whose
        strategy never evicts) from the latest compaction on, or, in a session never compacted,
        with the message lines older than ``resume.reach`` left unread (:meth:`_tail`).

        That compaction names, in history indices, the messages the manager still held after
        it: the first one from its cut on, and those before it (pins, the latest user turn);
        written only when every message record before the cut is in the history. The other
        message lines before the cut are not decoded: their messages are not held. The records
        that are not messages are (system prompt, usage, checkpoints, earlier compactions), and
        the reader falls back to every line when one of them needs the messages: a usage report
        without our count under ``resume`` (it would be counted again from the replayed state),
        or an earlier compaction that names its cut only as a line index.
        """
        if resume is not None and not strict:
            for start in (cls._resume, cls._tail):
                replayer = cls(path, strict=strict, defer_messages=defer_messages)
                replayer.defer_reports = True  # this pass may be dropped for a full one
                if start(replayer, lines, resume):
                    return replayer
        replayer = cls(path, strict=strict, defer_messages=defer_messages)
        for number, raw, complete in lines:
            replayer.feed(number, raw, complete)
        return replayer

    def _resume(self, lines: Sequence[tuple[int, bytes, bool] | Skipped], resume: Resume) -> bool:
        """Replay ``lines`` from the latest compaction's resume point (:meth:`of_lines`); False
        when it cannot (this replayer is then spent).

        Of the message lines before the point, only those of messages still held are read;
        each message read after a skipped one carries its history index. Up to that compaction,
        every metadata record must replay the same without the messages skipped
        (:func:`_replayable_alone`): those after the point too, since the state they are
        replayed into lacks the messages skipped. A SQL or Redis read leaves those out as
        :class:`Skipped` runs (``_tail_read.load_tail``)."""
        skip, at, below = resume_point(lines)
        if not skip:
            return False
        fingerprint, sequence, seen = resume.fingerprint, self.sequence, 0
        for k, line in enumerate(lines):
            if isinstance(line, Skipped):
                end = seen + line.messages
                if end > skip or any(seen <= held < end for held in below):
                    return False
                seen = end
                continue
            number, raw, complete = line
            if seen < skip and raw.startswith(MESSAGE_LINE) and raw[9:10] != b"_":
                ordinal, seen = seen, seen + 1  # a message line of ours: read if still held
                if ordinal in below and not self._held(number, raw, complete, ordinal):
                    return False
                continue
            before = len(sequence)
            record = self.feed(number, raw, complete)
            if record is None or len(sequence) == before:  # blank, or skipped as unreadable
                continue
            item = sequence[-1]
            if isinstance(item, StoredMessage):
                if seen < skip and seen not in below:  # another writer's line, left out
                    sequence.pop()
                    self.state.messages.pop()
                elif seen <= skip:
                    item.index = seen
                seen += 1
            elif k < at and not _replayable_alone(record, fingerprint):
                return False
        self.state.history_start = skip
        return seen >= skip

    def _tail(self, lines: Sequence[tuple[int, bytes, bool]], resume: Resume) -> bool:
        """Replay ``lines`` leaving the message lines before ``LineEnds.tail_start`` unread
        (False: it cannot; this replayer is then spent).

        Each run of them becomes one :class:`UnreadRun` in the sequence, in file order, so a
        ``_usage`` record between them still anchors on the tokens before it. The records
        that are not messages are read, and each must replay the same without the messages
        (:func:`_replayable_alone`); each line left unread must be one the full read would take
        as it is (``_line_ends.LineEnds.tokens``).
        """
        ends = LineEnds(resume.fingerprint)
        cut = ends.tail_start(lines, resume.reach)
        if not cut:
            return False
        older: list[UnreadRun | tuple[int, bytes, bool]] = []
        for line in lines[:cut]:
            raw = line[1]
            if raw.startswith(METADATA_LINES):
                older.append(line)
                continue
            tokens = ends.tokens(raw)
            if tokens is None:
                return False
            run = older[-1] if older else None
            if not isinstance(run, UnreadRun):
                older.append(run := UnreadRun([]))
            run.lines.append(line)
            run.count += 1
            run.tokens += tokens
        return self._after_unread(older, lines[cut:], resume.fingerprint)

    @classmethod
    def of_tail(cls, path: str, tail: Tail, resume: Resume) -> Replayer | None:
        """A SQL or Redis store's newest records (``_tail_read.load_tail``) replayed with the
        message records before them unread, as :meth:`_tail` replays a whole read, or from the
        latest compaction on (``Tail.resumed``, :meth:`_resume`); None: every record must be
        read."""
        replayer = cls(path, strict=False, defer_messages=True)
        replayer.defer_reports = True
        if tail.resumed is not None:
            return replayer if replayer._resume(tail.resumed, resume) else None
        if not tail.cut:
            return cls.of_lines(path, tail.lines, strict=False, defer_messages=True, resume=resume)
        older: list[UnreadRun | tuple[int, bytes, bool]] = []
        position = tokens = 0  # after the previous record that is no message
        for at, raw, upto in [*tail.older, (tail.cut, b"", tail.tokens)]:
            if at > position:
                older.append(UnreadRun([], upto - tokens, at - position, tail))
            if raw:
                older.append((at + 1, raw, True))
            position, tokens = at + 1, upto
        if not replayer._after_unread(older, tail.lines, resume.fingerprint):
            return None
        return replayer

    def _after_unread(
        self,
        older: list[UnreadRun | tuple[int, bytes, bool]],
        tail: Sequence[tuple[int, bytes, bool]],
        fingerprint: str,
    ) -> bool:
        """Replay the runs of message lines left unread and the lines between them, in order,
        then the ``tail`` (False: a record among the older ones needs the messages)."""
        for item in older:
            if isinstance(item, UnreadRun):
                self.sequence.append(item)
                continue
            record = self.feed(*item)
            if record is not None and (
                record["role"] == COMPACTION or not _replayable_alone(record, fingerprint)
            ):
                return False
        for number, raw, complete in tail:
            self.feed(number, raw, complete)
        return True

    def _held(self, number: int, raw: bytes, complete: bool, index: int) -> bool:
        """Read a message line the compaction left held, at history ``index`` (False: it
        cannot be read, so nothing can be skipped)."""
        before = len(self.sequence)
        self.feed(number, raw, complete)
        item = self.sequence[-1] if len(self.sequence) > before else None
        if isinstance(item, StoredMessage):
            item.index = index
        return item is not None

    def feed(self, number: int, raw: bytes, complete: bool) -> dict[str, Any] | None:
        """Apply one line; return its record, or None when it is blank or skipped."""
        if not raw.strip():
            return None
        try:
            record = parse_record(raw, check_message=self._check_messages)
        except _Invalid as exc:
            self._bad_line(number, str(exc), complete)
            return None
        try:
            self.apply(record, number)
        except _REPLAY_ERRORS as exc:  # a field of a valid-looking line the replay cannot use
            self._bad_line(number, f"{type(exc).__name__}: {exc}", complete)
            return None
        return record

    def _bad_line(self, number: int, reason: str, complete: bool) -> None:
        if self.defer_reports:
            self.state.unreported.append((number, reason, complete))
        else:
            report_lines(self.path, [(number, reason, complete)], strict=self.strict)
        if complete:
            self.state.skipped_lines.append(number)
        else:
            self.state.torn_tail = True

    def apply(self, record: dict[str, Any], number: int) -> None:
        state = self.state
        role = record["role"]
        if role == SYSTEM_PROMPT:
            original = _decoded_system(record)
            if original is _BAD:
                self._bad_line(number, "its '_cm.message' does not decode", True)
                return
            state.system_prompt = record.get("content")
            state.system_message = original
        elif role == USAGE:
            state.token_count = record["token_count"]
        elif role == CHECKPOINT:
            state.next_checkpoint_id = record["id"] + 1
        elif role == COMPACTION:
            state.compaction = {k: v for k, v in record.items() if k not in ("role", "content")}
            state.messages_before_compaction = len(state.messages)
        if not role.startswith("_"):
            attrs = record.pop(ATTRS_KEY, None) or {}
            message: Any = record
            if "type" in attrs:  # an object stored losslessly: rebuild it
                try:
                    message = codec.decode(attrs.get("payload"), str(attrs["type"]))
                except InvalidMessageError as exc:
                    self._bad_line(number, str(exc), True)
                    return
            rid = attrs.get(ID_KEY)
            stored = StoredMessage(
                message,
                pinned=bool(attrs.get("pinned", False)),
                priority=int(attrs.get("priority", 0)),
                line=number,
                record_id=rid if isinstance(rid, str) else None,
                count=_message_count(attrs.get(COUNT_KEY)),
            )
            state.messages.append(stored)
            self.sequence.append(stored)
        else:
            self.sequence.append({**record, "_line": number})


def report_lines(path: str, lines: Iterable[tuple[int, str, bool]], *, strict: bool) -> None:
    """Report skipped ``(line, reason, complete)`` lines: a torn last line as never fully
    written, any other as corrupt (``strict``: a typed error)."""
    for number, reason, complete in lines:
        if complete:
            corrupt_line(path, number, reason, strict=strict)
        else:
            logger.warning(
                "%s: ignoring torn last line %d (%s); it was never fully written",
                path,
                number,
                reason,
            )


def resume_point(
    lines: Sequence[tuple[int, bytes, bool] | Skipped],
) -> tuple[int, int, frozenset[int]]:
    """Where the latest compaction says a reader may start (0: nowhere), the index of its line
    in ``lines``, and the history indices of the messages held before that point."""
    for k in range(len(lines) - 1, -1, -1):
        line = lines[k]
        if not isinstance(line, Skipped) and line[1].startswith(COMPACTION_LINE):
            found = read_record(line[1], check_message=False)
            history = _history(found) if isinstance(found, dict) else None
            kept = stored_kept(found) if isinstance(found, dict) else None
            if history is None or kept is None or len(history) != 3:
                return 0, k, frozenset()
            start, below = history[1], history[2]
            # Never past the cut (what the compaction kept is held); held ones before it.
            if type(start) is not int or not 0 < start <= kept or not isinstance(below, list):
                return 0, k, frozenset()
            held = frozenset(i for i in below if type(i) is int and 0 <= i < start)
            return (start, k, held) if len(held) == len(below) else (0, k, frozenset())
    return 0, 0, frozenset()


def _history(record: Mapping[str, Any]) -> list[Any] | None:
    """A compaction record's ``[kept, start, [held before start]]`` (``[kept, None]``: no
    starting point; None: none of it)."""
    attrs = record.get(ATTRS_KEY)
    value = attrs.get(HISTORY_KEY) if isinstance(attrs, Mapping) else None
    return value if isinstance(value, list) and len(value) in (2, 3) else None


def stored_kept(record: Mapping[str, Any]) -> int | None:
    """The history index of the first message a compaction record kept, when it says."""
    history = _history(record)
    kept = history[0] if history is not None else None
    return kept if type(kept) is int and 0 <= kept <= SAFE_INT else None


def _replayable_alone(record: Mapping[str, Any], fingerprint: str) -> bool:
    """Whether a metadata record replays the same without the messages before it."""
    role = record["role"]
    if role == USAGE:
        return usage_count(record, fingerprint) is not None
    return role != COMPACTION or stored_kept(record) is not None


def usage_count(
    record: Mapping[str, Any], fingerprint: str | None
) -> tuple[int | None, str] | None:
    """A ``_usage`` record's count of the context it measured, when counted under
    ``fingerprint`` (None: the replay counts the replayed context instead)."""
    attrs = record.get(ATTRS_KEY)
    value = attrs.get(COUNT_KEY) if isinstance(attrs, dict) else None
    count = stored_count(value, none_sent=True)
    return count if count is not None and count[1] == fingerprint else None


def stored_count(value: Any, *, none_sent: bool = False) -> tuple[int | None, str] | None:
    """A line's ``[tokens, fingerprint]``, or None when it has none or it is malformed (another
    tool's value, or damage: the message is then counted, the report's context counted again,
    never refused for it). ``none_sent``: a ``_usage`` line's ``[null, fingerprint]`` (nothing
    fitted, nothing was sent) is a count too."""
    if (
        isinstance(value, list)
        and len(value) == 2
        and ((_is_int(value[0]) and 0 <= value[0] <= SAFE_INT) or (none_sent and value[0] is None))
        and isinstance(value[1], str)
    ):
        return value[0], value[1]
    return None


def _message_count(value: Any) -> tuple[int, str] | None:
    count = stored_count(value)
    return None if count is None or count[0] is None else (count[0], count[1])


_BAD: Any = object()


def _decoded_system(record: Mapping[str, Any]) -> Any:
    """The system prompt object a ``_system_prompt`` line carries in ``_cm`` (None: plain text)."""
    attrs = record.get(ATTRS_KEY)
    if not isinstance(attrs, Mapping) or "message" not in attrs:
        return None
    try:
        return codec.decode(attrs["message"], attrs.get("type"))
    except InvalidMessageError:
        return _BAD
