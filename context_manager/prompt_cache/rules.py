"""Each provider's prompt-cache rules as named constants, and :class:`CacheRules` built from them.

Every number here comes from the provider's own documentation (checked when this was written;
prices and minimums change by model, so every one can be overridden):

* Anthropic, "Prompt caching" (platform.claude.com/docs/en/build-with-claude/prompt-caching):
  the prefix is tools -> system -> messages; a cache entry is written only at a ``cache_control``
  breakpoint (at most 4 a request); a breakpoint checks for an earlier entry at the block
  boundaries up to about 20 blocks before it; a prefix shorter than the model's minimum is not
  cached (1,024 to 4,096 tokens, table below); entries live 5 minutes (``"ttl": "1h"``: one
  hour), refreshed by each hit; writes cost 1.25x the input price (1 hour: 2x), reads 0.1x.
* OpenAI, "Prompt caching" (developers.openai.com/api/docs/guides/prompt-caching): automatic for
  prompts of 1,024 tokens or more, hits in steps of 128 tokens of exact prefix; requests are
  routed by a hash of about the first 256 tokens, and ``prompt_cache_key`` joins that hash, so
  requests with different keys do not share a cache; ``prompt_cache_retention`` is
  ``"in_memory"`` (kept through 5-10 minutes of inactivity, an hour at most) or ``"24h"``.
  Cached input price (openai.com/api/pricing): 10% of input on the GPT-5 family, 25% on
  GPT-4.1 and o3 / o4-mini, 50% on GPT-4o.
* Gemini, "Context caching" (ai.google.dev/gemini-api/docs/caching): implicit caching is on for
  Gemini 2.5 and newer, for prompts of at least the model's minimum (2,048 tokens on 2.5 Flash
  and Pro, 4,096 on Gemini 3 models in the page's latest version; earlier versions listed 1,024
  for 2.5 Flash). The page gives no step and no lifetime. Cached tokens were billed at 25% of
  the input price on 2.5 models and 10% on Gemini 3 (ai.google.dev/gemini-api/docs/pricing).
  Older models (Gemini 1.0, 1.5, 2.0) have explicit caching only (a ``cachedContents`` entry the
  caller creates), which a report of what repeats the previous request cannot see: their rules
  say ``caches=False`` and every token is billed at the input price.

Costs are in "input tokens at the full price": a cached read of ``n`` tokens costs
``n * read_price``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Literal

from .._config import check_int
from ..errors import ConfigurationError
from ..messages.nesting import short_repr

__all__ = [
    "ANTHROPIC_LOOKBACK_BLOCKS",
    "ANTHROPIC_MAX_BREAKPOINTS",
    "ANTHROPIC_MIN_TOKENS",
    "ANTHROPIC_READ_PRICE",
    "ANTHROPIC_TTL_SECONDS",
    "ANTHROPIC_WRITE_PRICE",
    "GEMINI_MIN_TOKENS",
    "GEMINI_NO_IMPLICIT_CACHE",
    "OPENAI_MIN_TOKENS",
    "OPENAI_STEP_TOKENS",
    "OPENAI_TTL_SECONDS",
    "PROVIDERS",
    "CacheRules",
    "cache_rules",
]

PROVIDERS = ("anthropic", "openai", "gemini")

# -- Anthropic ------------------------------------------------------------------------------
#: Most ``cache_control`` breakpoints one request may carry.
ANTHROPIC_MAX_BREAKPOINTS = 4
#: How many content blocks before a breakpoint the provider checks for an earlier entry.
ANTHROPIC_LOOKBACK_BLOCKS = 20
#: Smallest cacheable prefix for a model not in :data:`ANTHROPIC_MODEL_MIN_TOKENS`.
ANTHROPIC_MIN_TOKENS = 1_024
#: Smallest cacheable prefix per model family (first matching pattern wins).
ANTHROPIC_MODEL_MIN_TOKENS: tuple[tuple[str, int], ...] = (
    (r"opus-4-[56]", 4_096),
    (r"haiku-4-5", 4_096),
    (r"3-5-haiku|3-haiku|haiku-3", 2_048),
    (r"sonnet-4|opus-4|3-7-sonnet|sonnet-3-7", 1_024),
)
#: Entry lifetime by ``ttl`` (seconds; each hit refreshes it).
ANTHROPIC_TTL_SECONDS = {"5m": 300.0, "1h": 3_600.0}
#: Cache write price / input price, by ``ttl``.
ANTHROPIC_WRITE_PRICE = {"5m": 1.25, "1h": 2.0}
#: Cache read price / input price.
ANTHROPIC_READ_PRICE = 0.10

# -- OpenAI ---------------------------------------------------------------------------------
#: Shortest prompt OpenAI caches.
OPENAI_MIN_TOKENS = 1_024
#: Cache hits grow in steps of this many tokens.
OPENAI_STEP_TOKENS = 128
#: Entry lifetime by ``prompt_cache_retention`` (in memory: 5-10 minutes idle; 5 is the floor).
OPENAI_TTL_SECONDS = {"in_memory": 300.0, "24h": 86_400.0}
#: Cached input price / input price by model family (first matching pattern wins).
OPENAI_MODEL_READ_PRICE: tuple[tuple[str, float], ...] = (
    (r"^gpt-5", 0.10),
    (r"^gpt-4\.1", 0.25),
    (r"^o\d+-pro", 1.0),  # o1-pro, o3-pro: the price list gives no cached-input price
    (r"^(o1|o3-mini)", 0.50),  # o1 $7.50 of $15, o1-mini and o3-mini $0.55 of $1.10
    (r"^(o3|o4-mini)", 0.25),
    (r"^gpt-4o", 0.50),
)
#: Cached input price for a model not in the table (the GPT-5 family's).
OPENAI_READ_PRICE = 0.10

# -- Gemini ---------------------------------------------------------------------------------
#: Smallest implicitly cached prompt for a model not in :data:`GEMINI_MODEL_MIN_TOKENS`.
GEMINI_MIN_TOKENS = 4_096
GEMINI_MODEL_MIN_TOKENS: tuple[tuple[str, int], ...] = ((r"gemini-2\.5", 2_048),)
#: Cached input price / input price by model family.
GEMINI_MODEL_READ_PRICE: tuple[tuple[str, float], ...] = ((r"gemini-2\.5", 0.25),)
GEMINI_READ_PRICE = 0.10
#: Models without implicit caching (before Gemini 2.5: explicit caching only).
GEMINI_NO_IMPLICIT_CACHE = r"^gemini-(1\.\d|2\.0)(-|$)|^gemini-pro(-vision)?$"


@dataclass(frozen=True, slots=True)
class CacheRules:
    """How one provider (and model) caches a prompt prefix and bills it.

    ``min_tokens``: the shortest cacheable prefix; ``step``: hits are whole multiples of it;
    ``breakpoints``: entries exist only at ``cache_control`` breakpoints (Anthropic), of which at
    most ``max_breakpoints``, each looking ``lookback_blocks`` blocks back; ``ttl_seconds``: how
    long an unused entry lives (None: not documented, never judged expired); prices are
    fractions of the input price. ``caches=False``: the model has no automatic prompt cache
    (Gemini before 2.5), so a report reads nothing from a cache (``limit="no_cache"``).
    """

    provider: Literal["anthropic", "openai", "gemini"]
    min_tokens: int
    step: int = 1
    breakpoints: bool = False
    max_breakpoints: int = 0
    lookback_blocks: int = 0
    ttl_seconds: float | None = None
    read_price: float = 0.10
    write_price: float = 1.0
    caches: bool = True


def _name(model: str) -> str:
    return model.lower().rpartition("/")[2]  # "openai/gpt-4o", "models/gemini-2.5-pro"


def _lookup(model: str | None, table: tuple[tuple[str, float], ...], default: float) -> float:
    if model:
        name = _name(model)
        for pattern, value in table:
            if re.search(pattern, name):
                return value
    return default


def cache_rules(
    provider: str,
    model: str | None = None,
    *,
    ttl: str | None = None,
    read_price: float | None = None,
    write_price: float | None = None,
    min_tokens: int | None = None,
) -> CacheRules:
    """The rules for ``provider`` (``"anthropic"``, ``"openai"``, ``"gemini"``) and ``model``.

    ``ttl``: Anthropic ``"5m"`` (default) or ``"1h"``; OpenAI's ``prompt_cache_retention``,
    ``"in_memory"`` (default) or ``"24h"``. The price and minimum overrides are for models newer
    than the tables here.
    """
    if model is not None and not isinstance(model, str):
        raise ConfigurationError(f"model must be a model name, got {type(model).__name__}")
    if provider == "anthropic":
        ttl = ttl or "5m"
        if ttl not in ANTHROPIC_TTL_SECONDS:
            raise ConfigurationError(
                f"Anthropic ttl must be '5m' or '1h', got {short_repr(ttl, 60)}"
            )
        rules = CacheRules(
            "anthropic",
            int(_lookup(model, ANTHROPIC_MODEL_MIN_TOKENS, ANTHROPIC_MIN_TOKENS)),
            breakpoints=True,
            max_breakpoints=ANTHROPIC_MAX_BREAKPOINTS,
            lookback_blocks=ANTHROPIC_LOOKBACK_BLOCKS,
            ttl_seconds=ANTHROPIC_TTL_SECONDS[ttl],
            read_price=ANTHROPIC_READ_PRICE,
            write_price=ANTHROPIC_WRITE_PRICE[ttl],
        )
    elif provider == "openai":
        ttl = ttl or "in_memory"
        if ttl not in OPENAI_TTL_SECONDS:
            raise ConfigurationError(
                "OpenAI prompt_cache_retention must be 'in_memory' or '24h', got "
                f"{short_repr(ttl, 60)}"
            )
        rules = CacheRules(
            "openai",
            OPENAI_MIN_TOKENS,
            step=OPENAI_STEP_TOKENS,
            ttl_seconds=OPENAI_TTL_SECONDS[ttl],
            read_price=_lookup(model, OPENAI_MODEL_READ_PRICE, OPENAI_READ_PRICE),
        )
    elif provider == "gemini":
        if ttl is not None:
            raise ConfigurationError("Gemini's implicit cache has no ttl option")
        if model and re.search(GEMINI_NO_IMPLICIT_CACHE, _name(model)):
            rules = CacheRules("gemini", 0, read_price=1.0, caches=False)
            return _override(rules, read_price, write_price, min_tokens)
        rules = CacheRules(
            "gemini",
            int(_lookup(model, GEMINI_MODEL_MIN_TOKENS, GEMINI_MIN_TOKENS)),
            read_price=_lookup(model, GEMINI_MODEL_READ_PRICE, GEMINI_READ_PRICE),
        )
    else:
        raise ConfigurationError(
            f"unknown provider {short_repr(provider, 60)} for cache rules: use one of "
            f"{', '.join(PROVIDERS)}"
        )
    return _override(rules, read_price, write_price, min_tokens)


def _price(name: str, value: object) -> float | None:
    """A price multiplier as a float: a finite number >= 0 (NaN, infinity and an int beyond
    float range would make every cost meaningless)."""
    if value is None:
        return None
    price = None
    if not isinstance(value, bool) and isinstance(value, int | float):
        try:
            price = float(value)
        except OverflowError:
            price = None
    if price is None or not 0 <= price < math.inf:
        raise ConfigurationError(
            f"{name} must be a finite number >= 0, got {short_repr(value, 60)}"
        )
    return price


def _override(
    rules: CacheRules, read: float | None, write: float | None, minimum: int | None
) -> CacheRules:
    read, write = _price("read_price", read), _price("write_price", write)
    return replace(
        rules,
        read_price=rules.read_price if read is None else read,
        write_price=rules.write_price if write is None else write,
        min_tokens=rules.min_tokens
        if minimum is None
        else max(0, check_int("min_tokens", minimum, None)),
    )
