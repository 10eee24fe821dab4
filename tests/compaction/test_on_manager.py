"""Compaction on a live manager: both policies, both summarizer kinds, rounds, invariants."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from context_manager.compaction import (
    CompactionEntry,
    CompactionEvent,
    CompactionInProgressError,
    ExtractiveSummarizer,
    SimpleCompaction,
    SummaryRequest,
    TokenBudgetCompaction,
    add_compaction_listener,
    restore_compaction,
    summary_message,
)
from context_manager.compaction.prompts import (
    SPLIT_TURN_SEPARATOR,
    SUMMARY_MESSAGE_PREFIX,
    SYSTEM_PROMPT,
)
from context_manager.errors import CompactionError, ConfigurationError
from context_manager.events import Compacted
from context_manager.manager import MessageContextManager
from context_manager.messages import normalize

from .helpers import RecordingSummarizer, coding_session

POLICIES = [
    TokenBudgetCompaction(keep_recent_tokens=400, reserve_tokens=1000),
    SimpleCompaction(max_preserved_messages=2),
]


def make_manager(turns: int = 12, **options: Any) -> MessageContextManager:
    manager = MessageContextManager(100_000, system_prompt="You are a careful coder.", **options)
    manager.extend(coding_session(turns))
    return manager


def assert_invariants(manager: MessageContextManager) -> None:
    """No orphan tool results or unanswered calls, latest user present, budget respected."""
    context = manager.get_context()
    records = [normalize(m) for m in context]
    issued: set[str] = set()
    for rec in records:
        for rid in rec.result_ids:
            assert rid in issued, f"orphan tool result {rid}"
        issued.update(rec.call_ids)
    answered = {rid for rec in records for rid in rec.result_ids}
    assert issued <= answered
    users = [h.message for h in manager.history() if h.record.is_user_turn]
    if users:
        assert any(m is users[-1] for m in context)
    assert manager.context_tokens() <= manager.budget_tokens
    if manager.summary is not None:
        assert context[1 if manager.system_prompt else 0] is manager.summary


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.name)
@pytest.mark.parametrize("kind", ["extractive", "llm"])
def test_end_to_end(policy: Any, kind: str) -> None:
    manager = make_manager()
    before = manager.stats()
    summarizer = ExtractiveSummarizer() if kind == "extractive" else RecordingSummarizer()
    entry = manager.compact(summarizer, policy=policy)
    after = manager.stats()
    assert isinstance(entry, CompactionEntry)
    assert manager.compaction is entry
    assert entry.tokens_before == before.used_tokens
    assert after.used_tokens < before.used_tokens
    assert after.context_tokens < before.context_tokens
    kept = manager.history()
    below = [h for h in kept if h.index < entry.first_kept_index]
    assert [h.record.role for h in below] in ([], ["user"])  # only the latest user turn
    from_cut = [h for h in kept if h.index >= entry.first_kept_index]
    assert from_cut[0].index == entry.first_kept_index
    assert not from_cut[0].record.result_ids
    assert manager.summary == summary_message(entry.summary)
    assert manager.summary["content"].startswith(SUMMARY_MESSAGE_PREFIX)
    assert "src/m0.py" in entry.details["read_files"]
    assert "src/e0.py" in entry.details["modified_files"]
    assert entry.summary.endswith("</modified-files>")
    for heading in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert (heading in entry.summary) == (kind == "extractive")
    assert_invariants(manager)


def test_llm_request_layout_token_budget() -> None:
    manager = make_manager()
    llm = RecordingSummarizer()
    manager.compact(llm, policy=POLICIES[0], focus="the parser bugs")
    request = llm.requests[0]
    assert request.kind == "summary"
    assert request.system_prompt == SYSTEM_PROMPT
    assert request.max_tokens == 800
    assert request.prompt.startswith("<conversation>\n[User]: Turn 0: fix parse_0()")
    assert "\n</conversation>\n\n" in request.prompt
    assert '[Assistant tool calls]: read(path="src/m0.py"); edit(path="src/e0.py")' in (
        request.prompt
    )
    assert "<previous-summary>" not in request.prompt
    assert request.prompt.endswith("\n\nAdditional focus: the parser bugs")
    assert request.focus == "the parser bugs"


def test_llm_request_layout_simple_is_kimi_shaped() -> None:
    manager = make_manager(3)
    llm = RecordingSummarizer()
    entry = manager.compact(llm, policy=SimpleCompaction())
    (request,) = llm.requests
    assert request.max_tokens == 8192
    assert request.prompt.startswith(
        "<conversation>\n## Message 1\nRole: user\nContent: Turn 0: fix parse_0()"
    )
    assert "## Message 2\nRole: assistant\nContent: Looking.\n[tool call r0] read(" in (
        request.prompt
    )
    # Kimi keeps the last two user/assistant messages: the final tool group and the reply.
    kept = [h.record for h in manager.history()]
    assert [r.role for r in kept] == ["user", "assistant", "tool", "tool", "assistant"]
    assert kept[0].text.startswith("Turn 2")  # the latest user turn always stays
    assert entry.first_kept_index == 11  # the assistant with tool calls of turn 2


def test_several_rounds_update_previous_summary_and_accumulate_files() -> None:
    manager = make_manager(6)
    llm = RecordingSummarizer()
    policy = TokenBudgetCompaction(keep_recent_tokens=300, reserve_tokens=1000)
    entries = [manager.compact(llm, policy=policy)]
    for round_ in range(2):
        manager.extend(coding_session(6, start=100 * (round_ + 1)))
        entries.append(manager.compact(llm, policy=policy))
    assert [e.first_kept_index for e in entries] == sorted({e.first_kept_index for e in entries})
    summaries = [r for r in llm.requests if r.kind == "summary"]
    assert len(summaries) == 3
    assert "<previous-summary>" not in summaries[0].prompt
    for previous, request in zip(entries, summaries[1:], strict=False):
        assert f"<previous-summary>\n{previous.summary}\n</previous-summary>" in request.prompt
        assert request.previous_summary == previous.summary
        # each round summarizes only what came after the previous cut
        assert "Turn 0:" not in request.prompt.split("<previous-summary>")[0]
    assert "src/m0.py" in entries[-1].details["read_files"]
    assert "src/m200.py" in entries[-1].details["read_files"]
    assert "src/e0.py" in entries[-1].details["modified_files"]
    assert manager.compaction is entries[-1]
    assert_invariants(manager)


def test_extractive_rounds_keep_earlier_facts() -> None:
    manager = make_manager(6)
    policy = TokenBudgetCompaction(keep_recent_tokens=300, reserve_tokens=4000)
    first = manager.compact(policy=policy)
    manager.extend(coding_session(6, start=50))
    second = manager.compact(policy=policy)
    assert "Turn 0: fix parse_0()" in first.summary
    assert "Turn 0: fix parse_0()" in second.summary  # the goal carries over
    assert "parse_50" in second.summary


def test_split_turn_gets_a_prefix_summary() -> None:
    manager = MessageContextManager(100_000, system_prompt="sys")
    manager.add({"role": "user", "content": "Refactor the parser in src/parser.py"})
    for k in range(8):
        call = {
            "id": f"c{k}",
            "type": "function",
            "function": {"name": "read", "arguments": json.dumps({"path": f"src/p{k}.py"})},
        }
        manager.add({"role": "assistant", "content": f"step {k}", "tool_calls": [call]})
        manager.add({"role": "tool", "tool_call_id": f"c{k}", "content": "y" * 400})
    llm = RecordingSummarizer()
    entry = manager.compact(
        llm, policy=TokenBudgetCompaction(keep_recent_tokens=250, reserve_tokens=1000)
    )
    (prefix,) = llm.requests  # nothing before the turn: only the prefix summary is asked for
    assert prefix.kind == "turn_prefix"
    assert prefix.max_tokens == 500
    assert prefix.prompt.startswith("<conversation>\n[User]: Refactor the parser")
    for heading in ("## Original Request", "## Early Progress", "## Context for Suffix"):
        assert heading in prefix.prompt
    assert SPLIT_TURN_SEPARATOR in entry.summary
    kept = manager.history()
    assert kept[0].record.role == "user"  # the latest user turn stays verbatim
    assert kept[1].index == entry.first_kept_index
    assert kept[1].record.role == "assistant"
    assert_invariants(manager)
    # the extractive summarizer answers both request kinds in the documented layout
    manager.extend([{"role": "user", "content": "next"}, {"role": "assistant", "content": "ok"}])
    text = ExtractiveSummarizer()(prefix)
    assert text.startswith("## Original Request\n- Refactor the parser in src/parser.py")


def test_split_turn_with_history_sends_both_requests() -> None:
    manager = make_manager(3)
    manager.add({"role": "user", "content": "Now the long one"})
    for k in range(6):
        call = {
            "id": f"x{k}",
            "type": "function",
            "function": {"name": "write", "arguments": json.dumps({"path": f"w{k}.md"})},
        }
        manager.add({"role": "assistant", "content": "", "tool_calls": [call]})
        manager.add({"role": "tool", "tool_call_id": f"x{k}", "content": "z" * 400})
    llm = RecordingSummarizer()
    entry = manager.compact(
        llm, policy=TokenBudgetCompaction(keep_recent_tokens=250, reserve_tokens=1000)
    )
    assert [r.kind for r in llm.requests] == ["summary", "turn_prefix"]
    assert [r.max_tokens for r in llm.requests] == [800, 500]
    assert "Now the long one" not in llm.requests[0].prompt
    assert llm.requests[1].prompt.startswith("<conversation>\n[User]: Now the long one")
    assert entry.summary.startswith(
        "LLM summary #1 (summary)" + SPLIT_TURN_SEPARATOR + "LLM summary #2 (turn_prefix)"
    )
    assert "w0.md" in entry.details["modified_files"]


def test_pinned_messages_stay_and_are_not_summarized() -> None:
    manager = MessageContextManager(100_000)
    manager.add({"role": "user", "content": "PINNED rule: never touch prod"}, pinned=True)
    manager.extend(coding_session(8))
    llm = RecordingSummarizer()
    manager.compact(llm, policy=POLICIES[0])
    assert "PINNED" not in llm.requests[0].prompt
    assert manager.get_context()[0]["content"].startswith(SUMMARY_MESSAGE_PREFIX)
    assert manager.get_context()[1]["content"] == "PINNED rule: never touch prod"
    assert_invariants(manager)


def test_default_compact_needs_no_llm() -> None:
    manager = MessageContextManager(8000, system_prompt="sys")
    manager.extend(coding_session(20, filler=100))
    before = manager.stats().used_tokens
    entry = manager.compact()
    assert "## Goal" in entry.summary
    assert manager.stats().used_tokens < before
    assert_invariants(manager)


def test_configured_summarizer_is_the_default() -> None:
    llm = RecordingSummarizer()
    manager = make_manager(summarizer=llm)
    manager.compact(policy=POLICIES[1])
    assert len(llm.requests) == 1


def test_nothing_to_compact_leaves_no_entry() -> None:
    manager = make_manager(1)
    history = manager.history()
    with pytest.raises(CompactionError, match="nothing to compact"):
        manager.compact(policy=TokenBudgetCompaction())
    assert manager.compaction is None and manager.history() == history


@pytest.mark.parametrize("reply", ["", "   ", None, 42])
def test_bad_summaries_are_typed_errors(reply: Any) -> None:
    manager = make_manager()
    history = manager.history()
    with pytest.raises(CompactionError, match="non-empty text"):
        manager.compact(lambda request: reply, policy=POLICIES[1])
    assert manager.compaction is None and manager.history() == history


def test_failing_summarizer_is_wrapped_and_reported() -> None:
    manager = make_manager()
    events: list[CompactionEvent] = []
    add_compaction_listener(manager, events.append)

    def broken(request: SummaryRequest) -> str:
        raise TimeoutError("model timed out")

    with pytest.raises(CompactionError, match="TimeoutError: model timed out"):
        manager.compact(broken, policy=POLICIES[1])
    assert manager.compaction is None
    assert [(e.type, e.aborted) for e in events] == [("start", False), ("end", False)]
    assert events[1].error is not None and "timed out" in events[1].error


def test_events_carry_reason_tokens_and_cut() -> None:
    manager = make_manager()
    events: list[CompactionEvent] = []
    add_compaction_listener(manager, events.append)
    tokens = manager.used_tokens
    entry = manager.compact(policy=POLICIES[1])
    start, end = events
    assert (start.type, start.reason, start.tokens_before) == ("start", "manual", tokens)
    assert start.first_kept_index == end.first_kept_index == entry.first_kept_index
    assert (end.type, end.entry, end.aborted, end.will_retry) == ("end", entry, False, False)


def test_sync_compact_runs_async_summarizers_even_inside_a_loop() -> None:
    async def llm(request: SummaryRequest) -> str:
        await asyncio.sleep(0)
        return "## Goal\nasync summary"

    manager = make_manager()
    assert manager.compact(llm, policy=POLICIES[1]).summary.startswith("## Goal\nasync summary")

    async def inside_loop() -> CompactionEntry:
        other = make_manager()
        return other.compact(llm, policy=POLICIES[1])

    assert asyncio.run(inside_loop()).summary.startswith("## Goal\nasync summary")


def test_acompact_accepts_sync_summarizers() -> None:
    manager = make_manager()
    llm = RecordingSummarizer()
    entry = asyncio.run(manager.acompact(llm, policy=POLICIES[0]))
    assert entry.summary.startswith("LLM summary #1")
    assert_invariants(manager)


class BlockingSummarizer:
    """Async summarizer that waits until released (or cancelled)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, request: SummaryRequest) -> str:
        self.started.set()
        await self.release.wait()
        return "## Goal\nblocked summary"


