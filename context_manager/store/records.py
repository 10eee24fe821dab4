"""The line format: encoding records and replaying lines into a restored state.

One JSON object per line, Kimi CLI's ``context.jsonl`` format: message lines (``role`` user /
assistant / tool / system) and metadata lines whose role starts with ``_``:

- ``{"role": "_system_prompt", "content": str}``   the pinned system prompt (last one wins)
- ``{"role": "_checkpoint", "id": int}``             a checkpoint marker (next id = id + 1)
- ``{"role": "_usage", "token_count": int}``         provider-reported prompt size
- ``{"role":"_compaction","content":null, ...}``     a compaction entry (ours; Kimi skips it)

Message lines may carry ``"_cm": {"pinned": true, "priority": 2}`` (only when not default) so a
restore puts a message back with its trimming attributes; Kimi ignores unknown keys. Metadata lines
use ``json.dumps`` defaults exactly as Kimi writes them; message lines are compact UTF-8 JSON.
Unknown ``_`` roles are skipped silently, so newer writers do not break older readers. Every line
we write has a ``content`` key: Kimi's reader aborts its whole restore on a line without one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidMessageError, StoreCorruptionError
from ..messages import normalize
from ..messages.codec import decode

logger = logging.getLogger("context_manager.store")

SYSTEM_PROMPT = "_system_prompt"
CHECKPOINT = "_checkpoint"
USAGE = "_usage"
COMPACTION = "_compaction"
ATTRS_KEY = "_cm"


META_ROLES = (SYSTEM_PROMPT, USAGE, CHECKPOINT)


def message_record(
    message: Mapping[str, Any],
    *,
    pinned: bool = False,
    priority: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One message record. ``extra`` goes into ``_cm`` (the type tag and payload of an object)."""
    record = dict(message)
    record.pop(ATTRS_KEY, None)
    # Kimi CLI's reader raises TypeError (and aborts the whole restore) on a line without a
    # "content" key, so a message lacking one is written with "content": null.
    record.setdefault("content", None)
    attrs: dict[str, Any] = {}
    if pinned:
        attrs["pinned"] = True
    if priority:
        attrs["priority"] = priority
    if extra:
        attrs.update(extra)
    if attrs:
        record[ATTRS_KEY] = attrs
    return record


def compaction_record(entry: Mapping[str, Any]) -> dict[str, Any]:
    # "content": null makes Kimi skip the line with a warning instead of aborting its restore.
    fields = {k: v for k, v in entry.items() if k not in ("role", "content")}
    return {"role": COMPACTION, "content": None, **fields}


def dump_record(record: Mapping[str, Any]) -> bytes:
    """A record as one line, formatted by its role so every backend stores the same bytes.

    Metadata lines are byte-for-byte what Kimi CLI writes (``json.dumps`` defaults); message and
    compaction lines are compact UTF-8 JSON. NaN / infinity are refused in messages.
    """
    role = record.get("role")
    if role in META_ROLES:
        return (json.dumps(dict(record)) + "\n").encode("utf-8")
    text = json.dumps(
        record, ensure_ascii=False, separators=(",", ":"), allow_nan=role == COMPACTION
    )
    return (text + "\n").encode("utf-8")


