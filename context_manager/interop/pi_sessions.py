"""Read Pi (and OpenClaw) session transcripts: the model context of the current branch.

A Pi session file is JSONL: a header ``{"type":"session","version":3,"id",...}`` then entries
with ``id`` / ``parentId`` forming a tree (branches share ancestors). This module reproduces how
``SessionManager.open(file)`` of ``@mariozechner/pi-coding-agent`` 0.73.1 loads one, quirks
included: the first line must be a valid header or the session is empty, malformed lines are
skipped, v1/v2 files are migrated to v3, and the leaf is the last entry indexed. Which messages
the model then sees is Pi's ``buildSessionContext``, implemented once in :mod:`.pi`
(:func:`~context_manager.compaction.pi_rules.build_session_context`).

Known gaps, none of which Pi writes: non-object JSON lines and lines nested deeper than
Python's JSON parser goes (about a thousand levels) are skipped (Pi would index them as
entries), timestamps JS would read as local time (non-ISO text) become ``null`` here, and a
``parentId`` cycle raises ``InvalidMessageError`` (Pi would loop forever).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._js import js_trim
from ..compaction.pi_rules import build_session_context
from ..errors import ConfigurationError, StoreError
from ..messages.nesting import short_repr

_MISSING: Any = object()  # an omitted argument or key (JS ``undefined``), unlike None (``null``)


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
        except (ValueError, RecursionError):  # nested deeper than Python's parser goes
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
                    target = (
                        entries[int(index)]
                        if 0 <= index < len(entries) and index == int(index)
                        else None
                    )
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


def session_context_from_text(text: str, leaf_id: Any = _MISSING) -> dict[str, Any]:
    """Load a session file's text as Pi's SessionManager does and build the branch's context:
    ``leaf_id`` omitted means SessionManager's leaf (the id of the last entry it indexed, so an
    entry whose id is null yields no messages); otherwise as Pi's ``buildSessionContext``."""
    entries = [e for e in parse_session_lines(text) if e.get("type") != "session"]
    if leaf_id is _MISSING and entries:
        leaf_id = entries[-1].get("id", _MISSING)
    if leaf_id is _MISSING:
        return build_session_context(entries).to_pi()
    return build_session_context(entries, leaf_id).to_pi()


def read_pi_session(path: str | Path, leaf_id: Any = _MISSING) -> dict[str, Any]:
    """``{"messages", "thinkingLevel", "model"}`` for the session file at ``path``.

    A file that cannot be read (missing, a directory, no permission) raises ``StoreError``
    (Pi would load a missing file as an empty session, which hides a wrong path). Bytes that
    are not UTF-8 are decoded as Node's ``readFileSync(path, "utf8")`` does, each invalid
    sequence as U+FFFD, so a line holding one loads as it does in Pi.
    """
    if not isinstance(path, str | os.PathLike):
        raise ConfigurationError(f"path must be a str or a Path, got {short_repr(path, 60)}")
    try:
        raw = Path(path).read_bytes()
    except (OSError, ValueError, TypeError) as exc:  # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StoreError(
            f"cannot read the Pi session file {short_repr(path, 200)}: {reason}"
        ) from None
    return session_context_from_text(raw.decode("utf-8", "replace"), leaf_id)