def test_cancelled_acompact_leaves_no_trace() -> None:
    manager = make_manager()
    history, context = manager.history(), manager.get_context()
    events: list[CompactionEvent] = []
    add_compaction_listener(manager, events.append)
    store_events: list[object] = []
    manager.subscribe(store_events.append)

    async def scenario() -> None:
        llm = BlockingSummarizer()
        task = asyncio.create_task(manager.acompact(llm, policy=POLICIES[1]))
        await asyncio.wait_for(llm.started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert manager.compaction is None and manager.summary is None
    assert manager.history() == history and manager.get_context() == context
    assert not any(isinstance(e, Compacted) for e in store_events)
    assert [(e.type, e.aborted) for e in events] == [("start", False), ("end", True)]
    assert manager.compact(policy=POLICIES[1]) is manager.compaction  # the lock was released


def test_compaction_never_runs_concurrently() -> None:
    manager = make_manager()

    async def scenario() -> CompactionEntry:
        llm = BlockingSummarizer()
        task = asyncio.create_task(manager.acompact(llm, policy=POLICIES[1]))
        await asyncio.wait_for(llm.started.wait(), 5)
        with pytest.raises(CompactionInProgressError):
            await manager.acompact(llm, policy=POLICIES[1])
        with pytest.raises(CompactionInProgressError):
            manager.compact(policy=POLICIES[1])
        llm.release.set()
        return await asyncio.wait_for(task, 5)

    entry = asyncio.run(scenario())
    assert manager.compaction is entry
    assert entry.summary.startswith("## Goal\nblocked summary")


def test_clear_during_compaction_discards_the_stale_plan() -> None:
    manager = make_manager()

    async def scenario() -> None:
        llm = BlockingSummarizer()
        task = asyncio.create_task(manager.acompact(llm, policy=POLICIES[1]))
        await asyncio.wait_for(llm.started.wait(), 5)
        manager.clear()
        manager.extend(coding_session(2))
        llm.release.set()
        with pytest.raises(CompactionError, match="stale"):
            await asyncio.wait_for(task, 5)

    asyncio.run(scenario())
    assert manager.compaction is None


def test_entry_round_trips_and_restores() -> None:
    manager = make_manager()
    entry = manager.compact(policy=POLICIES[0])
    data = json.loads(json.dumps(entry.to_dict()))
    assert CompactionEntry.from_dict(data) == entry
    fresh = make_manager()
    restored = restore_compaction(fresh, data)
    assert restored == entry
    assert fresh.get_context() == manager.get_context()
    with pytest.raises(CompactionError, match="lacks 'summary'"):
        CompactionEntry.from_dict({"first_kept_index": 1, "tokens_before": 2})
    with pytest.raises(CompactionError, match="reason"):
        CompactionEntry("s", 1, 2, reason="bored")


def test_anthropic_shaped_history_is_never_split() -> None:
    manager = MessageContextManager(100_000)
    for t in range(6):
        manager.add({"role": "user", "content": f"question {t} " + "q" * 300})
        manager.add(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "checking"},
                    {
                        "type": "tool_use",
                        "id": f"tu{t}",
                        "name": "read",
                        "input": {"path": f"a{t}.py"},
                    },
                ],
            }
        )
        manager.add(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"tu{t}", "content": "r" * 300},
                    {"type": "text", "text": "and also this"},
                ],
            }
        )
        manager.add({"role": "assistant", "content": "answer " + "a" * 300})
    for policy in (
        SimpleCompaction(3),
        TokenBudgetCompaction(keep_recent_tokens=200, reserve_tokens=1000),
    ):
        fresh = MessageContextManager(100_000)
        fresh.extend(manager.messages)
        entry = fresh.compact(policy=policy)
        first = next(h for h in fresh.history() if h.index == entry.first_kept_index)
        assert not first.record.result_ids
        assert "a0.py" in entry.details["read_files"]
        assert_invariants(fresh)


