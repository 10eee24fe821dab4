"""A scripted chat model and a tool shared by the LangGraph and LangChain agent tests."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool


class ScriptedChat(BaseChatModel):
    """Two parallel tool calls after a human message; an answer after tool results."""

    seen: list[list[Any]] = []  # noqa: RUF012 - a pydantic field, set per instance

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        step = len(self.seen)
        if isinstance(messages[-1], ToolMessage):
            reply = AIMessage("Done. " + "details " * 30)
        else:
            calls = [
                {"name": "read_file", "args": {"path": f"f{step}_{k}.py"}, "id": f"c{step}_{k}"}
                for k in range(2)
            ]
            reply = AIMessage("", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}\n" + "x = 1\n" * 50
