"""A small ``sessions.json`` index in OpenClaw's shape: session key -> current session.

A chat backend routes each inbound message to a *session key* (a user, a channel, a thread); the
key's entry names the *session id* whose log holds the conversation, and carries cheap
bookkeeping a caller wants without opening that log: when it was last active, token counters,
how often it was compacted and whether the pre-compaction memory flush already ran this cycle.

Why it is built this way: the file is tiny and rewritten whole, so every change is read-modify-
write under the sidecar lock (so several processes can share one index) followed by an atomic
replace (temp file in the same directory, fsync, ``os.replace``, directory fsync): a crash leaves
either the old or the new index, never half of one. Field names are OpenClaw's camelCase;
unknown fields written by other tools are kept as they are.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, TypeVar

from .._config import check_int
from ..errors import ConfigurationError, SessionNotFoundError, StoreCorruptionError, StoreError
from . import _files
from .lock import LogLock

_T = TypeVar("_T")

_CAMEL = {
    "session_id": "sessionId",
    "updated_at": "updatedAt",
    "created_at": "createdAt",
    "session_file": "sessionFile",
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "total_tokens": "totalTokens",
    "context_tokens": "contextTokens",
    "compaction_count": "compactionCount",
    "memory_flush_at": "memoryFlushAt",
    "memory_flush_compaction_count": "memoryFlushCompactionCount",
}


@dataclass
class SessionEntry:
    """One key's current session. Times are epoch milliseconds (as OpenClaw stores them)."""

    session_id: str
    updated_at: int
    created_at: int
    session_file: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    context_tokens: int = 0
    compaction_count: int = 0
    memory_flush_at: int | None = None
    memory_flush_compaction_count: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.extra)
        for name, key in _CAMEL.items():
            value = getattr(self, name)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], *, where: str) -> SessionEntry:
        known = {key: name for name, key in _CAMEL.items()}
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            if key in known:
                values[known[key]] = value
            else:
                extra[key] = value
        if not isinstance(values.get("session_id"), str):
            raise StoreCorruptionError(f"{where}: entry has no string 'sessionId'", path=where)
        values.setdefault("updated_at", 0)
        values.setdefault("created_at", values["updated_at"])
        for name, value in values.items():
            if name in ("session_id", "session_file"):
                if name == "session_file" and value is not None and not isinstance(value, str):
                    raise StoreCorruptionError(
                        f"{where}: 'sessionFile' must be a string", path=where
                    )
            elif value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise StoreCorruptionError(
                    f"{where}: '{_CAMEL[name]}' must be an integer, got {value!r:.40}", path=where
                )
        return cls(**values, extra=extra)


@dataclass(frozen=True)
class ResetPolicy:
    """When a key's session is stale and the next :meth:`SessionIndex.resolve` starts a new one.

    ``idle_minutes``: inactive for longer than this. ``daily_at_hour``: the last activity was
    before the most recent daily boundary at that hour (in ``tz``; local time when None).
    Both may be set; either one triggers a reset. The default never resets.
    """

    idle_minutes: float | None = None
    daily_at_hour: int | None = None
    tz: tzinfo | None = None

    def __post_init__(self) -> None:
        idle = self.idle_minutes  # NaN would compare False with every age: never a reset
        if idle is not None and not (
            isinstance(idle, int | float) and not isinstance(idle, bool) and 0 < idle < math.inf
        ):
            raise ConfigurationError(f"idle_minutes must be a positive number, got {idle!r:.40}")
        if self.daily_at_hour is not None:
            check_int("daily_at_hour", self.daily_at_hour, 0, 23)
        if self.tz is not None and not isinstance(self.tz, tzinfo):
            raise ConfigurationError(
                f"tz must be a tzinfo (zoneinfo.ZoneInfo('UTC')), got {self.tz!r:.40}"
            )

    def is_stale(self, entry: SessionEntry, now_ms: int) -> bool:
        if self.idle_minutes is not None and now_ms - entry.updated_at > self.idle_minutes * 60_000:
            return True
        if self.daily_at_hour is not None:
            return entry.updated_at < self.last_daily_boundary(now_ms)
        return False

    def last_daily_boundary(self, now_ms: int) -> int:
        """Epoch ms of the latest ``daily_at_hour:00`` at or before ``now_ms``."""
        assert self.daily_at_hour is not None
        now = datetime.fromtimestamp(now_ms / 1000, tz=self.tz)
        boundary = now.replace(hour=self.daily_at_hour, minute=0, second=0, microsecond=0)
        if boundary > now:
            boundary -= timedelta(days=1)
        return int(boundary.timestamp() * 1000)


