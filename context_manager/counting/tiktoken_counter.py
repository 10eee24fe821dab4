"""Exact OpenAI chat accounting with tiktoken.

Two framings are offered because the references disagree on one point, ``name``:

* ``chat_format="openai"`` (default) — the OpenAI cookbook formula, which the cookbook checks
  against the API's ``prompt_tokens``: each message costs 3 + tokens(role) + tokens(content), a
  ``name`` adds tokens(name) + 1, and the reply is primed with 3 (``prompt_overhead``). npm
  ``gpt-tokenizer``'s ``countChatCompletionTokens`` computes the same and is our fixture proof.
* ``chat_format="chatml"`` — what ``gpt-tokenizer``'s ``encodeChat`` encodes:
  ``<|im_start|>{name or role}<|im_sep|>{content}<|im_end|>``, i.e. a ``name`` *replaces* the
  role (gpt-3.5 uses newlines as separators, one more token per message). Use it to agree with
  code built on ``encodeChat``.

Beyond plain text (counted the same in both framings): each assistant tool call costs
tokens(name) + tokens(arguments) + 3, the rule ``gpt-tokenizer`` applies to a ``function_call``;
a tool result embedded in a message (Anthropic shape) costs what the equivalent OpenAI ``tool``
message would; images follow OpenAI's tile formula (see ``openai_formula``); reasoning text and
unmodelled parts are counted as text, so they are never free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._config import check_int
from ..errors import ConfigurationError
from ..messages import Message
from ..models import find_model
from .base import TokenCounter
from .cache import CacheInfo, TextCountCache
from .chunked import chunked_len
from .media import openai_media
from .openai_formula import ImageCosts, tool_constants_for, tool_definition_tokens
from .tiktoken_loader import load_encoding

CHAT_FORMATS = ("openai", "chatml")
DEFAULT_CACHE_SIZE = 4096
#: Tokens per message / per ``name`` / per tool call beyond their texts.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL = 3
#: ``<|im_start|>assistant<|im_sep|>`` (or ``<|start|>assistant<|message|>``).
REPLY_PRIMING = 3


def utf8_bound(text: str) -> int:
    """An upper bound on the tokens of ``text`` in any tiktoken encoding: its UTF-8 bytes.

    tiktoken's encodings are byte-level BPE: every token stands for one or more bytes of the
    text, so a text cannot take more tokens than it has bytes (chunking cuts the text, never a
    byte). A lone surrogate, which tiktoken replaces with U+FFFD (3 bytes), is measured as the 3
    bytes ``surrogatepass`` gives it; an escaped pair becomes one 4-byte character there, below
    its 6 bytes here. ASCII, the common case, is measured without encoding.
    """
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


#: What :func:`utf8_bound` assumes of a counter: a subclass overriding one of these gets no bound.
_BOUNDED = ("count_message", "_message", "count_text", "_encode_len", "_encode_piece")


def _encoding_for(model: str | None, encoding: str | None) -> str:
    if encoding is not None:
        return encoding
    name = model or "gpt-4o"
    info = find_model(name)
    if info is not None and info.encoding is not None:
        return info.encoding
    try:
        import tiktoken.model

        return tiktoken.model.encoding_name_for_model(name)
    except (ImportError, KeyError):
        pass
    raise ConfigurationError(
        f"model {name!r} has no known tiktoken encoding: pass encoding='o200k_base' (or "
        "'cl100k_base'), or count it with get_counter('model', model=...) for an estimate"
    )


class TiktokenCounter(TokenCounter):
    """OpenAI chat token counts with tiktoken; identical texts are encoded once (LRU)."""

    exact = True

    def __init__(
        self,
        model: str | None = None,
        *,
        encoding: str | None = None,
        chat_format: str = "openai",
        cache_size: int = DEFAULT_CACHE_SIZE,
        image_costs: ImageCosts | None = None,
    ) -> None:
        if chat_format not in CHAT_FORMATS:
            raise ConfigurationError(
                f"chat_format={chat_format!r}: use one of {', '.join(CHAT_FORMATS)}"
            )
        check_int("cache_size", cache_size)
        self.encoding_name = _encoding_for(model, encoding)
        self.model = model
        self.chat_format = chat_format
        self.encoding = load_encoding(self.encoding_name)
        self.name = f"tiktoken:{self.encoding_name}"
        self.prompt_overhead = REPLY_PRIMING
        self.tool_constants = tool_constants_for(self.encoding_name)
        #: Images (tiles or patches by model), PDFs and audio as OpenAI documents them.
        self.media = openai_media(model, image_costs)
        self.image_costs = self.media.tiles
        # gpt-3.5's ChatML puts a newline after the role and after each message.
        gpt35 = bool(model) and str(model).lower().startswith("gpt-3.5")
        self._chatml_frame = 4 if gpt35 else 3
        self._count_cached = TextCountCache(self._encode_len, cache_size)
        self._role_tokens = {
            role: self._encode_len(role)
            for role in ("system", "developer", "user", "assistant", "tool")
        }

    def _encode_len(self, text: str) -> int:
        return chunked_len(self._encode_piece, text, self.name)

    def _encode_piece(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` with special-token strings read as plain text."""
        return self._count_cached(text) if text else 0

    def cache_info(self) -> CacheInfo:
        """Statistics (hits, misses, maxsize, currsize) of the text cache."""
        return self._count_cached.info()

    def count_message(self, message: Message) -> int:
        return self._message(message, self._count_cached)

    def _count_settings(self) -> tuple[object, ...]:
        return (self.encoding_name, self.chat_format, self._chatml_frame, self.media)

    def message_bound(self) -> Callable[[Message], int] | None:
        """The message's framing plus the UTF-8 bytes of its texts (see :func:`utf8_bound`).

        None for a subclass that changes how texts or messages are counted: the bound is proven
        for this class's arithmetic over tiktoken's byte-level encodings only.
        """
        cls = type(self)
        if any(getattr(cls, name) is not getattr(TiktokenCounter, name) for name in _BOUNDED):
            return None
        return self._bound

    def _bound(self, message: Message) -> int:
        return self._message(message, utf8_bound)

    def _message(self, message: Message, count: Callable[[str], int]) -> int:
        """The message's cost with ``count`` for its texts (the exact one, or the bound)."""
        if self.chat_format == "openai":
            tokens = TOKENS_PER_MESSAGE + self._role_tokens[message.role]
            if message.name:
                tokens += count(message.name) + TOKENS_PER_NAME
        else:
            tokens = self._chatml_frame + (
                count(message.name) if message.name else self._role_tokens[message.role]
            )
        if message.text:
            tokens += count(message.text)
        if message.tool_calls or message.tool_results or message.images or message.media:
            for call in message.tool_calls:
                tokens += TOKENS_PER_TOOL_CALL + count(call.name) + count(call.arguments)
            for result in message.tool_results:
                tokens += TOKENS_PER_MESSAGE + self._role_tokens["tool"] + count(result.text)
            if message.images or message.media:
                tokens += self.media.cost(message.images, message.media)
        if message.thinking:
            tokens += count(message.thinking)
        if message.other:
            tokens += count(message.other)
        return tokens

    def count_tools(self, tools: Sequence[Any]) -> int:
        """Tool definitions, with the cookbook's per-function/per-property/enum constants."""
        return tool_definition_tokens(tools, self.count_text, self.tool_constants)
