"""The pydantic-ai history processor inside a real Agent run with a ``FunctionModel``."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from context_manager import MessageContextManager
from context_manager.integrations.pydantic_ai import process_history

SEEN: list[list[Any]] = []


def scripted(messages: list[Any], info: AgentInfo) -> ModelResponse:
    SEEN.append(list(messages))
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart("Done. " + "details " * 30)])
    n = len(SEEN)
    return ModelResponse(
        parts=[ToolCallPart("read_file", {"path": f"f{n}_{k}.py"}, f"c{n}_{k}") for k in range(2)]
    )


def test_agent_over_a_long_tool_heavy_conversation() -> None:
    SEEN.clear()
    capability = process_history(max_tokens=2_000)
    agent = Agent(
        FunctionModel(scripted), system_prompt="You are a coder.", capabilities=[capability]
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        return f"contents of {path}\n" + "x = 1\n" * 50

    history: list[Any] = []
    for turn in range(20):
        result = agent.run_sync(f"Turn {turn}: read two files.", message_history=history)
        assert "Done." in result.output
        history = result.all_messages()
    budget = MessageContextManager(2_000).budget_tokens
    counter = MessageContextManager().counter
    from context_manager import normalize

    for seen in SEEN[-10:]:
        assert any(isinstance(p, SystemPromptPart) for p in seen[0].parts)  # system prompt kept
        calls = {p.tool_call_id for m in seen for p in m.parts if isinstance(p, ToolCallPart)}
        returns = {p.tool_call_id for m in seen for p in m.parts if isinstance(p, ToolReturnPart)}
        assert returns <= calls and (calls - returns) <= set()  # paired
        assert isinstance(seen[-1], ModelRequest)  # the newest request is sent
        assert counter.count_prompt([normalize(m) for m in seen]) <= budget
    assert len(SEEN[-1]) < len(history)  # trimmed; the agent's history kept everything
    assert any(isinstance(p, UserPromptPart) for p in SEEN[-1][-1].parts) or isinstance(
        SEEN[-1][-1].parts[-1], ToolReturnPart
    )
