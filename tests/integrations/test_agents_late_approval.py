"""An approval resumed after the person moved on: the tool runs, and what it returned stays.

The session closed the call when the next user message arrived (the Responses API takes one
output per call, so a user turn after an open call needs one). The approved tool then runs when
the run resumes and the SDK adds its real output: a second output for that call, which no
provider takes. It used to raise after the tool had run (its effect real, its output lost);
now the output is kept as a user item saying what the tool returned, and every view the
session gives is one the Responses API accepts (checked here, not by our ``validate``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agents import Agent, Runner, function_tool  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from context_manager.integrations.openai_agents import ContextManagerSession  # noqa: E402

RAN: list[str] = []


class Scripted(Model):
    """Calls ``deploy`` when the newest user item asks to deploy; else answers in text."""

    def __init__(self) -> None:
        self.turn = 0

    async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any) -> Any:
        self.turn += 1
        last = input[-1] if isinstance(input, list) else {"role": "user", "content": input}
        if isinstance(last, dict) and "deploy" in str(last.get("content")):
            call = ResponseFunctionToolCall(
                id=f"fc_{self.turn}",
                call_id=f"call_{self.turn}",
                type="function_call",
                name="deploy",
                arguments='{"target": "prod"}',
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text=f"ok {self.turn}", annotations=[])
        message = ResponseOutputMessage(
            id=f"msg_{self.turn}",
            type="message",
            role="assistant",
            status="completed",
            content=[text],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *a: Any, **k: Any) -> Any:
        raise NotImplementedError


@function_tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy."""
    RAN.append(target)
    return f"deployed to {target}"


def responses_problems(items: list[Any]) -> list[str]:
    """The Responses API's pairing rule: each function_call has exactly one function_call_output
    with its call_id, after it; no output without its call."""
    problems, calls, outputs = [], [], {}
    for k, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) else getattr(item, "type", None)
        call_id = item.get("call_id") if isinstance(item, dict) else getattr(item, "call_id", None)
        if kind == "function_call":
            calls.append((k, call_id))
        elif kind == "function_call_output":
            if call_id in outputs:
                problems.append(f"a second output for {call_id}")
            outputs[call_id] = k
    for k, call_id in calls:
        if call_id not in outputs or outputs[call_id] < k:
            problems.append(f"{call_id} has no output after it")
    problems += [f"output {c} without its call" for c in outputs if c not in dict(calls).values()]
    return problems


@pytest.mark.parametrize("persistent", [False, True])
def test_a_late_approval_keeps_what_the_tool_returned(tmp_path: Path, persistent: bool) -> None:
    options: dict[str, Any] = {"max_tokens": 8_000}
    if persistent:
        options["store"] = f"sqlite:///{tmp_path}/agents.db"
    session = ContextManagerSession("u", **options)
    agent = Agent(name="a", instructions="x", model=Scripted(), tools=[deploy])

    async def scenario() -> None:
        RAN.clear()
        first = await Runner.run(agent, "please deploy", session=session)
        state = first.to_state()  # the approval is shown to a person, who chats on first
        await Runner.run(agent, "meanwhile: what time is it?", session=session)
        for interruption in state.get_interruptions():
            state.approve(interruption)
        await Runner.run(agent, state, session=session)

    asyncio.run(scenario())
    assert RAN == ["prod"]  # the tool ran once
    items = session.manager.messages
    assert any("deployed to prod" in str(item.get("content")) for item in items)
    assert responses_problems(items) == []
    assert responses_problems(asyncio.run(session.get_items())) == []
    if persistent:  # the note is stored: a reopened session has it too
        reopened = ContextManagerSession("u", **options)
        assert reopened.manager.messages == items
