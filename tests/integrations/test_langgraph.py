"""The LangGraph hook inside a real ``create_react_agent`` graph with a scripted chat model."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

from context_manager.integrations.langgraph import pre_model_hook
from context_manager.providers import validate

SEEN: list[list[Any]] = []  # what the model received at each call


class ScriptedChat(BaseChatModel):
    """Calls the tool twice in parallel after a human message, answers after tool results."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        SEEN.append(list(messages))
        step = len(SEEN)
        if isinstance(messages[-1], ToolMessage):
            reply = AIMessage("Done. " + "details " * 30)
        else:
            reply = AIMessage(
                "",
                tool_calls=[
                    {"name": "read_file", "args": {"path": f"f{step}_{k}.py"}, "id": f"c{step}_{k}"}
                    for k in range(2)
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}\n" + "x = 1\n" * 50


def test_react_agent_over_a_long_tool_heavy_conversation() -> None:
    model = ScriptedChat()
    SEEN.clear()
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
    assert len(SEEN) == 40  # two model calls per turn
    for seen in SEEN[-10:]:
        assert isinstance(seen[0], SystemMessage)  # the system message stays first
        assert isinstance(seen[1], HumanMessage)  # then the context starts on a human message
        assert validate(seen, "openai") == []  # no orphaned ToolMessage, every call answered
        assert (
            hook.tracker.manager.counter.count_prompt(  # type: ignore[attr-defined]
                [__import__("context_manager").normalize(m) for m in seen]
            )
            <= budget
        )
    assert len(SEEN[-1]) < len(full)  # it trimmed; the state kept everything
    assert SEEN[-1][-1] is not None
