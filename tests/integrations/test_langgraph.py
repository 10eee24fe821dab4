"""The LangGraph hook in real graphs over long sessions, every model call recounted.

The main path is LangGraph's own non-deprecated API: a ``StateGraph`` whose model node trims
with the hook. ``create_react_agent(pre_model_hook=...)`` still works but LangGraph 1.x
deprecates it (in favour of LangChain's ``create_agent``, see test_langchain_agents.py); that
test expects LangGraph's warning and nothing else. See test_langchain_agents.py for the session
plan and the independent recount.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from context_manager.errors import ConfigurationError
from context_manager.integrations.langgraph import pre_model_hook

from .oracle import Audit
from .scripted import SYSTEM_PROMPT, TOOLS, ScriptedChat, drive, plan, sent_texts

pytestmark = pytest.mark.filterwarnings("error")  # a warning from our code fails the test

OPTIONS: dict[str, Any] = {"max_tokens": 3_000, "reserve_tokens": 600, "counter": "tiktoken"}
BUDGET = 2_400
#: 220 turns (400+ model calls) in the slow suite (``-m slow``), 60 in the default run.
SESSIONS = [
    pytest.param(220, marks=pytest.mark.slow, id="220-turns"),
    pytest.param(60, id="60-turns"),
]


def _graph(model: ScriptedChat, hook: Any) -> Any:
    bound = model.bind_tools(TOOLS)

    def agent(state: MessagesState) -> dict[str, Any]:
        sent = hook(state)["llm_input_messages"]
        return {"messages": [bound.invoke([SystemMessage(SYSTEM_PROMPT), *sent])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver(), interrupt_before=["tools"])


def _check_session(model: ScriptedChat, audit: Audit, state: dict[str, Any], turns: int) -> None:
    audit.assert_clean()  # every call within budget (system + tools + messages), pairs whole
    assert audit.peak > 0.95 * BUDGET
    assert model.missed == []  # every call saw the newest user turn
    assert sum(isinstance(m, HumanMessage) for m in state["messages"]) == turns  # state whole
    assert sent_texts(model, "[Tool result trimmed") > 0  # oversized results were cut to fit
    assert sent_texts(model, "interrupted before it returned") > 0  # abandoned calls closed


@pytest.mark.slow
@pytest.mark.parametrize("length", SESSIONS)
def test_state_graph_over_a_long_interrupted_session(length: int) -> None:
    turns = plan(length, seed=5)
    audit = Audit(BUDGET)
    model = ScriptedChat(audit=audit, rounds={}, seen=[], missed=[])
    hook = pre_model_hook(tools=TOOLS, prompt=SYSTEM_PROMPT, **OPTIONS)
    state = drive(_graph(model, hook), turns, model)
    assert audit.calls >= 1.8 * length
    _check_session(model, audit, state, len(turns))
    assert hook.tracker.rebuilds == 0  # type: ignore[attr-defined]  # followed, never recounted


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:create_react_agent has been moved:DeprecationWarning")
def test_create_react_agent_still_works() -> None:
    from langgraph.prebuilt import create_react_agent

    turns = plan(60, seed=9)
    audit = Audit(BUDGET)
    model = ScriptedChat(audit=audit, rounds={}, seen=[], missed=[])
    hook = pre_model_hook(tools=TOOLS, prompt=SYSTEM_PROMPT, **OPTIONS)
    with pytest.warns(DeprecationWarning, match="create_react_agent has been moved"):
        graph = create_react_agent(
            model,
            TOOLS,
            prompt=SYSTEM_PROMPT,
            pre_model_hook=hook,
            checkpointer=InMemorySaver(),
            interrupt_before=["tools"],
        )
    # LangGraph refuses a model input with an unanswered call: the hook's closing results
    # must be real ToolMessages for the abandoned interrupts to get through
    state = drive(graph, turns, model)
    _check_session(model, audit, state, len(turns))


def test_a_leading_system_message_in_the_state_stays_first() -> None:
    hook = pre_model_hook(max_tokens=600, counter="tiktoken")
    messages: list[Any] = [SystemMessage("You are a coder.")]
    for n in range(30):
        call = {"name": "read", "args": {"n": n}, "id": f"c{n}"}
        messages += [
            HumanMessage(f"Read file {n}.", id=f"h{n}"),
            AIMessage("", tool_calls=[call], id=f"a{n}"),
            ToolMessage("x = 1\n" * 20, tool_call_id=f"c{n}", id=f"t{n}"),
        ]
        sent = hook({"messages": messages})["llm_input_messages"]
        assert sent[0] is messages[0] and isinstance(sent[1], HumanMessage)
        assert sent[-1] is messages[-1]
    assert len(sent) < len(messages)


def test_a_callable_prompt_cannot_be_counted() -> None:
    with pytest.raises(ConfigurationError, match="callable prompt"):
        pre_model_hook(max_tokens=1_000, prompt=lambda state: state["messages"])


def test_a_rewritten_state_is_recounted_once() -> None:
    hook = pre_model_hook(max_tokens=2_000, counter="tiktoken")
    messages: list[Any] = []
    for n in range(10):
        messages += [HumanMessage(f"q{n}", id=f"h{n}"), AIMessage(f"a{n}", id=f"a{n}")]
        hook({"messages": messages})
    edited = [*messages[:4], *messages[6:]]  # e.g. a RemoveMessage dropped one exchange
    sent = hook({"messages": edited})["llm_input_messages"]
    assert sent == edited and hook.tracker.rebuilds == 1  # type: ignore[attr-defined]
    other = [HumanMessage("another thread", id="x0")]  # a second conversation, its own manager
    assert hook({"messages": other})["llm_input_messages"] == other
    assert (
        hook({"messages": [*edited, HumanMessage("q", id="h99")]})["llm_input_messages"][-1].id
        == "h99"
    )
    assert hook.tracker.rebuilds == 1  # type: ignore[attr-defined]


def test_a_message_edited_under_its_id_is_sent_and_counted_as_edited() -> None:
    """LangGraph replaces a message that comes back with the same id (a human-in-the-loop edit
    of a tool call does): the edit is what is counted and sent."""
    hook = pre_model_hook(max_tokens=2_000, counter="tiktoken")
    ask = HumanMessage("deploy it", id="h1")
    call = {"name": "deploy", "args": {"target": "production " * 50}, "id": "c1"}
    hook({"messages": [ask, AIMessage("", tool_calls=[call], id="a1")]})
    edited = AIMessage("", tool_calls=[{**call, "args": {"target": "staging"}}], id="a1")
    result = ToolMessage("deployed", tool_call_id="c1", id="t1")
    sent = hook({"messages": [ask, edited, result]})["llm_input_messages"]
    assert sent == [ask, edited, result] and sent[1] is edited
    fresh = pre_model_hook(max_tokens=2_000, counter="tiktoken")
    fresh({"messages": [ask, edited, result]})
    counted = hook.tracker.manager.context_tokens()  # type: ignore[attr-defined]
    assert counted == fresh.tracker.manager.context_tokens()  # type: ignore[attr-defined]


def test_a_state_without_messages_and_a_tool_without_schema_are_configuration_errors() -> None:
    hook = pre_model_hook(max_tokens=2_000)
    for state in ({}, None, 42):
        with pytest.raises(ConfigurationError, match="messages"):
            hook(state)
    with pytest.raises(ConfigurationError, match="schema"):
        pre_model_hook(tools=[None], max_tokens=2_000)
