"""OpenAI Agents SDK: a ``Session`` that keeps everything and sends what fits.

``ContextManagerSession`` implements the SDK's ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``). Items are Responses API input items; the manager
groups parallel ``function_call`` items with their outputs and keeps a ``reasoning`` item with the
calls after it, so ``get_items()`` returns a provider-valid view within the budget. With ``path``
the session is persisted (write-ahead, lossless) and reopened by the same id.

``trimming_input_filter(**options)`` is a ``RunConfig(call_model_input_filter=...)`` for users who
keep their own session store: it trims each model call's input the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..manager import MessageContextManager
from ..oneshot import trim
from ..providers import validate

__all__ = ["ContextManagerSession", "trimming_input_filter"]

_DEFAULTS: dict[str, Any] = {"strategy": "sliding_window", "provider": "openai-responses"}


class ContextManagerSession:
    """An Agents SDK session backed by a :class:`MessageContextManager`.

    ``directory`` (optional) holds one write-ahead log per session id
    (``<directory>/<session_id>.jsonl``); without it the session lives in memory. Other keyword
    options go to the manager (defaults: ``strategy="sliding_window"``,
    ``provider="openai-responses"``); a sliding window keeps the whole history, so nothing is lost
    to trimming and ``pop_item`` can always undo.
    """

    session_settings: Any = None

    def __init__(
        self, session_id: str, *, directory: str | os.PathLike[str] | None = None, **options: Any
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ConfigurationError(f"session_id must be a non-empty string, got {session_id!r}")
        self.session_id = session_id
        self._options = {**_DEFAULTS, **options}
        if directory is None:
            self.manager = MessageContextManager(**self._options)
        else:
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)
            path = Path(directory) / f"{name}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            self.manager = MessageContextManager.open(path, **self._options)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The trimmed view (within budget, calls with their outputs); ``limit`` caps the
        number of items, newest first, without splitting a call from its output."""
        context = self.manager.get_context()
        if limit is None or limit >= len(context):
            return context
        if limit <= 0:
            return []
        start = len(context) - limit
        # never start on an output whose call is cut off, nor inside a reasoning+calls group
        while start < len(context) and any(
            p.rule == "tool-pairing" for p in validate(context[start:], "openai-responses")
        ):
            start += 1
        return context[start:]

    async def add_items(self, items: list[Any]) -> None:
        """Store new items (each written ahead to the log when the session is persistent)."""
        with self.manager.locked():
            for item in items:
                self.manager.add(item)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item (None when empty).

        The manager's history is append-only, so this rebuilds it without the last item (the
        log rotates; the old generation stays on disk): O(history), for the rare undo.
        """
        with self.manager.locked():
            items = self.manager.messages
            if not items:
                return None
            self.manager.clear(keep_system_prompt=True)
            self.manager.extend(items[:-1])
            return items[-1]

    async def clear_session(self) -> None:
        self.manager.clear(keep_system_prompt=True)


def trimming_input_filter(**options: Any) -> Callable[[Any], Any]:
    """A ``call_model_input_filter``: trims ``model_data.input`` to the budget each call.

    Options are ``trim()``'s (``max_tokens`` is required; ``provider`` defaults to
    ``"openai-responses"``).
    """
    if "max_tokens" not in options:
        raise ConfigurationError("trimming_input_filter needs max_tokens=...")
    options = {"provider": "openai-responses", **options}

    def call_model_input_filter(data: Any) -> Any:
        from agents.run import ModelInputData

        model_data = data.model_data
        kept = trim(list(model_data.input), **options)
        return ModelInputData(input=kept, instructions=model_data.instructions)

    return call_model_input_filter
