"""The line format: encoding records and reading one line back (``parse_record``).

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

A ``_usage`` line written by a session carries ``"_cm": {"count": [tokens, fingerprint]}``: our
count of the context the report measured (``tokens`` null: nothing fitted, nothing was sent),
under the counter of that ``fingerprint``; a restore under the same counter calibrates on it
instead of counting the replayed context again (which may differ: a pruning view, other tools).

A record written by a session (``SessionStore``) also carries ``"_cm": {"id": "<22 chars>"}``: a
client-made random id that makes appends exactly-once. Every backend refuses to store an id twice
in a generation, so a write whose reply was lost (a dropped connection after the commit) can be
sent again without storing the record twice. Kimi ignores the key like the others.
"""

from __future__ import annotations

import json
import logging
import secrets
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import Any, TypeGuard

from .._config import SAFE_INT
from ..errors import ConfigurationError, StoreError
from ..messages.nesting import short_repr
from ._lines import message_problem

logger = logging.getLogger("context_manager.store")

SYSTEM_PROMPT = "_system_prompt"
CHECKPOINT = "_checkpoint"
USAGE = "_usage"
COMPACTION = "_compaction"
ATTRS_KEY = "_cm"


#: Key of the per-line CRC-32 inside ``_cm`` (written with ``integrity=True``).
CRC_KEY = "crc"
META_ROLES = (SYSTEM_PROMPT, USAGE, CHECKPOINT)
#: Key of the client-made record id inside ``_cm``.
ID_KEY = "id"
#: Key of ``[tokens, counter fingerprint]`` inside a message's ``_cm``: what the writer's counter
#: counted, reused by a restore whose counter has the same ``fingerprint()`` (else recounted).
#: In a ``_usage`` line's ``_cm``: our count of the context the report measured (tokens None:
#: nothing was sent), reused the same way.
COUNT_KEY = "count"
#: Key of ``[kept, resume]`` inside a ``_compaction`` line's ``_cm``: the history index of the
#: first message kept, and that of the first message the manager still held after it (None
#: when a reader cannot start there): a reader opens the session from there (``replayer``).
HISTORY_KEY = "history"
#: Key of ``[k, n]`` inside ``_cm`` of each line of a JSONL batch of n > 1 records: its place,
#: how a reader tells a batch a killed writer left unfinished (``_tail``). A line's format, not
#: part of the record: :func:`parse_record` takes it out.
BATCH_KEY = "batch"


def new_record_id() -> str:
    """A random record id: 128 bits (22 URL-safe characters), never reused by chance."""
    return secrets.token_urlsafe(16)


def record_id(record: Mapping[str, Any]) -> str | None:
    """The client-made id a record carries in ``_cm``, or None (written by another tool)."""
    attrs = record.get(ATTRS_KEY)
    if isinstance(attrs, Mapping):
        rid = attrs.get(ID_KEY)
        if isinstance(rid, str):
            return rid
    return None


def _with_id(record: dict[str, Any], rid: str | None) -> dict[str, Any]:
    if rid is not None:
        attrs = dict(record.get(ATTRS_KEY) or {})
        attrs[ID_KEY] = rid
        record[ATTRS_KEY] = attrs
    return record


# What ``json.dumps`` builds on every call with these options (it reuses only the default one).
_KIMI_JSON = json.JSONEncoder(allow_nan=False)
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _dumps(record: Mapping[str, Any]) -> str:
    """The line text: Kimi's ``json.dumps`` defaults for its metadata roles, compact UTF-8 for
    the rest. NaN / Infinity are refused (Node's ``JSON.parse`` rejects them) with a typed error.
    """
    try:
        if record.get("role") in META_ROLES:
            return _KIMI_JSON.encode(record)
        return _COMPACT_JSON.encode(record)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(
            f"cannot encode a {record.get('role')!r} record as JSON: {exc} (NaN, Infinity, "
            "non-JSON objects and cycles have no portable JSON form); nothing was written"
        ) from None


def dump_record(record: Mapping[str, Any], *, integrity: bool = False) -> bytes:
    """A record as one line, formatted by its role so every backend stores the same bytes.

    Metadata lines are byte-for-byte what Kimi CLI writes (``json.dumps`` defaults); message and
    compaction lines are compact UTF-8 JSON. With ``integrity`` a CRC-32 of the line as it would
    be without it is added to ``_cm``. Anything without a portable JSON / UTF-8 form (NaN, a lone
    surrogate, a cycle) is a :class:`StoreError` before a byte is written.
    """
    text = _dumps(record)
    if integrity:
        attrs = dict(record.get(ATTRS_KEY) or {})
        attrs[CRC_KEY] = zlib.crc32(text.encode("utf-8", "surrogatepass"))
        sealed = dict(record)
        sealed[ATTRS_KEY] = attrs  # an existing "_cm" keeps its place; a new one goes last
        text = _dumps(sealed)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StoreError(
            f"cannot encode a {record.get('role')!r} record as UTF-8 ({exc.reason} at "
            f"character {exc.start}: a lone surrogate?); nothing was written"
        ) from None


