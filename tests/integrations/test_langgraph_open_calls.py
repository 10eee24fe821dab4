"""The LangGraph hook when the state leaves a tool call open or breaks the tool protocol.

Two field reports: a state ending on a parallel call whose sibling is unanswered lost its whole
newest exchange (the manager leaves an open group out of ``get_context``), and a thread whose
``RemoveMessage`` took away the human turn that had closed an interrupted call raised
``InvalidMessageError`` on every later step. The model is called right after the hook, so a call
open then never gets its result: it is closed, and an edited state is mended, not refused.

Each request is checked independently of the library: converted by LangChain's own
``convert_to_openai_messages`` and checked by the pairing rule OpenAI and Anthropic enforce.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.messages.utils import convert_to_openai_messages
from langgraph.graph.message import add_messages

from context_manager.integrations.langgraph import pre_model_hook

pytestmark = pytest.mark.filterwarnings("error")


def pairing_problems(sent: list[BaseMessage]) -> list[str]:
    """Every assistant tool call answered by the tool messages right after it, and every tool
    message answering a call of the assistant message before its run of tool messages."""
    oai = convert_to_openai_messages(sent)
    problems = []
    for i, m in enumerate(oai):
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = {c["id"] for c in m["tool_calls"]}
            k, answered = i + 1, set()
            while k < len(oai) and oai[k]["role"] == "tool":
                answered.add(oai[k]["tool_call_id"])
                k += 1
            if ids - answered:
                problems.append(f"{i}: unanswered {sorted(ids - answered)}")
        if m["role"] == "tool":
            before = [x for x in oai[:i] if x["role"] != "tool"]
            calls = before[-1].get("tool_calls", []) if before else []
            if m["tool_call_id"] not in {c["id"] for c in calls}:
                problems.append(f"{i}: orphan {m['tool_call_id']}")
    return problems


def _parallel(streamed: bool) -> AIMessage:
    if streamed:  # what a streaming model leaves in the state
        return AIMessageChunk(
            content="",
            tool_call_chunks=[
                {"name": "f", "args": '{"a": 1}', "id": "k0", "index": 0},
                {"name": "g", "args": "{}", "id": "j0", "index": 1},
            ],
            id="a1",
        )
    calls = [{"name": "f", "args": {"a": 1}, "id": "k0"}, {"name": "g", "args": {}, "id": "j0"}]
    return AIMessage("", tool_calls=calls, id="a1")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("streamed", [False, True], ids=["message", "chunk"])
def test_a_call_open_at_the_model_call_is_closed_not_dropped(provider: str, streamed: bool) -> None:
    ai = _parallel(streamed)
    state = [HumanMessage("q0", id="h0"), ai, ToolMessage("res", tool_call_id="k0", id="t0")]
    hook = pre_model_hook(max_tokens=4_000, provider=provider)

    sent = hook({"messages": state})["llm_input_messages"]

    assert sent[:3] == state  # the newest exchange is sent, the state's own messages first
    assert len(sent) == 4 and isinstance(sent[3], ToolMessage)
    assert sent[3].tool_call_id == "j0" and sent[3].status == "error"
    assert "interrupted" in str(sent[3].content)
    assert pairing_problems(sent) == []

    # The graph goes on from its own state (which never held the closure): answered once.
    state = [*state, AIMessage("done", id="a2"), HumanMessage("q1", id="h1")]
    sent = hook({"messages": state})["llm_input_messages"]
    assert [getattr(m, "tool_call_id", None) for m in sent].count("j0") == 1
    assert sent[-1] is state[-1] and pairing_problems(sent) == []


def test_closing_at_the_model_call_also_works_with_repair_on() -> None:
    """``repair=True`` managers close through the same rule; the repairer must see the closure,
    or it answers the call a second time on the next message."""
    state = [HumanMessage("q0", id="h0"), _parallel(False), ToolMessage("r", tool_call_id="k0")]
    hook = pre_model_hook(max_tokens=4_000, repair=True)
    assert len(hook({"messages": state})["llm_input_messages"]) == 4
    state = [*state, AIMessage("done", id="a2"), HumanMessage("q1", id="h1")]
    sent = hook({"messages": state})["llm_input_messages"]
    assert [getattr(m, "tool_call_id", None) for m in sent].count("j0") == 1
    assert pairing_problems(sent) == []


def test_removing_the_turn_that_closed_a_call_does_not_break_the_thread() -> None:
    state: list[BaseMessage] = add_messages(
        [],
        [
            HumanMessage("q0", id="h0"),
            _parallel(False),
            ToolMessage("res", tool_call_id="k0", id="t0"),
            HumanMessage("q1", id="h1"),  # closes j0 as interrupted
            AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "p1"}], id="a2"),
            ToolMessage("res", tool_call_id="p1", id="t1"),
            HumanMessage("q2", id="h2"),
        ],
    )
    hook = pre_model_hook(max_tokens=4_000, provider="openai")
    assert pairing_problems(hook({"messages": state})["llm_input_messages"]) == []

    # Now the state starts on the call whose closing turn is gone: [AI(k0, j0), k0, AI(p1), ...]
    state = add_messages(state, [RemoveMessage(id="h0"), RemoveMessage(id="h1")])
    sent = hook({"messages": state})["llm_input_messages"]
    assert sent[-1] is state[-1] and pairing_problems(sent) == []
    assert [m for m in sent if m.id in ("a1", "t0", "a2", "t1")] == state[:4]  # nothing lost

    # A removed caller leaves its result an orphan: dropped, not sent, not refused.
    state = add_messages(state, [RemoveMessage(id="a2"), HumanMessage("q3", id="h3")])
    sent = hook({"messages": state})["llm_input_messages"]
    assert sent[-1] is state[-1] and pairing_problems(sent) == []
    assert all(m.id != "t1" for m in sent)


def test_a_long_thread_with_removals_never_fails() -> None:
    """The field report's session: streamed parallel calls with one left open, interrupted
    calls, and every tenth turn a ``RemoveMessage`` of the oldest human message."""
    hook = pre_model_hook(prompt="sys " * 50, max_tokens=1_500, provider="openai")
    state: list[BaseMessage] = []
    for t in range(60):
        new: list[Any] = [HumanMessage(f"q{t} " + "w " * 30)]
        if t % 4 == 0:
            chunks = [
                {"name": "f", "args": '{"a": 1}', "id": f"k{t}", "index": 0},
                {"name": "g", "args": "{}", "id": f"j{t}", "index": 1},
            ]
            new += [AIMessageChunk(content="", tool_call_chunks=chunks)]
            new += [ToolMessage("res " * 40, tool_call_id=f"k{t}")]
        elif t % 4 == 1:
            calls = [
                {"name": "f", "args": {}, "id": f"p{t}"},
                {"name": "f", "args": {}, "id": f"q{t}"},
            ]
            new += [AIMessage("", tool_calls=calls), ToolMessage("x " * 40, tool_call_id=f"p{t}")]
        else:
            new += [AIMessage("ans " * 30)]
        state = add_messages(state, new)
        if t % 10 == 9:
            oldest = next(m for m in state if isinstance(m, HumanMessage))
            state = add_messages(state, [RemoveMessage(id=oldest.id)])
        sent = hook({"messages": state})["llm_input_messages"]
        assert pairing_problems(sent) == [], t
        assert any(m is state[-1] for m in sent), t  # the newest message is always sent
