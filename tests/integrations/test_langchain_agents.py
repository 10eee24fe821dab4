"""The middleware inside a real LangChain v1 ``create_agent`` with a scripted chat model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware")
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage

from context_manager import normalize
from context_manager.integrations.langchain_agents import ContextManagerMiddleware
from context_manager.providers import validate

from .scripted import ScriptedChat, read_file


def run(turns: int, *, use_async: bool) -> tuple[ContextManagerMiddleware, ScriptedChat, Any]:
    model = ScriptedChat(seen=[])
    middleware = ContextManagerMiddleware(max_tokens=2_500)
    agent = create_agent(
        model, [read_file], system_prompt="You are a coder.", middleware=[middleware]
    )
    state: dict[str, Any] = {"messages": []}
    for turn in range(turns):
        state["messages"] = [*state["messages"], HumanMessage(f"Turn {turn}: read two files.")]
        state = asyncio.run(agent.ainvoke(state)) if use_async else agent.invoke(state)
        assert "Done." in state["messages"][-1].content
    return middleware, model, state


@pytest.mark.parametrize("use_async", [False, True])
def test_create_agent_over_a_long_tool_heavy_conversation(use_async: bool) -> None:
    middleware, model, state = run(15, use_async=use_async)
    manager = middleware.tracker.manager
    assert middleware.tracker.rebuilds == 0  # followed the state, never recounted it
    assert len(model.seen) == 30  # two model calls per turn, every run completed
    for seen in model.seen[-10:]:
        assert isinstance(seen[0], SystemMessage)  # the system prompt is sent first
        body = seen[1:]
        assert isinstance(body[0], HumanMessage)  # the trimmed context starts on a human turn
        assert validate(body, "anthropic") == []  # no orphaned ToolMessage, calls answered
        assert manager.counter.count_prompt([normalize(m) for m in body]) <= manager.budget_tokens
    assert len(model.seen[-1]) - 1 < len(state["messages"])  # trimmed; the state kept all
    assert state["messages"][0].content == "Turn 0: read two files."
