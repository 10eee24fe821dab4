"""pydantic-ai: a history processor that trims what the model sees each request.

``Agent(model, capabilities=[ProcessHistory(history_processor(max_tokens=...))])`` (pydantic-ai
2.x; ``history_processors=[...]`` on 1.x) keeps the first request's system prompt parts (the first
message is pinned), keeps each ``ToolCallPart`` with its ``ToolReturnPart``, never drops the
newest request, and stays within budget. The agent's own history is untouched; a manager follows
it between requests, counting only new messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .langgraph import ContextTracker

__all__ = ["history_processor", "process_history"]

_DEFAULTS: dict[str, Any] = {"strategy": "sliding_window", "provider": "openai"}


def history_processor(**options: Any) -> Callable[[list[Any]], list[Any]]:
    """``list[ModelMessage] -> list[ModelMessage]``; options are the manager's."""
    tracker = ContextTracker(pin_first=True, **{**_DEFAULTS, **options})

    def process(messages: list[Any]) -> list[Any]:
        return tracker.context(messages)

    process.tracker = tracker  # type: ignore[attr-defined]
    return process


def process_history(**options: Any) -> Any:
    """The pydantic-ai 2.x ``ProcessHistory`` capability wrapping :func:`history_processor`."""
    from pydantic_ai.capabilities import ProcessHistory

    return ProcessHistory(history_processor(**options))
