"""Prompt-cache breakpoints on the stable prefix of a context (optional helper).

Providers reuse a prompt prefix they have seen recently and bill it at about a tenth of the input
price, but only if it is byte-identical. ``retention_ratio`` (see ``SlidingWindow``) keeps the
trimmed context's prefix stable across requests; this module tells the provider where it is:

* **Anthropic** caches only up to explicit ``cache_control`` breakpoints (at most 4 a request,
  prefix tools -> system -> messages; a breakpoint whose prefix is under 1,024 tokens is not
  cached, 2,048 on Haiku models). :func:`mark_cache_breakpoints` puts one on the last message (the
  whole request is written, the next request reads it), one on the system prompt (it survives a
  moved cut) and one on the message that ends the previous turn (reads still hit when the latest
  turn added many blocks), in that order of importance, skipping those under ``min_tokens``.
* **OpenAI** caches identical prefixes of 1,024 tokens or more by itself: there is nothing to
  mark; keep the system prompt and tools first and unchanged. The messages come back as they are.

Marks the messages already carry are kept and count against the limit, and new marks keep
Anthropic's TTL order (1-hour entries before 5-minute ones): see :func:`mark_cache_breakpoints`.

Marked messages are copies (the message dict, its content list and the marked block); every
other message is the caller's own object. Nothing given is ever mutated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any, Literal

from ._config import check_int
from .counting import TokenCounter, get_counter
from .errors import ConfigurationError, InvalidMessageError
from .messages import Message, normalize
from .prompt_cache.report import default_marks
from .prompt_cache.rules import ANTHROPIC_MAX_BREAKPOINTS, cache_rules

__all__ = ["ANTHROPIC_MAX_BREAKPOINTS", "mark_cache_breakpoints"]

_UNMARKABLE = ("thinking", "redacted_thinking")  # a tuple: a block type may be unhashable


def mark_cache_breakpoints(
    messages: Sequence[Any],
    provider: Literal["anthropic", "openai"] = "anthropic",
    *,
    counter: str | TokenCounter = "chars",
    max_breakpoints: int = ANTHROPIC_MAX_BREAKPOINTS,
    min_tokens: int | None = None,
    ttl: Literal["5m", "1h"] | None = None,
    model: str | None = None,
) -> list[Any]:
    """``messages`` (a context, e.g. from ``get_context()``) with cache breakpoints marked.

    For ``"anthropic"`` the messages must be Anthropic-shaped dicts (``role`` and ``content``,
    a string or a list of blocks); a leading ``system`` message is marked like the others, with
    its content turned into text blocks, ready for ``system=``. ``max_breakpoints`` is how many
    ``cache_control`` marks the messages may carry in all: marks they already carry count
    against it (lower it to leave room for marks you set on tools). ``min_tokens`` is the
    provider's smallest cacheable prefix, counted with ``counter``: by default the minimum of
    ``model`` (4,096 on Opus 4.5 and Haiku 4.5, 2,048 on older Haikus), 1,024 without one, so
    no breakpoint is spent on a prefix the model would not cache. For ``"openai"`` a new list
    of the same messages.

    Your own marks are kept as they are (a message whose last block is marked is not marked
    again). Anthropic wants every 1-hour entry before every 5-minute one, so a new mark after one
    of your 5-minute marks is a 5-minute mark, and one before your 1-hour mark is a 1-hour mark,
    whatever ``ttl`` says (the tokens before a 1-hour mark are billed at the 1-hour rate anyway).
    Raises :class:`~context_manager.errors.ConfigurationError` when your marks alone exceed
    ``max_breakpoints`` or put a 1-hour mark after a 5-minute one (Anthropic rejects both).
    Marks on tools are not seen: ``ttl="1h"`` needs them to be 1-hour marks too.
    """
    if provider == "openai":
        return list(messages)
    if provider != "anthropic":
        raise ConfigurationError(
            f"unknown provider {provider!r} for cache breakpoints: use 'anthropic' or 'openai'"
        )
    check_int("max_breakpoints", max_breakpoints, 0, ANTHROPIC_MAX_BREAKPOINTS)
    if min_tokens is None:
        min_tokens = cache_rules("anthropic", model).min_tokens
    check_int("min_tokens", min_tokens)
    if ttl not in (None, "5m", "1h"):
        raise ConfigurationError(f"ttl must be None, '5m' or '1h', got {ttl!r}")
    out = list(messages)
    for i, message in enumerate(out):
        _check_shape(message, i)
    own = _own_marks(out, max_breakpoints)
    room = max_breakpoints - len(own)
    if not out or room == 0:
        return out
    first_short = next((i for i, long in own if not long), len(out))
    last_long = max((i for i, long in own if long), default=-1)
    records = [normalize(message, i) for i, message in enumerate(out)]
    # tokens up to and including each message
    prefix = list(accumulate(get_counter(counter).message_costs(records)))
    marked = 0
    for i in _candidates(out, records):
        if marked == room:
            break
        if prefix[i] < min_tokens:
            continue
        # the order Anthropic requires: 1h entries first (checked on your marks above)
        chosen = "5m" if first_short <= i else "1h" if last_long > i else (ttl or "5m")
        control: dict[str, str] = {"type": "ephemeral"}
        if ttl is not None or chosen != "5m":
            control["ttl"] = chosen
        copy = _marked(out[i], control)
        if copy is not None:
            out[i] = copy
            marked += 1
    return out


def _own_marks(messages: list[Any], limit: int) -> list[tuple[int, bool]]:
    """The ``cache_control`` marks the messages carry, in request order, as (message index,
    1-hour?); raises if they are more than ``limit`` or a 1-hour one follows a 5-minute one.

    A block's own mark ends the block, so the marks inside it (a tool result's content: one
    level, so a block that contains itself cannot loop) come before it."""
    marks: list[tuple[int, bool]] = []
    for i, message in enumerate(messages):
        content = message["content"]
        for block in content if isinstance(content, list) else ():
            nested = block.get("content") if isinstance(block, Mapping) else None
            for inner in nested if isinstance(nested, list) else ():
                _own_mark(inner, i, marks)
            _own_mark(block, i, marks)
    if len(marks) > limit:
        raise ConfigurationError(
            f"the messages already carry {len(marks)} cache_control marks, more than "
            f"max_breakpoints={limit} (Anthropic accepts {ANTHROPIC_MAX_BREAKPOINTS} a request)"
        )
    return marks


def _own_mark(block: Any, i: int, marks: list[tuple[int, bool]]) -> None:
    """Append ``block``'s mark, if any, to ``marks`` (refusing a 1-hour after a 5-minute one)."""
    control = block.get("cache_control") if isinstance(block, Mapping) else None
    if not control:
        return
    long = isinstance(control, Mapping) and control.get("ttl") == "1h"
    if long and marks and not marks[-1][1]:
        raise ConfigurationError(
            f"message {i} has a 1h cache_control mark after a 5m one (message "
            f"{marks[-1][0]}): Anthropic needs every 1h entry before every 5m one"
        )
    marks.append((i, long))


