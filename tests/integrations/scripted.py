"""A scripted chat model, tools and a session plan shared by the LangGraph and LangChain tests.

The model binds tools the way provider chat models do (``bind_tools`` returns a binding whose
``tools`` reach ``_generate`` in OpenAI's shape), so it receives exactly what a real model would:
the system message, the trimmed messages and the tool schemas. Each call is recounted and
pair-checked by an :class:`~tests.integrations.oracle.Audit` before it answers.

What it answers follows the newest human message's directive ``calls=N rounds=R lines=L``:
``R`` rounds of ``N`` parallel ``read_file`` calls asking for ``L`` lines each, then a text
answer. It tracks rounds per directive itself, so trimming cannot make it loop.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

SYSTEM_PROMPT = (
    "You are a careful senior engineer working in a large Python repository. Read files before "
    "you change them, explain each change in one short paragraph, keep answers precise, cite "
    "file names and line numbers, prefer small diffs, never invent APIs, and ask when a request "
    "is ambiguous. " * 3
)
DIRECTIVE = re.compile(r"calls=(\d+) rounds=(\d+) lines=(\d+)")


class ScriptedChat(BaseChatModel):
    """Answers each human directive with parallel tool calls, then text; audits every call."""

    audit: Any = None
    expected: Any = None  # the newest human text, which every call must see
    missed: list[str] = []  # noqa: RUF012 - a pydantic field, set per instance
    rounds: dict[str, int] = {}  # noqa: RUF012
    seen: list[list[Any]] = []  # noqa: RUF012

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        if self.audit is not None:
            self.audit.check(convert_to_openai_messages(messages), kwargs.get("tools") or [])
        human = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        if self.expected is not None and human.text != self.expected:
            self.missed.append(self.expected)
        directive = DIRECTIVE.search(human.text)
        calls, rounds, lines = map(int, directive.groups()) if directive else (0, 0, 0)
        done = self.rounds.get(human.text, 0)
        step = len(self.seen)
        if done < rounds:
            self.rounds[human.text] = done + 1
            tool_calls = [
                {
                    "name": "read_file",
                    "args": {"path": f"src/m{step}_{k}.py", "lines": lines},
                    "id": f"call_{step}_{k}",
                }
                for k in range(calls)
            ]
            reply = AIMessage("", tool_calls=tool_calls)
        else:
            reply = AIMessage(f"Done with step {step}. " + "The change is safe because " * 8)
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def read_file(path: str, lines: int) -> str:
    """Read the first lines of a file in the repository."""
    return f"# {path}\n" + "".join(f"value_{i} = compute({i}, scale=2)\n" for i in range(lines))


@tool
def search_code(query: str, limit: int = 10) -> str:
    """Search the repository for a regular expression and list matching lines."""
    return f"{limit} matches for {query}"


@tool
def run_tests(selection: str, verbose: bool = False) -> str:
    """Run the test suite or a selection of it and report failures."""
    return "all passed"


TOOLS = [read_file, search_code, run_tests]


@dataclass
class Turn:
    """One user turn of a session plan."""

    text: str
    interrupt: bool = False  # stop before the tools run (a human-in-the-loop pause)
    resume: bool = False  # after the pause: resume it (else the next turn abandons the calls)


def plan(turns: int, seed: int = 7) -> list[Turn]:
    """A long session: chat, parallel tool rounds, results larger than the budget, interrupts."""
    rng = random.Random(seed)
    out = []
    for n in range(turns):
        roll = rng.random()
        filler = " ".join(
            rng.choice(["please", "check", "the", "module", "again"])
            for _ in range(rng.randint(3, 60))
        )
        if roll < 0.25:
            directive = "calls=0 rounds=0 lines=0"
        elif roll < 0.75:
            directive = (
                f"calls={rng.randint(1, 4)} rounds={rng.randint(1, 2)} lines={rng.randint(2, 40)}"
            )
        elif roll < 0.85:
            directive = f"calls={rng.randint(1, 3)} rounds=1 lines={rng.randint(300, 600)}"
        else:
            directive = f"calls={rng.randint(1, 3)} rounds=1 lines={rng.randint(2, 30)}"
        interrupt = roll >= 0.85
        out.append(
            Turn(f"Turn {n}: {directive}. {filler}", interrupt, interrupt and rng.random() < 0.5)
        )
    return out


def drive(
    graph: Any, turns: list[Turn], model: ScriptedChat, *, thread: str = "session"
) -> dict[str, Any]:
    """Run ``turns`` on a graph compiled with a checkpointer and ``interrupt_before=["tools"]``.

    A normal turn resumes every pause; an interrupt turn stops at its first pause and is either
    resumed or abandoned (the next human message arrives with the calls still unanswered).
    """
    config: dict[str, Any] = {"configurable": {"thread_id": thread}, "recursion_limit": 60}
    for turn in turns:
        model.expected = turn.text
        graph.invoke({"messages": [HumanMessage(turn.text)]}, config)
        while graph.get_state(config).next and (not turn.interrupt or turn.resume):
            graph.invoke(None, config)
    return graph.get_state(config).values


async def adrive(
    graph: Any, turns: list[Turn], model: ScriptedChat, *, thread: str = "session"
) -> dict[str, Any]:
    """:func:`drive` through ``ainvoke``."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread}, "recursion_limit": 60}
    for turn in turns:
        model.expected = turn.text
        await graph.ainvoke({"messages": [HumanMessage(turn.text)]}, config)
        while (await graph.aget_state(config)).next and (not turn.interrupt or turn.resume):
            await graph.ainvoke(None, config)
    return (await graph.aget_state(config)).values


def sent_texts(model: ScriptedChat, needle: str) -> int:
    """How many model calls saw a message containing ``needle``."""
    return sum(any(needle in str(m.content) for m in seen) for seen in model.seen)
