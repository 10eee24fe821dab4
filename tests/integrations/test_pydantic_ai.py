"""The pydantic-ai capability inside real ``Agent`` runs over long sessions.

A ``FunctionModel`` follows the directive in the newest user prompt (``calls=N rounds=R
lines=L``): parallel ``read_file`` calls, results larger than the whole budget, and approval
interrupts (a ``deploy`` call that needs approval ends the run with ``DeferredToolRequests``; the
next run resumes it or the user moves on). Every request the model receives is recounted
independently (tests/integrations/oracle.py) as pydantic-ai's OpenAI chat model would send it:
the instruction parts as system messages, each request part as its own message, the tool schemas.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from context_manager.integrations.pydantic_ai import history_processor, process_history

from .oracle import Audit

pytestmark = pytest.mark.filterwarnings("error")  # a warning from our code fails the test

OPTIONS: dict[str, Any] = {"max_tokens": 3_000, "reserve_tokens": 600, "counter": "tiktoken"}
BUDGET = 2_400
#: 220 turns (400+ model calls) in the slow suite (``-m slow``), 60 in the default run.
SESSIONS = [
    pytest.param(220, marks=pytest.mark.slow, id="220-turns"),
    pytest.param(60, id="60-turns"),
]
SYSTEM = "You are a careful engineer. Cite files and lines; prefer small diffs. " * 4
INSTRUCTIONS = "Answer in English. Never run destructive commands without approval. " * 3
DIRECTIVE = re.compile(r"calls=(\d+) rounds=(\d+) lines=(\d+)( deploy)?")


def as_chat(messages: list[Any], info: AgentInfo) -> tuple[list[dict[str, Any]], list[Any]]:
    """The request in OpenAI chat shape, as pydantic-ai's OpenAI chat model maps it."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            text = "\n\n".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [
                {
                    "id": p.tool_call_id,
                    "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
                }
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            out.append({"role": "assistant", "content": text, "tool_calls": calls})
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": part.content})
            elif isinstance(part, ToolReturnPart):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": part.model_response_str(),
                    }
                )
            elif isinstance(part, RetryPromptPart):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": part.model_response(),
                    }
                )
            else:
                raise AssertionError(f"unexpected part {part!r}")
    parameters = info.model_request_parameters
    system = [{"role": "system", "content": p.content} for p in parameters.instruction_parts or ()]
    lead = sum(1 for m in out[:1] if m["role"] == "system")
    out[lead:lead] = system
    tools = [
        {"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
        for t in [*info.function_tools, *info.output_tools]
    ]
    return out, tools


class Script:
    """The model: parallel calls per the newest prompt's directive, then an answer."""

    def __init__(self, audit: Audit) -> None:
        self.audit = audit
        self.seen: list[list[Any]] = []
        self.rounds: dict[str, int] = {}
        self.expected: str | None = None
        self.missed: list[str] = []

    def __call__(self, messages: list[Any], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.audit.check(*as_chat(messages, info))
        prompt = next(
            p.content
            for m in reversed(messages)
            if isinstance(m, ModelRequest)
            for p in reversed(m.parts)
            if isinstance(p, UserPromptPart)
        )
        if self.expected is not None and prompt != self.expected:
            self.missed.append(self.expected)
        match = DIRECTIVE.search(prompt)
        calls, rounds, lines = map(int, match.groups()[:3]) if match else (0, 0, 0)
        done = self.rounds.get(prompt, 0)
        step = len(self.seen)
        if done < rounds:
            self.rounds[prompt] = done + 1
            parts: list[Any] = [
                ToolCallPart(
                    "read_file", {"path": f"src/m{step}_{k}.py", "lines": lines}, f"call_{step}_{k}"
                )
                for k in range(calls)
            ]
            if match and match.group(4) and done == 0:
                parts.append(ToolCallPart("deploy", {"target": "staging"}, f"deploy_{step}"))
            return ModelResponse(parts=parts)
        return ModelResponse(parts=[TextPart(f"Done with step {step}. " + "It is safe. " * 12)])

    def sent(self, needle: str) -> int:
        return sum(
            any(needle in str(getattr(p, "content", "")) for m in seen for p in m.parts)
            for seen in self.seen
        )


def plan(turns: int, seed: int) -> list[tuple[str, bool]]:
    """(prompt, resume the approval if one is asked) per turn."""
    rng = random.Random(seed)
    out = []
    for n in range(turns):
        roll = rng.random()
        filler = " ".join(
            rng.choice(["check", "the", "parser", "again"]) for _ in range(rng.randint(3, 50))
        )
        if roll < 0.25:
            directive = "calls=0 rounds=0 lines=0"
        elif roll < 0.75:
            directive = (
                f"calls={rng.randint(1, 4)} rounds={rng.randint(1, 2)} lines={rng.randint(2, 40)}"
            )
        elif roll < 0.85:
            directive = f"calls={rng.randint(2, 4)} rounds=1 lines={rng.randint(300, 600)}"
        else:
            directive = f"calls={rng.randint(0, 2)} rounds=1 lines={rng.randint(2, 20)} deploy"
        out.append((f"Turn {n}: {directive}. {filler}", rng.random() < 0.5))
    return out


def make_agent(script: Script, capability: Any) -> Agent[None, Any]:
    agent = Agent(
        FunctionModel(script),
        system_prompt=SYSTEM,
        instructions=INSTRUCTIONS,
        output_type=[str, DeferredToolRequests],
        capabilities=[capability],
    )

    @agent.tool_plain
    def read_file(path: str, lines: int) -> str:
        """Read the first lines of a file in the repository."""
        return f"# {path}\n" + "".join(f"value_{i} = compute({i}, scale=2)\n" for i in range(lines))

    @agent.tool_plain(requires_approval=True)
    def deploy(target: str) -> str:
        """Deploy the current branch to an environment."""
        return f"deployed to {target}"

    return agent


def signature(history: list[Any]) -> list[Any]:
    """What a stored history says, without timestamps and run ids."""
    return [
        (
            m.kind,
            [(p.part_kind, str(getattr(p, "content", getattr(p, "args", "")))) for p in m.parts],
        )
        for m in history
    ]


class NoOp(AbstractCapability[Any]):
    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None


def run_session(agent: Agent[None, Any], script: Script, turns: list[tuple[str, bool]]) -> Any:
    """Run ``turns``; returns the stored history and the number of approval interrupts."""
    history: list[Any] = []
    interrupts = 0
    for prompt, resume in turns:
        script.expected = prompt
        result = agent.run_sync(prompt, message_history=history)
        history = result.all_messages()
        if isinstance(result.output, DeferredToolRequests):
            interrupts += 1
            if resume:
                approvals = {call.tool_call_id: True for call in result.output.approvals}
                results = DeferredToolResults(approvals=approvals)
                result = agent.run_sync(message_history=history, deferred_tool_results=results)
                history = result.all_messages()
            elif isinstance(history[-1], ModelResponse):  # moving on: close the calls first
                history = repair_messages(history)
    return history, interrupts


@pytest.mark.slow
@pytest.mark.parametrize("length", SESSIONS)
def test_agent_over_a_long_session_keeps_its_history(length: int) -> None:
    turns = plan(length, seed=1)
    audit = Audit(BUDGET)
    script = Script(audit)
    capability = process_history(**OPTIONS)
    history, interrupts = run_session(make_agent(script, capability), script, turns)
    # the same session without the capability stores exactly the same history
    bare = Script(Audit(10**9))
    baseline, _ = run_session(make_agent(bare, NoOp()), bare, turns)
    assert signature(history) == signature(baseline)
    assert interrupts > length // 20
    assert audit.calls >= 1.8 * length
    audit.assert_clean()  # instructions + system prompt + tools + messages within budget
    assert audit.peak > 0.95 * BUDGET
    assert script.missed == []  # every request carried the newest user prompt
    prompts = [p for m in history for p in m.parts if isinstance(p, UserPromptPart)]
    assert len(prompts) == len(turns)  # the stored history holds every turn
    assert script.sent("[Tool result trimmed") > 0  # large parallel results were cut to fit
    first_prompt = turns[0][0]
    assert all(any(isinstance(p, SystemPromptPart) for p in seen[0].parts) for seen in script.seen)
    assert script.sent(first_prompt) < 10  # the first user prompt is not pinned
    # pydantic-ai rewrites a stored request when the user moves on from an approval (it merges
    # the pending results with the new prompt): only then is the conversation recounted
    assert capability.tracker.rebuilds <= interrupts


def test_processhistory_processor_trims_the_history_it_returns() -> None:
    """pydantic-ai stores what a ``ProcessHistory`` processor returns: documented, asserted."""
    audit = Audit(10**9)
    script = Script(audit)
    processor = history_processor(max_tokens=1_500, counter="tiktoken")
    agent = make_agent(script, ProcessHistory(processor))
    history: list[Any] = []
    for prompt, _resume in plan(30, seed=2):
        if "deploy" in prompt:
            continue
        script.expected = prompt
        history = agent.run_sync(prompt, message_history=history).all_messages()
    assert script.missed == []
    assert sum(isinstance(p, UserPromptPart) for m in history for p in m.parts) < 20