def test_persisted_compaction_survives_reopen(tmp_path: Any) -> None:
    path = tmp_path / "session.jsonl"
    manager = MessageContextManager.open(path, max_tokens=100_000, system_prompt="sys")
    manager.extend(coding_session(8))
    first = manager.compact(policy=POLICIES[0])
    manager.extend(coding_session(3, start=50))
    context = manager.get_context()
    manager.store.close()
    reopened = MessageContextManager.open(path, max_tokens=100_000)
    assert reopened.compaction == first
    assert reopened.get_context() == context
    llm = RecordingSummarizer()
    second = reopened.compact(llm, policy=POLICIES[0])
    assert llm.requests[0].previous_summary == first.summary
    assert second.first_kept_index > first.first_kept_index
    assert "src/m0.py" in second.details["read_files"]
    assert_invariants(reopened)
    reopened.store.close()


def test_async_split_turn_failure_cancels_the_sibling_request() -> None:
    manager = make_manager(3)
    manager.add({"role": "user", "content": "Now the long one"})
    for k in range(6):
        call = {
            "id": f"x{k}",
            "type": "function",
            "function": {"name": "read", "arguments": json.dumps({"path": f"r{k}.md"})},
        }
        manager.add({"role": "assistant", "content": "", "tool_calls": [call]})
        manager.add({"role": "tool", "tool_call_id": f"x{k}", "content": "z" * 400})
    cancelled: list[str] = []

    async def llm(request: SummaryRequest) -> str:
        if request.kind == "summary":
            await asyncio.sleep(0)
            raise RuntimeError("model down")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(request.kind)
            raise
        return "never"

    policy = TokenBudgetCompaction(keep_recent_tokens=250, reserve_tokens=1000)
    with pytest.raises(CompactionError, match="model down"):
        asyncio.run(asyncio.wait_for(manager.acompact(llm, policy=policy), 5))
    assert cancelled == ["turn_prefix"]
    assert manager.compaction is None


