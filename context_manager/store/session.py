"""Glue between a :class:`MessageContextManager` and its :class:`~.jsonl.JsonlLog`.

``MessageContextManager.open(path, **options)`` lands in :func:`open_session`: it reads the log,
builds the manager, replays the history with no journal attached (so nothing is written twice),
then attaches :class:`SessionStore` as the manager's write-ahead journal: every later add /
system prompt / usage / clear / compaction is written before memory changes. Replay follows file
order, so a ``_usage`` record anchors the count at the same point it did originally, and a
``_compaction`` record is re-applied (``apply_compaction``) after exactly the messages that
preceded it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from .._config import checked_hook
from ..errors import ContextManagerError, StoreCorruptionError, StoreError
from ..events import Change, Cleared, Compacted, MessageAdded, SystemPromptSet, UsageRecorded
from ..host import ManagerHost
from ..messages.codec import decode, encode
from .handle import StoreHandle
from .jsonl import FsyncMode
from .log import SessionLog
from .protocol import Store
from .records import (
    ATTRS_KEY,
    CHECKPOINT,
    COMPACTION,
    SYSTEM_PROMPT,
    USAGE,
    Replayer,
    RestoredLog,
    StoredMessage,
    new_record_id,
    record_id,
)

logger = logging.getLogger("context_manager.store")


M = TypeVar("M", bound=ManagerHost)

Sequence_ = list[StoredMessage | dict[str, Any]]


class SessionStore:
    """The journal of a persistent session: writes each change ahead, checkpoints, reverts."""

    def __init__(self, log: SessionLog, restored: RestoredLog) -> None:
        self.log = log
        #: What the log held when it was last read (opened or reverted).
        self.restored = restored
        self._manager: ManagerHost | None = None
        self._batching = False

    @property
    def path(self) -> Any:
        """The log's path (JSONL) or the store's target."""
        return getattr(self.log, "path", self.log.target)

    @property
    def target(self) -> str:
        """Where the session lives (a path, or a URL without its password)."""
        return self.log.target

    def attach(self, manager: ManagerHost) -> None:
        self._manager = manager
        manager.attach_journal(self)

    def detach(self) -> None:
        if self._manager is not None:
            self._manager.attach_journal(None)

    def write(self, change: Change) -> None:
        """Write ``change`` before the manager applies it (runs under the manager's lock).

        Encoding and I/O failures become typed errors, and the manager stays unchanged.
        """
        try:
            self._write(change)
        except ContextManagerError:
            raise
        except (UnicodeError, ValueError, TypeError, RecursionError, OverflowError) as exc:
            raise StoreError(
                f"{self.log.target}: cannot store {type(change).__name__}: {exc}; nothing was "
                "added (the value has no lossless JSON form, e.g. a lone surrogate or NaN)"
            ) from exc
        except OSError as exc:
            raise StoreError(
                f"{self.log.target}: cannot write {type(change).__name__}: "
                f"{exc.strerror or exc}; nothing was changed in memory"
            ) from exc

    def _write(self, change: Change) -> None:
        log = self.log
        rid = new_record_id()  # exactly-once: every backend refuses to store an id twice
        if isinstance(change, MessageAdded):
            payload, tag = encode(change.message)
            if tag is None and ATTRS_KEY in payload:
                tag = "dict"  # the message's own "_cm" key: keep it inside the wrapper, intact
            if tag is None:
                log.append_message(
                    payload, pinned=change.pinned, priority=change.priority, record_id=rid
                )
            else:  # Kimi-readable wrapper; the object itself travels in _cm
                wrapper: dict[str, Any] = {"role": change.record.role, "content": None}
                if change.record.tool_call_id is not None:
                    wrapper["tool_call_id"] = change.record.tool_call_id
                log.append_message(
                    wrapper,
                    pinned=change.pinned,
                    priority=change.priority,
                    extra={"type": tag, "payload": payload},
                    record_id=rid,
                )
        elif isinstance(change, SystemPromptSet):
            original = _system_original(change.message)
            log.write_system_prompt(change.record.text, original, record_id=rid)
        elif isinstance(change, UsageRecorded):
            log.append_usage(change.input_tokens, record_id=rid)
        elif isinstance(change, Cleared):
            self._flush()  # a clear comes after what was collected before it
            log.clear()
            manager = self._manager
            if change.keep_system_prompt and manager is not None and manager.system_prompt:
                original = _system_original(manager.system_message)
                log.write_system_prompt(manager.system_prompt, original, record_id=rid)
        elif isinstance(change, Compacted):
            log.append_compaction(_compaction_record(change), record_id=rid)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """The writes made inside go to the store in one atomic append when it ends (see
        :meth:`~context_manager.events.Journal.batch`); nested batches join the outer one."""
        if self._batching:
            yield
            return
        self._batching = True
        self.log.start_collecting()
        try:
            yield
        except BaseException:
            self._flush()  # what came before the error, as unbatched writes would have
            raise
        else:
            self._flush()
        finally:
            self._batching = False
            self.log.take_collected()  # never leave the log collecting

    def _flush(self) -> None:
        records, durable = self.log.take_collected()
        if self._batching:
            self.log.start_collecting()
        if not records:
            return
        try:
            self.log.store.append(records, durable=durable)
        except BaseException:
            # Memory holds what the store refused: rebuild it as the store has it.
            if self._manager is not None:
                self._reload(self._manager, (), full=True)
            raise

    def checkpoint(self) -> int:
        self._flush()
        return self.log.checkpoint()

    def revert_to(self, checkpoint_id: int, manager: ManagerHost) -> None:
        """Rewrite the log up to the checkpoint, then rebuild ``manager`` from it.

        Runs under the manager's (re-entrant) lock when it has one, so an add from another
        thread cannot slip in while the listener is detached and go unlogged.
        """
        with manager.locked():
            self.log.revert_to(checkpoint_id)
            self._reload(manager, (), full=True)

    def reload(self, manager: ManagerHost) -> None:
        """Bring ``manager`` up to date with the store: the retry after a
        ``StoreConflictError`` (another worker wrote since this one read), then redo the change.

        When the session still extends what this worker last saw (same generation, nothing
        rewritten), only the records after that point are read and applied; otherwise (a
        revert, a clear, an expired and rebuilt session, a compaction among the new records)
        the manager is rebuilt from every record.
        """
        self._reload(manager, ())

    def _reload(self, manager: ManagerHost, wanted: tuple[str, ...], *, full: bool = False) -> bool:
        """:meth:`reload`; True when every id in ``wanted`` is among the records it read."""
        with manager.locked():
            store = self.log.store
            head = store.head
            batch = store.load_after(head) if head is not None and not full else None
            if batch is not None:
                replayer = Replayer(self.log.target, strict=self.log.strict)
                for position, raw in batch.lines:
                    replayer.feed(position + 1, raw, True)
                sequence = replayer.sequence
                if not any(_rewinds(item) for item in sequence):
                    found = _holds(sequence, wanted)
                    self._apply(manager, sequence, fresh=False)
                    return found
            restored, sequence = self.log.read()
            self.restored = restored
            self._apply(manager, sequence, fresh=True)
            return _holds(sequence, wanted)

    def _apply(self, manager: ManagerHost, sequence: Sequence_, *, fresh: bool) -> None:
        manager.attach_journal(None)
        try:
            if fresh:
                manager.clear(keep_system_prompt=False)
            replay(manager, sequence, strict=self.log.strict, path=self.log.target)
        finally:
            manager.attach_journal(self)

    def landed(self, manager: ManagerHost, record_ids: tuple[str, ...]) -> bool:
        """Reload ``manager`` (see :meth:`reload`) and say whether the records ``record_ids``
        (from a ``StoreOutcomeUnknownError``) are stored: if so the write took effect and the
        reload brought it into memory; if not, redo it."""
        return self._reload(manager, record_ids)

    def close(self) -> None:
        self.log.close()


def _rewinds(item: StoredMessage | dict[str, Any]) -> bool:
    """A record an incremental reload cannot apply on top of memory (a compaction's indices
    count every message line of the generation)."""
    return isinstance(item, dict) and item.get("role") == COMPACTION


def _holds(sequence: Sequence_, wanted: tuple[str, ...]) -> bool:
    if not wanted:
        return False
    ids = {
        item.record_id if isinstance(item, StoredMessage) else record_id(item) for item in sequence
    }
    return all(rid in ids for rid in wanted)


def _compaction_record(change: Compacted) -> dict[str, Any]:
    """The entry's own fields, plus what replay needs: the cut and the summary message sent."""
    entry: Any = change.entry
    fields: dict[str, Any] = {}
    if entry is not None and hasattr(entry, "to_dict"):
        fields.update(entry.to_dict())
    elif isinstance(entry, Mapping):
        fields.update(entry)
    fields["first_kept_index"] = change.first_kept_index
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


def _system_original(message: Any) -> dict[str, Any] | None:
    """What to keep of a system prompt beyond its text (None for a plain system dict)."""
    if (
        isinstance(message, dict)
        and set(message) == {"role", "content"}
        and message["role"] == "system"
        and isinstance(message["content"], str)
    ):
        return None
    payload, tag = encode(message)
    return {"message": payload, "type": tag}


def replay(manager: ManagerHost, sequence: Sequence_, *, strict: bool, path: str) -> None:
    """Apply logged records to ``manager`` in file order (no listener must be attached).

    A compaction's ``first_kept_index`` counts message lines of this file (the manager numbers
    messages from 0 after each clear, and every clear starts a new file); if replay skipped lines,
    it is mapped onto the messages actually added.
    """
    added_before: list[int] = []  # per message line: how many were added before it
    added = 0
    for item in sequence:
        if isinstance(item, StoredMessage):
            added_before.append(added)
            try:
                manager.add(item.message, priority=item.priority, pinned=item.pinned)
                added += 1
            except _REPLAY_ERRORS as exc:
                _rejected(path, item.line, f"{type(exc).__name__}: {exc}", strict)
            continue
        try:
            _replay_meta(manager, item, added_before, added, path)
        except _REPLAY_ERRORS as exc:
            _rejected(path, int(item.get("_line", 0)), f"{type(exc).__name__}: {exc}", strict)


_REPLAY_ERRORS = (ContextManagerError, TypeError, ValueError, KeyError, RecursionError)


def _replay_meta(
    manager: ManagerHost, item: dict[str, Any], added_before: list[int], added: int, path: str
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
        manager.record_usage(item["token_count"])
    elif role == COMPACTION:
        _replay_compaction(manager, item, added_before, added, path)
    elif role != CHECKPOINT:
        logger.debug("%s: ignoring unknown metadata record %r", path, role)


def _replay_compaction(
    manager: ManagerHost, item: dict[str, Any], added_before: list[int], added: int, path: str
) -> None:
    apply = manager.apply_compaction
    fields = {k: v for k, v in item.items() if k not in ("role", "content", "_line")}
    kept = fields.get("first_kept_index")
    if not isinstance(kept, int) or isinstance(kept, bool) or kept < 0:
        logger.warning(
            "%s: line %s: compaction without a valid first_kept_index; ignored",
            path,
            item.get("_line"),
        )
        return
    first_kept = added_before[kept] if kept < len(added_before) else added
    summary = fields.get("summary_message")
    if not isinstance(summary, dict):
        summary = {"role": "user", "content": str(fields.get("summary", ""))}
    apply(summary, first_kept, _compaction_entry({**fields, "first_kept_index": first_kept}))


def _rejected(path: str, line: int, reason: str, strict: bool) -> None:
    if strict:
        raise StoreCorruptionError(
            f"{path}: line {line} cannot be replayed: {reason}. Open without strict=True to skip "
            "it with a warning.",
            path=path,
            line=line,
        )
    logger.warning("%s: skipping line %d the manager rejected: %s", path, line, reason)


def open_session(
    cls: type[M],
    path: str | os.PathLike[str] | Store | StoreHandle,
    *,
    session: str | None = None,
    fsync: FsyncMode = "checkpoint",
    strict: bool = False,
    store_options: dict[str, Any] | None = None,
    integrity: bool = False,
    **options: Any,
) -> M:
    """Open or create the session at ``path`` and return a manager restored from it.

    ``path`` is a JSONL path or a store URL (``sqlite:///``, ``redis://``, ``postgresql://``;
    see ``targets.py``) or a :class:`~.protocol.Store`; ``session`` picks the session there.
    ``fsync``, ``strict`` and ``store_options`` configure the store; every other option goes to
    the manager's constructor. A ``system_prompt`` option that differs from the logged one
    replaces it (and is persisted); without the option the logged prompt is restored.
    """
    from .targets import open_log

    if integrity:  # a per-line CRC (JSONL only; database rows have their own checks)
        store_options = {**(store_options or {}), "integrity": True}
    log = open_log(path, session=session, fsync=fsync, strict=strict, store_options=store_options)
    system_prompt = options.pop("system_prompt", None)
    # Callbacks see what happens from now on: replaying history must not fire them again.
    hooks = {name: options.pop(name, None) for name in ("on_evict", "on_near_limit")}
    try:
        restored, sequence = log.read()
        manager = cls(**options)
        replay(manager, sequence, strict=strict, path=log.target)
        for name, hook in hooks.items():
            if hook is not None:
                setattr(manager, name, checked_hook(name, hook))
    except BaseException:
        log.close()
        raise
    store = SessionStore(log, restored)
    store.attach(manager)
    if system_prompt is not None and system_prompt != manager.system_prompt:
        manager.set_system_prompt(system_prompt)
    return manager
