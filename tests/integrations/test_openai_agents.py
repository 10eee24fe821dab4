"""The Agents SDK session inside a real ``Runner.run`` loop (a scripted model, real SDK).

The model is a small ``agents.models.interface.Model`` that answers each turn with two parallel
function calls, then (after the tool outputs come back) a final message: the SDK runs the tools,
builds the items and talks to the session exactly as it would with OpenAI.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")
from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from context_manager.integrations.openai_agents import (  # noqa: E402
    ContextManagerSession,
    trimming_input_filter,
)
from context_manager.providers import validate  # noqa: E402


class ScriptedModel(Model):
    """Two parallel calls per user turn, then a final answer; records every input it saw."""

    def __init__(self) -> None:
        self.inputs: list[list[Any]] = []
        self.calls = 0

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> Any:
        items = [input] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        last = items[-1]
        self.calls += 1
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            text = "Done. " + "details " * 40
            output: list[Any] = [
                ResponseOutputMessage(
                    id=f"msg_{self.calls}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
                )
            ]
        else:
            output = [
                ResponseFunctionToolCall(
                    id=f"fc_{self.calls}_{k}",
                    call_id=f"call_{self.calls}_{k}",
                    type="function_call",
                    name="read_file",
                    arguments=f'{{"path": "f{self.calls}_{k}.py"}}',
                    status="completed",
                )
                for k in range(2)
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}\n" + "x = 1\n" * 60


def _pairs_ok(items: list[Any]) -> bool:
    return validate(items, "openai-responses") == []


def test_runner_loop_with_a_persistent_session(tmp_path: Path) -> None:
    model = ScriptedModel()
    agent = Agent(name="coder", instructions="Be useful.", model=model, tools=[read_file])
    session = ContextManagerSession("user-1", directory=tmp_path, max_tokens=3_000)

    async def run() -> None:
        for turn in range(25):
            result = await Runner.run(agent, f"Turn {turn}: read two files.", session=session)
            assert "Done." in str(result.final_output)

    asyncio.run(run())
    budget = session.manager.budget_tokens
    for seen in model.inputs[-10:]:
        assert _pairs_ok(seen)  # every call the model saw came with its output
    assert session.manager.context_tokens() <= budget
    assert len(session.manager.messages) > len(asyncio.run(session.get_items()))  # it trimmed
    reopened = ContextManagerSession("user-1", directory=tmp_path, max_tokens=3_000)
    assert reopened.manager.messages == session.manager.messages  # persisted, lossless


def test_session_protocol_methods() -> None:
    session = ContextManagerSession("s", max_tokens=10_000)
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    asyncio.run(session.add_items(items))
    assert asyncio.run(session.get_items()) == items
    assert asyncio.run(session.get_items(limit=3)) == items[1:]  # the call keeps its output
    assert asyncio.run(session.get_items(limit=2)) == items[3:]
    assert asyncio.run(session.pop_item()) == items[-1]
    assert asyncio.run(session.get_items()) == items[:-1]
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == [] and asyncio.run(session.pop_item()) is None


def test_call_model_input_filter_for_your_own_session() -> None:
    model = ScriptedModel()
    agent = Agent(name="coder", model=model, tools=[read_file])
    config = RunConfig(call_model_input_filter=trimming_input_filter(max_tokens=600))
    history: list[Any] = []

    async def run() -> None:
        nonlocal history
        for turn in range(8):
            result = await Runner.run(
                agent, [*history, {"role": "user", "content": f"t{turn}"}], run_config=config
            )
            history = result.to_input_list()

    asyncio.run(run())
    for seen in model.inputs:
        assert _pairs_ok(seen)
    assert max(len(seen) for seen in model.inputs) < len(history)
