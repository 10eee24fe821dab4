"""Redis backend (redis-py): sessions shared by workers, with an optional TTL per session.

``redis://host:6379/0`` (``rediss://`` for TLS). Each generation of a session is one Redis list
of JSON lines, ``<prefix>{<session>}:g:<N>``; ``<prefix>{<session>}:gen`` holds the current
generation, ``<prefix>{<session>}:epoch`` a random value drawn when the session's keys are made
(so a session rebuilt after expiring is told apart from the one a stale writer saw),
``<prefix>{<session>}:ck:<N>`` maps checkpoint ids to positions and ``<prefix>{<session>}:id:<N>``
the first record id of each write to its position (exactly-once retries); the sorted set
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

import logging
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import (
    CheckpointNotFoundError,
    ConfigurationError,
    StoreConflictError,
    StoreError,
    StoreOutcomeUnknownError,
)
from ._urls import redis_url
from .protocol import DEFAULT_SESSION, Batch, Head, check_session_id, extends
from .records import CHECKPOINT, dump_record, record_id

__all__ = ["RedisStore", "make_client"]

# Each script is declared with one key, ``<prefix>{<session>}:gen`` (KEYS[1]), and touches only
# keys with the session's hash tag, so on Redis Cluster it runs on the node that owns the
# session's slot; the sessions index (another slot) is written apart (:meth:`_indexed`).
# ARGV[1] is the key prefix ``<prefix>{<session>}:``; ARGV[2] and ARGV[3] are not read.
# Every script reads the session's epoch: a random value drawn when the session's keys are
# created (ARGV new_epoch), so a session that expired (ttl) and was rebuilt to the same
# generation and position has another one and a stale writer's view cannot match it again (ABA).
# A view read while the session did not exist (epoch '') matches it only while it is still empty.

# ARGV: base, index, session, expect_gen ('' = blind), expect_pos, ttl, now, mode,
# expect_epoch, new_epoch, first record id ('' = none), then (body, checkpoint id or '') pairs.
# Returns {status, generation, next position, checkpoint id, epoch}: status 1 written, 0 stale
# view (nothing written), 2 the first id is already stored (a retry: nothing written).
_APPEND = """
local base = ARGV[1]
local gen = tonumber(redis.call('GET', base .. 'gen') or '0')
local epoch = redis.call('GET', base .. 'epoch')
local list = base .. 'g:' .. gen
local ck = base .. 'ck:' .. gen
local ids = base .. 'id:' .. gen
local len = redis.call('LLEN', list)
local count = (#ARGV - 11) / 2
if ARGV[11] ~= '' then
  local at = redis.call('HGET', ids, ARGV[11])
  if at then return {2, gen, tonumber(at) + count, -1, epoch or ''} end
end
if ARGV[4] ~= '' then
  local same = tonumber(ARGV[4]) == gen and tonumber(ARGV[5]) == len
  if ARGV[9] ~= (epoch or '') and not (ARGV[9] == '' and gen == 0 and len == 0) then
    same = false
  end
  if not same then return {0, gen, len, -1, epoch or ''} end
end
if not epoch then epoch = ARGV[10] end
local pos = len
local made = -1
if ARGV[8] == 'checkpoint' then
  made = tonumber(redis.call('HGET', ck, 'next') or '0')
  redis.call('RPUSH', list, '{"role": "_checkpoint", "id": ' .. made .. '}')
  redis.call('HSET', ck, tostring(made), pos, 'next', made + 1)
  pos = pos + 1
else
  if ARGV[11] ~= '' then redis.call('HSET', ids, ARGV[11], pos) end
  local bodies = {}
  for i = 12, #ARGV, 2 do
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
redis.call('SET', base .. 'epoch', epoch)
local ttl = tonumber(ARGV[6])
if ttl > 0 then
  for _, key in ipairs({base .. 'gen', base .. 'epoch', list, ck, ids}) do
    if redis.call('EXISTS', key) == 1 then redis.call('EXPIRE', key, ttl) end
  end
end
return {1, gen, pos, made, epoch}
"""

# ARGV: base, index, session, checkpoint id ('' = clear), ttl, now, new_epoch.
# Returns {ok, new generation, next position, checkpoints in the old generation, epoch}.
_ROTATE = """
local base = ARGV[1]
local gen = tonumber(redis.call('GET', base .. 'gen') or '0')
local epoch = redis.call('GET', base .. 'epoch') or ARGV[7]
local list = base .. 'g:' .. gen
local ck = base .. 'ck:' .. gen
local ids = base .. 'id:' .. gen
local ng = gen + 1
local nlist = base .. 'g:' .. ng
local nck = base .. 'ck:' .. ng
local nids = base .. 'id:' .. ng
local cut = 0
if ARGV[4] ~= '' then
  local found = redis.call('HGET', ck, ARGV[4])
  if not found then
    return {0, gen, 0, tonumber(redis.call('HGET', ck, 'next') or '0'), epoch}
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
  local known = redis.call('HGETALL', ids)
  for k = 1, #known, 2 do
    if tonumber(known[k + 1]) < cut then redis.call('HSET', nids, known[k], known[k + 1]) end
  end
end
redis.call('SET', base .. 'gen', ng)
redis.call('SET', base .. 'epoch', epoch)
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  for _, key in ipairs({base .. 'gen', base .. 'epoch', nlist, nck, nids, list, ck, ids}) do
    if redis.call('EXISTS', key) == 1 then redis.call('EXPIRE', key, ttl) end
  end
end
return {1, ng, cut, 0, epoch}
"""

# ARGV: base, start. Returns {generation, length, epoch, lines...}.
_LOAD = """
local base = ARGV[1]
local gen = tonumber(redis.call('GET', base .. 'gen') or '0')
local list = base .. 'g:' .. gen
local out = {gen, redis.call('LLEN', list), redis.call('GET', base .. 'epoch') or ''}
for _, item in ipairs(redis.call('LRANGE', list, tonumber(ARGV[2]), -1)) do
  out[#out + 1] = item
end
return out
"""


logger = logging.getLogger("context_manager.store")

# Servers whose persistence settings were read already (by target, without credentials): the
# warning is about the server, so once per process is enough, and a per-request store must not
# ask the server again.
_CHECKED: set[str] = set()
_CHECKED_LOCK = threading.Lock()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _redis() -> Any:
    try:
        import redis
    except ImportError as exc:
        raise ConfigurationError(
            "redis:// targets need redis-py: pip install 'context-manager[stores]'"
        ) from exc
    return redis


def make_client(url: str, *, cluster: bool = False) -> Any:
    """A redis-py client for ``url`` (``RedisCluster`` with ``cluster=True``), with typed
    errors that never show the URL's password. One per process is enough: it pools its
    connections and is thread-safe (:func:`~context_manager.store.connect` shares one)."""
    info = redis_url(url)
    redis = _redis()
    try:
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
        cluster: bool = False,
    ) -> None:
        self._session = check_session_id(session)
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ConfigurationError(f"ttl must be a positive number of seconds, got {ttl!r}")
        if not isinstance(cluster, bool):
            raise ConfigurationError(f"cluster must be True or False, got {cluster!r}")
        if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
            raise ConfigurationError(f"prefix must be a string without braces, got {prefix!r}")
        # Checked before redis-py sees it: a bad port, bracket or database number is a
        # ConfigurationError that does not quote the URL (redis-py's ValueError may).
        self._url_info = redis_url(url)
        redis = _redis()
        # RedisClusterException (no slot covers a key, no node reachable) is not a RedisError.
        self._error: tuple[type[Exception], ...] = (
            redis.RedisError,
            redis.exceptions.RedisClusterException,
        )
        self._lost: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError)
        self._url = url
        self.ttl = ttl
        self.prefix = prefix
        self._base = f"{prefix}{{{self._session}}}:"
        self._index = f"{prefix}sessions"
        self._head: Head | None = None
        self._lock = threading.RLock()
        self._persistence_checked = False
        self._listed = False
        self._keys = [f"{self._base}gen"]
        if client is not None:  # the caller's (or a StoreHandle's): this store never closes it
            self._client = client
        else:
            self._client = make_client(url, cluster=cluster)
        self._owns_client = client is None
        try:
            self._append = self._client.register_script(_APPEND)
            self._rotate = self._client.register_script(_ROTATE)
            self._load = self._client.register_script(_LOAD)
        except (ValueError, *self._error) as exc:
            reason = self._url_info.redact(str(exc))
            raise StoreError(
                f"{self.target}: cannot use Redis: {reason}"
            ) from self._url_info.cause(exc)

    @property
    def session(self) -> str:
        return self._session

    @property
    def target(self) -> str:
        """The URL without credentials or query: ``redis://host:port/db``."""
        return self._url_info.display

    @property
    def head(self) -> Head | None:
        return self._head

    @contextmanager
    def _errors(self, record_ids: tuple[str, ...] | None = None) -> Iterator[None]:
        """Typed errors; ``record_ids`` marks a write, whose outcome a broken connection leaves
        unknown (the script may have run before the reply was lost)."""
        with self._lock:
            try:
                yield
            except self._lost as exc:
                reason = self._url_info.redact(str(exc))
                if record_ids is None:
                    raise StoreError(
                        f"{self.target} session {self._session!r}: Redis is unreachable: {reason}"
                    ) from None
                raise StoreOutcomeUnknownError(
                    f"{self.target} session {self._session!r}: the connection to Redis broke "
                    f"while a write was in flight ({reason}); it may have been applied. Reload "
                    "the session; its records carry ids, so sending the same write again cannot "
                    "store it twice",
                    record_ids=record_ids,
                ) from None
            except self._error as exc:
                reason = self._url_info.redact(str(exc))
                raise StoreError(
                    f"{self.target} session {self._session!r}: Redis failed: {reason}; nothing "
                    "was changed"
                ) from None

    def _check_persistence(self) -> None:
        """Log one warning per server when it would lose acknowledged records on a restart.

        Without ``appendonly yes`` a restarted Redis comes back with its last RDB snapshot (or
        empty, with ``save ""``): every session written since then is gone, and a worker that
        reloads carries on with an empty history. Managed services that refuse ``CONFIG`` are
        not judged (their persistence is the provider's setting).
        """
        self._persistence_checked = True
        with _CHECKED_LOCK:
            if self.target in _CHECKED:  # a per-request store must not ask the server again
                return
            _CHECKED.add(self.target)
        try:
            config = self._client.config_get("appendonly")
            snapshots = self._client.config_get("save")
        except self._error:
            return
        appendonly = _text(config.get("appendonly", config.get(b"appendonly", "")))
        if appendonly == "yes":
            return
        save = _text(snapshots.get("save", snapshots.get(b"save", "")))
        logger.warning(
            "%s has appendonly off: a Redis restart loses every session write since %s. "
            "Set appendonly yes (appendfsync everysec loses at most a second, always nothing); "
            "see docs/guide/stores.md",
            self.target,
            f"the last RDB snapshot (save {save!r})" if save else "it started (no snapshots)",
        )

    def _run_append(
        self, mode: str, pairs: list[str], rids: tuple[str, ...] = ()
    ) -> tuple[int, int, int]:
        if not self._persistence_checked:
            self._check_persistence()
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
            "" if view is None else view.epoch,
            secrets.token_hex(8),
            rids[0] if rids else "",
            *pairs,
        ]
        try:
            with self._errors(rids):
                status, generation, position, made, epoch = self._append(self._keys, args)
        except StoreOutcomeUnknownError:
            if not rids:
                raise
            # The script may have run; its records carry ids, so running it again is safe: it
            # finds the first id and writes nothing (the client reconnects on its own).
            with self._errors(rids):
                status, generation, position, made, epoch = self._append(self._keys, args)
        epoch = epoch.decode() if isinstance(epoch, bytes) else str(epoch)
        if not status:
            assert view is not None
            raise StoreConflictError(
                f"{self.target} session {self._session!r}: another writer changed it since "
                f"this one read it (generation/position {view.generation}/{view.position} -> "
                f"{generation}/{position}{'' if epoch == view.epoch else ', recreated'}); "
                "nothing was written: reload the session and retry"
            )
        self._head = Head(int(generation), int(position), epoch=epoch)
        self._indexed()
        return int(generation), int(position), int(made)

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        pairs: list[str] = []
        rids: list[str] = []
        for record in records:
            pairs.append(dump_record(record)[:-1].decode("utf-8"))
            checkpoint = record.get("id") if record.get("role") == CHECKPOINT else None
            pairs.append("" if checkpoint is None else str(int(checkpoint)))
            rid = record_id(record)
            if rid is not None:
                rids.append(rid)
        # The script indexes a batch by its first record's id (records of a batch are
        # contiguous), which is what a retry of the same batch looks up.
        first = record_id(records[0]) if records else None
        _, end, _ = self._run_append("append", pairs, tuple(rids) if first else ())
        return list(range(end - len(records), end))

    def checkpoint(self) -> int:
        return self._run_append("checkpoint", [])[2]

    def _indexed(self) -> None:
        """List the session in ``<prefix>sessions`` after this store's first write.

        Apart from the write scripts because the index lives in another cluster slot; once per
        store object because its only use is listing (an expired session is dropped from it by
        :meth:`sessions`). A failure here loses no record, so it is not an error of the write.
        """
        if self._listed:
            return
        try:
            self._client.zadd(self._index, {self._session: time.time()})
            self._listed = True
        except self._error as exc:
            logger.debug("%s: sessions index not updated: %s", self.target, exc)

    def _run_rotate(self, checkpoint_id: int | None) -> Head:
        args = [
            self._base,
            self._index,
            self._session,
            "" if checkpoint_id is None else int(checkpoint_id),
            self.ttl or 0,
            time.time(),
            secrets.token_hex(8),
        ]
        with self._errors(()):
            ok, generation, position, count, epoch = self._rotate(self._keys, args)
        if not ok:
            raise CheckpointNotFoundError(
                f"{self.target} session {self._session!r}: checkpoint {checkpoint_id} does not "
                f"exist (the session has {count} checkpoints, ids from 0); pick an existing id"
            )
        epoch = epoch.decode() if isinstance(epoch, bytes) else str(epoch)
        self._head = Head(int(generation), int(position), epoch=epoch)
        self._indexed()
        return self._head

    def revert_to(self, checkpoint_id: int) -> Head:
        return self._run_rotate(checkpoint_id)

    def clear(self) -> None:
        self._run_rotate(None)

    def load(self, start: int = 0) -> Batch:
        with self._errors():
            reply = self._load(self._keys, [self._base, max(0, int(start))])
        epoch = reply[2].decode() if isinstance(reply[2], bytes) else str(reply[2])
        self._head = Head(int(reply[0]), int(reply[1]), epoch=epoch)
        first = self._head.position - (len(reply) - 3)
        return Batch(
            self._head,
            [(first + i, bytes(line) + b"\n") for i, line in enumerate(reply[3:])],
        )

    def load_after(self, head: Head) -> Batch | None:
        batch = self.load(head.position)
        return batch if extends(batch.head, head) else None

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
        """Close the client this store made; a caller's ``client=`` stays open (it is theirs)."""
        if self._owns_client:
            with self._errors():
                self._client.close()

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
