"""Prompt-cache economics: what each provider would serve from its cache, and what it costs.

Guide: ``docs/guide/cache.md`` (section "Cache reports").

- :mod:`.rules`: each provider's documented rules and prices as named constants, and
  :func:`cache_rules` to pick them by provider and model.
- :mod:`.report`: :func:`compare` judges one request against the previous one (shared prefix,
  where and why it broke, tokens read / written, cost).
- :mod:`.tracker`: requests from message lists; :class:`CacheTracker` for a conversation;
  :func:`track_cache` turns reports on for a manager (``stats().cache`` and an event).
"""

from .report import CacheReport, Request, Segment, compare
from .rules import CacheRules, cache_rules
from .tracker import CacheTracker, cache_report, request_of, track_cache

__all__ = [
    "CacheReport",
    "CacheRules",
    "CacheTracker",
    "Request",
    "Segment",
    "cache_report",
    "cache_rules",
    "compare",
    "request_of",
    "track_cache",
]
