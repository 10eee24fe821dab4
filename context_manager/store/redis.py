"""Redis backend (redis-py): sessions shared by workers, with an optional TTL per session.

``redis://host:6379/0`` (``rediss://`` for TLS). Each generation of a session is one Redis list
of JSON lines, ``<prefix>{<session>}:g:<N>``; ``<prefix>{<session>}:gen`` holds the current
generation and ``<prefix>{<session>}:ck:<N>`` maps checkpoint ids to positions; the sorted set
``<prefix>sessions`` lists sessions by last write. All of a session's keys share the hash tag
``{<session>}``, so they live in one cluster slot.

Every write is one Lua script (Redis runs scripts atomically): it checks the writer's view,
pushes the records and refreshes the TTL, so appends from many workers never interleave and a
stale writer gets ``StoreConflictError``. With ``ttl=`` every key of the session expires that many
seconds after its last write (old generations too); an expired session disappears from
:meth:`RedisStore.sessions`. Durability is the server's: with ``appendonly yes`` and
``appendfsync always`` an acknowledged record survives a server crash; a killed *worker* never
loses an acknowledged record (the script ran before the reply).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import CheckpointNotFoundError, ConfigurationError, StoreConflictError, StoreError
from .protocol import DEFAULT_SESSION, Batch, Head, check_session_id
from .records import CHECKPOINT, dump_record

__all__ = ["RedisStore"]

# ARGV: base, index, session, expect_gen ('' = blind), expect_pos, ttl, now, mode,
# then (body, checkpoint id or '') pairs. Returns {ok, generation, next position, checkpoint id}.
_APPEND = """
local base = ARGV[1]
local gen = tonumber(redis.call('GET', base .. 'gen') or '0')
local list = base .. 'g:' .. gen
local ck = base .. 'ck:' .. gen
local len = redis.call('LLEN', list)
if ARGV[4] ~= '' and (tonumber(ARGV[4]) ~= gen or tonumber(ARGV[5]) ~= len) then
  return {0, gen, len, -1}
end
local pos = len
local made = -1
if ARGV[8] == 'checkpoint' then
  made = tonumber(redis.call('HGET', ck, 'next') or '0')
  redis.call('RPUSH', list, '{"role": "_checkpoint", "id": ' .. made .. '}')
  redis.call('HSET', ck, tostring(made), pos, 'next', made + 1)
  pos = pos + 1