def test_file_tools_map_other_tool_names_onto_pi_file_tracking() -> None:
    messages = json.loads(
        (
            Path(__file__).resolve().parents[2]
            / "context_manager"
            / "data"
            / "sample_conversation.json"
        ).read_text("utf-8")
    )
    plain = MessageContextManager(100_000)
    plain.extend(messages)
    assert plain.compact(policy=SimpleCompaction()).details == {
        "read_files": [],
        "modified_files": [],
    }
    mapped = MessageContextManager(100_000)
    mapped.extend(messages)
    tools = {"read_file": "read", "edit_file": "edit"}
    entry = mapped.compact(policy=SimpleCompaction(file_tools=tools))
    assert entry.details == {
        "read_files": ["app/routes/health.py", "tests/test_db.py"],
        "modified_files": ["CHANGELOG.md", "app/db.py"],
    }
    assert entry.summary.endswith("<modified-files>\nCHANGELOG.md\napp/db.py\n</modified-files>")
    with pytest.raises(ConfigurationError, match="file_tools"):
        TokenBudgetCompaction(file_tools={"cat": "view"})


@pytest.mark.parametrize("provider", ["anthropic", "bedrock", "gemini"])
def test_a_cut_on_an_assistant_message_is_sent_after_the_summary(provider: str) -> None:
    """Pi's cut may land inside a turn (on the answer). The summary is a user turn, so it opens
    the context, and the first-user rule must not drop the first kept message."""
    from context_manager.compaction import TokenBudgetCompaction

    manager = MessageContextManager(20_000, counter="chars", provider=provider)
    history = []
    for n in range(10):
        history.append({"role": "user", "content": f"q{n} " + "w " * 200})
        history.append({"role": "assistant", "content": f"answer {n} " + "a " * 400})
    manager.extend(history)
    entry = manager.compact(
        lambda request: "summary",
        policy=TokenBudgetCompaction(keep_recent_tokens=500, reserve_tokens=2_000),
    )
    kept = history[entry.first_kept_index :]
    assert kept[0]["role"] == "assistant"  # the case: the cut is on an answer
    context = manager.get_context()
    assert context[0]["role"] == "user" and "summary" in str(context[0]["content"])
    assert context[1:] == kept  # every message from the cut on, in order
