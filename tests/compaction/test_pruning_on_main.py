"""Pruning against main's pieces: provider rules, retention cuts, typed events, the priority
strategy's pruned levels, and compaction's fallbacks (too short to summarize, too large)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from context_manager import MessageContextManager, trim
from context_manager.compaction.pruning import (
    ANTHROPIC_PLACEHOLDER,
    OPENCLAW_PLACEHOLDER,
    PruningFallback,
    ToolResultPruning,
)
from context_manager.errors import CompactionTooLargeError, NothingToCompactError
from context_manager.events import Event, ToolResultsPruned, ToolResultTruncated
from context_manager.providers import validate


def anthropic_session(n: int, size: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "fix the build"}]
    for i in range(n):
        use = {"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}"}}
        out.append({"role": "assistant", "content": [{"type": "text", "text": "look"}, use]})
        block = {"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * size}
        out.append({"role": "user", "content": [block]})
    return out


def openai_session(n: int, size: int, tag: str = "") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(n):
        fn = {"name": "read", "arguments": "{}"}
        call = {"id": f"c{tag}{i}", "type": "function", "function": fn}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{tag}{i}", "content": "x" * size})
    return out


def result_texts(context: list[Any]) -> list[str]:
    return [
        b["content"]
        for m in context
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


@pytest.mark.parametrize("strategy", ["fifo", "sliding_window", "priority"])
def test_pruning_composes_with_provider_rules(strategy: str) -> None:
    msgs = anthropic_session(30, 6_000)
    before = copy.deepcopy(msgs)
    m = MessageContextManager(
        40_000,
        reserve_tokens=0,
        strategy=strategy,
        provider="anthropic",
        pruning=ToolResultPruning.anthropic(trigger_tokens=10_000),
    )
    m.extend(msgs)
    context = m.get_context()
    assert validate(context, "anthropic") == []
    texts = result_texts(context)
    assert texts[-3:] == ["r" * 6_000] * 3  # the last 3 tool uses intact, newest included
    assert ANTHROPIC_PLACEHOLDER in texts
    assert m.context_tokens() <= m.budget_tokens
    assert msgs == before and m.messages == msgs  # view only (FIFO evicted nothing it needed)


def test_provider_newest_exchange_cut_to_fit_instead_of_overflow() -> None:
    events: list[Event] = []
    m = MessageContextManager(2_000, reserve_tokens=0, provider="anthropic")
    m.subscribe(events.append)
    m.extend(anthropic_session(2, 30_000))
    context = m.get_context()
    assert validate(context, "anthropic") == []
    newest = result_texts(context)[-1]
    assert newest.startswith("r") and "[Tool result trimmed" in newest
    assert m.context_tokens() <= m.budget_tokens
    cut = [e for e in events if isinstance(e, ToolResultTruncated)]
    assert cut and cut[-1].call_ids == ("t1",) and cut[-1].original_tokens > 2_000


def test_pruning_composes_with_retention_cuts() -> None:
    cfg = ToolResultPruning.openclaw()
    m = MessageContextManager(
        30_000, reserve_tokens=0, strategy="sliding_window", retention_ratio=0.7, pruning=cfg
    )
    firsts: list[int] = []
    for turn in range(40):
        m.add({"role": "user", "content": f"turn {turn}"})
        m.extend(openai_session(3, 5_000, tag=f"t{turn}_")[1:])
        context = m.get_context()
        assert m.context_tokens() <= m.budget_tokens
        assert validate(context, "openai") == []
        firsts.append(next(i for i, h in enumerate(m.messages) if h is context[0]))
    assert firsts == sorted(firsts)  # the cut never moves back
    assert len(set(firsts)) < 20  # and holds for several requests at a time
    assert m.stats().pruning.results_trimmed > 0
    plain = MessageContextManager(
        30_000, reserve_tokens=0, strategy="sliding_window", retention_ratio=0.7
    )
    plain.extend(m.messages)
    assert len(m.get_context()) > len(plain.get_context())  # pruning keeps more turns


def test_pruned_event_once_per_change_and_stats() -> None:
    events: list[Event] = []
    m = MessageContextManager(60_000, reserve_tokens=0, pruning=ToolResultPruning.openclaw())
    m.subscribe(events.append)
    m.extend(openai_session(20, 20_000))
    m.get_context()
    m.get_context()
    pruned = [e for e in events if isinstance(e, ToolResultsPruned)]
    assert len(pruned) == 1 and pruned[0].report.results_trimmed > 0
    assert m.stats().pruning == pruned[0].report or m.stats().pruning.results_trimmed


def test_priority_strategy_decides_on_pruned_sums() -> None:
    msgs = openai_session(30, 8_000)
    cfg = ToolResultPruning.openclaw(hard_clear=False)
    m = MessageContextManager(30_000, reserve_tokens=0, strategy="priority", pruning=cfg)
    for i, msg in enumerate(msgs):
        m.add(msg, priority=1 if i % 4 == 0 else 0)
    kept = m.get_context()
    assert m.context_tokens() <= m.budget_tokens
    assert validate(kept, "openai") == []
    plain = trim(msgs, 30_000, strategy="priority")
    assert len(kept) > len(plain)


def test_bad_pruning_options_are_typed() -> None:
    from context_manager.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        MessageContextManager(1_000, pruning="openclaw")
    with pytest.raises(ConfigurationError):
        MessageContextManager(1_000, truncate_newest="yes")  # type: ignore[arg-type]


# -- compaction ------------------------------------------------------------------------------


def over_budget_manager() -> MessageContextManager:
    m = MessageContextManager(30_000, reserve_tokens=0, strategy="sliding_window")
    m.extend(openai_session(3, 40_000))  # 3 huge results: nothing old enough to summarize
    return m


def test_compact_falls_back_to_clearing_old_results() -> None:
    m = over_budget_manager()
    history = m.history()
    with pytest.raises(NothingToCompactError):  # what the policy alone says
        from context_manager.compaction.runner import compact_manager

        compact_manager(m, fallback=False)
    got = m.compact()
    assert isinstance(got, PruningFallback) and got.results == 2
    assert m.compaction is None and m.history() == history  # nothing summarized or dropped
    context = m.get_context()
    contents = [c["content"] for c in context if c.get("role") == "tool"]
    assert contents[:2] == [OPENCLAW_PLACEHOLDER] * 2
    assert contents[2] == "x" * 40_000  # the newest stays intact (it fits)
    assert m.pruning is got.pruning


def test_acompact_falls_back_too() -> None:
    m = over_budget_manager()
    got = asyncio.run(m.acompact())
    assert isinstance(got, PruningFallback)


def test_short_history_that_fits_still_says_nothing_to_compact() -> None:
    m = MessageContextManager(300_000, reserve_tokens=0)
    m.extend(openai_session(2, 10_000))
    with pytest.raises(NothingToCompactError, match="nothing to compact"):
        m.compact()
    assert m.pruning is None


def test_a_summary_that_could_never_fit_is_not_applied() -> None:
    m = MessageContextManager(4_000, reserve_tokens=0, system_prompt="s" * 4_000)
    for i in range(30):
        m.add({"role": "user", "content": f"q{i} " + "w" * 400})
        m.add({"role": "assistant", "content": f"a{i} " + "w" * 400})
    history = m.history()
    with pytest.raises(CompactionTooLargeError) as info:
        m.compact(lambda request: "summary " * 5_000)
    assert info.value.required > info.value.budget == m.budget_tokens
    assert m.compaction is None and m.summary is None and m.history() == history


def test_async_recovery_resends_with_old_results_cleared() -> None:
    from context_manager.compaction import asend_with_recovery

    m = MessageContextManager(200_000, reserve_tokens=0, strategy="sliding_window")
    m.extend(openai_session(2, 30_000))
    sent: list[list[Any]] = []

    async def send(context: list[Any]) -> str:
        sent.append(context)
        if len(sent) == 1:
            raise RuntimeError("prompt is too long: 210000 tokens > 200000 maximum")
        return "ok"

    assert asyncio.run(asend_with_recovery(m, send)) == "ok"
    tools = [c["content"] for c in sent[1] if c.get("role") == "tool"]
    assert tools == [OPENCLAW_PLACEHOLDER, "x" * 30_000]
    assert isinstance(m.pruning, ToolResultPruning)