class SessionIndex:
    """``sessions.json``: ``{session_key: SessionEntry}``, shared safely between processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        policy: ResetPolicy | None = None,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        fsync: bool = True,
    ) -> None:
        self.path = Path(path)
        self.policy = policy or ResetPolicy()
        self._clock = clock
        self._new_id = new_id
        self._fsync = fsync
        _files.ensure_directory(self.path.parent)
        self._lock = LogLock(self.path)
        self._swept = False

    # ------------------------------------------------------------------ reading
    def load(self) -> dict[str, SessionEntry]:
        """Every entry as stored now (a missing file is an empty index)."""
        with self._lock.held():
            return self._read()

    def get(self, key: str) -> SessionEntry | None:
        return self.load().get(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.load())

    def session_path(self, entry: SessionEntry) -> Path:
        """The entry's log file: ``sessionFile`` if set, else ``<sessionId>.jsonl`` beside us.

        ``sessions.json`` is data, not configuration: a tampered ``sessionId`` (``../x``) or
        ``sessionFile`` (``/etc/passwd``, a link out of the directory) must not make the caller
        open a file elsewhere, so the result is resolved (links followed) and must lie inside
        this index's directory; otherwise :class:`StoreCorruptionError` names the entry.
        """
        if not isinstance(entry, SessionEntry):
            raise ConfigurationError(
                f"session_path takes a SessionEntry, got {type(entry).__name__}"
            )
        where = str(self.path)
        home = self.path.parent.resolve()
        if entry.session_file:
            if not isinstance(entry.session_file, str) or "\x00" in entry.session_file:
                raise StoreCorruptionError(f"{where}: 'sessionFile' is not a path", path=where)
            candidate = home / entry.session_file  # an absolute sessionFile replaces home
        else:
            sid = entry.session_id
            if not sid or sid in (".", "..") or any(c in sid for c in "/\\\x00"):
                raise StoreCorruptionError(
                    f"{where}: sessionId {sid!r:.80} is not a plain file name", path=where
                )
            candidate = home / f"{sid}.jsonl"
        try:
            resolved = candidate.resolve()
            str(resolved).encode()  # a lone surrogate (valid JSON escape) names no file
        except (OSError, ValueError) as exc:
            raise StoreCorruptionError(
                f"{where}: session file {str(candidate)!r:.120} is not a usable path ({exc})",
                path=where,
            ) from None
        if resolved.parent != home and home not in resolved.parents:
            raise StoreCorruptionError(
                f"{where}: session file {str(candidate)!r:.120} resolves outside {home}; the "
                "index was edited or a link was planted. Fix the entry or delete it.",
                path=where,
            )
        return resolved

    # ------------------------------------------------------------------ changing
    def resolve(self, key: str) -> SessionEntry:
        """The key's current session, created if missing or replaced if the policy says stale;
        marks it active now. Call this once per inbound message."""

        def change(entries: dict[str, SessionEntry], now: int) -> SessionEntry:
            entry = entries.get(key)
            if entry is None or self.policy.is_stale(entry, now):
                entry = self._fresh(now, entry)
            entry.updated_at = now
            entries[key] = entry
            return entry

        return self._update(change)

    def reset(self, key: str) -> SessionEntry:
        """Start a new session id for ``key`` (counters restart; unknown fields are kept)."""

        def change(entries: dict[str, SessionEntry], now: int) -> SessionEntry:
            entry = self._fresh(now, entries.get(key))
            entries[key] = entry
            return entry

        return self._update(change)

    def record_usage(
        self,
        key: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        context_tokens: int | None = None,
    ) -> SessionEntry:
        """Add one turn's provider usage; ``context_tokens`` is the latest prompt size."""

        def change(entries: dict[str, SessionEntry], now: int) -> SessionEntry:
            entry = self._existing(entries, key)
            entry.input_tokens += input_tokens
            entry.output_tokens += output_tokens
            entry.total_tokens += input_tokens + output_tokens
            if context_tokens is not None:
                entry.context_tokens = context_tokens
            entry.updated_at = now
            return entry

        return self._update(change)

    def record_compaction(self, key: str, *, context_tokens: int | None = None) -> SessionEntry:
        def change(entries: dict[str, SessionEntry], now: int) -> SessionEntry:
            entry = self._existing(entries, key)
            entry.compaction_count += 1
            if context_tokens is not None:
                entry.context_tokens = context_tokens
            entry.updated_at = now
            return entry

        return self._update(change)

    def needs_memory_flush(
        self,
        key: str,
        *,
        context_window: int,
        reserve_floor: int = 20_000,
        soft_threshold: int = 4_000,
    ) -> bool:
        """OpenClaw's pre-compaction flush rule: the prompt reached
        ``context_window - reserve_floor - soft_threshold`` and no flush ran this compaction cycle.
        """
        entry = self.get(key)
        if entry is None:
            return False
        if entry.memory_flush_compaction_count == entry.compaction_count:
            return False
        return entry.context_tokens >= context_window - reserve_floor - soft_threshold

    def record_memory_flush(self, key: str) -> SessionEntry:
        def change(entries: dict[str, SessionEntry], now: int) -> SessionEntry:
            entry = self._existing(entries, key)
            entry.memory_flush_at = now
            entry.memory_flush_compaction_count = entry.compaction_count
            entry.updated_at = now
            return entry

        return self._update(change)

    def delete(self, key: str) -> bool:
        def change(entries: dict[str, SessionEntry], now: int) -> bool:
            return entries.pop(key, None) is not None

        return self._update(change)

    # ------------------------------------------------------------------ internals
    def _now(self) -> int:
        return int(self._clock() * 1000)

    def _fresh(self, now: int, previous: SessionEntry | None) -> SessionEntry:
        extra = dict(previous.extra) if previous else {}
        return SessionEntry(session_id=self._new_id(), updated_at=now, created_at=now, extra=extra)

    def _existing(self, entries: dict[str, SessionEntry], key: str) -> SessionEntry:
        entry = entries.get(key)
        if entry is None:
            raise SessionNotFoundError(f"no session for key {key!r:.80}; call resolve(key) first")
        return entry

    def _update(self, change: Callable[[dict[str, SessionEntry], int], _T]) -> _T:
        with self._lock.held():
            entries = self._read()
            result = change(entries, self._now())
            self._write(entries)
            return result

    def _read(self) -> dict[str, SessionEntry]:
        if not self._swept:  # a crashed writer's temp file (we hold every writer's lock)
            _files.remove_stale_temps(self.path)
            self._swept = True
        raw = _files.read_bytes(self.path)
        if raw is None:
            return {}
        where = str(self.path)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise StoreCorruptionError(
                f"{where}: not UTF-8 (byte {exc.start}); restore it from a backup", path=where
            ) from None
        try:
            data = json.loads(text) if text.strip() else {}
        except RecursionError:
            raise StoreCorruptionError(f"{where}: JSON nested too deeply", path=where) from None
        except json.JSONDecodeError as exc:
            raise StoreCorruptionError(
                f"{where}: not valid JSON ({exc.msg}, line {exc.lineno}); restore it from a "
                "backup or delete it to start a new index",
                path=where,
                line=exc.lineno,
            ) from None
        except ValueError as exc:  # an integer past sys.get_int_max_str_digits() (4,300)
            raise StoreCorruptionError(
                f"{where}: unreadable number ({exc}); restore it from a backup or delete it to "
                "start a new index",
                path=where,
            ) from None
        if not isinstance(data, dict):
            raise StoreCorruptionError(f"{where}: must hold a JSON object", path=where)
        return {
            key: SessionEntry.from_json(value, where=where)
            for key, value in data.items()
            if isinstance(value, dict)
        }

    def _write(self, entries: dict[str, SessionEntry]) -> None:
        try:
            text = json.dumps(
                {k: e.to_json() for k, e in entries.items()}, indent=2, ensure_ascii=False
            )
        except (RecursionError, ValueError, TypeError) as exc:  # a field kept from another tool
            raise StoreError(
                f"{self.path}: an entry cannot be written as JSON ({type(exc).__name__}: "
                f"{str(exc)[:200]}); nothing was written"
            ) from None
        text += "\n"
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise StoreError(
                f"{self.path}: a key or field is not encodable as UTF-8 ({exc.reason}); "
                "nothing was written"
            ) from None
        _files.atomic_write(self.path, data, durable=self._fsync)


__all__ = ["ResetPolicy", "SessionEntry", "SessionIndex"]