def _check_shape(message: Any, index: int) -> None:
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        raise InvalidMessageError(
            "mark_cache_breakpoints(provider='anthropic') needs Anthropic-shaped dicts with "
            f"'role' and 'content', got {type(message).__name__}",
            index=index,
        )
    content = message.get("content")
    if not isinstance(content, str | list) or (
        isinstance(content, list) and not all(isinstance(b, Mapping) for b in content)
    ):
        raise InvalidMessageError(
            "an Anthropic message's content must be a string or a list of block dicts, "
            f"got {type(content).__name__}",
            index=index,
        )


def _candidates(messages: list[Any], records: list[Message]) -> list[int]:
    """Message positions worth a breakpoint, most useful first, without repeats."""
    system = 1 if messages[0].get("role") in ("system", "developer") else None
    last_user = next((i for i in range(len(records) - 1, -1, -1) if records[i].is_user_turn), None)
    marks = default_marks(len(messages), system, last_user)
    return [b - 1 for b in marks]  # the message ending at each boundary


def _marked(message: Mapping[str, Any], control: dict[str, str]) -> dict[str, Any] | None:
    """A copy of ``message`` whose last content block carries ``control`` (None: cannot)."""
    content = message["content"]
    if isinstance(content, str):
        if not content:
            return None  # the API rejects empty text blocks
        blocks: list[Any] = [{"type": "text", "text": content, "cache_control": dict(control)}]
    else:
        if not content or content[-1].get("type") in _UNMARKABLE:
            return None
        if content[-1].get("cache_control"):
            return None  # your own mark: kept as it is
        blocks = [*content[:-1], {**content[-1], "cache_control": dict(control)}]
    return {**message, "content": blocks}
