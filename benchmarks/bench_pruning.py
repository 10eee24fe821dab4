"""Pruning cost per request at 1k / 10k / 100k messages, and turns gained in a 32k window.

Run directly (``python -m benchmarks.bench_pruning``) for a table. A tool-heavy synthetic session:
each user turn is followed by 3 tool calls whose results are 2-12k chars. "Per request" is one
``add`` of a new turn (user + 3 exchanges) followed by ``get_context()``: the cost the pruning
adds on top of the same manager without pruning is what the engine's incremental design bounds.
"""

from __future__ import annotations

import random
import time
from typing import Any

from context_manager import MessageContextManager
from context_manager.compaction.pruning import ToolResultPruning

PRESETS: dict[str, ToolResultPruning | None] = {
    "none": None,
    "openclaw": ToolResultPruning.openclaw(),
    "anthropic_default": ToolResultPruning.anthropic(),  # trigger counts the whole history
    "anthropic_16k": ToolResultPruning.anthropic(trigger_tokens=16_000),
}


def turn(r: random.Random, t: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "user", "content": f"step {t}: " + "please " * r.randint(5, 40)}
    ]
    for k in range(3):
        cid = f"c{t}_{k}"
        fn = {"name": r.choice(["read", "grep", "exec"]), "arguments": '{"path": "src/x.py"}'}
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": cid, "type": "function", "function": fn}],
            }
        )
        out.append(
            {
                "role": "tool",
                "tool_call_id": cid,
                "content": "line of output\n" * r.randint(150, 800),
            }
        )
    out.append({"role": "assistant", "content": "done " * r.randint(5, 50)})
    return out


def per_request(n_messages: int, preset: str, window: int = 128_000, reps: int = 20) -> float:
    r = random.Random(7)
    m = MessageContextManager(
        window, strategy="sliding_window", counter="chars", pruning=PRESETS[preset]
    )
    t = 0
    while len(m) < n_messages:
        m.extend(turn(r, t))
        t += 1
    m.get_context()
    start = time.perf_counter()
    for _ in range(reps):
        m.extend(turn(r, t))
        t += 1
        m.get_context()
    return (time.perf_counter() - start) / reps


def turns_that_fit(preset: str, window: int = 32_000, turns: int = 200) -> int:
    """User turns whose request (latest turn included) is sent whole, with everything before it."""
    r = random.Random(11)
    m = MessageContextManager(
        window, strategy="sliding_window", counter="chars", pruning=PRESETS[preset]
    )
    best = 0
    for t in range(turns):
        m.extend(turn(r, t))
        ctx = m.get_context()
        users = sum(1 for c in ctx if c.get("role") == "user")
        best = max(best, users)
    return best


def test_pruning_cost_smoke() -> None:
    assert per_request(1_000, "openclaw", reps=2) < 1.0


if __name__ == "__main__":
    print("per-request cost (add one turn of 8 messages + get_context), ms")
    for n in (1_000, 10_000, 100_000):
        row = {p: per_request(n, p) * 1000 for p in PRESETS}
        print(n, "  ".join(f"{p}={v:.2f}" for p, v in row.items()))
    print("user turns in the 32k context (max over a 200-turn session)")
    for p in PRESETS:
        print(p, turns_that_fit(p))