else
  local bodies = {}
  for i = 9, #ARGV, 2 do
    bodies[#bodies + 1] = ARGV[i]
    if ARGV[i + 1] ~= '' then
      local id = tonumber(ARGV[i + 1])
      redis.call('HSET', ck, ARGV[i + 1], pos)
      if id + 1 > tonumber(redis.call('HGET', ck, 'next') or '0') then
        redis.call('HSET', ck, 'next', id + 1)
      end
    end
    pos = pos + 1
  end
  for j = 1, #bodies, 1000 do
    redis.call('RPUSH', list, unpack(bodies, j, math.min(j + 999, #bodies)))
  end
end
redis.call('SET', base .. 'gen', gen)
redis.call('ZADD', ARGV[2], ARGV[7], ARGV[3])
local ttl = tonumber(ARGV[6])
if ttl > 0 then
  redis.call('EXPIRE', base .. 'gen', ttl)
  redis.call('EXPIRE', list, ttl)
  if redis.call('EXISTS', ck) == 1 then redis.call('EXPIRE', ck, ttl) end
end
return {1, gen, pos, made}
"""

# ARGV: base, index, session, checkpoint id ('' = clear), ttl, now.
# Returns {ok, new generation, next position, checkpoints in the old generation}.
_ROTATE = """
local base = ARGV[1]
local gen = tonumber(redis.call('GET', base .. 'gen') or '0')
local list = base .. 'g:' .. gen
local ck = base .. 'ck:' .. gen
local ng = gen + 1
local nlist = base .. 'g:' .. ng
local nck = base .. 'ck:' .. ng
local cut = 0
if ARGV[4] ~= '' then
  local found = redis.call('HGET', ck, ARGV[4])
  if not found then
    return {0, gen, 0, tonumber(redis.call('HGET', ck, 'next') or '0')}
  end
  cut = tonumber(found)
  local i = 0
  while i < cut do
    local items = redis.call('LRANGE', list, i, math.min(i + 999, cut - 1))
    redis.call('RPUSH', nlist, unpack(items))
    i = i + 1000
  end
  local all = redis.call('HGETALL', ck)
  for k = 1, #all, 2 do
    if all[k] ~= 'next' and tonumber(all[k + 1]) < cut then
      redis.call('HSET', nck, all[k], all[k + 1])
    end
  end
  redis.call('HSET', nck, 'next', ARGV[4])
end
redis.call('SET', base .. 'gen', ng)
redis.call('ZADD', ARGV[2], ARGV[6], ARGV[3])
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  for _, key in ipairs({base .. 'gen', nlist, nck, list, ck}) do
    if redis.call('EXISTS', key) == 1 then redis.call('EXPIRE', key, ttl) end
  end
end
return {1, ng, cut, 0}
"""

# ARGV: base, start. Returns {generation, length, lines...}.
_LOAD = """
local base = ARGV[1]
local gen = tonumber(redis.call('GET', base .. 'gen') or '0')
local list = base .. 'g:' .. gen
local out = {gen, redis.call('LLEN', list)}
for _, item in ipairs(redis.call('LRANGE', list, tonumber(ARGV[2]), -1)) do
  out[#out + 1] = item
end
return out
"""


def _redis() -> Any:
    try:
        import redis
    except ImportError as exc:
        raise ConfigurationError(
            "redis:// targets need redis-py: pip install 'context-manager[stores]'"
        ) from exc
    return redis


class RedisStore:
    """One session in Redis."""

    def __init__(
        self,
        url: str,
        session: str = DEFAULT_SESSION,
        *,
        prefix: str = "cm:",
        ttl: int | None = None,
        client: Any = None,
    ) -> None:
        self._session = check_session_id(session)
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ConfigurationError(f"ttl must be a positive number of seconds, got {ttl!r}")
        if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
            raise ConfigurationError(f"prefix must be a string without braces, got {prefix!r}")
        redis = _redis()
        self._error: type[Exception] = redis.RedisError
        self._url = url
        self.ttl = ttl
        self.prefix = prefix
        self._base = f"{prefix}{{{self._session}}}:"
        self._index = f"{prefix}sessions"
        self._head: Head | None = None
        self._lock = threading.RLock()
        try:
            self._client = client if client is not None else redis.Redis.from_url(url)
            self._append = self._client.register_script(_APPEND)
            self._rotate = self._client.register_script(_ROTATE)
            self._load = self._client.register_script(_LOAD)
        except (ValueError, self._error) as exc:
            raise StoreError(f"{self.target}: cannot use Redis: {exc}") from exc

    @property
    def session(self) -> str:
        return self._session

    @property
    def target(self) -> str:
        parts = urlsplit(self._url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    @property
    def head(self) -> Head | None:
        return self._head

    @contextmanager
    def _errors(self) -> Iterator[None]:
        with self._lock:
            try:
                yield
            except self._error as exc:
                raise StoreError(
                    f"{self.target} session {self._session!r}: Redis failed: {exc}; the change "
                    "may not have been applied if the connection broke after the script ran"
                ) from exc

    def _run_append(self, mode: str, pairs: list[str]) -> tuple[int, int, int]:
        view = self._head
        args: list[Any] = [
            self._base,
            self._index,
            self._session,
            "" if view is None else view.generation,
            "" if view is None else view.position,
            self.ttl or 0,
            time.time(),
            mode,
            *pairs,
        ]
        with self._errors():
            ok, generation, position, made = self._append(args=args)
        if not ok:
            assert view is not None
            raise StoreConflictError(
                f"{self.target} session {self._session!r}: another writer changed it since "
                f"this one read it (generation/position {view.generation}/{view.position} -> "
                f"{generation}/{position}); nothing was written: reload the session and retry"
            )
        self._head = Head(int(generation), int(position))
        return int(generation), int(position), int(made)

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        pairs: list[str] = []
        for record in records:
            pairs.append(dump_record(record)[:-1].decode("utf-8"))
            checkpoint = record.get("id") if record.get("role") == CHECKPOINT else None
            pairs.append("" if checkpoint is None else str(int(checkpoint)))
        _, end, _ = self._run_append("append", pairs)
        return list(range(end - len(records), end))

    def checkpoint(self) -> int:
        return self._run_append("checkpoint", [])[2]

    def _run_rotate(self, checkpoint_id: int | None) -> Head:
        args = [
            self._base,
            self._index,
            self._session,
            "" if checkpoint_id is None else int(checkpoint_id),
            self.ttl or 0,
            time.time(),
        ]
        with self._errors():
            ok, generation, position, count = self._rotate(args=args)
        if not ok:
            raise CheckpointNotFoundError(
                f"{self.target} session {self._session!r}: checkpoint {checkpoint_id} does not "
                f"exist (the session has {count} checkpoints, ids from 0); pick an existing id"
            )
        self._head = Head(int(generation), int(position))
        return self._head

    def revert_to(self, checkpoint_id: int) -> Head:
        return self._run_rotate(checkpoint_id)

    def clear(self) -> None:
        self._run_rotate(None)

    def load(self, start: int = 0) -> Batch:
        with self._errors():
            reply = self._load(args=[self._base, max(0, int(start))])
        self._head = Head(int(reply[0]), int(reply[1]))
        first = self._head.position - (len(reply) - 2)
        return Batch(
            self._head,
            [(first + i, bytes(line) + b"\n") for i, line in enumerate(reply[2:])],
        )

    def sessions(self) -> list[str]:
        with self._errors():
            names = [
                n.decode() if isinstance(n, bytes) else n
                for n in self._client.zrange(self._index, 0, -1)
            ]
            pipe = self._client.pipeline(transaction=False)
            for name in names:
                pipe.exists(f"{self.prefix}{{{name}}}:gen")
            alive = pipe.execute()
            gone = [name for name, ok in zip(names, alive, strict=True) if not ok]
            if gone:  # expired (TTL): drop from the index
                self._client.zrem(self._index, *gone)
        return sorted(name for name, ok in zip(names, alive, strict=True) if ok)

    def generations(self) -> list[int]:
        """Every generation that still holds records (old ones are kept by revert and clear)."""
        with self._errors():
            keys = list(self._client.scan_iter(match=f"{self._base}g:*", count=1000))
        return sorted(int(k.decode().rsplit(":", 1)[1]) for k in keys)

    def close(self) -> None:
        with self._errors():
            self._client.close()

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