def verify_crc(record: dict[str, Any]) -> bool | None:
    """True / False when ``record`` carries a CRC that matches / does not; None without one."""
    attrs = record.get(ATTRS_KEY)
    if not isinstance(attrs, dict) or CRC_KEY not in attrs:
        return None
    stored = attrs[CRC_KEY]
    bare_attrs = {k: v for k, v in attrs.items() if k != CRC_KEY}
    bare = {k: v for k, v in record.items() if k != ATTRS_KEY or bare_attrs}
    if bare_attrs:
        bare[ATTRS_KEY] = bare_attrs
    try:
        text = _dumps(bare)
        return _is_int(stored) and zlib.crc32(text.encode("utf-8")) == stored
    except (StoreError, UnicodeError):
        return False


def message_record(
    message: Mapping[str, Any],
    *,
    pinned: bool = False,
    priority: int = 0,
    extra: Mapping[str, Any] | None = None,
    record_id: str | None = None,
) -> dict[str, Any]:
    """One message record. ``extra`` goes into ``_cm`` (the type tag and payload of an object),
    then the record's id. A priority beyond +-2**53 is refused: every reader (ours, and JSON
    readers whose numbers are doubles) takes only those back exactly, so it would be written,
    then skipped on reopen as a damaged line (an acknowledged message lost)."""
    if abs(priority) > SAFE_INT:
        raise ConfigurationError(
            f"priority {short_repr(priority, 40)} cannot be stored: a store keeps priorities "
            "within +-2**53; nothing was added"
        )
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
    if record_id is not None:
        attrs[ID_KEY] = record_id
    if attrs:
        record[ATTRS_KEY] = attrs
    return record


def compaction_record(entry: Mapping[str, Any]) -> dict[str, Any]:
    # "content": null makes Kimi skip the line with a warning instead of aborting its restore.
    fields = {k: v for k, v in entry.items() if k not in ("role", "content")}
    return {"role": COMPACTION, "content": None, **fields}


def encode_message(
    message: Mapping[str, Any],
    *,
    pinned: bool = False,
    priority: int = 0,
    extra: Mapping[str, Any] | None = None,
    integrity: bool = False,
) -> bytes:
    """One message line (see :func:`message_record`)."""
    record = message_record(message, pinned=pinned, priority=priority, extra=extra)
    return dump_record(record, integrity=integrity)


def encode_meta(record: Mapping[str, Any], *, integrity: bool = False) -> bytes:
    """Metadata lines are byte-for-byte what Kimi CLI writes (``json.dumps`` defaults)."""
    return dump_record(dict(record), integrity=integrity)


class RecordWriter(ABC):
    """The typed appends a session writes, over one primitive: ``_put(record, durable)``.

    Shared by :class:`~.jsonl.JsonlLog` and :class:`~.log.StoreLog`, so every backend receives
    exactly the same records.
    """

    #: While not None, records are collected here instead of written (see :meth:`collecting`).
    _collected: list[tuple[dict[str, Any], bool]] | None = None

    @abstractmethod
    def _put(self, record: dict[str, Any], durable: bool) -> None:
        """Write one record now (the backend's append of a single line)."""

    def _write_record(self, record: dict[str, Any], durable: bool) -> None:
        if self._collected is not None:
            self._collected.append((record, durable))
        else:
            self._put(record, durable)

    def start_collecting(self) -> None:
        """Hold the records of the typed appends below instead of writing them, until
        :meth:`take_collected` (one atomic write of many records: a bulk ``extend``)."""
        self._collected = []

    def take_collected(self) -> tuple[list[dict[str, Any]], bool]:
        """The records held since :meth:`start_collecting` (and whether any asked to be
        durable); collecting stops."""
        collected, self._collected = self._collected or [], None
        return [record for record, _ in collected], any(durable for _, durable in collected)

    def append_message(
        self,
        message: Mapping[str, Any],
        *,
        pinned: bool = False,
        priority: int = 0,
        extra: Mapping[str, Any] | None = None,
        record_id: str | None = None,
    ) -> None:
        record = message_record(
            message, pinned=pinned, priority=priority, extra=extra, record_id=record_id
        )
        self._write_record(record, False)

    def append_usage(
        self,
        token_count: int,
        *,
        count: tuple[int | None, str] | None = None,
        record_id: str | None = None,
    ) -> None:
        """A ``_usage`` record; ``count`` is ``(our count of the context it measured, counter
        fingerprint)``, kept in ``_cm`` (see :data:`COUNT_KEY`)."""
        record: dict[str, Any] = {"role": USAGE, "token_count": int(token_count)}
        if count is not None:
            record[ATTRS_KEY] = {COUNT_KEY: list(count)}
        self._write_record(_with_id(record, record_id), False)

    def write_system_prompt(
        self,
        text: str,
        original: Mapping[str, Any] | None = None,
        *,
        record_id: str | None = None,
    ) -> None:
        """Append a ``_system_prompt`` record; on restore the last one wins (as in Kimi CLI).

        ``original`` (the encoded message and its type tag) is kept in ``_cm`` when the prompt
        was more than plain text (a developer role, a name, content parts, an SDK object).
        """
        record: dict[str, Any] = {"role": SYSTEM_PROMPT, "content": text}
        if original is not None:
            record[ATTRS_KEY] = dict(original)
        self._write_record(_with_id(record, record_id), True)

    def append_compaction(self, entry: Mapping[str, Any], *, record_id: str | None = None) -> None:
        self._write_record(_with_id(compaction_record(entry), record_id), True)


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


