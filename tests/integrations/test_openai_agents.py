"""The Agents SDK session and filters inside real ``Runner.run`` loops (a scripted model, real SDK).

The model is a small ``agents.models.interface.Model`` that follows the directive in the newest
user message (``calls=N rounds=R lines=L``, plus ``deploy`` for a call that needs approval and
``handoff`` for a hand-off from the triage agent to the coder): the SDK runs the tools, the
approvals, the hand-offs and the session exactly as it would with OpenAI. Every request the model
receives is recounted independently (tests/integrations/oracle.py) in the chat shape the SDK's
own converter gives it: the instructions as a system message, the items, the tool and hand-off
schemas.
"""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")
from agents import (  # noqa: E402
    Agent,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
    handoff,
)
from agents.items import ModelResponse  # noqa: E402
from agents.models.chatcmpl_converter import Converter  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from context_manager.integrations.openai_agents import (  # noqa: E402
    ContextManagerSession,
    handoff_input_filter,
    trimming_input_filter,
)

from .oracle import Audit  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error")  # a warning from our code fails the test

OPTIONS: dict[str, Any] = {"max_tokens": 3_000, "reserve_tokens": 600, "counter": "tiktoken"}
BUDGET = 2_400
CODER = "You are the coder. Read before you edit, cite files and lines, keep diffs small. " * 4
TRIAGE = "You are the triage agent. Hand coding work to the coder; answer the rest briefly. " * 2
DIRECTIVE = re.compile(r"calls=(\d+) rounds=(\d+) lines=(\d+)( deploy)?( handoff)?")


