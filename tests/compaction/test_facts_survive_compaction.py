"""The facts of compacted messages reach the context after a compaction, whatever the summarizer.

Survival is checked against what the session generator planted (``coding_session.py``) and with
regular expressions written here, over the text of ``get_context()``, never with the library's
extractor. A summarizer that forgets returns a generic summary.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.compaction import (
    CompactionTriggers,
    ExtractiveSummarizer,
    SimpleCompaction,
    SummaryRequest,
    TokenBudgetCompaction,
)
from tests.compaction.coding_session import Planted, coding_session
from tests.linear_time import assert_linear

GENERIC = "## Goal\nWork on the codebase.\n\n## Progress\nSome files changed; tests ran."

URL = re.compile(r"https://github\.com/acme/shop/pull/\d+")
RULE = re.compile(r"[^.!?]*\b(?:must|never|always|do not|only|make sure)\b[^.!?]*[.!?]", re.I)


def forgetful(request: SummaryRequest) -> str:
    return GENERIC


async def aforgetful(request: SummaryRequest) -> str:
    await asyncio.sleep(0)
    return GENERIC


def context_text(context: list[Any]) -> str:
    parts = []
    for message in context:
        if isinstance(message.get("content"), str):
            parts.append(message["content"])
        parts += [c["function"]["arguments"] for c in message.get("tool_calls") or []]
    return "\n".join(parts)


def manager_with(messages: list[dict[str, Any]], window: int = 24_000) -> MessageContextManager:
    manager = MessageContextManager(max_tokens=window, counter="chars")
    manager.extend(messages)
    return manager


def policy(keep_facts: bool = True) -> TokenBudgetCompaction:
    return TokenBudgetCompaction(keep_recent_tokens=600, reserve_tokens=6000, keep_facts=keep_facts)


def dropped(planted: list[Planted], manager: MessageContextManager) -> list[Planted]:
    cut = manager.compaction.first_kept_index
    return [fact for fact in planted if fact.index < cut]


def test_a_forgetful_summary_loses_facts_without_the_block() -> None:
    messages, planted = coding_session(30)
    manager = manager_with(messages)
    manager.compact(forgetful, policy=policy(keep_facts=False))
    text = context_text(manager.get_context())
    gone = [f for f in dropped(planted, manager) if f.text not in text]
    assert len(gone) > 20  # the generic summary keeps nearly nothing
    assert "<kept-facts>" not in text


def test_every_fact_of_a_forgetful_compaction_survives_with_the_block() -> None:
    messages, planted = coding_session(30)
    manager = manager_with(messages)
    manager.compact(forgetful, policy=policy())
    text = context_text(manager.get_context())
    lost = dropped(planted, manager)
    assert len(lost) > 40
    assert [f for f in lost if f.text not in text] == []
    # an independent reading: every URL and every rule of the compacted part is still there
    compacted = context_text(messages[: manager.compaction.first_kept_index])
    assert set(URL.findall(compacted)) <= set(URL.findall(text))
    user_rules = {
        m.group().strip()
        for msg in messages[: manager.compaction.first_kept_index]
        if msg["role"] == "user"
        for m in RULE.finditer(msg["content"])
    }
    assert user_rules and all(rule in text for rule in user_rules)


def test_the_block_is_on_by_default_and_labelled() -> None:
    messages, planted = coding_session(30)
    manager = manager_with(messages, window=4000)
    entry = manager.compact(forgetful)  # the default policy, sized for the budget
    assert "<kept-facts>" in entry.summary and "</kept-facts>" in entry.summary
    assert entry.summary.startswith(GENERIC)
    text = context_text(manager.get_context())
    rules = [f for f in dropped(planted, manager) if f.kind == "instruction"]
    assert rules and all(f.text in text for f in rules)


def test_the_extractive_summarizer_keeps_every_rule_and_error_with_the_block() -> None:
    messages, planted = coding_session(40)
    manager = manager_with(messages)
    manager.compact(ExtractiveSummarizer(), policy=policy())
    text = context_text(manager.get_context())
    important = [f for f in dropped(planted, manager) if f.kind in ("instruction", "error")]
    assert len(important) > 10
    assert [f.text for f in important if f.text not in text] == []


def test_simple_compaction_takes_the_option_too() -> None:
    messages, planted = coding_session(20)
    on = manager_with(messages)
    on.compact(forgetful, policy=SimpleCompaction(max_preserved_messages=2))
    off = manager_with(messages)
    off.compact(forgetful, policy=SimpleCompaction(max_preserved_messages=2, keep_facts=False))
    url = next(f.text for f in dropped(planted, on) if f.kind == "url")
    assert url in context_text(on.get_context())
    assert url not in context_text(off.get_context())


def test_facts_of_an_earlier_compaction_survive_the_next_one() -> None:
    messages, planted = coding_session(40)
    manager = manager_with(messages[:80])
    manager.compact(forgetful, policy=policy())
    first_cut = manager.compaction.first_kept_index
    manager.extend(messages[80:])
    manager.compact(forgetful, policy=policy())  # summarizes the first summary away again
    text = context_text(manager.get_context())
    early = [f for f in planted if f.index < first_cut]
    assert early and [f.text for f in early if f.text not in text] == []


def test_a_tight_budget_drops_the_least_important_facts_and_says_how_many() -> None:
    messages, planted = coding_session(60)
    manager = manager_with(messages, window=4000)
    small = TokenBudgetCompaction(keep_recent_tokens=300, reserve_tokens=400)
    entry = manager.compact(forgetful, policy=small)
    said = re.search(r"\((\d+) less important facts omitted to fit the budget\)", entry.summary)
    assert said is not None
    text = context_text(manager.get_context())
    lost = dropped(planted, manager)
    missing = [f for f in lost if f.text not in text]
    assert missing  # the budget could not hold them all
    assert int(said.group(1)) >= len({f.text for f in missing}) - entry.manifest.untracked
    # rules go first: the newest rule of the compacted part made it
    newest_rule = max((f for f in lost if f.kind == "instruction"), key=lambda f: f.index)
    assert newest_rule.text in text
    assert manager.stats().context_tokens <= manager.budget_tokens


def test_async_compaction_adds_the_block() -> None:
    messages, planted = coding_session(30)
    manager = manager_with(messages)
    asyncio.run(manager.acompact(aforgetful, policy=policy()))
    text = context_text(manager.get_context())
    assert [f.text for f in dropped(planted, manager) if f.text not in text] == []


def test_threshold_compaction_adds_the_block() -> None:
    messages, planted = coding_session(30)
    manager = manager_with(messages)
    triggers = CompactionTriggers(reserve_tokens=0, reserve_floor=0, ratio=0.1)
    entry = triggers.before_request(manager, forgetful, policy=policy())
    assert entry is not None
    text = context_text(manager.get_context())
    assert [f.text for f in dropped(planted, manager) if f.text not in text] == []


def test_turning_the_block_off_keeps_the_summary_as_the_summarizer_wrote_it() -> None:
    messages, _ = coding_session(30)
    manager = manager_with(messages)
    entry = manager.compact(forgetful, policy=dataclasses.replace(policy(), keep_facts=False))
    assert entry.summary == GENERIC
    assert entry.manifest is not None and not entry.manifest.facts_block
    assert {f.status for f in entry.manifest.facts} == {"lost"}


def test_the_extractor_is_linear_on_hostile_text() -> None:
    from context_manager.compaction.facts import extract_facts
    from context_manager.messages import Message

    hostile = (
        "a" * 200_000
        + "Error" * 20_000
        + "1" * 100_000
        + "`git " * 20_000
        + "https://" * 20_000
        + "deadbeef-" * 20_000
    )

    def run(text: str) -> object:
        return extract_facts([Message("user", text), Message("tool", text, tool_call_id="x")])

    assert_linear(run, hostile, what="extract_facts", ratio=60)


def survival(summarizer: Any, keep_facts: bool, window: int, turns: int = 240) -> dict[str, Any]:
    """Run a long session, compacting when the history passes 70% of the budget; the planted
    facts of every compacted message, and those still in the final context."""
    messages, planted = coding_session(turns)
    manager = MessageContextManager(max_tokens=window, counter="chars", reserve_tokens=window // 8)
    rules = TokenBudgetCompaction(
        keep_recent_tokens=window // 8, reserve_tokens=window // 4, keep_facts=keep_facts
    )
    for start in range(0, len(messages), 4):  # one turn at a time
        manager.extend(messages[start : start + 4])
        if manager.used_tokens > 0.7 * manager.budget_tokens:
            manager.compact(summarizer, policy=rules)
    text = context_text(manager.get_context())
    gone = dropped(planted, manager)
    return {
        "dropped": gone,
        "alive": [f for f in gone if f.text in text],
        "fits": manager.stats().context_tokens <= manager.budget_tokens,
    }


@pytest.mark.parametrize(
    "summarizer", [ExtractiveSummarizer(), forgetful], ids=["extractive", "forgetful"]
)
def test_a_long_session_keeps_its_facts_only_with_the_block(summarizer: Any) -> None:
    before = survival(summarizer, keep_facts=False, window=32_000)
    after = survival(summarizer, keep_facts=True, window=32_000)
    assert len(before["dropped"]) > 400 and len(after["dropped"]) > 400
    assert len(before["alive"]) < 0.15 * len(before["dropped"])
    assert len(after["alive"]) == len(after["dropped"])
    assert after["fits"]


@pytest.mark.parametrize(
    "summarizer", [ExtractiveSummarizer(), forgetful], ids=["extractive", "forgetful"]
)
def test_a_tighter_window_keeps_every_rule_and_error(summarizer: Any) -> None:
    after = survival(summarizer, keep_facts=True, window=16_000)
    important = [f for f in after["dropped"] if f.kind in ("instruction", "error")]
    assert len(important) > 100
    assert [f.text for f in important if f not in after["alive"]] == []
    assert after["fits"]
