"""LangGraph / LangChain: a ``pre_model_hook`` that trims what the model sees each step.

``pre_model_hook(tools=tools, prompt=prompt, max_tokens=...)`` returns ``state ->
{"llm_input_messages": [...]}``: the model sees a context that keeps a leading system message,
starts on a human message, ends with the newest message, never orphans a ``ToolMessage`` (a call
an interrupt left unanswered, or still open when the model is called, gets a synthetic
``ToolMessage``; a state ``RemoveMessage`` broke is mended, not refused), cuts an oversized
newest tool result head+tail instead of failing, and fits the budget together with ``prompt``
and the tool schemas, which the agent sends apart from the messages. The graph state keeps the
whole history.

Use it in your own ``StateGraph`` node (``hook(state)["llm_input_messages"]``, then call the model
with ``[SystemMessage(prompt), *those]``), or as ``create_react_agent(..., pre_model_hook=hook)``
(deprecated since LangGraph 1.0 in favour of LangChain's ``create_agent``, for which
:class:`~.langchain_agents.ContextManagerMiddleware` does the same).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError
from ._tracker import ContextTracker

__all__ = ["ContextTracker", "pre_model_hook", "tool_definitions"]

_DEFAULTS: dict[str, Any] = {"strategy": "sliding_window", "provider": "anthropic"}


def tool_definitions(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """OpenAI function definitions of LangChain tools (``BaseTool``, functions, schemas, dicts),
    as ``bind_tools`` sends them; provider built-ins without a function schema are left out
    (their cost is the provider's)."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out = []
    for tool in tools:
        if isinstance(tool, Mapping) and "function" not in tool and "name" not in tool:
            continue  # a provider built-in tool such as {"type": "web_search"}
        try:
            out.append(convert_to_openai_tool(tool))
        except (ValueError, TypeError) as exc:  # LangChain's "unsupported function" and kin
            raise ConfigurationError(f"a tool has no function schema: {exc}") from None
    return out


def pre_model_hook(
    *, tools: Sequence[Any] | None = None, prompt: Any = None, **options: Any
) -> Callable[[Any], dict[str, Any]]:
    """A pre-model hook: ``state -> {"llm_input_messages": ...}``.

    ``tools``: the tools the model is bound to (counted as their schemas); ``prompt``: the
    system prompt the agent adds before the messages (a text or a ``SystemMessage``; counted, not
    returned). Other options are the manager's (``max_tokens``, ``model``, ``counter``,
    ``strategy``, ``provider``, ``retention_ratio``, ...); defaults: a sliding window with
    Anthropic's rules, which also start the context on a human message.
    """
    if prompt is not None and not isinstance(prompt, str) and not hasattr(prompt, "content"):
        raise ConfigurationError(
            "prompt must be a text or a SystemMessage (a callable prompt cannot be counted "
            "ahead: trim in your own node and count what it returns)"
        )
    definitions = tool_definitions(tools) if tools else None
    tracker = ContextTracker(**{**_DEFAULTS, **options})

    def hook(state: Any) -> dict[str, Any]:
        messages = state.get("messages") if isinstance(state, Mapping) else None
        if not isinstance(state, Mapping):
            messages = getattr(state, "messages", None)
        if messages is None:
            raise ConfigurationError("the graph state has no 'messages' (a MessagesState)")
        sent = tracker.context(messages, system=prompt, tools=definitions)
        return {"llm_input_messages": sent}

    hook.tracker = tracker  # type: ignore[attr-defined]
    return hook