class ScriptedModel(Model):
    """Follows the newest user directive; audits every request per receiving agent."""

    def __init__(self, audits: dict[str, Audit] | None = None) -> None:
        self.audits = audits or {"triage": Audit(10**9), "coder": Audit(10**9)}
        self.inputs: list[tuple[str, list[Any]]] = []
        self.rounds: dict[tuple[str, str], int] = {}
        self.expected: str | None = None
        self.missed: list[str] = []
        self.emitted: set[str] = set()  # every call id the model made

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        *args: Any,
        **kw: Any,
    ) -> Any:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        who = "coder" if system_instructions == CODER else "triage"
        self.inputs.append((who, items))
        messages = (
            [{"role": "system", "content": system_instructions}] if system_instructions else []
        )
        messages += Converter.items_to_messages(items)
        schemas = [Converter.tool_to_openai(t) for t in tools]
        schemas += [Converter.convert_handoff_tool(h) for h in handoffs]
        self.audits[who].check(messages, schemas)
        prompt = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        if self.expected is not None and prompt != self.expected:
            self.missed.append(self.expected)
        match = DIRECTIVE.search(prompt)
        calls, rounds, lines = map(int, match.groups()[:3]) if match else (0, 0, 0)
        n = len(self.inputs)
        if match and match.group(5) and who == "triage":
            return self._calls([("transfer_to_coder", "{}")], n)
        done = self.rounds.get((who, prompt), 0)
        if done < rounds:
            self.rounds[who, prompt] = done + 1
            wanted = [
                ("read_file", f'{{"path": "src/m{n}_{k}.py", "lines": {lines}}}')
                for k in range(calls)
            ]
            if match and match.group(4) and done == 0:
                wanted.append(("deploy", '{"target": "staging"}'))
            return self._calls(wanted, n)
        text = f"Done with step {n}. " + "It is safe. " * 12
        message = ResponseOutputMessage(
            id=f"msg_{n}",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def _calls(self, wanted: list[tuple[str, str]], n: int) -> Any:
        self.emitted.update(f"call_{n}_{k}" for k in range(len(wanted)))
        output = [
            ResponseFunctionToolCall(
                id=f"fc_{n}_{k}",
                call_id=f"call_{n}_{k}",
                type="function_call",
                name=name,
                arguments=args,
                status="completed",
            )
            for k, (name, args) in enumerate(wanted)
        ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


@function_tool
def read_file(path: str, lines: int) -> str:
    """Read the first lines of a file in the repository."""
    return f"# {path}\n" + "".join(f"value_{i} = compute({i}, scale=2)\n" for i in range(lines))


@function_tool
def search_code(query: str, limit: int) -> str:
    """Search the repository for a regular expression."""
    return f"{limit} matches for {query}"


@function_tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy the current branch to an environment."""
    return f"deployed to {target}"


def agents_for(model: ScriptedModel, **filter_options: Any) -> Agent[Any]:
    coder = Agent(
        name="coder", instructions=CODER, model=model, tools=[read_file, search_code, deploy]
    )
    to_coder = handoff(coder, input_filter=handoff_input_filter(**filter_options))
    return Agent(
        name="triage",
        instructions=TRIAGE,
        model=model,
        tools=[read_file, deploy],
        handoffs=[to_coder],
    )


def plan(turns: int, seed: int) -> list[tuple[str, bool]]:
    rng = random.Random(seed)
    out = []
    for n in range(turns):
        roll = rng.random()
        filler = " ".join(
            rng.choice(["check", "the", "parser", "again"]) for _ in range(rng.randint(3, 50))
        )
        if roll < 0.2:
            directive = "calls=0 rounds=0 lines=0"
        elif roll < 0.65:
            directive = (
                f"calls={rng.randint(1, 4)} rounds={rng.randint(1, 2)} lines={rng.randint(2, 40)}"
            )
        elif roll < 0.75:
            directive = f"calls={rng.randint(2, 4)} rounds=1 lines={rng.randint(300, 600)}"
        elif roll < 0.87:
            directive = f"calls={rng.randint(1, 3)} rounds=1 lines={rng.randint(2, 20)} deploy"
        else:
            directive = f"calls={rng.randint(1, 3)} rounds=1 lines={rng.randint(2, 60)} handoff"
        out.append((f"Turn {n}: {directive}. {filler}", rng.random() < 0.5))
    return out


async def run_session(
    triage: Agent[Any],
    model: ScriptedModel,
    turns: list[tuple[str, bool]],
    session: Any,
    config: RunConfig,
) -> int:
    """Run ``turns``; an approval is resumed or abandoned; returns the interrupts seen."""
    interrupts = 0
    for prompt, resume in turns:
        model.expected = prompt
        result = await Runner.run(triage, prompt, session=session, run_config=config)
        if result.interruptions:
            interrupts += 1
            if resume:
                state = result.to_state()
                for item in result.interruptions:
                    state.approve(item)
                await Runner.run(triage, state, session=session, run_config=config)
    return interrupts


def _sent(model: ScriptedModel, needle: str) -> int:
    return sum(needle in repr(items) for _who, items in model.inputs)


@pytest.mark.slow
def test_a_long_session_with_approvals_and_handoffs(tmp_path: Path) -> None:
    audits = {"triage": Audit(BUDGET), "coder": Audit(BUDGET)}
    model = ScriptedModel(audits)
    triage = agents_for(model, **OPTIONS)
    config = RunConfig(call_model_input_filter=trimming_input_filter(**OPTIONS))
    session = ContextManagerSession("user-1", directory=tmp_path, **OPTIONS)
    turns = plan(220, seed=4)
    interrupts = asyncio.run(run_session(triage, model, turns, session, config))
    for audit in audits.values():
        audit.assert_clean()  # instructions + tool schemas + items within budget, pairs whole
    assert audits["triage"].calls + audits["coder"].calls >= 400
    assert audits["coder"].calls > 50 and interrupts > 10
    assert max(a.peak for a in audits.values()) > 0.95 * BUDGET
    assert model.missed == []  # every call saw the newest user message
    assert _sent(model, "[Tool result trimmed") > 0  # large parallel outputs cut to fit
    assert _sent(model, "interrupted before it returned") > 0  # abandoned approvals closed
    stored = session.manager.messages
    prompts = [i["content"] for i in stored if isinstance(i, dict) and i.get("role") == "user"]
    assert prompts == [p for p, _resume in turns]  # the session stored every turn
    calls = {
        i["call_id"] for i in stored if isinstance(i, dict) and i.get("type") == "function_call"
    }
    assert calls == model.emitted and len(calls) > 300  # and every call the model made
    reopened = ContextManagerSession("user-1", directory=tmp_path, **OPTIONS)
    assert reopened.manager.messages == stored  # persisted, lossless


def _long_history(turns: int) -> list[Any]:
    """A conversation of parallel calls and their outputs, about 40k tokens."""
    items: list[Any] = []
    for n in range(turns):
        items.append({"role": "user", "content": f"Question {n}: read the parser files again."})
        for k in range(3):
            items.append(
                {
                    "type": "function_call",
                    "call_id": f"h{n}_{k}",
                    "name": "read_file",
                    "arguments": f'{{"path": "p{n}_{k}.py", "lines": 30}}',
                }
            )
        for k in range(3):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": f"h{n}_{k}",
                    "output": "value = compute(1)\n" * 40,
                }
            )
        items.append({"role": "assistant", "content": f"Answer {n}: the parser is fine."})
    return items


def test_a_handoff_gives_the_receiving_agent_a_projection_within_its_budget() -> None:
    audits = {"triage": Audit(10**9), "coder": Audit(BUDGET)}
    model = ScriptedModel(audits)
    triage = agents_for(model, **OPTIONS)
    session = SQLiteSession("handoff")  # the SDK's own session: it must keep every item
    history = _long_history(60)
    asyncio.run(session.add_items(history))
    prompt = "Turn 0: calls=3 rounds=1 lines=500 handoff. please fix the parser"
    model.expected = prompt
    result = asyncio.run(Runner.run(triage, prompt, session=session))
    assert "Done with step" in str(result.final_output) and result.last_agent.name == "coder"
    who = [w for w, _items in model.inputs]
    assert who == ["triage", "coder", "coder"]
    first = model.inputs[1][1]
    assert audits["coder"].calls == 2
    # the first call after the hand-off is the filter's projection: within the coder's budget
    # with the coder's instructions and tools, pairs whole, ending on the hand-off exchange
    # (its second call adds three large outputs: that one is trimming_input_filter's job)
    assert 1 not in [n for n, _tokens in audits["coder"].over] and audits["coder"].broken == []
    assert len(first) < len(history) // 4
    assert first[-1]["type"] == "function_call_output" and model.missed == []
    stored = asyncio.run(session.get_items())
    assert stored[: len(history)] == history  # the session kept the whole conversation
    assert any(i.get("name") == "transfer_to_coder" for i in stored if isinstance(i, dict))


@pytest.mark.parametrize("persistent", [False, True])
def test_a_batch_with_a_refused_item_stores_nothing(tmp_path: Path, persistent: bool) -> None:
    """As the SDK's own sessions (one transaction per ``add_items``): its recovery of a failed
    write reads the tail back and expects the batch either whole or absent."""
    from context_manager.errors import InvalidMessageError

    directory = tmp_path if persistent else None
    session = ContextManagerSession("s", directory=directory, max_tokens=10_000)
    before = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    asyncio.run(session.add_items(before))
    batch = [
        {"role": "user", "content": "first"},
        {"type": "function_call_output", "call_id": "nope", "output": "orphan"},
    ]
    with pytest.raises(InvalidMessageError, match="unknown tool call id"):
        asyncio.run(session.add_items(batch))
    assert asyncio.run(session.get_items()) == before
    if persistent:
        reopened = ContextManagerSession("s", directory=directory, max_tokens=10_000)
        assert asyncio.run(reopened.get_items()) == before
    asyncio.run(session.add_items(batch[:1]))  # the session goes on from where it was
    assert asyncio.run(session.get_items()) == [*before, batch[0]]


def test_session_doors_raise_typed_errors(tmp_path: Path) -> None:
    from context_manager.errors import ConfigurationError

    session = ContextManagerSession("s", max_tokens=10_000)
    with pytest.raises(ConfigurationError):
        asyncio.run(session.add_items(None))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        asyncio.run(session.get_items(limit="3"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        ContextManagerSession("s", directory=42, max_tokens=100)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        ContextManagerSession("s", max_tokens=100, bogus=1)


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
    assert asyncio.run(session.get_items(limit=3)) == items[1:]  # the last 3, as SQLiteSession
    assert asyncio.run(session.get_items(limit=2)) == items[2:]
    assert asyncio.run(session.pop_item()) == items[-1]
    assert asyncio.run(session.get_items()) == items[:-1]
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == [] and asyncio.run(session.pop_item()) is None


def test_filters_need_a_budget() -> None:
    from context_manager.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="max_tokens"):
        trimming_input_filter()
    with pytest.raises(ConfigurationError, match="max_tokens"):
        handoff_input_filter(counter="tiktoken")
