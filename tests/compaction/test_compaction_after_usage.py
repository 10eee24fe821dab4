"""Compaction after the provider reported usage (``record_usage``, as the docs advise after each
reply): a summary is judged against the budget as every request is, in counted tokens against a
calibrated budget. Mixing the usage-anchored total of the whole history with counted tokens made
a 10-token summary "too large" (usage above our count) and let one that can never fit through
(usage below it), after which every request overflowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_manager import MessageContextManager
from context_manager.compaction import TokenBudgetCompaction
from context_manager.errors import CompactionTooLargeError

POLICY = TokenBudgetCompaction(keep_recent_tokens=800, reserve_tokens=800)
SHORT = "The user asked about items; all fine."
HUGE = "The user asked about many items. " * 700  # ~5,000 tokens: more than the 3,200 budget


def chat(target: str | None = None) -> MessageContextManager:
    options = {"max_tokens": 4_000, "system_prompt": "You are a helpful assistant."}
    manager = (
        MessageContextManager.open(target, session="s", **options)
        if target
        else MessageContextManager(**options)
    )
    for t in range(300):  # ~30k tokens held; the window sends the newest 3,200
        manager.add({"role": "user", "content": f"Question {t}: what about item {t}? " * 6})
        manager.add({"role": "assistant", "content": f"Item {t} is fine. " * 12})
    return manager


@pytest.mark.parametrize("ratio", [0.6, 1.0, 1.3])
def test_a_short_summary_applies_and_a_huge_one_is_refused_whatever_usage_said(
    ratio: float,
) -> None:
    manager = chat()
    manager.record_usage(round(manager.context_tokens() * ratio))  # the provider's figure
    with pytest.raises(CompactionTooLargeError) as info:
        manager.compact(lambda request: HUGE, policy=POLICY)
    assert info.value.required > info.value.budget == manager.budget_tokens
    manager.compact(lambda request: SHORT, policy=POLICY)
    assert SHORT in str(manager.get_context())  # the summary is sent, and nothing overflows
    assert manager.context_tokens() <= manager.budget_tokens


def test_a_reopened_session_replays_its_usage_and_still_compacts(tmp_path: Path) -> None:
    target = f"sqlite:///{tmp_path / 'chat.db'}"
    manager = chat(target)
    manager.record_usage(round(manager.context_tokens() * 1.3))
    manager.store.close()
    reopened = MessageContextManager.open(target, session="s", max_tokens=4_000)
    reopened.compact(lambda request: SHORT, policy=POLICY)
    assert SHORT in str(reopened.get_context())
    reopened.store.close()
