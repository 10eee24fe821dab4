"""The Redis offload area: three keys in the session's hash slot (see ``offload.py``),
written through the store's command flow (its typed errors, without the URL's password)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..offload.area import BaseArea, Entry
from ._drive import Flow

__all__ = ["RedisOffload"]


class RedisOffload(BaseArea):
    """Three keys in the session's hash slot, expiring with the store's ``ttl``."""

    def __init__(self, store: Any) -> None:
        super().__init__(store.session)
        self._store = store
        base = f"{store.prefix}{{{store.session}}}:off:"
        self._data, self._live, self._keys = base + "data", base + "live", base + "keys"

    def _do(self, *steps: tuple[str, tuple[Any, ...]]) -> list[Any]:
        from .redis import Command

        store = self._store

        def flow() -> Flow[list[Any]]:
            out = []
            for name, args in steps:
                out.append((yield from store._call(Command(name, args))))
            return out

        result: list[Any] = store._run(flow())
        return result

    def _expire(self) -> list[tuple[str, tuple[Any, ...]]]:
        ttl = self._store.ttl
        if ttl is None:
            return []
        return [("expire", (key, ttl)) for key in (self._data, self._live, self._keys)]

    def _insert(self, token: str, data: bytes, key: str | None) -> str:
        if key is not None:
            (known,) = self._do(("hget", (self._keys, key)))
            if known is not None:
                known = known.decode() if isinstance(known, bytes) else str(known)
                (present,) = self._do(("hexists", (self._data, known)))
                if present:
                    self._do(("sadd", (self._live, known)), *self._expire())
                    return str(known)
        steps: list[tuple[str, tuple[Any, ...]]] = [
            ("hset", (self._data, token, data)),
            ("sadd", (self._live, token)),
        ]
        if key is not None:
            steps.append(("hset", (self._keys, key, token)))
        self._do(*steps, *self._expire())
        return token

    def _fetch(self, token: str) -> bytes | None:
        live, data = self._do(("sismember", (self._live, token)), ("hget", (self._data, token)))
        return bytes(data) if live and data is not None else None

    def _revive(self, tokens: list[str]) -> None:
        self._do(("sadd", (self._live, *tokens)), *self._expire())

    def retire(self) -> None:
        self._do(("delete", (self._live,)))

    def delete_entries(self) -> int:
        n, _ = self._do(("hlen", (self._data,)), ("delete", (self._data, self._live, self._keys)))
        return int(n)

    def entries(self) -> Iterator[Entry]:
        data, live, keys = self._do(
            ("hgetall", (self._data,)), ("smembers", (self._live,)), ("hgetall", (self._keys,))
        )
        live_tokens = {_text(t) for t in live}
        key_of = {_text(t): _text(k) for k, t in keys.items()}
        for token, value in sorted(data.items()):
            name = _text(token)
            yield Entry(name, key_of.get(name), name in live_tokens, bytes(value))

    def _import(self, entry: Entry) -> None:
        steps: list[tuple[str, tuple[Any, ...]]] = [
            ("hsetnx", (self._data, entry.token, entry.data))
        ]
        if entry.live:
            steps.append(("sadd", (self._live, entry.token)))
        if entry.key is not None:
            steps.append(("hsetnx", (self._keys, entry.key, entry.token)))
        self._do(*steps, *self._expire())


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
