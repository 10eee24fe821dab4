"""A compaction's summary is a message we make: it takes the conversation's own shape, so the
context after a compaction is still a request the provider accepts (checked by the independent
per-provider checkers of tests/messages/provider_checkers.py, not by ``validate()``)."""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import MessageContextManager, normalize
from context_manager.compaction import ExtractiveSummarizer, TokenBudgetCompaction

from ..messages.agent_shapes import SHAPES


def conversation(shape: Any, turns: int) -> list[Any]:
    out: list[Any] = []
    for t in range(turns):
        out.append(shape.user(f"turn {t}: please look at file src/mod_{t}.py and fix it"))
        call = (f"call_{t}", "read_file", {"path": f"src/mod_{t}.py"})
        out += shape.calls(t, [call])
        out += shape.results([(call[0], call[1], f"contents of mod_{t}: " + "x = 1\n" * 20)])
        out += shape.reply(f"done with turn {t}")
    return out


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_summary_is_in_the_conversations_shape(name: str) -> None:
    shape = SHAPES[name]()
    history = conversation(shape, 12)
    manager = MessageContextManager(100_000, counter="chars", provider=shape.provider)
    manager.extend(history)
    manager.compact(ExtractiveSummarizer(), policy=TokenBudgetCompaction(keep_recent_tokens=300))
    context = manager.get_context()
    summary = manager.summary
    assert summary is not None
    # Sent first (Bedrock joins it with the next user turn: its roles must alternate).
    assert context[0] is summary or normalize(context[0]).text.startswith(normalize(summary).text)
    first_user = history[0]
    if not isinstance(first_user, dict):  # SDK objects: the summary is one of the same class
        assert type(summary) is type(first_user)
    assert shape.check(context) == []
    assert len(context) < len(history)


@pytest.mark.parametrize("name", ["openai", "gemini", "pydantic-ai", "langchain"])
def test_a_summary_in_an_sdk_shape_is_stored_and_restored(name: str, tmp_path: Any) -> None:
    shape = SHAPES[name]()
    path = tmp_path / "session.jsonl"
    manager = MessageContextManager.open(path, max_tokens=100_000, counter="chars")
    manager.extend(conversation(shape, 12))
    manager.compact(ExtractiveSummarizer(), policy=TokenBudgetCompaction(keep_recent_tokens=300))
    sent = manager.get_context()
    manager.store.close()
    reopened = MessageContextManager.open(path, max_tokens=100_000, counter="chars")
    assert type(reopened.summary) is type(manager.summary)
    assert reopened.get_context() == sent
