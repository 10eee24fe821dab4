"""``stats().sections``: where the context's tokens go; the sections add up to what is sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.cli import main
from context_manager.compaction.pruning import ToolResultPruning
from context_manager.counting import count_tokens


def _exchange(i: int, size: int) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"look at file {i}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": "r" * size},
        {"role": "assistant", "content": f"file {i} is fine"},
    ]


def test_sections_add_up_to_the_context_tokens() -> None:
    tools = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
    manager = MessageContextManager(
        4_000,
        reserve_tokens=0,
        counter="chars",
        system_prompt="You review code.",
        tools=tools,
        pruning=ToolResultPruning(max_chars=400, head_chars=100, tail_chars=100, soft_ratio=None),
    )
    manager.add({"role": "user", "content": "keep this rule"}, pinned=True)
    for i in range(30):
        manager.extend(_exchange(i, 1_500))
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    manager.add({"role": "user", "content": [{"type": "text", "text": "and this"}, image]})
    stats = manager.stats()
    sections = stats.sections
    assert sum(sections.values()) == stats.context_tokens == manager.context_tokens()
    assert sections["system"] == count_tokens([manager.system_message], None, counter="chars") - 3
    assert sections["tools"] == manager.counter.count_tools(tools)
    assert sections["overhead"] == 3
    assert sections["pinned"] == manager.count_message(
        {"role": "user", "content": "keep this rule"}
    )
    assert sections["media"] == 85  # one image at the chars counter's image price
    assert sections["tool_results"] > 0 and sections["history"] > 0
    # Tool results count as sent: pruned (400 chars at most), not as held (1,500 chars each).
    sent = manager.get_context()
    results = [m for m in sent if m.get("role") == "tool"]
    assert sections["tool_results"] == sum(manager.count_message(m) for m in results)


def test_a_summary_is_its_own_section() -> None:
    manager = MessageContextManager(10_000, counter="chars")
    for i in range(6):
        manager.add({"role": "user", "content": f"question {i}"})
        manager.add({"role": "assistant", "content": f"answer {i}"})
    summary = {"role": "user", "content": "the first four turns, summarized"}
    manager.apply_compaction(summary, 8)
    stats = manager.stats()
    assert stats.sections["summary"] == manager.count_message(summary)
    assert sum(stats.sections.values()) == stats.context_tokens


def test_cli_stats_prints_the_sections(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "system", "content": "be brief"}, *_exchange(0, 800)]))
    assert main(["stats", str(chat), "--window", "10000", "--counter", "chars"]) == 0
    captured = capsys.readouterr()
    stats = json.loads(captured.out)
    assert sum(stats["sections"].values()) == stats["context_tokens"]
    assert stats["sections"]["tool_results"] == 203  # ceil(800 / 4) + 3
    assert "sections: tool_results 203" in captured.err
