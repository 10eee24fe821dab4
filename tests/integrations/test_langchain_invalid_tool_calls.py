"""LangChain calls whose arguments did not parse (``AIMessage.invalid_tool_calls``) are calls.

langchain-openai sends them in ``tool_calls`` after the valid ones, with the raw argument text
(``_convert_message_to_dict``; langchain-anthropic sends each as a ``tool_use`` block, its input
parsed or ``{}``), and ``create_agent`` answers each with a ``ToolMessage``
(``_patch_invalid_tool_calls``). So such a message and its answer are kept or dropped together,
and an unanswered one is closed before the model sees it, like any other call.

Each request is checked by :func:`openai_wire_problems`, which builds the ``tool_calls`` the way
langchain-openai does (langchain-core's ``convert_to_openai_messages`` leaves invalid calls out,
so it cannot judge this) and applies OpenAI's rule: every call id answered by a tool message
before the next non-tool message, and no tool message without its call.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware")
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from context_manager import MessageContextManager, trim
from context_manager.errors import InvalidMessageError
from context_manager.integrations.langchain_agents import ContextManagerMiddleware
from context_manager.integrations.langgraph import pre_model_hook

pytestmark = pytest.mark.filterwarnings("error")

BAD_ARGS = '{"q": "context windows and how to keep a long agent loop inside one'  # truncated


def invalid_call(call_id: str, args: str = BAD_ARGS) -> dict[str, Any]:
    return {"type": "invalid_tool_call", "name": "search", "args": args, "id": call_id,
            "error": "Function search arguments are not valid JSON"}  # fmt: skip


def wire_calls(message: AIMessage) -> list[str]:
    """The call ids langchain-openai puts in ``tool_calls``: the valid ones, then the invalid."""
    return [c["id"] for c in message.tool_calls] + [
        c["id"] for c in message.invalid_tool_calls if c["id"]
    ]


def openai_wire_problems(messages: list[BaseMessage]) -> list[str]:
    problems: list[str] = []
    waiting: list[str] = []
    calls: set[str] = set()
    for i, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in calls:
                problems.append(f"{i}: tool message {m.tool_call_id!r} answers no call")
            waiting = [c for c in waiting if c != m.tool_call_id]
            continue
        if waiting:
            problems.append(f"{i}: calls {waiting} unanswered")
        waiting = wire_calls(m) if isinstance(m, AIMessage) else []
        calls = set(waiting)
    if waiting:
        problems.append(f"end: calls {waiting} unanswered")
    return problems


def history(turns: int) -> list[BaseMessage]:
    """Turns of filler, one of them a reply with a valid and an invalid call, both answered."""
    out: list[BaseMessage] = []
    for t in range(turns):
        out.append(HumanMessage(f"question {t}: " + "what does this module do? " * 6))
        if t == turns // 2:
            out.append(
                AIMessage(
                    "",
                    tool_calls=[{"name": "search", "args": {"q": "ok"}, "id": "call_ok"}],
                    invalid_tool_calls=[invalid_call("call_bad")],
                )
            )
            out.append(ToolMessage("found: " + "a result line. " * 20, tool_call_id="call_ok"))
            out.append(
                ToolMessage(
                    "Tool call search with id call_bad could not be executed - invalid JSON",
                    tool_call_id="call_bad",
                )
            )
        out.append(AIMessage(f"answer {t}: " + "it keeps the context inside the budget. " * 6))
    out.append(HumanMessage("and the last question?"))
    return out


def test_trim_keeps_an_invalid_call_with_its_answer_at_every_budget() -> None:
    messages = history(8)
    full = MessageContextManager(100_000, counter="chars", reserve_tokens=0)
    full.extend(messages)
    whole = full.token_count
    kept_pair = dropped_pair = 0
    for budget in range(40, whole + 40, 25):
        kept = trim(messages, budget, counter="chars", provider="openai")
        assert openai_wire_problems(kept) == [], budget
        ids = {id(m) for m in kept}
        pair = [m for m in messages if isinstance(m, AIMessage) and wire_calls(m)]
        pair += [m for m in messages if isinstance(m, ToolMessage)]
        present = [id(m) in ids for m in pair]
        assert all(present) or not any(present), budget  # together or not at all
        kept_pair += all(present)
        dropped_pair += not any(present)
    assert kept_pair and dropped_pair  # both outcomes were exercised


def test_the_raw_arguments_cost_what_they_say() -> None:
    long_args = '{"q": "' + "x" * 4_000  # what a reply cut at max_tokens leaves
    with_call = AIMessage("", invalid_tool_calls=[invalid_call("call_bad", long_args)])
    plain = AIMessage("")
    manager = MessageContextManager(100_000, counter="chars")
    assert manager.count_message(with_call) - manager.count_message(plain) >= len(long_args) // 4


class Scripted(BaseChatModel):
    """First reply: a call with truncated JSON arguments; then text. Records what it received."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        first = len(self.seen) == 1
        reply = AIMessage("", invalid_tool_calls=[invalid_call("call_bad")]) if first else (
            AIMessage("done")
        )  # fmt: skip
        return ChatResult(generations=[ChatGeneration(message=reply)])


def search(q: str) -> str:
    """Search."""
    return q


def test_create_agent_middleware_sends_the_answer_create_agent_made() -> None:
    model = Scripted(seen=[])
    middleware = ContextManagerMiddleware(max_tokens=8_000, provider="openai")
    agent = create_agent(model, [search], middleware=[middleware])
    state: dict[str, Any] = {"messages": []}
    for question in ["find x", "and y?"]:
        state = agent.invoke({"messages": [*state["messages"], HumanMessage(question)]})
    last = model.seen[-1]
    assert any(isinstance(m, AIMessage) and m.invalid_tool_calls for m in last)
    assert [m.tool_call_id for m in last if isinstance(m, ToolMessage)] == ["call_bad"]
    for request in model.seen:
        assert openai_wire_problems(request) == []


def test_langgraph_hook_closes_an_unanswered_invalid_call() -> None:
    hook = pre_model_hook(tools=[], prompt="p", max_tokens=8_000, provider="openai")
    state = [
        HumanMessage("find x", id="h1"),
        AIMessage("", id="a1", invalid_tool_calls=[invalid_call("call_bad")]),
        HumanMessage("and y?", id="h2"),
    ]
    sent = hook({"messages": state})["llm_input_messages"]
    assert openai_wire_problems(sent) == []
    assert [m.tool_call_id for m in sent if isinstance(m, ToolMessage)] == ["call_bad"]


def test_trim_treats_an_unanswered_invalid_call_as_any_open_call() -> None:
    """A graph whose ``ToolNode`` never ran the call (``create_react_agent`` ends the run on it)
    leaves it unanswered: the provider rejects that request, so ``trim()`` refuses it as it
    refuses a valid open call, and ``repair=True`` answers it, keeping the reply's text."""
    unanswered = [
        HumanMessage("find x"),
        AIMessage("let me look", invalid_tool_calls=[invalid_call("call_bad")]),
        HumanMessage("and y?"),
    ]
    with pytest.raises(InvalidMessageError, match="call_bad still await results"):
        trim(unanswered, 8_000, counter="chars")
    kept = trim(unanswered, 8_000, counter="chars", repair=True)
    assert openai_wire_problems(kept) == []
    assert kept[1] is unanswered[1]  # the reply and its text are sent, not dropped
    assert [m.tool_call_id for m in kept if isinstance(m, ToolMessage)] == ["call_bad"]