def parse_record(raw: bytes, *, check_message: bool = True) -> dict[str, Any]:
    """Decode one line into a record dict or raise ``_Invalid`` saying why.

    Anything a hostile or damaged line can do (bad UTF-8, nesting deeper than the parser's
    recursion limit, NaN, wrong types in ``_cm``, a CRC that does not match) ends up here as
    ``_Invalid``, so one bad line is skipped with a warning instead of aborting a restore.
    Without ``check_message`` a message line's shape is left to the manager it is replayed into
    (``_replay.replay`` reports a message it cannot read as this function would, by line), so
    a restore into a manager normalizes each message once.
    """
    try:  # our writers only write UTF-8: other bytes are damage, never replaced silently
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Invalid(f"invalid UTF-8 at byte {exc.start}") from None
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise _Invalid(f"malformed JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise _Invalid("JSON nested too deeply") from None
    except _Invalid:
        raise
    except ValueError as exc:  # an integer past sys.get_int_max_str_digits() (4,300 digits)
        raise _Invalid(f"unreadable number ({exc})") from None
    if not isinstance(value, dict):
        raise _Invalid(f"a line must be a JSON object, got {type(value).__name__}")
    if verify_crc(value) is False:
        raise _Invalid(f"'{ATTRS_KEY}.{CRC_KEY}' does not match the line: it was altered")
    attrs = value.get(ATTRS_KEY)
    if isinstance(attrs, dict) and BATCH_KEY in attrs:
        del attrs[BATCH_KEY]
        if not attrs:
            del value[ATTRS_KEY]
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
        attrs = value.get(ATTRS_KEY)
        if check_message:
            # read as the manager will: without "_cm" (a plain chat line takes the fast path)
            bare = value if attrs is None else {k: v for k, v in value.items() if k != ATTRS_KEY}
            problem = message_problem(bare)
            if problem is not None:
                raise _Invalid(problem)
        _check_attrs(attrs)
    return value


def indexed_checkpoint(record: Mapping[str, Any]) -> int | None:
    """The id a database store indexes ``record`` under as a checkpoint (its ``checkpoint``
    column, Redis's checkpoint hash): a ``_checkpoint`` record's id when a reader takes it
    (:func:`parse_record`: an integer), within what every backend's column holds. None for any
    other record, a damaged checkpoint included: it is stored as written, and every reader
    skips it with a warning (as a JSONL file's reader does)."""
    if record.get("role") != CHECKPOINT:
        return None
    value = record.get("id")
    return value if _is_int(value) and abs(value) <= SAFE_INT else None


def read_record(raw: bytes, *, check_message: bool = True) -> dict[str, Any] | str:
    """The record a stored line holds, or the reason it cannot be read (:func:`parse_record`'s
    rules, for readers that skip a bad line with a warning instead of replaying it)."""
    try:
        return parse_record(raw, check_message=check_message)
    except _Invalid as exc:
        return str(exc)


def _no_constant(name: str) -> Any:
    raise _Invalid(f"bare {name} is not JSON")


# What ``json.loads(text, strict=False, parse_constant=_no_constant)`` builds on every call.
_DECODER = json.JSONDecoder(strict=False, parse_constant=_no_constant)


def _check_attrs(attrs: Any) -> None:
    """``_cm`` of a message line: an object whose ``pinned`` is a bool and ``priority`` an int."""
    if attrs is None:
        return
    if not isinstance(attrs, dict):
        raise _Invalid(f"'{ATTRS_KEY}' must be an object")
    if "pinned" in attrs and not isinstance(attrs["pinned"], bool):
        raise _Invalid(f"'{ATTRS_KEY}.pinned' must be true or false, got {attrs['pinned']!r:.40}")
    priority = attrs.get("priority", 0)
    if not _is_int(priority) or abs(priority) > SAFE_INT:
        raise _Invalid(f"'{ATTRS_KEY}.priority' must be an integer, got {priority!r:.40}")
    if "type" in attrs and not isinstance(attrs["type"], str):
        raise _Invalid(f"'{ATTRS_KEY}.type' must be a string")
    if ID_KEY in attrs and not isinstance(attrs[ID_KEY], str):
        raise _Invalid(f"'{ATTRS_KEY}.{ID_KEY}' must be a string")


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
