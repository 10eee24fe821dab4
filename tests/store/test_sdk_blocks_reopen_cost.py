"""A session whose assistant turns are dicts holding Anthropic SDK blocks (what Anthropic's own
tool loop appends: ``{"role": "assistant", "content": response.content}``) reopens at a cost
per stored block of a plain validation: each block comes back as the SDK type it was, and the
SDK part's validator is built once, not per block (schema generation per block made opening a
50-turn session take seconds, a 200-turn one minutes).

The cost is counted in calls (``tests.linear_time.python_calls``), which do not depend on the
machine's load: the open of a 40-turn session may cost at most 4x (plus slack) the calls of a
10-turn one after the first open of the process, and far fewer per block than building a
validator costs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager

from ..linear_time import python_calls

anthropic_types = pytest.importorskip("anthropic.types")


def response(n: int) -> Any:
    return anthropic_types.Message.model_validate(
        {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": f"EqQB{n}=="},
                {"type": "tool_use", "id": f"toolu_{n}", "name": "read", "input": {"p": n}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def session(tmp_path: Path, name: str, turns: int) -> str:
    url = f"sqlite:///{tmp_path / name}.db"
    manager = MessageContextManager.open(url, session="s", max_tokens=100_000, provider="anthropic")
    for n in range(turns):
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "ok"}
        manager.add({"role": "user", "content": f"step {n}"})
        manager.add({"role": "assistant", "content": response(n).content})
        manager.add({"role": "user", "content": [result]})
    manager.store.close()
    return url


def reopen(url: str) -> list[Any]:
    manager = MessageContextManager.open(url, session="s", max_tokens=100_000, provider="anthropic")
    try:
        return manager.get_context()
    finally:
        manager.store.close()


def test_reopening_sdk_blocks_costs_a_validation_per_block(tmp_path: Path) -> None:
    small, large = session(tmp_path, "small", 10), session(tmp_path, "large", 40)
    context = reopen(small)  # the first open of the process may build what it needs once
    block = context[1]["content"][1]
    assert isinstance(block, anthropic_types.ToolUseBlock) and block.id == "toolu_0"
    small_calls = python_calls(lambda: reopen(small))
    large_calls = python_calls(lambda: reopen(large))
    assert large_calls < 5 * small_calls, (small_calls, large_calls)
    per_block = (large_calls - small_calls) / 60  # 30 more turns, 2 blocks each
    assert per_block < 2_000, f"{per_block:.0f} calls per stored block"
