"""Keep an LLM conversation inside a token budget.

Add messages (OpenAI dicts, Anthropic blocks, LangChain objects or :class:`Message`), each
counted once; ask for the context that fits. Tool calls and their results stay together, the
system prompt and pinned messages stay put, and the latest user message is always sent.
"""

from .counting import CharEstimator, TokenCounter, count_tokens, get_counter
from .errors import (
    CompactionError,
    ConfigurationError,
    ContextManagerError,
    ContextOverflowError,
    InvalidMessageError,
    StoreCorruptionError,
    TokenizerUnavailableError,
)
from .groups import repair
from .manager import ContextStats, MessageContextManager
from .messages import Image, Message, ToolCall, ToolResult, normalize
from .models import ModelInfo, get_model, register_model
from .strategies import FIFO, Priority, SlidingWindow, Strategy
from .trim import trim

__version__ = "0.1.0"

__all__ = [
    "FIFO",
    "CharEstimator",
    "CompactionError",
    "ConfigurationError",
    "ContextManagerError",
    "ContextOverflowError",
    "ContextStats",
    "Image",
    "InvalidMessageError",
    "Message",
    "MessageContextManager",
    "ModelInfo",
    "Priority",
    "SlidingWindow",
    "StoreCorruptionError",
    "Strategy",
    "TokenCounter",
    "TokenizerUnavailableError",
    "ToolCall",
    "ToolResult",
    "count_tokens",
    "get_counter",
    "get_model",
    "normalize",
    "register_model",
    "repair",
    "trim",
]
