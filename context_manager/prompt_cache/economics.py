"""When a change to the sent context pays for the cache it breaks: the rule behind cache-aware
pruning (``ToolResultPruning(cache=...)``, guide ``docs/guide/pruning.md``).

Costs are in input tokens at the full price, with a provider's :class:`CacheRules` prices ``r``
(cached read) and ``w`` (cache write; 1.0 for OpenAI and Gemini, whose uncached input is billed
at the plain price). A change (clearing old tool results) whose first changed position has
``suffix`` tokens behind it, and which sends ``saved`` fewer tokens, costs this request
``(suffix - saved) * w`` instead of ``suffix * r`` (the part before the change is read either
way, what is new is written either way), and saves ``saved * r`` on each later request that
would have read those tokens from the cache. Over ``payback`` later requests it pays when

    suffix * (w - r) - saved * w  <=  payback * saved * r
    saved  >=  suffix * (w - r) / (w + payback * r)

which is :func:`min_worthwhile_saving` (Anthropic's ``clear_at_least``, computed rather than
guessed). When the cache has expired (:func:`cache_expired`), the suffix is written or billed in
full anyway and every saving is worth it: the threshold is 0.
"""

from __future__ import annotations

from math import ceil

from .._config import check_int
from .rules import CacheRules

__all__ = ["cache_expired", "min_worthwhile_saving"]


def min_worthwhile_saving(suffix: int, rules: CacheRules, payback: int) -> int:
    """Fewest tokens a change must remove from each request for rewriting the ``suffix`` tokens
    behind its first changed position to pay back within ``payback`` later requests (0: any)."""
    check_int("payback", payback)
    r, w = rules.read_price, rules.write_price
    premium = max(suffix, 0) * (w - r)
    if premium <= 0:
        return 0
    denominator = w + payback * r
    if denominator <= 0:  # free writes and free reads: nothing is ever worth rewriting
        return max(suffix, 0) + 1
    return ceil(premium / denominator)


def cache_expired(rules: CacheRules, age: float | None) -> bool:
    """Whether an entry last used ``age`` seconds ago is gone (None: no earlier request, so
    nothing is cached). A provider without a documented lifetime never expires."""
    if age is None:
        return True
    return rules.ttl_seconds is not None and age > rules.ttl_seconds
