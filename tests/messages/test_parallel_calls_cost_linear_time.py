"""One turn with thousands of parallel tool calls, and one turn answering them all, costs time
linear in the number of calls: the protocol checks each result once (a duplicate is found in a
set of the ids seen, not by rescanning the ones before it), for ``repair()``, ``trim()`` and the
manager alike, in the Anthropic and the Gemini shapes.

The growth is measured, not a duration: 8x the calls may take about 8x the time (bounded at
24x, well below the 64x a quadratic check takes), the best of two runs each.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from context_manager import MessageContextManager, repair, trim


def anthropic(n: int) -> list[dict[str, Any]]:
    calls = [{"type": "tool_use", "id": f"t{i}", "name": "f", "input": {}} for i in range(n)]
    results = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r"} for i in range(n)]
    return [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": results},
    ]


def gemini(n: int) -> list[dict[str, Any]]:
    calls = [{"function_call": {"name": f"f{i}", "args": {}}} for i in range(n)]
    answers = [{"function_response": {"name": f"f{i}", "response": {"r": 1}}} for i in range(n)]
    return [
        {"role": "user", "parts": [{"text": "q"}]},
        {"role": "model", "parts": calls},
        {"role": "user", "parts": answers},
    ]


def managed(messages: list[Any]) -> list[Any]:
    manager = MessageContextManager(10**8, counter="chars")
    manager.extend(messages)
    return manager.get_context()


RUNS: dict[str, Callable[[list[Any]], object]] = {
    "repair": repair,
    "trim": lambda messages: trim(messages, 10**8, counter="chars"),
    "manager": managed,
}


def best_of_two(run: Callable[[list[Any]], object], messages: list[Any]) -> float:
    times = []
    for _ in range(2):
        start = time.perf_counter()
        run(messages)
        times.append(time.perf_counter() - start)
    return min(times)


@pytest.mark.parametrize("shape", [anthropic, gemini])
@pytest.mark.parametrize("how", sorted(RUNS))
def test_thousands_of_parallel_calls_cost_linear_time(shape: Any, how: str) -> None:
    run = RUNS[how]
    small, large = shape(1_000), shape(8_000)
    assert len(run(large) if how != "repair" else repair(large)) == 3  # all kept, nothing lost
    growth = best_of_two(run, large) / max(best_of_two(run, small), 1e-4)
    assert growth < 24, f"{how} on {shape.__name__}: 8x the calls took {growth:.1f}x the time"
