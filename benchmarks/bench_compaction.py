"""Compaction planning: choosing the cut and serializing what will be summarized.

Reported, not enforced (the spec sets no target). ``TokenBudgetCompaction`` (Pi's rules: keep
the newest 20,000 tokens, cut only at valid points) plans over the whole held history, so its
cost grows with the history; it runs once per compaction, not per request.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager.compaction import TokenBudgetCompaction

from .common import filled_manager


@pytest.mark.parametrize("n", [1_000, 10_000])
def test_compaction_plan(benchmark: Any, n: int) -> None:
    manager = filled_manager(n, "sliding_window", max_tokens=10**9)
    items = manager.history()
    policy = TokenBudgetCompaction()
    plan = benchmark(policy.plan, items)
    benchmark.extra_info["messages"] = n
    benchmark.extra_info["summarized"] = len(plan.to_summarize)
