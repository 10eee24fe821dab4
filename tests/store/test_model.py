"""Property test: any sequence of log operations restores to what a plain list model predicts."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager.store import JsonlLog

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("msg"), st.text(max_size=12)),
        st.tuples(st.just("system"), st.text(max_size=8)),
        st.tuples(st.just("usage"), st.integers(0, 10**6)),
        st.tuples(st.just("checkpoint"), st.none()),
        st.tuples(st.just("revert"), st.integers(0, 6)),
        st.tuples(st.just("clear"), st.none()),
    ),
    max_size=40,
)


def model_state(lines: list[dict[str, Any]]) -> dict[str, Any]:
    state: dict[str, Any] = {"messages": [], "token_count": 0, "next": 0, "system": None}
    for line in lines:
        role = line["role"]
        if role == "_usage":
            state["token_count"] = line["token_count"]
        elif role == "_checkpoint":
            state["next"] = line["id"] + 1
        elif role == "_system_prompt":
            state["system"] = line["content"]
        else:
            state["messages"].append(line["content"])
    return state


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_log_matches_list_model(ops: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "context.jsonl"
        log = JsonlLog(path, fsync="never")
        lines: list[dict[str, Any]] = []  # the model: the file's records
        rotated: list[list[dict[str, Any]]] = []
        for kind, arg in ops:
            if kind == "msg":
                log.append_message({"role": "user", "content": arg})
                lines.append({"role": "user", "content": arg})
            elif kind == "system":
                log.write_system_prompt(arg)
                lines.append({"role": "_system_prompt", "content": arg})
            elif kind == "usage":
                log.append_usage(arg)
                lines.append({"role": "_usage", "token_count": arg})
            elif kind == "checkpoint":
                lines.append({"role": "_checkpoint", "id": log.checkpoint()})
            elif kind == "revert":
                if arg >= model_state(lines)["next"]:
                    continue  # unknown ids are tested elsewhere
                rotated.append(list(lines))
                log.revert_to(arg)
                lines = lines[: lines.index({"role": "_checkpoint", "id": arg})]
            else:
                if path.exists():
                    rotated.append(list(lines))
                log.clear()
                lines = []
        log.close()
        restored = JsonlLog(path, strict=True).restore()
        expected = model_state(lines)
        assert [m.message["content"] for m in restored.messages] == expected["messages"]
        assert restored.token_count == expected["token_count"]
        assert restored.next_checkpoint_id == expected["next"]
        assert restored.system_prompt == expected["system"]
        for number, content in enumerate(rotated, start=1):
            text = (Path(tmp) / f"context_{number}.jsonl").read_text(encoding="utf-8")
            assert [json.loads(x) for x in text.split("\n") if x] == content
        assert not (Path(tmp) / f"context_{len(rotated) + 1}.jsonl").exists()
