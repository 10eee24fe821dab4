"""FIFO with view pruning: every request fits the budget, counted on what is actually sent.

FIFO evicts on the pruned sums of the view, so it may keep more than fits unpruned. A tool
result joins its call's group without opening a new one: if the pruned sums missed that growth,
FIFO evicted as if the newest result cost nothing and the request went over. The count here is
the test's own: tiktoken's o200k_base with OpenAI's cookbook formula (3 tokens a message plus
the role and the content, 3 for each tool call plus its name and arguments, 3 of reply priming),
never the manager's.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from context_manager import MessageContextManager, ToolResultPruning
from context_manager.compaction.pruning import emergency_pruning
from context_manager.counting.tiktoken_loader import load_encoding

pytest.importorskip("tiktoken")

ENC = load_encoding("o200k_base")
LINES = ["def f(x):", "    return x + 1", "# TODO: cache this", "import os", "print(f(41))"]

PRESETS = {
    "openclaw": lambda: ToolResultPruning.openclaw(),
    "anthropic": lambda: ToolResultPruning.anthropic(trigger_tokens=500, keep_last=1),
    "emergency": emergency_pruning,
}


def sent_tokens(context: list[dict[str, Any]]) -> int:
    """OpenAI's cookbook count of a chat request (o200k_base)."""
    n = 3
    for m in context:
        n += 3 + len(ENC.encode(m["role"]))
        if isinstance(m.get("content"), str):
            n += len(ENC.encode(m["content"]))
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            n += 3 + len(ENC.encode(fn["name"])) + len(ENC.encode(fn["arguments"]))
    return n


def result(rng: random.Random) -> str:
    """A file read: from a few lines to a few thousand characters."""
    return "\n".join(rng.choice(LINES) for _ in range(rng.choice([2, 20, 60, 150, 400])))


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_fifo_with_pruning_keeps_every_request_within_budget(preset: str) -> None:
    rng = random.Random(preset)
    manager = MessageContextManager(
        2000,
        strategy="fifo",
        counter="tiktoken:o200k_base",
        reserve_tokens=0,
        provider="openai",
        pruning=PRESETS[preset](),
    )
    pruned = 0
    for i in range(220):
        manager.add({"role": "user", "content": f"step {i}: read the next file"})
        calls = [
            {
                "id": f"call_{i}_{k}",
                "type": "function",
                "function": {"name": "read", "arguments": json.dumps({"path": f"src/m{k}.py"})},
            }
            for k in range(rng.choice([1, 1, 2]))
        ]
        manager.add({"role": "assistant", "content": None, "tool_calls": calls})
        for call in calls:
            manager.add({"role": "tool", "tool_call_id": call["id"], "content": result(rng)})
        if rng.random() < 0.3:
            manager.add({"role": "assistant", "content": "Read it; next one."})
        context = manager.get_context()
        sent = sent_tokens(context)
        assert sent <= manager.budget_tokens, f"request {i}: {sent} > {manager.budget_tokens}"
        assert manager.context_tokens() == sent, f"request {i}"
        assert manager.stats().context_tokens == sent, f"request {i}"
        report = manager.stats().pruning
        pruned = max(pruned, report.results_trimmed + report.results_cleared if report else 0)
    assert pruned > 0  # the pruning did act during the session
