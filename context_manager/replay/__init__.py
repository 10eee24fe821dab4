"""Replay a stored session under several settings, side by side (``context-manager replay``).

Guide: ``docs/guide/cache.md`` (section "Choosing settings from your own logs"). :func:`replay`
runs the settings and prices every request with the provider's cache rules; :func:`plot`
(matplotlib, optional) draws tokens sent, cached share and cost over the session.
"""

from .run import (
    DEFAULT_SETTINGS,
    ReplayResult,
    RequestRow,
    recommend,
    replay,
    request_points,
    table,
)

__all__ = [
    "DEFAULT_SETTINGS",
    "ReplayResult",
    "RequestRow",
    "recommend",
    "replay",
    "request_points",
    "table",
]
