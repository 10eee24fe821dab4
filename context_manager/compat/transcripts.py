"""Read Pi (and OpenClaw) session transcripts: the model context of the current branch.

A Pi session file is JSONL: a header ``{"type":"session","version":3,"id",...}`` then entries
with ``id`` / ``parentId`` forming a tree (branches share ancestors). The model sees the path from
the leaf (the last entry, unless a leaf is given) to the root: if a ``compaction`` is on the path,
its summary first, then the entries from its ``firstKeptEntryId`` up to it, then everything after
it; ``message`` entries contribute their message, ``custom_message`` and non-empty
``branch_summary`` entries become ``custom`` / ``branchSummary`` messages; ``model_change`` /
``thinking_level_change`` (and assistant messages) set the model and thinking level.

This reproduces ``SessionManager.open(file).buildSessionContext()`` of
``@mariozechner/pi-coding-agent`` 0.73.1, loading quirks included (the first line must be a valid
header or the session is empty; malformed lines are skipped; v1/v2 files are migrated; timestamps
become epoch milliseconds the way JS ``new Date(x).getTime()`` does for ISO strings and numbers,
``null`` when unparseable). Known gaps, none of which Pi writes: non-object JSON lines are skipped
(Pi would index them as entries), JS's non-ISO date formats parse to ``null`` here, and a
``parentId`` cycle ends the walk here (Pi would loop forever).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

_MISSING: Any = object()
# JS String.prototype.trim whitespace: WhiteSpace + LineTerminator code points.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_MAX_DATE_MS = 8.64e15
_ISO_DATE = re.compile(
    r"^(?P<y>[+-]\d{6}|\d{4})(?:-(?P<mo>\d{2})(?:-(?P<d>\d{2}))?)?"
    r"(?:T(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d+))?)?"
    r"(?P<tz>Z|[+-]\d{2}:\d{2})?)?$"
)


def js_trim(text: str) -> str:
    return text.strip(_JS_SPACE)


def js_date_ms(value: Any) -> int | None:
    """``new Date(value).getTime()`` for ISO strings and numbers; None stands for NaN."""
    if isinstance(value, bool) or value is None or value is _MISSING:
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value) or abs(value) > _MAX_DATE_MS:
            return None
        return int(value)
    if not isinstance(value, str):
        return None
    match = _ISO_DATE.match(js_trim(value))
    if match is None or (match["h"] is not None and match["tz"] is None):
        return None  # a date-time without offset is local time in JS: not reproduced
    year = int(match["y"])
    if match["y"] == "-000000":
        return None
    try:
        month, day = int(match["mo"] or 1), int(match["d"] or 1)
        hour, minute = int(match["h"] or 0), int(match["mi"] or 0)
        second = int(match["s"] or 0)
        millis = int((match["f"] or "0")[:3].ljust(3, "0"))
        if hour == 24 and minute == 0 and second == 0 and millis == 0:
            hour, extra = 0, timedelta(days=1)
        else:
            extra = timedelta()
        stamp = datetime(year, month, day, hour, minute, second, tzinfo=UTC) + extra
    except ValueError:
        return None
    offset = 0
    tz = match["tz"]
    if tz and tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        hours, minutes = int(tz[1:3]), int(tz[4:6])
        if hours > 23 or minutes > 59:
            return None
        offset = sign * (hours * 60 + minutes) * 60_000
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    ms = (stamp - epoch) // timedelta(milliseconds=1) + millis - offset
    return ms if abs(ms) <= _MAX_DATE_MS else None


def _js_truthy(value: Any) -> bool:
    if value is _MISSING or value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    return not (isinstance(value, str) and value == "")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_session_lines(text: str) -> list[dict[str, Any]]:
    """Pi's loader: trim, split on newlines, JSON-parse each line, skip malformed ones, require a
    header first (else the session is empty), then migrate v1/v2 entries to v3."""
    entries: list[dict[str, Any]] = []
    for line in js_trim(text).split("\n"):
        if not js_trim(line):
            continue
        try:
            value = json.loads(line, parse_constant=_reject_constant)
        except ValueError:
            continue
        if isinstance(value, dict):
            entries.append(value)
    if not entries:
        return entries
    header = entries[0]
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        return []
    _migrate(entries)
    return entries


def _migrate(entries: list[dict[str, Any]]) -> None:
    header = next((e for e in entries if e.get("type") == "session"), None)
    version = header.get("version", _MISSING) if header is not None else _MISSING
    version = 1 if version is _MISSING or version is None else version
    if not isinstance(version, int | float) or version >= 3:
        return
    if version < 2:
        previous: str | None = None
        for number, entry in enumerate(entries):
            if entry.get("type") == "session":
                entry["version"] = 2
                continue
            entry["id"] = f"v1:{number}"  # Pi draws random ids; only uniqueness matters
            entry["parentId"] = previous
            previous = entry["id"]
            if entry.get("type") == "compaction":
                index = entry.get("firstKeptEntryIndex")
                if isinstance(index, int | float) and not isinstance(index, bool):
                    target = entries[int(index)] if 0 <= index < len(entries) and \
                        index == int(index) else None
                    if target is not None and target.get("type") != "session":
                        entry["firstKeptEntryId"] = target.get("id", _MISSING)
                    entry.pop("firstKeptEntryIndex", None)
    for entry in entries:
        if entry.get("type") == "session":
            entry["version"] = 3
        elif entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"


def _defined(**fields: Any) -> dict[str, Any]:
    """An object literal after JSON.stringify: undefined (missing) fields vanish."""
    return {k: v for k, v in fields.items() if v is not _MISSING}


def _as_message(entry: dict[str, Any]) -> dict[str, Any] | None:
    kind = entry.get("type")
    if kind == "message":
        message: dict[str, Any] = entry["message"]
        return message
    if kind == "custom_message":
        return _defined(
            role="custom",
            customType=entry.get("customType", _MISSING),
            content=entry.get("content", _MISSING),
            display=entry.get("display", _MISSING),
            details=entry.get("details", _MISSING),
            timestamp=js_date_ms(entry.get("timestamp", _MISSING)),
        )
    if kind == "branch_summary" and _js_truthy(entry.get("summary", _MISSING)):
        return _defined(
            role="branchSummary",
            summary=entry["summary"],
            fromId=entry.get("fromId", _MISSING),
            timestamp=js_date_ms(entry.get("timestamp", _MISSING)),
        )
    return None


def build_session_context(
    entries: Sequence[dict[str, Any]], leaf_id: Any = _MISSING
) -> dict[str, Any]:
    """Pi's ``buildSessionContext(entries, leafId)``: ``leaf_id=None`` means "before the first
    entry" (empty); omitted or unknown means the last entry."""
    by_id: dict[Any, dict[str, Any]] = {}
    for entry in entries:
        by_id[entry.get("id", _MISSING)] = entry
    empty: dict[str, Any] = {"messages": [], "thinkingLevel": "off", "model": None}
    if leaf_id is None:
        return empty
    leaf = by_id.get(leaf_id) if _js_truthy(leaf_id) else None
    if leaf is None:
        leaf = entries[-1] if entries else None
    if leaf is None:
        return empty
    path: list[dict[str, Any]] = []
    seen: set[int] = set()
    current: dict[str, Any] | None = leaf
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        path.append(current)
        parent = current.get("parentId", _MISSING)
        current = by_id.get(parent) if _js_truthy(parent) else None
    path.reverse()

    thinking: Any = "off"
    model: Any = None
    compaction: dict[str, Any] | None = None
    for entry in path:
        kind = entry.get("type")
        if kind == "thinking_level_change":
            thinking = entry.get("thinkingLevel", _MISSING)
        elif kind == "model_change":
            model = _defined(provider=entry.get("provider", _MISSING),
                             modelId=entry.get("modelId", _MISSING))
        elif kind == "message" and entry["message"].get("role") == "assistant":
            message = entry["message"]
            model = _defined(provider=message.get("provider", _MISSING),
                             modelId=message.get("model", _MISSING))
        elif kind == "compaction":
            compaction = entry

    messages: list[dict[str, Any]] = []

    def emit(entry: dict[str, Any]) -> None:
        message = _as_message(entry)
        if message is not None:
            messages.append(message)

    if compaction is None:
        for entry in path:
            emit(entry)
    else:
        messages.append(_defined(
            role="compactionSummary",
            summary=compaction.get("summary", _MISSING),
            tokensBefore=compaction.get("tokensBefore", _MISSING),
            timestamp=js_date_ms(compaction.get("timestamp", _MISSING)),
        ))
        compaction_id = compaction.get("id", _MISSING)
        at = next(i for i, e in enumerate(path)
                  if e.get("type") == "compaction" and e.get("id", _MISSING) == compaction_id)
        first_kept = compaction.get("firstKeptEntryId", _MISSING)
        found = False
        for entry in path[:at]:
            if entry.get("id", _MISSING) == first_kept:
                found = True
            if found:
                emit(entry)
        for entry in path[at + 1 :]:
            emit(entry)
    return _defined(messages=messages, thinkingLevel=thinking, model=model)


def session_context_from_text(text: str, leaf_id: Any = _MISSING) -> dict[str, Any]:
    """Load a session file's text as Pi's SessionManager does and build the branch's context."""
    entries = [e for e in parse_session_lines(text) if e.get("type") != "session"]
    if leaf_id is _MISSING:  # SessionManager's leaf: the last entry it indexed
        leaf_id = entries[-1].get("id", _MISSING) if entries else None
        if not entries:
            return {"messages": [], "thinkingLevel": "off", "model": None}
    return build_session_context(entries, leaf_id)


def read_pi_session(path: str | Path, leaf_id: Any = _MISSING) -> dict[str, Any]:
    """``{"messages", "thinkingLevel", "model"}`` for the session file at ``path``."""
    return session_context_from_text(Path(path).read_text(encoding="utf-8"), leaf_id)


def _run_case(case: dict[str, Any]) -> dict[str, Any]:
    if "leafId" in case:
        return session_context_from_text(case["jsonl"], case["leafId"])
    return session_context_from_text(case["jsonl"])


FIXTURE_SUITES: dict[str, Callable[[Any], Any]] = {"pi.buildSessionContext": _run_case}
