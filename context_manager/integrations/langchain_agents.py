"""LangChain v1 ``create_agent``: a middleware that trims what the model sees on every call.

``create_agent(model, tools, system_prompt=..., middleware=[ContextManagerMiddleware(...)])``
keeps the agent state whole and changes only the request's messages, through
``wrap_model_call``. Each request's system message (``request.system_message``), its tool schemas
(``request.tools`` plus the structured-output schemas of ``response_format``) and its messages
are counted together against the budget, as the model receives them; only the messages are
trimmed. Messages are tracked by id (only new ones are counted), one manager per conversation
(thread), with the guarantees of the LangGraph hook: newest message last, no orphaned
``ToolMessage``, interrupted calls closed, an oversized newest result cut to fit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest

from ._tracker import ContextTracker
from .langgraph import _DEFAULTS, tool_definitions

__all__ = ["ContextManagerMiddleware"]


def _output_schemas(response_format: Any) -> list[dict[str, Any]]:
    """Tool-shaped definitions of a structured-output format (sent as tools or as a schema)."""
    if response_format is None:
        return []
    specs = getattr(response_format, "schema_specs", None)
    if specs is None:
        spec = getattr(response_format, "schema_spec", None)
        specs = [spec] if spec is not None else None
    if specs is not None:
        return [
            {
                "type": "function",
                "function": {
                    "name": s.name,
                    "description": s.description or "",
                    "parameters": s.json_schema,
                },
            }
            for s in specs
        ]
    schema = getattr(response_format, "schema", response_format)
    return tool_definitions([schema])


class ContextManagerMiddleware(AgentMiddleware):
    """Trim each model request with a manager kept in step with the agent's messages.

    Options are the manager's (``max_tokens``, ``model``, ``counter``, ``strategy``,
    ``provider``, ``retention_ratio``, ...); defaults as for :func:`~.langgraph.pre_model_hook`.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.tracker = ContextTracker(**{**_DEFAULTS, **options})
        self._schemas: tuple[tuple[Any, ...], Any, list[dict[str, Any]]] | None = None

    def _definitions(self, request: ModelRequest) -> list[dict[str, Any]]:
        """The request's tool schemas, converted once while the tools stay the same objects."""
        tools, response_format = tuple(request.tools), request.response_format
        cached = self._schemas
        if (
            cached is not None
            and len(cached[0]) == len(tools)
            and all(a is b for a, b in zip(cached[0], tools, strict=True))
            and cached[1] is response_format
        ):
            return cached[2]
        schemas = [*tool_definitions(tools), *_output_schemas(response_format)]
        self._schemas = (tools, response_format, schemas)
        return schemas

    def _trimmed(self, request: ModelRequest) -> ModelRequest:
        sent = self.tracker.context(
            request.messages, system=request.system_message, tools=self._definitions(request)
        )
        return request.override(messages=sent)

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Any],
    ) -> Any:
        return handler(self._trimmed(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[Any]],
    ) -> Any:
        return await handler(self._trimmed(request))
