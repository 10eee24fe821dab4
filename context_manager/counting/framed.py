"""Shared arithmetic for real-tokenizer counters whose chat framing is a fixed cost per message.

A subclass supplies ``_encode_len(text)``; this class adds the bounded LRU keyed by text (so a
repeated system prompt or tool output is tokenized once) and charges a message as its framing
(``message_overhead``) plus the tokens of every text it carries: content, name, tool calls (name +
arguments + ``tool_call_overhead``), embedded tool results (each framed like a message), reasoning
text, unmodelled parts, and ``image_tokens`` per image.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable

from .._config import check_int
from ..messages import Message
from .base import TokenCounter
from .cache import CacheInfo, TextCountCache
from .media import MediaRules

DEFAULT_CACHE_SIZE = 4096


class FramedCounter(TokenCounter):
    """A text tokenizer plus per-message framing constants."""

    exact = True

    def __init__(
        self,
        *,
        message_overhead: int = 3,
        prompt_overhead: int = 3,
        tool_call_overhead: int = 3,
        image_tokens: int = 765,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        for name, value in (
            ("message_overhead", message_overhead),
            ("prompt_overhead", prompt_overhead),
            ("tool_call_overhead", tool_call_overhead),
            ("image_tokens", image_tokens),
            ("cache_size", cache_size),
        ):
            check_int(name, value)
        self.message_overhead = message_overhead
        self.prompt_overhead = prompt_overhead
        self.tool_call_overhead = tool_call_overhead
        self.image_tokens = image_tokens
        #: Images cost ``image_tokens`` whatever their size; documents and audio the defaults.
        self.media = MediaRules("framed", unknown_image=image_tokens)
        self._count_cached = TextCountCache(self._encode_len, cache_size)

    @abstractmethod
    def _encode_len(self, text: str) -> int:
        """Token count of ``text``, uncached, without the tokenizer's BOS/EOS additions."""

    def count_text(self, text: str) -> int:
        return self._count_cached(text) if text else 0

    def cache_info(self) -> CacheInfo:
        """Statistics (hits, misses, maxsize, currsize) of the text cache."""
        return self._count_cached.info()

    def count_message(self, message: Message) -> int:
        return framed_tokens(
            message, self.count_text, self.message_overhead, self.tool_call_overhead, self.media
        )


def framed_tokens(
    message: Message,
    count: Callable[[str], int],
    message_overhead: int,
    tool_call_overhead: int,
    media: MediaRules,
) -> int:
    """A message as its framing plus ``count`` of every text it carries (see the module doc);
    shared by the tokenizer counters and the safe estimate, which differ only in ``count``."""
    tokens = message_overhead + count(message.text)
    if message.name:
        tokens += count(message.name)
    for call in message.tool_calls:
        tokens += tool_call_overhead + count(call.name) + count(call.arguments)
    for result in message.tool_results:
        tokens += message_overhead + count(result.text)
    if message.thinking:
        tokens += count(message.thinking)
    if message.other:
        tokens += count(message.other)
    if message.images or message.media:
        tokens += media.cost(message.images, message.media)
    return tokens
