"""The LangGraph hook inside a real ``create_react_agent`` graph with a scripted chat model."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.prebuilt import create_react_agent

from context_manager.integrations.langgraph import pre_model_hook
from context_manager.providers import validate

from .scripted import ScriptedChat, read_file


def test_react_agent_over_a_long_tool_heavy_conversation() -> None:
    model = ScriptedChat(seen=[])
    hook = pre_model_hook(max_tokens=2_500)
    graph = create_react_agent(model, [read_file], pre_model_hook=hook)
    state: dict[str, Any] = {"messages": [SystemMessage("You are a coder.")]}
    for turn in range(20):
        state["messages"] = [*state["messages"], HumanMessage(f"Turn {turn}: read two files.")]
        state = graph.invoke(state)
        assert "Done." in state["messages"][-1].content
    budget = hook.tracker.manager.budget_tokens  # type: ignore[attr-defined]
    assert hook.tracker.rebuilds == 0  # type: ignore[attr-defined]  # followed, never recounted
    full = state["messages"]
    assert len(model.seen) == 40  # two model calls per turn
    for seen in model.seen[-10:]:
        assert isinstance(seen[0], SystemMessage)  # the system message stays first
        assert isinstance(seen[1], HumanMessage)  # then the context starts on a human message
        assert validate(seen, "openai") == []  # no orphaned ToolMessage, every call answered
        assert (
            hook.tracker.manager.counter.count_prompt(  # type: ignore[attr-defined]
                [__import__("context_manager").normalize(m) for m in seen]
            )
            <= budget
        )
    assert len(model.seen[-1]) < len(full)  # it trimmed; the state kept everything
    assert model.seen[-1][-1] is not None
