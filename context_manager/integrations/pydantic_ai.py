"""pydantic-ai: a capability that trims what the model is sent, never the agent's history.

``Agent(model, capabilities=[process_history(max_tokens=...)])`` trims each model request in the
capability's ``prepare_model_request`` hook, whose changes pydantic-ai sends without writing them
back: ``result.all_messages()`` keeps every message. The budget covers what the request carries:
the instructions (``instruction_parts``), the tool and output schemas and the messages. The
system prompt parts of the first request are always sent; the user prompt beside them is not
pinned (only the newest user turn is protected, as by the manager). Each ``ToolCallPart``
travels with its ``ToolReturnPart``; a newest tool exchange too large for the budget has its
results cut head+tail instead of failing the run.

``history_processor(**options)`` is the plain processor for pydantic-ai's ``ProcessHistory``,
which writes a processor's output back to the run's history: with it the stored history is
trimmed too, and instructions and tool schemas are not counted (leave room for them with
``reserve_tokens``). Prefer :func:`process_history`.

Depart from the architecture guide on one point, deliberately: a first request holding both
system prompt parts and a user prompt is fed to the manager as two copies (the system parts,
pinned; the rest), so the user prompt can be dropped while the system prompt stays; when both
copies are sent they are replaced by the original request again.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelRequest, SystemPromptPart

from ._tracker import MAX_CONVERSATIONS, ContextTracker, check_messages

__all__ = ["ContextManagerCapability", "history_processor", "process_history"]

_DEFAULTS: dict[str, Any] = {"strategy": "sliding_window", "provider": "openai"}


def _tool_definition(tool: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.parameters_json_schema,
        },
    }


def request_tools(parameters: Any) -> list[dict[str, Any]]:
    """OpenAI function definitions of the tools a request carries (function and output tools,
    and a native output schema)."""
    defs = getattr(parameters, "tool_defs", None)
    tools = list(defs.values()) if defs is not None else list(parameters.function_tools)
    out = [_tool_definition(t) for t in tools]
    schema = parameters.output_object if parameters.output_mode == "native" else None
    if schema is not None:
        name = schema.name or "final_result"
        parameters_schema = schema.json_schema
        out.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": schema.description or "",
                    "parameters": parameters_schema,
                },
            }
        )
    return out


class _Trimmer:
    """A tracker fed with the first request split in two (system parts pinned, the rest not)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.tracker = ContextTracker(**{**_DEFAULTS, **options})
        self._lock = threading.Lock()
        self._splits: OrderedDict[int, tuple[Any, Any, Any]] = OrderedDict()

    def _split(self, first: Any) -> tuple[Any, Any, Any] | None:
        """``(first, its system parts, the rest)`` as requests, or None when not mixed."""
        if not isinstance(first, ModelRequest):
            return None
        with self._lock:
            cached = self._splits.get(id(first))
            if cached is not None and cached[0] is first:
                self._splits.move_to_end(id(first))
                return cached
            system = [p for p in first.parts if isinstance(p, SystemPromptPart)]
            if not system or len(system) == len(first.parts):
                return None
            rest = [p for p in first.parts if not isinstance(p, SystemPromptPart)]
            split = (
                first,
                dataclasses.replace(first, parts=system),
                dataclasses.replace(first, parts=rest),
            )
            self._splits[id(first)] = split
            while len(self._splits) > MAX_CONVERSATIONS:
                self._splits.popitem(last=False)
            return split

    def __call__(
        self,
        messages: Sequence[Any],
        system: Any = None,
        extra_system: Sequence[Any] = (),
        tools: Sequence[Any] | None = None,
    ) -> list[Any]:
        check_messages(messages)
        split = self._split(messages[0]) if messages else None
        fed = [split[1], split[2], *messages[1:]] if split else messages
        out = self.tracker.context(fed, system=system, extra_system=extra_system, tools=tools)
        if split and len(out) > 1 and out[0] is split[1] and out[1] is split[2]:
            out[0:2] = [split[0]]  # both halves sent: send the request as it is
        return out


class ContextManagerCapability(AbstractCapability[Any]):
    """Trims each model request to the budget; the agent's history is left as it is.

    Options are the manager's (``max_tokens``, ``model``, ``counter``, ``strategy``,
    ``provider``, ``retention_ratio``, ...); defaults: a sliding window with OpenAI's rules.
    """

    def __init__(self, **options: Any) -> None:
        self._trimmer = _Trimmer(options)

    @property
    def tracker(self) -> ContextTracker:
        return self._trimmer.tracker

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built from Python options, not from an agent spec

    async def prepare_model_request(self, ctx: Any, request_context: Any) -> Any:
        parameters = request_context.model_request_parameters
        parts = [p.content for p in (parameters.instruction_parts or ())]
        extra = [{"role": "system", "content": text} for text in parts[1:]]
        request_context.messages = self._trimmer(
            request_context.messages,
            system=parts[0] if parts else None,
            extra_system=extra,
            tools=request_tools(parameters),
        )
        return request_context


def process_history(**options: Any) -> ContextManagerCapability:
    """The capability for ``Agent(capabilities=[...])``; options are the manager's."""
    return ContextManagerCapability(**options)


def history_processor(**options: Any) -> Callable[[list[Any]], list[Any]]:
    """``list[ModelMessage] -> list[ModelMessage]`` for ``ProcessHistory`` (which stores what it
    returns: the history is trimmed too); options are the manager's."""
    trimmer = _Trimmer(options)

    def process(messages: list[Any]) -> list[Any]:
        return trimmer(messages)

    process.tracker = trimmer.tracker  # type: ignore[attr-defined]
    return process
