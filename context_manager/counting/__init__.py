"""Token counters behind one interface (see ``base.TokenCounter``).

Loading a tokenizer, looking one up by name and counting are kept apart, as tiktoken does:
``tiktoken_loader`` loads and verifies rank files, ``resolve.get_counter`` only resolves a spec to
an instance, and counters never load anything on the hot path. Nothing here is shared across a
process that the caller did not create: :class:`MessageCountCache` is an object its owner passes
to ``trim(..., cache=...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .._config import check_tool_nesting
from .._js import utf16_len
from ..messages import message_list, normalize
from .base import TokenCounter
from .estimate import CharEstimator, message_chars
from .estimate_safe import SafeEstimator, estimate_tokens
from .message_cache import MessageCountCache
from .resolve import counter_for_model, get_counter

__all__ = [
    "CharEstimator",
    "MessageCountCache",
    "SafeEstimator",
    "TokenCounter",
    "count_tokens",
    "counter_for_model",
    "estimate_tokens",
    "get_counter",
    "message_chars",
    "utf16_len",
]


def count_tokens(
    messages: Iterable[Any],
    model: str | None = None,
    tools: Sequence[Any] | None = None,
    *,
    counter: str | TokenCounter | None = None,
) -> int:
    """The whole prompt as ``model``'s provider would bill it: messages, priming and tools.

    Accepts every message shape ``messages.normalize`` does (OpenAI / Anthropic dicts, LangChain
    objects, :class:`~context_manager.messages.Message`). OpenAI models count exactly with
    tiktoken; models without a public tokenizer use the safe estimate, and so does no model at
    all (the default, as for the manager and ``trim()``). ``counter`` overrides the model's
    counter (any :func:`get_counter` spec, e.g. ``"chars"`` or ``"tiktoken"``).
    """
    resolved = get_counter(counter, model=model)
    given = message_list(messages)
    normalized = [normalize(message, index) for index, message in enumerate(given)]
    if isinstance(tools, Sequence) and not isinstance(tools, str | bytes):
        check_tool_nesting(tools)  # the manager's check (a schema that contains itself...)
    return resolved.count_prompt(normalized, tools)