def encode_message(
    message: Mapping[str, Any],
    *,
    pinned: bool = False,
    priority: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> bytes:
    """One message line (see :func:`message_record`)."""
    return dump_record(message_record(message, pinned=pinned, priority=priority, extra=extra))


def encode_meta(record: Mapping[str, Any]) -> bytes:
    """Metadata lines are byte-for-byte what Kimi CLI writes (``json.dumps`` defaults)."""
    return (json.dumps(dict(record)) + "\n").encode("utf-8")


def encode_compaction(entry: Mapping[str, Any]) -> bytes:
    return dump_record(compaction_record(entry))


class RecordWriter:
    """The typed appends a session writes, over one primitive: ``_put(record, durable)``.

    Shared by :class:`~.jsonl.JsonlLog` and :class:`~.log.StoreLog`, so every backend receives
    exactly the same records.
    """

    def _put(self, record: dict[str, Any], durable: bool) -> None:
        raise NotImplementedError

    def append_message(
        self,
        message: Mapping[str, Any],
        *,
        pinned: bool = False,
        priority: int = 0,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        record = message_record(message, pinned=pinned, priority=priority, extra=extra)
        self._put(record, False)

    def append_usage(self, token_count: int) -> None:
        self._put({"role": USAGE, "token_count": int(token_count)}, False)

    def write_system_prompt(self, text: str, original: Mapping[str, Any] | None = None) -> None:
        """Append a ``_system_prompt`` record; on restore the last one wins (as in Kimi CLI).

        ``original`` (the encoded message and its type tag) is kept in ``_cm`` when the prompt
        was more than plain text (a developer role, a name, content parts, an SDK object).
        """
        record: dict[str, Any] = {"role": SYSTEM_PROMPT, "content": text}
        if original is not None:
            record[ATTRS_KEY] = dict(original)
        self._put(record, True)

    def append_compaction(self, entry: Mapping[str, Any]) -> None:
        self._put(compaction_record(entry), True)


@dataclass(slots=True)
class StoredMessage:
    """A message as persisted, with the attributes it was added with and its 1-based line."""

    message: Any
    pinned: bool = False
    priority: int = 0
    line: int = 0


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

    @property
    def n_checkpoints(self) -> int:
        return self.next_checkpoint_id


def split_lines(data: bytes) -> Iterator[tuple[int, bytes, bool]]:
    """Yield ``(line_number, raw_line, complete)``; ``complete`` is False for a torn tail."""
    start = 0
    number = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        number += 1
        if end < 0:
            yield number, data[start:], False
            return
        yield number, data[start : end + 1], True
        start = end + 1


class _Invalid(Exception):
    pass


def parse_record(raw: bytes) -> dict[str, Any]:
    """Decode one line into a record dict or raise ``_Invalid`` saying why."""
    text = raw.decode("utf-8", errors="replace")
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        raise _Invalid(f"malformed JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise _Invalid(f"a line must be a JSON object, got {type(value).__name__}")
    role = value.get("role")
    if not isinstance(role, str):
        raise _Invalid("missing or non-string 'role'")
    if role == SYSTEM_PROMPT:
        if not isinstance(value.get("content"), str):
            raise _Invalid("'_system_prompt' needs a string 'content'")
    elif role == USAGE:
        if not _is_int(value.get("token_count")):
            raise _Invalid("'_usage' needs an integer 'token_count'")
    elif role == CHECKPOINT:
        if not _is_int(value.get("id")):
            raise _Invalid("'_checkpoint' needs an integer 'id'")
    elif not role.startswith("_"):
        try:
            normalize(value)
        except InvalidMessageError as exc:
            raise _Invalid(f"invalid message: {exc}") from None
        attrs = value.get(ATTRS_KEY)
        if attrs is not None and not isinstance(attrs, dict):
            raise _Invalid(f"'{ATTRS_KEY}' must be an object")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Replayer:
    """Applies records in order; shared by restore and revert so both read lines identically."""

    def __init__(self, path: str, *, strict: bool) -> None:
        self.path = path
        self.strict = strict
        self.state = RestoredLog()
        # Every valid record in file order (messages as StoredMessage), for ordered replay.
        self.sequence: list[StoredMessage | dict[str, Any]] = []

    def feed(self, number: int, raw: bytes, complete: bool) -> dict[str, Any] | None:
        """Apply one line; return its record, or None when it is blank or skipped."""
        if not raw.strip():
            return None
        try:
            record = parse_record(raw)
        except _Invalid as exc:
            self._bad_line(number, str(exc), complete)
            return None
        self.apply(record, number)
        return record

    def _bad_line(self, number: int, reason: str, complete: bool) -> None:
        if not complete:
            logger.warning(
                "%s: ignoring torn last line %d (%s); it was never fully written",
                self.path,
                number,
                reason,
            )
            self.state.torn_tail = True
            return
        if self.strict:
            raise StoreCorruptionError(
                f"{self.path}: line {number} is corrupt: {reason}. Open without strict=True to "
                "skip it with a warning, or repair the line by hand.",
                path=self.path,
                line=number,
            )
        logger.warning("%s: skipping corrupt line %d: %s", self.path, number, reason)
        self.state.skipped_lines.append(number)

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
                    message = decode(attrs.get("payload"), str(attrs["type"]))
                except InvalidMessageError as exc:
                    self._bad_line(number, str(exc), True)
                    return
            stored = StoredMessage(
                message,
                pinned=bool(attrs.get("pinned", False)),
                priority=int(attrs.get("priority", 0)),
                line=number,
            )
            state.messages.append(stored)
            self.sequence.append(stored)
        else:
            self.sequence.append({**record, "_line": number})


_BAD: Any = object()


def _decoded_system(record: Mapping[str, Any]) -> Any:
    """The system prompt object a ``_system_prompt`` line carries in ``_cm`` (None: plain text)."""
    attrs = record.get(ATTRS_KEY)
    if not isinstance(attrs, Mapping) or "message" not in attrs:
        return None
    try:
        return decode(attrs["message"], attrs.get("type"))
    except InvalidMessageError:
        return _BAD
