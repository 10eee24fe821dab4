"""Records back into a manager, and a manager's changes into records: the rules both journals
(``session.SessionStore``, ``async_session.AsyncSessionStore``) and every open share.

Replay follows file order, so a ``_usage`` record anchors the count at the same point it did
originally, and a ``_compaction`` record is re-applied (``apply_compaction``) after exactly the
messages that preceded it.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .._config import checked_hook
from ..budget.calibration import LOW
from ..budget.strategies import SlidingWindow, destructive
from ..errors import ContextManagerError, StoreCorruptionError
from ..events import Compacted
from ..host import ManagerHost
from ..messages.codec import check_json, decode, encode
from ..messages.nesting import short_repr
from ._lines import corrupt_line, message_problem
from .records import (
    ATTRS_KEY,
    CHECKPOINT,
    COMPACTION,
    HISTORY_KEY,
    SYSTEM_PROMPT,
    USAGE,
)
from .replayer import (
    Records,
    RestoredLog,
    Resume,
    StoredMessage,
    UnreadRun,
    report_lines,
    stored_kept,
    usage_count,
)

__all__ = [
    "Unresumable",
    "compaction_record",
    "new_manager",
    "replay",
    "resume_key",
    "set_hooks",
    "system_original",
]

if TYPE_CHECKING:
    from ._unread import UnreadHistory

logger = logging.getLogger("context_manager.store")

M = TypeVar("M", bound=ManagerHost)


def new_manager(cls: type[M], options: dict[str, Any]) -> tuple[M, Any, dict[str, Any]]:
    """A manager built with ``options`` for a session to be replayed into, with what is set
    once it is: the ``system_prompt`` option (set once a journal is attached, so a prompt that
    differs from the logged one is persisted) and the callbacks (replaying history must not
    fire them again)."""
    system_prompt = options.pop("system_prompt", None)
    hooks = {name: options.pop(name, None) for name in _HOOKS}
    return cls(**options), system_prompt, hooks


def resume_key(manager: ManagerHost) -> Resume | None:
    """What a reader needs to open a session into ``manager`` without reading every message
    (``Replayer.of_lines``), or None when it must read every record: a strategy that evicts on
    add (what it held depends on every add), repair on (its repairer follows every message), or
    a counter without a fingerprint (no stored count is its own).

    A manager that keeps every message and sends the newest that fit (the sliding window) may
    also leave unread what lies beyond twice its budget: calibration sends at most that many
    counted tokens (it ignores ratios under ``calibration.LOW``, 0.5), and a request reaching
    further (pins) reads them first (``MessageContextManager.hold_unread``). Not
    with a retention ratio (its cut is placed from the first message held) or pruning (it
    weighs every result held).
    """
    if destructive(manager.strategy) or manager.repair:
        return None
    fingerprint = manager.counter.fingerprint()
    if fingerprint is None:
        return None
    strategy = manager.strategy
    window = type(strategy) is SlidingWindow and strategy.retention_ratio is None
    # (a retained cut is placed from the first group held; pruning weighs every result)
    reach = int(manager.budget_tokens / LOW) if window and manager.pruning is None else None
    return Resume(fingerprint, reach)


_HOOKS = ("on_evict", "on_near_limit")


def set_hooks(manager: ManagerHost, hooks: Mapping[str, Any]) -> None:
    """The callbacks an open passes (absent ones off: a reused manager keeps none of its last
    request's)."""
    for name in _HOOKS:
        hook = hooks.get(name)
        setattr(manager, name, None if hook is None else checked_hook(name, hook))


def compaction_record(change: Compacted, log: RestoredLog) -> dict[str, Any]:
    """The entry's own fields, plus what replay needs: the cut, as the index of a message record
    of the log (``log``: what the journal knows of the records it did not put in the history),
    and the summary message sent."""
    entry: Any = change.entry
    fields: dict[str, Any] = {}
    if entry is not None and hasattr(entry, "to_dict"):
        fields.update(entry.to_dict())
    elif isinstance(entry, Mapping):
        fields.update(entry)
    kept, held = change.first_kept_index, change.held
    fields["first_kept_index"] = kept + bisect.bisect_right(log.history_gaps, kept)
    # The same cut in history indices, and what a reader replays (Replayer._resume): the first
    # message held from the cut on, and those held before it. None when a message record
    # before it is not in the history, or a line of this generation was skipped as unreadable
    # (a reader counts the message lines before it unread: the indices would shift).
    if held is None or log.skipped_lines or bisect.bisect_right(log.history_gaps, held[1]):
        fields[ATTRS_KEY] = {HISTORY_KEY: [kept, None]}
    else:
        fields[ATTRS_KEY] = {HISTORY_KEY: [kept, held[1], [*held[0]]]}
    if change.summary is not None:
        payload, tag = encode(change.summary)
        fields["summary_message"] = payload if tag is None else {"type": tag, "payload": payload}
    return fields


def _compaction_entry(fields: dict[str, Any]) -> Any:
    """Rebuild the compaction module's entry object when it can be; else keep the dict."""
    try:
        from ..compaction.entry import CompactionEntry
    except ImportError:  # pragma: no cover - compaction is part of the package
        return fields
    try:
        return CompactionEntry.from_dict(fields)
    except (ContextManagerError, TypeError, ValueError):
        return fields  # written by another tool: keep what it said


def system_original(message: Any) -> dict[str, Any] | None:
    """What to keep of a system prompt beyond its text (None for a plain system dict). Its text
    passes the codec's check either way, so a lone surrogate is refused as in a message."""
    if (
        isinstance(message, dict)
        and set(message) == {"role", "content"}
        and message["role"] == "system"
        and isinstance(message["content"], str)
    ):
        check_json(message)
        return None
    payload, tag = encode(message)
    return {"message": payload, "type": tag}


def replay(
    manager: ManagerHost,
    sequence: Records,
    *,
    strict: bool,
    path: str,
    tally: RestoredLog,
    restored: RestoredLog | None = None,
    unread: UnreadHistory | None = None,
) -> None:
    """Apply logged records to ``manager`` in file order (no listener must be attached).

    A run of message lines the reader left unread (:class:`UnreadRun`) goes to ``unread``, and
    the manager holds its messages unread (``hold_unread``): they keep their history indices.

    A compaction's ``first_kept_index`` counts the message records of this file before its
    cut (every clear starts a new file; the writer converts its history index, see
    :func:`compaction_record`): it is mapped onto the history index of the messages replayed.
    ``tally`` learns the history's length and the records it left out (``history_gaps``).

    The manager reads each message (a ``Replayer(defer_messages=True)`` left that to it): one
    it cannot read is reported as the reader reports a corrupt line (``_lines.corrupt_line``:
    by number; strict raises) and, in ``restored``, moved from the messages to the skipped
    lines.
    """
    history_before: list[int] = []  # per message record read: the history index it stood before
    history = tally.history
    gaps = tally.history_gaps
    # Read from the latest compaction on (Replayer.of_lines): the messages read carry the
    # history index they start at, after the ones skipped.
    start = restored.history_start if restored is not None else 0
    unreadable: set[int] = set()
    fingerprint = manager.counter.fingerprint()  # a line counted under it is not recounted
    for item in sequence:
        if isinstance(item, UnreadRun):
            if unread is None:
                raise Unresumable("message lines were left unread, with nowhere to hold them")
            unread.take(item)
            manager.hold_unread(unread, item.count)
            history += item.count
            continue
        if isinstance(item, StoredMessage):
            if item.index is not None:
                manager.start_history(history := item.index)
            history_before.append(history)
            count = item.count
            tokens = count[0] if count is not None and count[1] == fingerprint else None
            prompt_free = not history and manager.system_prompt is None
            try:
                manager.add_counted(
                    item.message, tokens, priority=item.priority, pinned=item.pinned
                )
            except _REPLAY_ERRORS as exc:
                if start:
                    raise Unresumable from exc
                gaps.append(history)
                # Only a refusal pays for reading the message again, to tell which it was.
                problem = message_problem(item.message)
                if problem is None:
                    _rejected(path, item.line, f"{type(exc).__name__}: {exc}", strict)
                else:
                    corrupt_line(path, item.line, problem, strict=strict)
                    unreadable.add(item.line)
                continue
            if prompt_free and manager.system_prompt is not None:
                gaps.append(history)  # a leading system message became the system prompt
            else:
                history += 1
            continue
        try:
            _replay_meta(manager, item, history_before, history, start, path, fingerprint)
        except _REPLAY_ERRORS as exc:
            if start:
                raise Unresumable from exc
            _rejected(path, int(item.get("_line", 0)), f"{type(exc).__name__}: {exc}", strict)
    if start and history < start:  # no message read after the messages skipped
        manager.start_history(history := start)
    tally.history = history
    if restored is not None and unreadable:
        _skip_in(restored, unreadable)
    if restored is not None and restored.unreported:  # the read that deferred them stands
        lines, restored.unreported = restored.unreported, []
        report_lines(path, lines, strict=strict)


class Unresumable(Exception):
    """A replay that started at a compaction met a record it cannot apply (an unreadable
    summary, a refused message): what it skipped may matter, so the open reads everything."""


def _skip_in(restored: RestoredLog, lines: set[int]) -> None:
    """``restored`` as an eager reader would have left it, had it skipped ``lines``."""
    before = restored.messages[: restored.messages_before_compaction]
    restored.messages_before_compaction -= sum(m.line in lines for m in before)
    restored.messages = [m for m in restored.messages if m.line not in lines]
    restored.skipped_lines = sorted({*restored.skipped_lines, *lines})


_REPLAY_ERRORS = (ContextManagerError, TypeError, ValueError, KeyError, RecursionError)


def _replay_meta(
    manager: ManagerHost,
    item: dict[str, Any],
    history_before: list[int],
    history: int,
    start: int,
    path: str,
    fingerprint: str | None,
) -> None:
    """One metadata record (a bad one raises; :func:`replay` reports it by line)."""
    role = item["role"]
    if role == SYSTEM_PROMPT:
        attrs = item.get("_cm")
        original = attrs.get("message") if isinstance(attrs, dict) else None
        if original is not None:
            manager.set_system_prompt(decode(original, item["_cm"].get("type")))
        else:
            manager.set_system_prompt(item["content"])
    elif role == USAGE:
        # Calibrate on the context the live manager counted when it was counted as we count;
        # else (an older line, another counter) count the replayed context, as it was then.
        count = usage_count(item, fingerprint)
        if count is not None:
            manager.record_usage_counted(item["token_count"], count[0])
        else:
            manager.record_usage(item["token_count"])
    elif role == COMPACTION:
        _replay_compaction(manager, item, history_before, history, start)
    elif role != CHECKPOINT:
        logger.debug("%s: ignoring unknown metadata record %r", path, role)


def _replay_compaction(
    manager: ManagerHost,
    item: dict[str, Any],
    history_before: list[int],
    history: int,
    start: int,
) -> None:
    """Apply a compaction record. Its cut is the history index it names (``_cm.history``), or,
    in a record without one, its ``first_kept_index``: a message line of this generation
    before it (or the end: none kept), mapped through ``history_before`` (every message line,
    unless ``start``: the log was read from a later compaction on). One that names neither,
    or a line past the end, cannot be applied without losing messages it never covered: the
    record is rejected like any other (strict raises, else a warning)."""
    apply = manager.apply_compaction
    fields = {k: v for k, v in item.items() if k not in ("role", "content", "_line")}
    first_kept = stored_kept(item)
    if first_kept is None:
        kept = fields.get("first_kept_index")
        if start or type(kept) is not int or not 0 <= kept <= len(history_before):
            # (read from a later compaction on, the message lines it counts were not all read)
            raise ValueError(f"compaction with an invalid first_kept_index {short_repr(kept)}")
        first_kept = history_before[kept] if kept < len(history_before) else history
    elif first_kept > history and (not start or history > start):  # (before the point: unknown)
        raise ValueError(f"compaction keeping from {first_kept}, past the history's end")
    summary = fields.get("summary_message")
    if isinstance(summary, dict) and summary.keys() == {"type", "payload"}:
        summary = decode(summary["payload"], summary["type"])  # an SDK object, as written
    elif summary is None:  # Kimi CLI writes the summary text alone
        summary = {"role": "user", "content": str(fields.get("summary", ""))}
    elif not isinstance(summary, dict):
        raise ValueError(f"compaction with an invalid summary_message {short_repr(summary)}")
    from ..compaction.manifest import watch

    watch(manager)  # so compactions(manager) lists every compaction of the session
    # The entry is what the record says beyond what the journal adds: none (the live manager's
    # apply_compaction() without one) when that is all there is.
    own = {k: v for k, v in fields.items() if k not in _JOURNAL_FIELDS}
    entry = _compaction_entry({**own, "first_kept_index": first_kept}) if own else None
    apply(summary, first_kept, entry)


#: A compaction record's fields the journal writes beside the entry's (compaction_record).
_JOURNAL_FIELDS = frozenset({ATTRS_KEY, "first_kept_index", "summary_message"})


def _rejected(path: str, line: int, reason: str, strict: bool) -> None:
    if strict:
        raise StoreCorruptionError(
            f"{path}: line {line} cannot be replayed: {reason}. Open without strict=True to skip "
            "it with a warning.",
            path=path,
            line=line,
        )
    logger.warning("%s: skipping line %d the manager rejected: %s", path, line, reason)
