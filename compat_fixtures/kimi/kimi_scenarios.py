"""Deterministic operation scripts replayed both by Kimi CLI's ``Context`` and by our ``JsonlLog``.

An operation is a JSON list: ``["system", text]``, ``["msg", message]`` (``["msg", message,
{"pinned": true}]`` to add trimming attributes), ``["checkpoint"]``, ``["usage", n]``,
``["revert", id]``, ``["clear"]`` and, for our store only, ``["compaction", entry]``.
Messages are written in the field order Kimi's pydantic model dumps (role, name, content,
tool_calls, tool_call_id), so both writers produce byte-identical lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

Op = list[Any]


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _call(call_id: str, name: str, args: str, text: str = "") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {"type": "function", "id": call_id, "function": {"name": name, "arguments": args}}
        ],
    }


def _result(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "content": text, "tool_call_id": call_id}


_PARTS = {
    "role": "user",
    "content": [
        {"type": "text", "text": "look at this: ü ✓ 😀"},
        {"type": "text", "text": "second part"},
    ],
}
_PARALLEL = {
    "role": "assistant",
    "content": "running two tools",
    "tool_calls": [
        {"type": "function", "id": "c2", "function": {"name": "read", "arguments": '{"p":"a"}'}},
        {"type": "function", "id": "c3", "function": {"name": "read", "arguments": '{"p":"b"}'}},
    ],
}

COMMON: dict[str, list[Op]] = {
    "basic": [
        ["system", "You are a careful assistant. Ünïcode ✓"],
        ["checkpoint"],
        ["msg", _user("hello")],
        ["msg", _assistant("hi! how can I help?")],
        ["usage", 120],
        ["checkpoint"],
        ["msg", _user("list files")],
        ["msg", _call("c1", "bash", '{"cmd":"ls"}')],
        ["msg", _result("c1", "a.txt\nb.txt")],
        ["msg", _assistant("two files")],
        ["usage", 310],
    ],
    "revert_then_continue": [
        ["system", "sys"],
        ["checkpoint"],
        ["msg", _user("one")],
        ["msg", _assistant("1")],
        ["usage", 50],
        ["checkpoint"],
        ["msg", _PARTS],
        ["msg", _PARALLEL],
        ["msg", _result("c2", "A")],
        ["msg", _result("c3", "B")],
        ["usage", 90],
        ["checkpoint"],
        ["msg", _user("three")],
        ["revert", 1],
        ["checkpoint"],
        ["msg", _user("after revert: checkpoint ids are reused")],
        ["usage", 77],
        ["checkpoint"],
        ["msg", _assistant("ok")],
        ["revert", 2],
        ["msg", _user("second revert, second rotated file")],
    ],
    "clear_and_restart": [
        ["system", "first prompt"],
        ["checkpoint"],
        ["msg", _user("before clear")],
        ["usage", 10],
        ["clear"],
        ["system", "second prompt"],
        ["checkpoint"],
        ["msg", _user("after clear")],
        ["msg", _assistant("fresh start")],
        ["usage", 25],
        ["checkpoint"],
        ["revert", 0],
        ["msg", _user("back to the start of the new file")],
    ],
    "no_system_prompt": [
        ["msg", _user("no system prompt here")],
        ["checkpoint"],
        ["checkpoint"],
        ["msg", _assistant("two checkpoints in a row")],
        ["checkpoint"],
        ["revert", 1],
    ],
}

OURS_ONLY: dict[str, list[Op]] = {
    "our_attributes_and_compaction": [
        ["system", "pinned system prompt"],
        ["msg", _user("a pinned instruction"), {"pinned": True}],
        ["msg", _user("a low priority aside"), {"priority": -1}],
        ["checkpoint"],
        ["msg", _assistant("noted")],
        ["usage", 400],
        [
            "compaction",
            {
                "summary": "## Goal\nkeep going",
                "first_kept_index": 1,
                "tokens_before": 400,
                "details": {"read_files": ["a.py"], "modified_files": []},
                "reason": "threshold",
                "created_at": "2026-01-01T00:00:00.000Z",
                "summary_message": {"role": "user", "content": "Earlier turns: keep going"},
            },
        ],
        ["checkpoint"],
        ["msg", _user("after compaction")],
        ["usage", 130],
    ],
    # One append of several records: each line carries its place in the batch (_cm.batch),
    # which Kimi must read past (metadata lines too).
    "batches_of_records": [
        ["system", "sys"],
        ["checkpoint"],
        ["batch", [_user("one"), _assistant("1"), {"role": "_usage", "token_count": 40}]],
        ["checkpoint"],
        ["batch", [_user("two"), _PARALLEL, _result("c2", "A"), _result("c3", "B")]],
        ["usage", 90],
    ],
}


def run_ours(ops: list[Op], directory: Path) -> Path:
    """Replay ``ops`` with our store into ``directory``/context.jsonl; return the log path."""
    from context_manager.store import JsonlLog

    path = directory / "context.jsonl"
    with JsonlLog(path, fsync="never") as log:
        for op in ops:
            kind = op[0]
            if kind == "system":
                log.write_system_prompt(op[1])
            elif kind == "msg":
                attrs = op[2] if len(op) > 2 else {}
                log.append_message(op[1], **attrs)
            elif kind == "checkpoint":
                log.checkpoint()
            elif kind == "usage":
                log.append_usage(op[1])
            elif kind == "revert":
                log.revert_to(op[1])
            elif kind == "clear":
                log.clear()
            elif kind == "compaction":
                log.append_compaction(op[1])
            elif kind == "batch":
                log.append(op[1])
            else:  # pragma: no cover
                raise ValueError(f"unknown op {kind!r}")
    lock = directory / "context.jsonl.lock"
    if lock.exists():
        os.remove(lock)
    return path


def log_files(directory: Path) -> dict[str, bytes]:
    """Every context*.jsonl file in ``directory`` by name (rotated files included)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.name.startswith("context") and p.name.endswith(".jsonl")
    }
