"""Priority with view pruning: a request costs what changed, not the whole history.

The priority strategy walks per-priority levels of the pruned sums. Filing those levels afresh on
every request made each one linear in the history (a session quadratic overall). The cost is
counted, not timed: the calls (``sys.setprofile``, Python and C) one request makes must be about
the same with four times the history held.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from context_manager import MessageContextManager, ToolResultPruning

from ..linear_time import python_calls

PRESETS: dict[str, Callable[[], ToolResultPruning]] = {
    "anthropic": lambda: ToolResultPruning.anthropic(trigger_tokens=1500),
    "openclaw": ToolResultPruning.openclaw,
}


def exchange(manager: MessageContextManager, i: int) -> None:
    p = i % 3
    call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    manager.add({"role": "user", "content": f"step {i} please"}, priority=p)
    manager.add({"role": "assistant", "content": None, "tool_calls": [call]}, priority=p)
    manager.add({"role": "tool", "tool_call_id": f"c{i}", "content": "x " * 200}, priority=p)
    manager.add({"role": "assistant", "content": "done"}, priority=p)


def request_calls(preset: str, exchanges: int) -> int:
    """Calls of the cheapest of five requests (add, add, get_context) after ``exchanges``."""
    manager = MessageContextManager(
        4000,
        strategy="priority",
        provider="openai",
        counter="chars",
        reserve_tokens=0,
        pruning=PRESETS[preset](),
    )
    for i in range(exchanges):
        exchange(manager, i)
        if i % 25 == 0:
            manager.get_context()
    manager.get_context()
    report = manager.stats().pruning
    assert report is not None and report.results_cleared > 0  # the view is pruned

    def request() -> None:
        manager.add({"role": "user", "content": "more"})
        manager.add({"role": "assistant", "content": "ok"})
        manager.get_context()

    request()
    return min(python_calls(request) for _ in range(5))


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_priority_request_with_pruning_does_not_grow_with_the_history(preset: str) -> None:
    small, large = request_calls(preset, 500), request_calls(preset, 2000)
    assert large <= small * 1.2 + 50, (small, large)
