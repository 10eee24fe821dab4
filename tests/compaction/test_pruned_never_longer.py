"""Pruning never makes a result longer: a result its placeholder (or stub, or trim) would not
shorten is sent as it is, is not counted as pruned, and frees no negative tokens.

The oracle is the same conversation in a manager without pruning: what it sends for the short
results is what the pruned manager must send for them.
"""

from __future__ import annotations

from typing import Any

from context_manager import MessageContextManager, ToolResultPruning
from context_manager.offload import MemoryOffload


def session(pruning: ToolResultPruning | None, results: list[str]) -> MessageContextManager:
    manager = MessageContextManager(
        1000,
        counter="chars",
        reserve_tokens=0,
        provider="openai",
        **({"pruning": pruning} if pruning is not None else {}),
    )
    for i, text in enumerate(results):
        manager.add({"role": "user", "content": f"step {i}"})
        call = {"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
        manager.add({"role": "tool", "tool_call_id": f"c{i}", "content": text})
        manager.get_context()
    return manager


def tool_texts(context: list[Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in context if m.get("role") == "tool"}


def test_results_shorter_than_the_placeholder_are_never_cleared() -> None:
    results = ["ok"] * 100
    plain = session(None, results).get_context()
    manager = session(ToolResultPruning.anthropic(trigger_tokens=300, keep_last=1), results)
    context = manager.get_context()
    assert context == plain  # as many turns fit as without pruning, each result as it was
    report = manager.stats().pruning
    assert report is not None
    assert (report.results_cleared, report.tokens_freed) == (0, 0)


def test_long_results_are_still_cleared_beside_short_ones() -> None:
    pruning = ToolResultPruning.anthropic(trigger_tokens=300, keep_last=1)
    results = ["ok" if i % 2 else "listing " * 40 for i in range(40)]
    manager = session(pruning, results)
    texts = tool_texts(manager.get_context())
    assert pruning.placeholder in texts.values()
    for call_id, text in texts.items():
        original = results[int(call_id[1:])]
        assert len(text) <= len(original), call_id
        if original == "ok":
            assert text == "ok"
    report = manager.stats().pruning
    assert report is not None and report.results_cleared > 0 and report.tokens_freed > 0


def test_with_an_offload_area_the_stub_must_be_shorter_too() -> None:
    """Longer than the placeholder, shorter than the placeholder and the note naming the handle:
    the stub would be longer, so the result stays and nothing is stored for it."""
    area = MemoryOffload("s")
    pruning = ToolResultPruning.anthropic(trigger_tokens=300, keep_last=1, offload=area)
    medium = "x" * (len(pruning.placeholder) + 20)
    manager = session(pruning, [medium] * 60)
    assert set(tool_texts(manager.get_context()).values()) == {medium}
    assert len(area) == 0
    report = manager.stats().pruning
    assert report is not None and report.tokens_freed == 0


def test_a_trim_that_would_not_be_shorter_is_not_made() -> None:
    """``max_chars`` at ``head_chars + tail_chars``: a result a few chars over it would come
    back with the cut marker added, longer than it was."""
    pruning = ToolResultPruning.openclaw(
        max_chars=200, head_chars=100, tail_chars=100, soft_ratio=0.0, hard_clear=False
    )
    slightly_over = "y" * 205
    results = [slightly_over] * 30
    plain = session(None, results).get_context()
    manager = session(pruning, results)
    assert manager.get_context() == plain
    report = manager.stats().pruning
    assert report is not None and (report.results_trimmed, report.tokens_freed) == (0, 0)
