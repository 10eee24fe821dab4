"""LangChain v1 ``create_agent``: a middleware that trims what the model sees on every call.

``create_agent(model, tools, system_prompt=..., middleware=[ContextManagerMiddleware(...)])``
keeps the agent state whole and changes only the request's messages, through
``wrap_model_call``: the same tracking as the LangGraph hook (messages recognised by id, only new
ones counted), the same guarantees (newest message last, no orphaned ``ToolMessage``, within
budget). The system prompt travels separately in a v1 request (``request.system_message``); give
its size to the budget with ``reserve_tokens`` if it is large.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest

from .langgraph import ContextTracker

__all__ = ["ContextManagerMiddleware"]


class ContextManagerMiddleware(AgentMiddleware):
    """Trim each model request with a manager kept in step with the agent's messages.

    Options are the manager's (``max_tokens``, ``model``, ``strategy``, ``provider``,
    ``retention_ratio``, ...); defaults as for :func:`~.langgraph.pre_model_hook`.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.tracker = ContextTracker(**options)

    def _trimmed(self, request: ModelRequest) -> ModelRequest:
        return request.override(messages=self.tracker.context(request.messages))

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
