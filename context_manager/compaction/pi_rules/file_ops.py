"""Pi's file-operation tracking: which files a conversation read or modified."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..._js import js_sort_key
from ._shapes import _ABSENT, PiMessage


@dataclass(slots=True)
class FileOps:
    """Paths touched by read / write / edit tool calls, in first-seen order (JS ``Set``s)."""

    read: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)

    def to_pi(self) -> dict[str, list[str]]:
        return {"read": list(self.read), "written": list(self.written), "edited": list(self.edited)}


def create_file_ops() -> FileOps:
    return FileOps()


def extract_file_ops_from_message(message: PiMessage, file_ops: FileOps) -> None:
    """Record the ``path`` of each read / write / edit tool call of an assistant message."""
    if message.get("role") != "assistant":
        return
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, Mapping) or block.get("type", _ABSENT) != "toolCall":
            continue
        if "arguments" not in block or "name" not in block:
            continue
        args = block["arguments"]
        path = args.get("path") if isinstance(args, Mapping) else None
        if not isinstance(path, str) or not path:
            continue
        target = (
            {"read": file_ops.read, "write": file_ops.written, "edit": file_ops.edited}.get(
                block["name"]
            )
            if isinstance(block["name"], str)
            else None
        )
        if target is not None:
            target.setdefault(path, None)


def compute_file_lists(file_ops: FileOps) -> tuple[list[str], list[str]]:
    """``(read_files, modified_files)``: read-only paths and edited-or-written paths, each
    sorted by UTF-16 code units as JS ``sort()`` does."""
    modified = dict.fromkeys([*file_ops.edited, *file_ops.written])
    read_only = sorted((f for f in file_ops.read if f not in modified), key=js_sort_key)
    return read_only, sorted(modified, key=js_sort_key)


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """``<read-files>`` / ``<modified-files>`` blocks to append to a summary, or ``""``."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""
