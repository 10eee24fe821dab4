"""Keep an LLM conversation inside a token budget.

Add messages (OpenAI, Anthropic, Gemini, LangChain, pydantic-ai or SDK objects), each counted
once; ask for the context that fits. Tool calls and their results stay together, the system
prompt and pinned messages stay put, and the latest user turn is always sent.

This module only re-exports the core names, and loads each on first use so that
``import context_manager`` stays cheap. Compaction, stores, interop and integrations live in
their subpackages (``context_manager.compaction``, ``.store``, ``.interop``, ``.integrations``)
and are imported from there only: a name outside ``__all__`` is not an attribute of this module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The one version string: pyproject.toml reads it (``[tool.setuptools.dynamic]``).
__version__ = "0.2.0"

# name -> module that defines it (relative to this package)
_EXPORTS = {
    "MessageContextManager": ".manager",
    "ContextStats": ".stats",
    "Message": ".messages",
    "normalize": ".messages",
    "repair": ".messages.groups",
    "trim": ".oneshot",
    "ToolResultPruning": ".compaction.pruning",
    "count_tokens": ".counting",
    "get_counter": ".counting",
    "TokenCounter": ".counting",
    "CharEstimator": ".counting",
    "Strategy": ".budget.strategies",
    "FIFO": ".budget.strategies",
    "SlidingWindow": ".budget.strategies",
    "Priority": ".budget.strategies",
    "ModelInfo": ".models",
    "get_model": ".models",
    "register_model": ".models",
    "ContextManagerError": ".errors",
    "ConfigurationError": ".errors",
    "ContextOverflowError": ".errors",
    "InvalidMessageError": ".errors",
    "StoreError": ".errors",
    "TokenizerUnavailableError": ".errors",
}

__all__ = [
    "FIFO",
    "CharEstimator",
    "ConfigurationError",
    "ContextManagerError",
    "ContextOverflowError",
    "ContextStats",
    "InvalidMessageError",
    "Message",
    "MessageContextManager",
    "ModelInfo",
    "Priority",
    "SlidingWindow",
    "StoreError",
    "Strategy",
    "TokenCounter",
    "TokenizerUnavailableError",
    "ToolResultPruning",
    "count_tokens",
    "get_counter",
    "get_model",
    "normalize",
    "register_model",
    "repair",
    "trim",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'context_manager' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from .budget.strategies import FIFO, Priority, SlidingWindow, Strategy
    from .compaction.pruning import ToolResultPruning
    from .counting import CharEstimator, TokenCounter, count_tokens, get_counter
    from .errors import (
        ConfigurationError,
        ContextManagerError,
        ContextOverflowError,
        InvalidMessageError,
        StoreError,
        TokenizerUnavailableError,
    )
    from .manager import MessageContextManager
    from .messages import Message, normalize
    from .messages.groups import repair
    from .models import ModelInfo, get_model, register_model
    from .oneshot import trim
    from .stats import ContextStats
