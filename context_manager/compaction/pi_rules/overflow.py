"""Pi's context-overflow detection (``isContextOverflow``): provider error texts and usage."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ..._js import js_regex, js_string, js_truthy
from ...errors import InvalidMessageError
from ._shapes import PiMessage

OVERFLOW_PATTERN_SOURCES: tuple[tuple[str, str], ...] = (
    ("prompt is too long", "i"),  # Anthropic
    ("request_too_large", "i"),  # Anthropic HTTP 413
    ("input is too long for requested model", "i"),  # Amazon Bedrock
    ("exceeds the context window", "i"),  # OpenAI
    ("input token count.*exceeds the maximum", "i"),  # Google Gemini
    ("maximum prompt length is \\d+", "i"),  # xAI
    ("reduce the length of the messages", "i"),  # Groq
    ("maximum context length is \\d+ tokens", "i"),  # OpenRouter
    ("exceeds the limit of \\d+", "i"),  # GitHub Copilot
    ("exceeds the available context size", "i"),  # llama.cpp
    ("greater than the context length", "i"),  # LM Studio
    ("context window exceeds limit", "i"),  # MiniMax
    ("exceeded model token limit", "i"),  # Kimi For Coding
    ("too large for model with \\d+ maximum context length", "i"),  # Mistral
    ("model_context_window_exceeded", "i"),  # z.ai
    ("prompt too long; exceeded (?:max )?context length", "i"),  # Ollama
    ("context[_ ]length[_ ]exceeded", "i"),  # generic
    ("too many tokens", "i"),  # generic
    ("token limit exceeded", "i"),  # generic
    ("^4(?:00|13)\\s*(?:status code)?\\s*\\(no body\\)", "i"),  # Cerebras
)
"""Pi's provider error patterns as (JS source, JS flags), in Pi's order."""
_NON_OVERFLOW_PATTERN_SOURCES: tuple[tuple[str, str], ...] = (
    ("^(Throttling error|Service unavailable):", "i"),  # AWS Bedrock
    ("rate limit", "i"),
    ("too many requests", "i"),
)
_OVERFLOW = tuple(js_regex(s, f) for s, f in OVERFLOW_PATTERN_SOURCES)
_NON_OVERFLOW = tuple(js_regex(s, f) for s, f in _NON_OVERFLOW_PATTERN_SOURCES)


def _linear(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """The same matches as ``pattern`` in time linear in the text (error text is untrusted).

    Two of Pi's patterns backtrack quadratically under Python's engine:

    - ``^4(?:00|13)\\s*(?:status code)?\\s*\\(no body\\)`` on ``"400" + spaces``: each ``\\s*``
      hands whitespace to the other. Both runs are followed by something that cannot start with
      whitespace (``s`` or ``(``), so giving whitespace back never helps: possessive ``*+`` is
      exact.
    - ``A.*B`` (``A`` = "input token count") retries ``.*B`` from every ``A`` on a line. A later
      ``A`` ends after the first, so some ``A`` on a line is followed by ``B`` iff the first one
      is: the rewrite tries only the first ``A`` of each line (atomic scan up to it).

    tests/compaction/test_linear_text.py checks both against the faithful translation.
    """
    source = pattern.pattern
    if source.startswith("^4(?:00|13)"):
        assert source.count("]*") == 2
        return re.compile(source.replace("]*", "]*+"), pattern.flags)
    dot = "[^\\n\\r\\u2028\\u2029]"
    head, sep, tail = source.partition(dot + "*")
    if sep and dot not in head + tail:
        line_start = "(?:^|(?<=[\\n\\r\\u2028\\u2029]))"
        rewritten = f"{line_start}(?>(?:(?!{head}){dot})*){head}{dot}*{tail}"
        return re.compile(rewritten, pattern.flags)
    return pattern


_OVERFLOW_LINEAR = tuple(_linear(p) for p in _OVERFLOW)


def get_overflow_patterns() -> list[re.Pattern[str]]:
    """Compiled equivalents of Pi's ``getOverflowPatterns()`` (JS regex semantics kept)."""
    return list(_OVERFLOW)


def _is_zero(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def is_context_overflow(message: PiMessage, context_window: float | None = None) -> bool:
    """Pi's ``isContextOverflow`` for an assistant reply.

    True when (1) it is an error whose text matches a provider overflow pattern and no
    rate-limit / throttling pattern; (2) given a window, a "stop" reply whose
    ``input + cacheRead`` exceeds it (silent overflow); or (3) given a window, a "length" stop
    with zero output whose ``input + cacheRead`` is at least 99% of it. A window of 0 is "none".
    """
    if not isinstance(message, Mapping):
        raise InvalidMessageError(f"expected a Pi assistant message (a dict), got {message!r:.60}")
    if context_window is not None and (
        isinstance(context_window, bool) or not isinstance(context_window, int | float)
    ):
        raise InvalidMessageError(f"context_window must be a number, got {context_window!r:.60}")
    stop = message.get("stopReason")
    error_text = message.get("errorMessage")
    if stop == "error" and js_truthy(error_text):
        text = js_string(error_text)
        if not any(p.search(text) for p in _NON_OVERFLOW) and any(
            p.search(text) for p in _OVERFLOW_LINEAR
        ):
            return True
    if not js_truthy(context_window) or stop not in ("stop", "length"):
        return False
    assert context_window is not None
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        raise InvalidMessageError(
            f"a {stop!r} reply without a usage object",
            hint="Pi reads usage.input / usage.cacheRead here",
        )
    # A missing number is `undefined` in JS: the sum becomes NaN and every comparison false.
    numbers = [usage.get("input", math.nan), usage.get("cacheRead", math.nan)]
    if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        # JS would concatenate or coerce; Pi's usage fields are numbers, so this is a bad message.
        raise InvalidMessageError(
            f"usage.input / usage.cacheRead must be numbers, got {numbers!r:.80}",
            hint="Pi reads usage.input / usage.cacheRead here",
        )
    used = numbers[0] + numbers[1]
    if stop == "stop":
        return bool(used > context_window)
    return _is_zero(usage.get("output")) and bool(used >= context_window * 0.99)
