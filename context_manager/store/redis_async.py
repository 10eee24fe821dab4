"""Redis for asyncio (``redis.asyncio``): :class:`~.redis.RedisStore`'s flows, awaited.

Nothing about the session's keys, scripts, checks or errors is written here: the flows are
``redis.py``'s (:class:`~.redis.RedisFlows`) and this module only performs their steps on the
async client, one flow at a time per store object (an ``asyncio.Lock``). Made by
:func:`~context_manager.store.aconnect` for ``redis://`` targets.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from . import _redis_keys
from ._drive import Failed, Flow, adrive
from ._redis_client import HandleShare, make_client, redis_module
from .protocol import DEFAULT_SESSION, Batch, Head
from .redis import Command, Exists, RedisFlows

__all__ = ["AsyncRedisStore"]

_T = TypeVar("_T")


@functools.cache
def _client_dir() -> str:
    location: str = redis_module().__file__
    return os.path.dirname(os.path.abspath(location)) + os.sep


def _torn_down(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside redis-py itself: ``redis.asyncio`` lets a connection
    that another task tears down mid-command (the cluster client does so to a restarting
    node's connections) fail with ``AttributeError: 'NoneType' object has no attribute
    'writelines'`` or a raw ``OSError`` instead of its ``ConnectionError``. Raised in our
    own code, the same types are bugs and stay untyped."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_client_dir())


class AsyncRedisStore(RedisFlows):
    """One session in Redis, on a ``redis.asyncio`` client (``client=`` is the caller's, or a
    handle's, and is never closed here)."""

    def __init__(
        self,
        url: str,
        session: str = DEFAULT_SESSION,
        *,
        prefix: str = "cm:",
        ttl: int | None = None,
        client: Any = None,
        cluster: bool = False,
        shared: HandleShare | None = None,
    ) -> None:
        super().__init__(url, session, prefix=prefix, ttl=ttl, cluster=cluster, shared=shared)
        self._lock = asyncio.Lock()
        owned = client is None
        self._use(make_client(url, cluster=cluster, asyncio=True) if owned else client, owned)

    async def _perform(self, step: Any) -> Any:
        client = self._refuse_if_handle_closed()
        try:
            if isinstance(step, Command):
                return await getattr(client, step.name)(*step.args)
            if isinstance(step, Exists):
                pipe = client.pipeline(transaction=False)
                for key in step.keys:
                    pipe.exists(key)
                return await pipe.execute()
            return [key async for key in client.scan_iter(**_redis_keys.scan(client, step.match))]
        except self._error as exc:
            raise self._failure(exc) from None
        except (AttributeError, OSError) as exc:
            if not _torn_down(exc):
                raise
            # The connection broke under the command: a write may or may not have been sent,
            # exactly what redis-py's own ConnectionError means (typed by the flow).
            broken = ConnectionError(f"the connection was closed under the command ({exc})")
            raise Failed(broken, lost=True) from None

    async def _run(self, flow: Flow[_T]) -> _T:
        async with self._lock:
            return await adrive(flow, self._perform)

    async def append(
        self, records: Sequence[Mapping[str, Any]], *, durable: bool = False
    ) -> list[int]:
        return await self._run(self._append(records))

    async def checkpoint(self) -> int:
        return await self._run(self._checkpoint())

    async def revert_to(self, checkpoint_id: int) -> Head:
        return await self._run(self._run_rotate(checkpoint_id))

    async def clear(self) -> None:
        await self._run(self._run_rotate(None))

    async def delete(self) -> bool:
        """Delete the session for good: every generation and offloaded result (one script)."""
        return await self._run(self._delete())

    async def load(self, start: int = 0) -> Batch:
        return await self._run(self._load(max(0, int(start))))

    async def load_after(self, head: Head) -> Batch | None:
        return await self._run(self._load_after(head))

    async def sessions(self) -> list[str]:
        return await self._run(self._sessions())

    async def generations(self) -> list[int]:
        """Every generation that still holds records (old ones are kept by revert and clear)."""
        return await self._run(self._generations())

    async def aclose(self) -> None:
        """Close the client this store made; a caller's ``client=`` stays open."""
        if self._owns_client:
            await self._run(self._call(Command("aclose", ())))

    async def __aenter__(self) -> AsyncRedisStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
