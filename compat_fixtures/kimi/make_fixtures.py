"""Regenerate the Kimi CLI interop fixtures (run with a Python >= 3.12 that has kimi-cli 1.52).

    python3.13 -m venv /tmp/kimi-venv && /tmp/kimi-venv/bin/pip install 'kimi-cli==1.52.0'
    /tmp/kimi-venv/bin/python compat_fixtures/kimi/make_fixtures.py

For every scenario in kimi_scenarios.py:
- ``kimi_written/<name>/``: the files Kimi's own ``Context`` writes for the operations, plus
  ``kimi_restore.json``: what ``Context.restore()`` gives for the final ``context.jsonl``.
- ``ours_written/<name>/``: the files OUR ``JsonlLog`` writes for the same operations (imported
  from this repository), ``kimi_restore.json`` (Kimi restoring our file) and
  ``kimi_revert_<id>.json`` (Kimi reverting a copy of our file to each checkpoint: the rewritten
  file and the restored state).
Output is deterministic: regenerating reproduces the committed files byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository, for context_manager
sys.path.insert(0, str(HERE))

from kimi_cli.soul.context import Context  # noqa: E402
from kimi_scenarios import COMMON, OURS_ONLY, Op, log_files, run_ours  # noqa: E402
from kosong.message import Message  # noqa: E402


async def run_kimi(ops: list[Op], directory: Path) -> None:
    context = Context(directory / "context.jsonl")
    for op in ops:
        kind = op[0]
        if kind == "system":
            await context.write_system_prompt(op[1])
        elif kind == "msg":
            await context.append_message(Message.model_validate(op[1]))
        elif kind == "checkpoint":
            await context.checkpoint(add_user_message=False)
        elif kind == "usage":
            await context.update_token_count(op[1])
        elif kind == "revert":
            await context.revert_to(op[1])
        elif kind == "clear":
            await context.clear()
        else:
            raise ValueError(f"Kimi cannot replay op {kind!r}")


def state_of(context: Context) -> dict[str, Any]:
    return {
        "history": [m.model_dump(mode="json", exclude_none=True) for m in context.history],
        "token_count": context.token_count,
        "n_checkpoints": context.n_checkpoints,
        "system_prompt": context.system_prompt,
    }


async def kimi_restore(path: Path) -> dict[str, Any]:
    context = Context(path)
    await context.restore()
    return state_of(context)


async def kimi_revert(path: Path, checkpoint_id: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "context.jsonl"
        shutil.copyfile(path, copy)
        context = Context(copy)
        await context.restore()
        await context.revert_to(checkpoint_id)
        state = state_of(context)
        state["file"] = copy.read_text(encoding="utf-8")
        return state


def dump(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True) + "\n")


def write_files(directory: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (directory / name).write_bytes(data)


async def make_damaged() -> None:
    """A Kimi-written log with a corrupt middle line, a non-object line and a torn tail."""
    out = HERE / "damaged"
    out.mkdir()
    lines = (HERE / "kimi_written" / "basic" / "context.jsonl").read_text().splitlines(True)
    lines[3] = lines[3][: len(lines[3]) // 2] + "\n"  # cut a message line in half
    lines.insert(6, "[1, 2, 3]\n")
    damaged = "".join(lines) + '{"role": "assistant", "content": "never fini'
    (out / "context.jsonl").write_text(damaged, encoding="utf-8")
    dump(out / "kimi_restore.json", await kimi_restore(out / "context.jsonl"))


KIMI_LIMITS = {
    "message_without_content": {
        "role": "assistant",
        "tool_calls": [
            {"type": "function", "id": "c", "function": {"name": "f", "arguments": "{}"}}
        ],
    },
    "metadata_without_content": {"role": "_compaction", "summary": "s"},
    "metadata_with_null_content": {"role": "_compaction", "content": None, "summary": "s"},
    "anthropic_tool_use_block": {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
    },
    "openai_input_text_part": {"role": "user", "content": [{"type": "input_text", "text": "x"}]},
    "image_url_part": {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": "", "detail": "low"}}],
    },
}


async def probe_limits() -> None:
    """What Kimi's restore does with one odd line between two good ones (why we always write a
    "content" key, and which content parts Kimi can read)."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, record in KIMI_LIMITS.items():
            path = Path(tmp) / f"{name}.jsonl"
            good = json.dumps({"role": "user", "content": "ok"})
            path.write_text(f"{good}\n{json.dumps(record)}\n{good}\n", encoding="utf-8")
            try:
                state = await kimi_restore(path)
                results[name] = {
                    "record": record,
                    "outcome": "restored",
                    "history_length": len(state["history"]),
                }
            except Exception as exc:  # the point is to record which exception aborts restore
                results[name] = {
                    "record": record,
                    "outcome": "restore raised",
                    "exception": type(exc).__name__,
                }
    dump(HERE / "kimi_limits.json", results)


async def main() -> None:
    for kind in ("kimi_written", "ours_written", "damaged"):
        shutil.rmtree(HERE / kind, ignore_errors=True)
    for name, ops in COMMON.items():
        out = HERE / "kimi_written" / name
        out.mkdir(parents=True)
        with tempfile.TemporaryDirectory() as tmp:
            await run_kimi(ops, Path(tmp))
            write_files(out, log_files(Path(tmp)))
        dump(out / "kimi_restore.json", await kimi_restore(out / "context.jsonl"))
    for name, ops in {**COMMON, **OURS_ONLY}.items():
        out = HERE / "ours_written" / name
        out.mkdir(parents=True)
        with tempfile.TemporaryDirectory() as tmp:
            run_ours(ops, Path(tmp))
            write_files(out, log_files(Path(tmp)))
        restored = await kimi_restore(out / "context.jsonl")
        dump(out / "kimi_restore.json", restored)
        for checkpoint_id in range(restored["n_checkpoints"]):
            dump(
                out / f"kimi_revert_{checkpoint_id}.json",
                await kimi_revert(out / "context.jsonl", checkpoint_id),
            )
    await make_damaged()
    await probe_limits()
    print(
        f"wrote {len(COMMON)} Kimi-written and {len(COMMON) + len(OURS_ONLY)} our-written "
        f"scenarios under {HERE}"
    )


if __name__ == "__main__":
    asyncio.run(main())
