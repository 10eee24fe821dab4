"""Pi's ``buildSessionContext``: the messages the model sees for a branch of session entries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..._js import js_date_ms, js_truthy
from ...errors import InvalidMessageError
from ._shapes import _ABSENT, PiEntry, PiMessage


def _copy_present(
    out: dict[str, Any], source: Mapping[str, Any], *pairs: tuple[str, str]
) -> dict[str, Any]:
    """Copy ``source[src]`` to ``out[dst]`` when present (absent means JS ``undefined``)."""
    for dst, src in pairs:
        if src in source:
            out[dst] = source[src]
    return out


def _entry_time(entry: PiEntry) -> int | None:
    """``new Date(entry.timestamp).getTime()``. Pi never throws here, so a timestamp whose JS
    reading we do not reproduce (non-ISO text, a date-time without offset) becomes NaN too."""
    if "timestamp" not in entry:
        return None
    return js_date_ms(entry["timestamp"], unreproduced_as_nan=True)


def _entry_message(role: str, entry: PiEntry, *keys: str) -> dict[str, Any]:
    out = _copy_present({"role": role}, entry, *((key, key) for key in keys))
    out["timestamp"] = _entry_time(entry)
    return out


def create_custom_message(entry: PiEntry) -> dict[str, Any]:
    """The agent message a ``custom_message`` entry stands for."""
    return _entry_message("custom", entry, "customType", "content", "display", "details")


def create_branch_summary_message(entry: PiEntry) -> dict[str, Any]:
    """The agent message a ``branch_summary`` entry stands for."""
    return _entry_message("branchSummary", entry, "summary", "fromId")


def create_compaction_summary_message(entry: PiEntry) -> dict[str, Any]:
    """The agent message a ``compaction`` entry stands for (the summary the model sees)."""
    return _entry_message("compactionSummary", entry, "summary", "tokensBefore")


def _same(a: Mapping[str, Any], a_key: str, b: Mapping[str, Any], b_key: str) -> bool:
    """JS ``a[a_key] === b[b_key]`` for JSON values: absent only equals absent."""
    if (a_key in a) != (b_key in b):
        return False
    return a.get(a_key) == b.get(b_key) and type(a.get(a_key)) is type(b.get(b_key))


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What the model sees for a session path: messages, thinking level, current model.

    ``thinking_level`` is None when the last ``thinking_level_change`` had no level (JS
    ``undefined``, which ``to_pi`` then leaves out, as ``JSON.stringify`` does).
    """

    messages: list[PiMessage]
    thinking_level: Any
    model: dict[str, Any] | None
    thinking_level_given: bool = field(default=True, repr=False)

    def to_pi(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": self.messages}
        if self.thinking_level_given:
            out["thinkingLevel"] = self.thinking_level
        out["model"] = self.model
        return out


def _path_to(entries: Sequence[PiEntry], leaf_id: Any) -> list[PiEntry]:
    """Root-to-leaf path; an unknown, falsy or omitted leaf id means the last entry."""
    by_id: dict[Any, PiEntry] = {}
    for entry in entries:
        if "id" in entry:
            by_id[entry["id"]] = entry
    leaf = by_id.get(leaf_id) if leaf_id is not _ABSENT and js_truthy(leaf_id) else None
    if leaf is None:
        if not entries:
            return []
        leaf = entries[-1]
    path: list[PiEntry] = []
    current: PiEntry | None = leaf
    while current is not None:
        path.append(current)
        if len(path) > len(entries) + 1:
            raise InvalidMessageError(
                "session entries form a parentId cycle",
                hint="each parentId must point to an earlier entry",
            )
        parent = current.get("parentId")
        current = by_id.get(parent) if js_truthy(parent) else None
    path.reverse()
    return path


def build_session_context(
    entries: Sequence[PiEntry], leaf_id: str | None = _ABSENT
) -> SessionContext:
    """Pi's ``buildSessionContext``: walk parentIds from the leaf to the root.

    ``leaf_id`` omitted, unknown or empty means the last entry; ``None`` means "before the first
    entry" (no messages). With a compaction on the path the model sees its summary, then the kept
    entries from ``firstKeptEntryId`` up to the compaction, then everything after it. A parentId
    cycle (Pi would loop forever) raises ``InvalidMessageError``.
    """
    if leaf_id is None:
        return SessionContext([], "off", None)
    path = _path_to(entries, leaf_id)
    thinking_level: Any = "off"
    model: dict[str, Any] | None = None
    compaction: PiEntry | None = None
    for entry in path:
        kind = entry.get("type")
        if kind == "thinking_level_change":
            thinking_level = entry.get("thinkingLevel", _ABSENT)
        elif kind == "model_change":
            model = _copy_present({}, entry, ("provider", "provider"), ("modelId", "modelId"))
        elif kind == "message" and entry["message"].get("role") == "assistant":
            model = _copy_present(
                {}, entry["message"], ("provider", "provider"), ("modelId", "model")
            )
        elif kind == "compaction":
            compaction = entry
    messages: list[PiMessage] = []

    def append(entry: PiEntry) -> None:
        kind = entry.get("type")
        if kind == "message":
            messages.append(entry["message"])
        elif kind == "custom_message":
            messages.append(create_custom_message(entry))
        elif kind == "branch_summary" and js_truthy(entry.get("summary")):
            messages.append(create_branch_summary_message(entry))

    if compaction is None:
        for entry in path:
            append(entry)
    else:
        messages.append(create_compaction_summary_message(compaction))
        at = next(
            (
                i
                for i, e in enumerate(path)
                if e.get("type") == "compaction" and _same(e, "id", compaction, "id")
            ),
            -1,
        )
        found_first_kept = False
        for entry in path[: max(at, 0)]:
            found_first_kept = found_first_kept or _same(
                entry, "id", compaction, "firstKeptEntryId"
            )
            if found_first_kept:
                append(entry)
        for entry in path[at + 1 :]:
            append(entry)
    if thinking_level is _ABSENT:
        return SessionContext(messages, None, model, thinking_level_given=False)
    return SessionContext(messages, thinking_level, model)
