"""The recall tool as each agent framework's tool object, over one offload area.

- :func:`agents_recall_tool`: an Agents SDK ``FunctionTool``;
- :func:`langchain_recall_tool`: a LangChain ``StructuredTool``;
- :func:`pydantic_ai_recall_tool`: a pydantic-ai ``Tool``.

Each takes the JSON Schema of ``offload/schemas.py`` as it is (so every framework shows the
model the same tool) and runs :func:`~context_manager.offload.run_recall`, which answers text
even for a wrong handle or range: the model reads the error and corrects its call instead of
the run failing. Each framework is imported only by the function that builds its tool.
"""

from __future__ import annotations

import copy
from typing import Any

from ..counting import TokenCounter
from ..offload.area import OffloadArea
from ..offload.recall import DEFAULT_RECALL_TOKENS, run_recall
from ..offload.schemas import DESCRIPTION, PARAMETERS, TOOL_NAME

__all__ = ["agents_recall_tool", "langchain_recall_tool", "pydantic_ai_recall_tool"]


def _runner(area: OffloadArea, max_tokens: int, counter: str | TokenCounter | None) -> Any:
    def run(**arguments: Any) -> str:
        return run_recall(area, arguments, max_tokens=max_tokens, counter=counter)

    return run


def agents_recall_tool(
    area: OffloadArea,
    *,
    name: str = TOOL_NAME,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    counter: str | TokenCounter | None = None,
) -> Any:
    """An ``agents.FunctionTool`` reading ``area`` (add it to ``Agent(tools=[...])``)."""
    from agents import FunctionTool

    async def invoke(_context: Any, arguments: str) -> str:
        return run_recall(area, arguments, max_tokens=max_tokens, counter=counter)

    return FunctionTool(
        name=name,
        description=DESCRIPTION,
        params_json_schema=copy.deepcopy(PARAMETERS),
        on_invoke_tool=invoke,
        strict_json_schema=False,  # optional arguments: strict mode would require them all
    )


def langchain_recall_tool(
    area: OffloadArea,
    *,
    name: str = TOOL_NAME,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    counter: str | TokenCounter | None = None,
) -> Any:
    """A ``langchain_core.tools.StructuredTool`` reading ``area`` (``model.bind_tools``)."""
    from langchain_core.tools import StructuredTool

    return StructuredTool.from_function(
        func=_runner(area, max_tokens, counter),
        name=name,
        description=DESCRIPTION,
        args_schema=copy.deepcopy(PARAMETERS),
    )


def pydantic_ai_recall_tool(
    area: OffloadArea,
    *,
    name: str = TOOL_NAME,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    counter: str | TokenCounter | None = None,
) -> Any:
    """A ``pydantic_ai.Tool`` reading ``area`` (``Agent(tools=[...])``)."""
    from pydantic_ai import Tool

    return Tool.from_schema(
        _runner(area, max_tokens, counter),
        name=name,
        description=DESCRIPTION,
        json_schema=copy.deepcopy(PARAMETERS),
    )
