"""OpenAI Agents SDK filters: trim each model call's input, project a hand-off's conversation.

- ``trimming_input_filter(**options)``: a ``RunConfig(call_model_input_filter=...)``. Each call
  counts what the model receives: the agent's instructions, its tool and hand-off schemas and the
  input items; only the items are trimmed (calls kept with their outputs, a reasoning item with
  its calls, calls an interrupt left unanswered closed, an oversized newest output cut to fit).
  The SDK rebuilds its input items on every call; items equal to those of the previous call are
  not counted again; one manager per conversation (its first item), in a small LRU.
- ``handoff_input_filter(**options)``: a ``handoff(agent, input_filter=...)`` (or
  ``RunConfig(handoff_input_filter=...)``) that gives the receiving agent the conversation
  trimmed to its budget, counting that agent's instructions and tool schemas. Like the SDK's own
  ``nest_handoff_history``, it hands the projection over as the input history and leaves
  ``new_items`` whole, so a session still stores every item.

Options are the manager's (``max_tokens`` or ``model`` is required; ``counter``, ``strategy``,
``provider`` (default ``"openai-responses"``), ``reserve_tokens``, ...). The SDK is imported
only when a filter runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ConfigurationError
from ..manager import MessageContextManager
from ._tracker import ContextTracker

__all__ = ["agent_tool_definitions", "handoff_input_filter", "trimming_input_filter"]

_DEFAULTS: dict[str, Any] = {"strategy": "sliding_window", "provider": "openai-responses"}


def _options(options: dict[str, Any], name: str) -> dict[str, Any]:
    if "max_tokens" not in options and "model" not in options:
        raise ConfigurationError(f"{name} needs max_tokens=... (or model=...)")
    return {**_DEFAULTS, **options}


def _function(name: str, description: str | None, parameters: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description or "", "parameters": parameters},
    }


def _wrapper(context: Any) -> Any:
    from agents import RunContextWrapper

    return context if isinstance(context, RunContextWrapper) else RunContextWrapper(context)


async def agent_tool_definitions(agent: Any, context: Any = None) -> list[dict[str, Any]]:
    """The function definitions a model call of ``agent`` carries: its enabled tools with a
    JSON schema (hosted tools have none; their cost is the provider's) and its hand-offs."""
    from agents import Handoff, handoff

    wrapper = _wrapper(context)
    defs = []
    for tool in await agent.get_all_tools(wrapper):
        schema = getattr(tool, "params_json_schema", None)
        if schema is not None:
            defs.append(_function(tool.name, getattr(tool, "description", ""), schema))
    for target in agent.handoffs:
        h = target if isinstance(target, Handoff) else handoff(target)
        defs.append(_function(h.tool_name, h.tool_description, h.input_json_schema))
    return defs


def trimming_input_filter(**options: Any) -> Callable[[Any], Any]:
    """A ``call_model_input_filter`` trimming ``model_data.input`` to the budget each call."""
    tracker = ContextTracker(**_options(options, "trimming_input_filter"))

    async def call_model_input_filter(data: Any) -> Any:
        from agents.run import ModelInputData

        model_data = data.model_data
        tools = await agent_tool_definitions(data.agent, data.context)
        kept = tracker.context(
            list(model_data.input), system=model_data.instructions or None, tools=tools
        )
        return ModelInputData(input=kept, instructions=model_data.instructions)

    call_model_input_filter.tracker = tracker  # type: ignore[attr-defined]
    return call_model_input_filter


def _input_items(items: Any) -> list[Any]:
    """Run items as the model input items the SDK sends for them (approvals are not sent)."""
    out = []
    for item in items:
        if getattr(item, "type", None) == "tool_approval_item":
            continue
        to_input = getattr(item, "to_input_item", None)
        out.append(to_input() if callable(to_input) else item.raw_item)
    return out


def handoff_input_filter(**options: Any) -> Callable[[Any], Any]:
    """A hand-off ``input_filter``: the conversation so far, trimmed for the receiving agent."""
    options = _options(options, "handoff_input_filter")
    MessageContextManager(**options)  # refuse bad options now, not at the first hand-off

    async def input_filter(data: Any) -> Any:
        from agents.items import HandoffOutputItem

        history = data.input_history
        items = [{"role": "user", "content": history}] if isinstance(history, str) else []
        if not isinstance(history, str):
            items.extend(history)
        items.extend(_input_items(data.pre_handoff_items))
        given = data.input_items if data.input_items is not None else data.new_items
        items.extend(_input_items(given))
        target = next(
            (i.target_agent for i in reversed(data.new_items) if isinstance(i, HandoffOutputItem)),
            None,
        )
        instructions, tools = None, None
        if target is not None:
            wrapper = data.run_context if data.run_context is not None else _wrapper(None)
            instructions = await target.get_system_prompt(wrapper)
            tools = await agent_tool_definitions(target, wrapper)
        tracker = ContextTracker(**options)
        kept = tracker.context(items, system=instructions or None, tools=tools)
        return data.clone(input_history=tuple(kept), pre_handoff_items=(), input_items=())

    return input_filter
