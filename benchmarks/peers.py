"""The libraries users would pick instead, called the way their docs show (``bench`` extra).

* LangChain ``trim_messages(strategy="last", include_system=True)`` with its approximate
  counter, and with a tiktoken counter (a per-message function, o200k_base, OpenAI's framing:
  3 tokens a message plus the encoded content, tool-call names and arguments);
* the same with ``start_on="human"``, the setting LangChain's docs recommend for chat models;
* litellm ``trim_messages(max_tokens=...)`` (tiktoken inside; imported with
  ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so it never reaches the network).

LangChain receives LangChain message objects (converted once, outside the timing), litellm and
we receive the OpenAI dicts: each library gets its native input. Every function has the same
shape, ``trim(messages, max_tokens) -> kept``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from context_manager import trim
from context_manager.counting.tiktoken_counter import TiktokenCounter

Trimmer = Callable[[Sequence[Any], int], list[Any]]


def ours(messages: Sequence[Any], max_tokens: int) -> list[Any]:
    """One-shot, from scratch: read, count (estimator) and select. ``trim()`` keeps nothing
    between calls unless given a cache, so each round is a cold call (``bench_oneshot`` times
    the repeated call, with a caller's cache, on its own)."""
    return trim(messages, max_tokens, strategy="sliding_window", counter="chars")


@cache
def _uncached_tiktoken() -> TiktokenCounter:
    # cache_size=0: every text is encoded on every call, as the peers do (no head start).
    return TiktokenCounter("gpt-4o", cache_size=0)


def ours_tiktoken(messages: Sequence[Any], max_tokens: int) -> list[Any]:
    """One-shot with exact tiktoken counts, its text cache off (cold, as :func:`ours`)."""
    return trim(messages, max_tokens, strategy="sliding_window", counter=_uncached_tiktoken())


def langchain_messages(messages: Sequence[Any]) -> list[Any]:
    from langchain_core.messages import convert_to_messages

    return list(convert_to_messages(list(messages)))


def _langchain_trim(token_counter: Any, start_on: str | None = None) -> Trimmer:
    from langchain_core.messages import trim_messages

    def run(messages: Sequence[Any], max_tokens: int) -> list[Any]:
        return list(
            trim_messages(
                messages,
                max_tokens=max_tokens,
                token_counter=token_counter,
                strategy="last",
                include_system=True,
                start_on=start_on,
            )
        )

    return run


def langchain_approx(start_on: str | None = None) -> Trimmer:
    from langchain_core.messages.utils import count_tokens_approximately

    return _langchain_trim(count_tokens_approximately, start_on)


def langchain_tiktoken(start_on: str | None = None) -> Trimmer:
    from langchain_core.messages import BaseMessage

    encoding = _uncached_tiktoken().encoding

    def count(message: BaseMessage) -> int:
        content = message.content
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        tokens = 3 + len(encoding.encode_ordinary(text))
        for call in getattr(message, "tool_calls", None) or ():
            args = json.dumps(call["args"], ensure_ascii=False)
            tokens += 3 + len(encoding.encode_ordinary(call["name"] + args))
        return tokens

    # LangChain sums a per-message counter when its parameter is annotated ``BaseMessage``.
    count.__annotations__["message"] = BaseMessage
    return _langchain_trim(count, start_on)


def litellm_trim() -> Trimmer:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from litellm.utils import trim_messages

    def run(messages: Sequence[Any], max_tokens: int) -> list[Any]:
        return list(trim_messages(list(messages), model="gpt-4o", max_tokens=max_tokens))

    return run


def available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True
