"""Keep an LLM conversation inside a token budget.

Add messages (OpenAI dicts, Anthropic blocks, LangChain objects or :class:`Message`), each
counted once; ask for the context that fits. Tool calls and their results stay together, the
system prompt and pinned messages stay put, and the latest user message is always sent.
"""

from .budget.strategies import FIFO, Priority, SlidingWindow, Strategy
from .compaction import (
    AnthropicSummarizer,
    CompactionEntry,
    CompactionTriggers,
    ExtractiveSummarizer,
    OpenAISummarizer,
    SimpleCompaction,
    TokenBudgetCompaction,
    add_compaction_listener,
    asend_with_recovery,
    is_context_overflow,
    send_with_recovery,
)
from .counting import CharEstimator, TokenCounter, count_tokens, get_counter
from .errors import (
    CheckpointNotFoundError,
    CompactionError,
    CompactionInProgressError,
    ConfigurationError,
    ContextManagerError,
    ContextOverflowError,
    InvalidMessageError,
    StoreCorruptionError,
    TokenizerUnavailableError,
)
from .manager import MessageContextManager
from .messages import Image, Message, ToolCall, ToolResult, normalize
from .messages.groups import repair
from .models import ModelInfo, get_model, register_model
from .oneshot import trim
from .stats import ContextStats
from .store import JsonlLog, ResetPolicy, SessionIndex

__version__ = "0.1.0"

__all__ = [
    "FIFO",
    "AnthropicSummarizer",
    "CharEstimator",
    "CheckpointNotFoundError",
    "CompactionEntry",
    "CompactionError",
    "CompactionInProgressError",
    "CompactionTriggers",
    "ConfigurationError",
    "ContextManagerError",
    "ContextOverflowError",
    "ContextStats",
    "ExtractiveSummarizer",
    "Image",
    "InvalidMessageError",
    "JsonlLog",
    "Message",
    "MessageContextManager",
    "ModelInfo",
    "OpenAISummarizer",
    "Priority",
    "ResetPolicy",
    "SessionIndex",
    "SimpleCompaction",
    "SlidingWindow",
    "StoreCorruptionError",
    "Strategy",
    "TokenBudgetCompaction",
    "TokenCounter",
    "TokenizerUnavailableError",
    "ToolCall",
    "ToolResult",
    "add_compaction_listener",
    "asend_with_recovery",
    "count_tokens",
    "get_counter",
    "get_model",
    "is_context_overflow",
    "normalize",
    "register_model",
    "repair",
    "send_with_recovery",
    "trim",
]
