"""Keep an LLM conversation inside a token budget.

Add messages (OpenAI dicts, Anthropic blocks, LangChain objects or :class:`Message`), each
counted once; ask for the context that fits. Tool calls and their results stay together, the
system prompt and pinned messages stay put, and the latest user message is always sent.
"""

from .counting import CharEstimator, TokenCounter, get_counter
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
    "Priority",
    "SlidingWindow",
    "StoreCorruptionError",
    "Strategy",
    "TokenCounter",
    "TokenizerUnavailableError",
    "ToolCall",
    "ToolResult",
    "get_counter",
    "normalize",
    "repair",
    "trim",
]
