"""LangGraph / LangChain: a ``pre_model_hook`` that trims what the model sees each step.

``create_react_agent(model, tools, pre_model_hook=pre_model_hook(max_tokens=...))`` sends the
model a context that keeps the system message first and the newest message last, starts on a
human message, never orphans a ``ToolMessage`` and stays within budget, while the graph state
keeps the full history (the hook returns ``llm_input_messages``, which changes only the model's
input). A manager is kept in step with the state between steps: messages already seen (by id)
are not recounted, so a step costs the new messages plus the trim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError
from ..manager import MessageContextManager

__all__ = ["ContextTracker", "pre_model_hook"]

_DEFAULTS: dict[str, Any] = {"strategy": "sliding_window", "provider": "anthropic"}


def _key(message: Any) -> Any:
    given = getattr(message, "id", None)
    return given if given is not None else id(message)


class ContextTracker:
    """A manager that follows a growing message list, adding only what is new.

    Messages are recognised by ``id`` (LangGraph gives every message one) or else by identity;
    if the list was rewritten (a removed or replaced message), the manager is rebuilt.
    ``pin_first`` pins the first message (a framework's request carrying the system prompt).
    """

    def __init__(self, *, pin_first: bool = False, **options: Any) -> None:
        self.pin_first = pin_first
        self.options = {**_DEFAULTS, **options}
        self.manager = MessageContextManager(**self.options)
        self._keys: list[Any] = []
        self.rebuilds = 0

    def context(self, messages: Sequence[Any]) -> list[Any]:
        """The messages to send for this state (the caller's objects, trimmed)."""
        if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
            raise ConfigurationError("the state's messages must be a list of messages")
        keys = self._keys
        n = len(keys)
        with self.manager.locked():
            if len(messages) < n or any(_key(messages[i]) != keys[i] for i in range(n - 1, -1, -1)):
                self.manager = MessageContextManager(**self.options)  # history was rewritten
                self._keys = keys = []
                self.rebuilds += 1
                n = 0
            for i in range(n, len(messages)):
                message = messages[i]
                self.manager.add(message, pinned=self.pin_first and i == 0)
                keys.append(_key(message))
            return self.manager.get_context()


def pre_model_hook(**options: Any) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A ``pre_model_hook`` for ``create_react_agent``: ``state -> {"llm_input_messages": ...}``.

    Options are the manager's (``max_tokens``, ``model``, ``strategy``, ``provider``,
    ``retention_ratio``, ...); defaults: a sliding window with Anthropic's rules, which also
    start the context on a human message.
    """
    tracker = ContextTracker(**options)

    def hook(state: Mapping[str, Any]) -> dict[str, Any]:
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        return {"llm_input_messages": tracker.context(messages)}

    hook.tracker = tracker  # type: ignore[attr-defined]
    return hook
