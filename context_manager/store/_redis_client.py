"""A redis-py client made from a URL with typed errors, and what one handle's stores share.

Apart from the backend (``redis.py``) so the handles (``targets.py``, ``async_targets.py``) and
both stores import the same client rules without the flows.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError, StoreError
from ._urls import redis_options, redis_url

__all__ = ["HandleShare", "make_client", "redis_module"]


def redis_module() -> Any:
    try:
        import redis
    except ImportError as exc:
        raise ConfigurationError(
            "redis:// targets need redis-py: pip install 'context-manager[stores]'"
        ) from exc
    return redis


def make_client(url: str, *, cluster: bool = False, asyncio: bool = False) -> Any:
    """A redis-py client for ``url`` (``RedisCluster`` with ``cluster=True``; the
    ``redis.asyncio`` one with ``asyncio=True``), with typed errors that never show the URL's
    password. One per process is enough: it pools its connections
    (:func:`~context_manager.store.connect` shares one)."""
    info = redis_url(url)
    redis = redis_module()
    redis_options(url, info, asyncio=asyncio)  # a bad option fails here, not at a command
    try:
        if asyncio:
            import redis.asyncio as aredis
            from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

            return AsyncRedisCluster.from_url(url) if cluster else aredis.Redis.from_url(url)
        if cluster:
            from redis.cluster import RedisCluster

            return RedisCluster.from_url(url)  # asks its nodes for the slots at once
        return redis.Redis.from_url(url)
    except (redis.RedisError, redis.exceptions.RedisClusterException) as exc:
        reason = info.redact(str(exc))
        raise StoreError(f"{info.display}: cannot reach Redis: {reason}") from None
    except (ValueError, TypeError) as exc:  # a query option redis-py cannot read
        reason = info.redact(str(exc))
        raise ConfigurationError(
            f"{info.display}: redis-py cannot use the URL: {reason}"
        ) from info.cause(exc)


class HandleShare:
    """What the stores of one handle share: the sessions they listed in the index (session ->
    epoch, so a per-request store does not list its session again), and whether the handle was
    closed (its client may reconnect by itself, so its stores refuse work, as SQLite's do)."""

    __slots__ = ("closed", "listed")

    def __init__(self) -> None:
        self.listed: dict[str, str] = {}
        self.closed = False
