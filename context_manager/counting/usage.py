"""Provider-reported token usage, read once for every caller (calibration, triggers, overflow).

OpenAI Chat reports ``prompt_tokens`` (cached tokens included, detailed in
``prompt_tokens_details.cached_tokens``) and ``completion_tokens``; the Responses API
``input_tokens`` / ``output_tokens`` with ``input_tokens_details.cached_tokens``; Anthropic
``input_tokens`` **excluding** ``cache_read_input_tokens`` and ``cache_creation_input_tokens``;
Gemini ``prompt_token_count`` / ``candidates_token_count`` / ``cached_content_token_count``.
:func:`read_usage` turns any of them (SDK object or dict) into one :class:`Usage`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._config import check_count
from ..errors import ConfigurationError
from ..messages.sdk import field

__all__ = ["Usage", "read_usage"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a provider billed for one request.

    ``input`` excludes cached tokens (``cache_read`` / ``cache_write`` hold those), so
    ``prompt_tokens`` = everything the prompt cost, comparable with our count of the context.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def prompt_tokens(self) -> int:
        return self.input + self.cache_read + self.cache_write


def _int(obj: Any, name: str) -> int:
    """A count the report gives (0 when it leaves the field out); anything else a provider
    never sends (NaN, a float, a bool, text) is refused, not stored as 0."""
    value = field(obj, name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(
            f"usage field {name!r} must be a token count (an int), got {value!r:.60}"
        )
    return check_count(f"usage field {name!r}", value)


def read_usage(usage: Any) -> Usage:
    """A :class:`Usage` from an int (prompt tokens), or any provider's usage object or dict.

    Raises :class:`ConfigurationError` when ``usage`` holds no recognisable prompt count.
    """
    if isinstance(usage, bool) or usage is None:
        raise ConfigurationError(f"usage must be an int or a usage object, got {usage!r}")
    if isinstance(usage, int):
        return Usage(input=check_count("prompt tokens", usage))
    if field(usage, "prompt_tokens") is not None:  # OpenAI Chat Completions
        details = field(usage, "prompt_tokens_details")
        cached = _int(details, "cached_tokens") if details is not None else 0
        total = _int(usage, "prompt_tokens")
        return Usage(max(total - cached, 0), _int(usage, "completion_tokens"), cached, 0)
    if field(usage, "input_tokens") is not None:
        details = field(usage, "input_tokens_details")
        if details is not None:  # OpenAI Responses: input_tokens include the cached ones
            cached = _int(details, "cached_tokens")
            total = _int(usage, "input_tokens")
            return Usage(max(total - cached, 0), _int(usage, "output_tokens"), cached, 0)
        return Usage(  # Anthropic: cache reads and writes are billed apart from input_tokens
            _int(usage, "input_tokens"),
            _int(usage, "output_tokens"),
            _int(usage, "cache_read_input_tokens"),
            _int(usage, "cache_creation_input_tokens"),
        )
    if field(usage, "prompt_token_count") is not None:  # Gemini
        cached = _int(usage, "cached_content_token_count")
        total = _int(usage, "prompt_token_count")
        return Usage(max(total - cached, 0), _int(usage, "candidates_token_count"), cached, 0)
    raise ConfigurationError(
        "usage needs prompt_tokens (OpenAI), input_tokens (Anthropic / Responses) or "
        f"prompt_token_count (Gemini), or an int; got {usage!r}"
    )
