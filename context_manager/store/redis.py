"""Redis backend (redis-py): sessions shared by workers, with an optional TTL per session.

``redis://host:6379/0`` (``rediss://`` for TLS). Each generation of a session is one Redis list
of JSON lines, ``<prefix>{<session>}:g:<N>``; ``<prefix>{<session>}:gen`` holds the current
generation, ``<prefix>{<session>}:epoch`` a random value drawn when the session's keys are made
(so a session rebuilt after expiring is told apart from the one a stale writer saw),
``<prefix>{<session>}:ck:<N>`` maps checkpoint ids to positions, ``<prefix>{<session>}:id:<N>``
the first record id of each write to its position (exactly-once retries), and the lists
``s:<N>`` and ``m:<N>`` hold each record's running sums and each record that is no message
(what an open reads instead of the older records, ``_redis_tail.py``); the
sorted set ``<prefix>sessions`` lists sessions by last write. All of a session's keys share
the hash tag ``{<session>}``, so they live in one cluster slot, and ``delete`` removes them in
one script.

Every write is one Lua script (Redis runs scripts atomically): it checks the writer's view,
pushes the records and refreshes the TTL, so appends from many workers never interleave and a
stale writer gets ``StoreConflictError``. With ``ttl=`` every key of the session expires that many
seconds after its last write (old generations too); an expired session disappears from
:meth:`RedisStore.sessions`. Durability is the server's: with ``appendonly yes`` and
``appendfsync always`` an acknowledged record survives a server crash; a killed *worker* never
loses an acknowledged record (the script ran before the reply).

Every operation is written once as a flow (``_drive.py``) over three kinds of step (a command,
a pipeline of ``EXISTS``, a key scan); :class:`RedisStore` performs them on redis-py's sync
client and ``redis_async.AsyncRedisStore`` on ``redis.asyncio``, so the checks, the
reconnect-once rule and the typed errors are the same code. The scripts are ``_redis_lua.py``;
a flow runs one as ``EVALSHA``, and as ``EVAL`` when the server no longer has it
(:meth:`RedisFlows._script`), both on the session's node only.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .._config import check_flag
from ..errors import (
    CheckpointNotFoundError,
    ConfigurationError,
    StoreConflictError,
    StoreError,
    StoreOutcomeUnknownError,
)
from . import _redis_keys, _redis_lua
from ._drive import Failed, Flow, drive
from ._line_ends import LineEnds
from ._redis_client import HandleShare, make_client, redis_module
from ._redis_keys import text as _text
from ._redis_tail import UNKNOWN, RedisRows, Sums, continued, head_sums
from ._tail_read import load_older, load_tail
from ._urls import redis_url
from .protocol import DEFAULT_SESSION, Batch, Head, Tail, check_session_id, extends
from .records import CHECKPOINT, dump_record, indexed_checkpoint, record_id

__all__ = ["RedisFlows", "RedisStore"]

_T = TypeVar("_T")

logger = logging.getLogger("context_manager.store")

# Servers whose persistence settings were read already (by target, without credentials): the
# warning is about the server, so once per process is enough, and a per-request store must not
# ask the server again.
_CHECKED: set[str] = set()
_CHECKED_LOCK = threading.Lock()

_CHECKPOINT = json.dumps({"role": CHECKPOINT, "id": 0}).encode()  # a line as APPEND writes

#: What the steps call on a client.
_CLIENT_METHODS = ("evalsha", "eval", "pipeline", "scan_iter", "close")


@dataclass(frozen=True, slots=True)
class Script:
    """Run the script ``name`` (``_redis_lua.SCRIPTS``) with the session's key and ``args``:
    what a flow asks :meth:`RedisFlows._call` for, performed as ``EVALSHA`` / ``EVAL``."""

    name: str
    args: list[Any]


@dataclass(frozen=True, slots=True)
class Command:
    """Call the client's command method ``name`` with ``args``."""

    name: str
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Exists:
    """``EXISTS`` for each key in one pipeline; the replies in order."""

    keys: list[str]


@dataclass(frozen=True, slots=True)
class Scan:
    """Every key matching ``match`` (``SCAN``), as a list."""

    match: str


class RedisFlows:
    """One session in Redis, as flows; a subclass holds the client and performs the steps."""

    def __init__(
        self,
        url: str,
        session: str = DEFAULT_SESSION,
        *,
        prefix: str = "cm:",
        ttl: int | None = None,
        cluster: bool = False,
        shared: HandleShare | None = None,
    ) -> None:
        self._session = check_session_id(session)
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ConfigurationError(f"ttl must be a positive number of seconds, got {ttl!r}")
        check_flag("cluster", cluster)
        if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
            raise ConfigurationError(f"prefix must be a string without braces, got {prefix!r}")
        # Checked before redis-py sees it: a bad port, bracket or database number is a
        # ConfigurationError that does not quote the URL (redis-py's ValueError may).
        self._url_info = redis_url(url)
        redis = redis_module()
        # RedisClusterException (no slot covers a key, no node reachable) is not a RedisError.
        self._error: tuple[type[Exception], ...] = (
            redis.RedisError,
            redis.exceptions.RedisClusterException,
        )
        self._lost: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError)
        self._noscript: type[Exception] = redis.exceptions.NoScriptError
        self._url = url
        self.ttl = ttl
        self.prefix = prefix
        self._base = f"{prefix}{{{self._session}}}:"
        self._index = f"{prefix}sessions"
        self._head: Head | None = None
        # The sums at the head (``_redis_tail``), which this store's next records continue.
        self._sums = UNKNOWN
        self._persistence_checked = self._reached = self._listed = False
        # What the stores of one handle share (None: a store of its own).
        self._shared = shared
        self._keys = [f"{self._base}gen"]

    def _use(self, client: Any, owned: bool) -> None:
        """Perform the steps on ``client`` (sync or async), closed by the store if ``owned``.
        One that is no redis-py client, a pipeline or one that decodes replies (records are
        read as bytes) is refused here, not at its first command."""
        kind, settings = type(client).__name__, getattr(client, "get_connection_kwargs", None)
        methods = all(callable(getattr(client, name, None)) for name in _CLIENT_METHODS)
        if "Pipeline" in kind or not methods:
            raise ConfigurationError(
                f"client must be a redis-py client (redis.Redis, redis.cluster.RedisCluster or "
                f"their redis.asyncio twins), got {kind}"
            )
        if callable(settings) and settings().get("decode_responses"):
            raise ConfigurationError("client must leave replies as bytes (decode_responses=False)")
        self._client, self._owns_client = client, owned

    @property
    def session(self) -> str:
        return self._session

    def _refuse_if_handle_closed(self) -> Any:
        """The client to perform a step on, unless the handle this store came from is closed."""
        if self._shared is not None and self._shared.closed:
            raise StoreError(f"{self.target}: this store's handle is closed; nothing was done")
        return self._client

    @property
    def target(self) -> str:
        """Where the records go, without credentials or options: ``redis://host:port/db``."""
        return self._url_info.display

    @property
    def head(self) -> Head | None:
        return self._head

    def _failure(self, exc: BaseException) -> Failed:
        """What a performer raises for a client error."""
        return Failed(exc, lost=isinstance(exc, self._lost))

    def _call(self, step: Any, record_ids: tuple[str, ...] | None = None) -> Flow[Any]:
        """Perform ``step`` with typed errors; ``record_ids`` marks a write, whose outcome a
        broken connection leaves unknown (the script may have run before the reply was lost).
        redis-py connects and authenticates at a store's first command, so before its first
        write a store that never reached Redis reads (``EXISTS``, on the session's node): a
        refused connection or a wrong password fails there, with nothing sent."""
        try:
            if record_ids is not None and not self._reached:
                yield Command("exists", (self._keys[0],))
                self._reached = True
            reply = (yield from self._script(step)) if isinstance(step, Script) else (yield step)
            self._reached = True
            return reply
        except Failed as failed:
            reason = self._url_info.redact(str(failed.error))
            if not failed.lost:
                raise StoreError(
                    f"{self.target} session {self._session!r}: Redis failed: {reason}; nothing "
                    "was changed"
                ) from None
            if record_ids is None or not self._reached:
                raise StoreError(
                    f"{self.target} session {self._session!r}: Redis is unreachable: {reason}"
                    + ("" if record_ids is None else "; nothing was changed")
                ) from None
            raise StoreOutcomeUnknownError(
                f"{self.target} session {self._session!r}: the connection to Redis broke "
                f"while a write was in flight ({reason}); it may have been applied. Reload "
                "the session; its records carry ids, so sending the same write again cannot "
                "store it twice",
                record_ids=record_ids,
            ) from None

    def _script(self, step: Script) -> Flow[Any]:
        """``EVALSHA``, and on ``NOSCRIPT`` ``EVAL`` with the script's text.

        The server's script cache is empty after a restart, ``SCRIPT FLUSH`` or on a node new
        to the cluster. Both commands are routed by their first key, the session's, so on
        Redis Cluster they reach the session's node only: redis-py's own reload (a registered
        script's ``SCRIPT LOAD``) goes to every primary and fails while any one is down, even
        for the sessions whose node is up. ``NOSCRIPT`` means the script did not run, so running
        it now cannot apply a write twice; ``EVAL`` also caches it on that node.
        """
        keys_and_args = (len(self._keys), *self._keys, *step.args)
        try:
            reply = yield Command("evalsha", (_redis_lua.SHAS[step.name], *keys_and_args))
        except Failed as failed:
            if not isinstance(failed.error, self._noscript):
                raise
            reply = yield Command("eval", (_redis_lua.SCRIPTS[step.name], *keys_and_args))
        return _redis_keys.script_reply(f"{self.target} session {self._session!r}", reply)

    def _check_persistence(self) -> Flow[None]:
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
            config = yield Command("config_get", ("appendonly",))
            snapshots = yield Command("config_get", ("save",))
        except Failed:
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
        self, mode: str, per_record: list[str], rids: tuple[str, ...], sums: Sums
    ) -> Flow[tuple[int, int, int]]:
        """Run APPEND with ``per_record``; ``sums``: the sums after it, this store's after."""
        if not self._persistence_checked:
            yield from self._check_persistence()
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
            *per_record,
        ]
        step = Script("append", args)
        try:
            status, generation, position, made, epoch, *held = yield from self._call(step, rids)
        except StoreOutcomeUnknownError:
            if not rids:
                raise
            # The script may have run; its records carry ids, so running it again is safe: it
            # finds the first id and writes nothing (the client reconnects on its own).
            status, generation, position, made, epoch, *held = yield from self._call(step, rids)
        epoch = _text(epoch)
        if not status:
            assert view is not None
            raise StoreConflictError(
                f"{self.target} session {self._session!r}: another writer changed it since "
                f"this one read it (generation/position {view.generation}/{view.position} -> "
                f"{generation}/{position}{'' if epoch == view.epoch else ', recreated'}); "
                "nothing was written: reload the session and retry"
            )
        self._head = Head(int(generation), int(position), epoch=epoch)
        # (a retry's sums are those stored after the batch it found; a blind write has none)
        retried = head_sums(self._head.position, held[0]) if status == 2 else None
        self._sums = retried if retried is not None else sums if view is not None else UNKNOWN
        yield from self._indexed()
        return int(generation), int(position), int(made)

    def _append(self, records: Sequence[Mapping[str, Any]]) -> Flow[list[int]]:
        lines = [dump_record(record)[:-1] for record in records]
        entries, after = continued(self._sums, lines)
        args: list[str] = []
        rids: list[str] = []
        for record, raw, entry in zip(records, lines, entries, strict=True):
            checkpoint = indexed_checkpoint(record)
            args += (raw.decode("utf-8"), "" if checkpoint is None else str(checkpoint), entry)
            rid = record_id(record)
            if rid is not None:
                rids.append(rid)
        # The script indexes a batch by its first record's id (records of a batch are
        # contiguous), which is what a retry of the same batch looks up.
        first = record_id(records[0]) if records else None
        rids_sent = tuple(rids) if first else ()
        _, end, _ = yield from self._run_append("append", args, rids_sent, after)
        return list(range(end - len(records), end))

    def _checkpoint(self) -> Flow[int]:
        entries, after = continued(self._sums, [_CHECKPOINT])  # (the script writes the line)
        return (yield from self._run_append("checkpoint", entries, (), after))[2]

    def _indexed(self) -> Flow[None]:
        """List the session in ``<prefix>sessions`` after this store's first write.

        Apart from the write scripts because the index lives in another cluster slot; once per
        store object, and once per session and epoch for the stores of one handle, because its
        only use is listing (an expired session is dropped from it by :meth:`sessions`). A
        failure here loses no record, so it is not an error of the write.
        """
        shared = self._shared.listed if self._shared is not None else None
        epoch = self._head.epoch if self._head is not None else ""
        if self._listed or (shared is not None and shared.get(self._session) == epoch):
            return  # a session rebuilt after expiring or being deleted has a new epoch
        try:
            yield Command("zadd", (self._index, {self._session: time.time()}))
            self._listed = True
            if shared is not None:
                shared[self._session] = epoch
        except Failed as failed:
            logger.debug("%s: sessions index not updated: %s", self.target, failed.error)

    def _run_rotate(self, checkpoint_id: int | None) -> Flow[Head]:
        args = [
            self._base,
            self._index,
            self._session,
            "" if checkpoint_id is None else int(checkpoint_id),
            self.ttl or 0,
            time.time(),
            secrets.token_hex(8),
        ]
        ok, generation, position, count, epoch, *sums = yield from self._call(
            Script("rotate", args), ()
        )
        if not ok:
            raise CheckpointNotFoundError(
                f"{self.target} session {self._session!r}: checkpoint {checkpoint_id} does not "
                f"exist (the session has {count} checkpoints, ids from 0); pick an existing id"
            )
        self._head = Head(int(generation), int(position), epoch=_text(epoch))
        self._sums = head_sums(self._head.position, sums[0])
        yield from self._indexed()
        return self._head

    def _delete(self) -> Flow[bool]:
        """Delete the session's keys in one script (its slot), named by a scan (in steps: the
        server never stalls) and the gen read before it (``_redis_lua.DELETE``), then its index
        entry; whether any key existed. The index is put back when a writer rebuilt the session
        in between (it listed it before this removal)."""
        (start,) = yield from self._call(Command("mget", (self._keys,)))  # None if no string
        found = yield from self._call(Scan(_redis_keys.pattern(self._base)))
        deleted = yield from self._call(Script("delete", [self._base, start or b"", *found]), ())
        self._head, self._listed, self._sums = Head(0, 0), False, head_sums(0, None)
        if self._shared is not None:
            self._shared.listed.pop(self._session, None)
        try:  # a failure here deletes nothing less: sessions() skips a listed session gone
            yield Command("zrem", (self._index, self._session))
            if (yield Exists([f"{self._base}gen"]))[0]:
                yield Command("zadd", (self._index, {self._session: time.time()}))
        except Failed as failed:
            logger.debug("%s: sessions index not updated: %s", self.target, failed.error)
        return bool(deleted)

    def _load(self, start: int = 0) -> Flow[Batch]:
        """The records from ``start`` on (below 0: that many newest ones)."""
        reply = yield from self._call(Script("load", [self._base, int(start)]))
        self._head = Head(int(reply[0]), int(reply[1]), epoch=_text(reply[2]))
        self._sums = head_sums(self._head.position, reply[3])
        first = self._head.position - (len(reply) - 4)
        return Batch(
            self._head,
            [(first + i, bytes(line) + b"\n") for i, line in enumerate(reply[4:])],
        )

    def _read_script(self, name: str, args: list[Any]) -> Flow[Any]:
        """Run read script ``name`` (``_redis_lua.ROWS``, ``BEFORE``) on this session."""
        return (yield from self._call(Script(name, [self._base, *args])))

    def _load_after(self, head: Head) -> Flow[Batch | None]:
        batch = yield from self._load(head.position)
        return batch if extends(batch.head, head) else None

    def _sessions(self) -> Flow[list[str]]:
        members = yield from self._call(Command("zrange", (self._index, 0, -1)))
        names = _redis_keys.session_ids(members, f"{self.target} {self._index}")
        alive = yield from self._call(Exists([f"{self.prefix}{{{name}}}:gen" for name in names]))
        gone = [name for name, ok in zip(names, alive, strict=True) if not ok]
        if gone:  # expired (TTL): drop from the index
            yield from self._call(Command("zrem", (self._index, *gone)))
        return sorted(name for name, ok in zip(names, alive, strict=True) if ok)

    def _generations(self) -> Flow[list[int]]:
        keys = yield from self._call(Scan(_redis_keys.pattern(f"{self._base}g:")))
        return _redis_keys.generations(keys, self._base, f"{self.target} {self._session!r}")


class RedisStore(RedisFlows):
    """One session in Redis (redis-py's sync client)."""

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
        self._lock = threading.RLock()
        # The caller's (or a StoreHandle's) client: this store never closes it.
        owned = client is None
        self._use(make_client(url, cluster=cluster) if owned else client, owned)

    def _perform(self, step: Command | Exists | Scan) -> Any:
        client = self._refuse_if_handle_closed()
        try:
            if isinstance(step, Command):
                return getattr(client, step.name)(*step.args)
            if isinstance(step, Exists):
                pipe = client.pipeline(transaction=False)
                for key in step.keys:
                    pipe.exists(key)
                return pipe.execute()
            return list(client.scan_iter(**_redis_keys.scan(client, step.match)))
        except self._error as exc:
            raise self._failure(exc) from None

    def _run(self, flow: Flow[_T]) -> _T:
        with self._lock:
            return drive(flow, self._perform)

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        return self._run(self._append(records))

    def checkpoint(self) -> int:
        return self._run(self._checkpoint())

    def revert_to(self, checkpoint_id: int) -> Head:
        return self._run(self._run_rotate(checkpoint_id))

    def clear(self) -> None:
        self._run(self._run_rotate(None))

    def delete(self) -> bool:
        """Delete the session for good: every generation and offloaded result (one script)."""
        return self._run(self._delete())

    def load(self, start: int = 0) -> Batch:
        return self._run(self._load(max(0, int(start))))

    def load_after(self, head: Head) -> Batch | None:
        return self._run(self._load_after(head))

    def load_tail(self, ends: LineEnds, reach: int) -> Tail | None:
        """The newest records, as far as ``reach`` stored tokens (``_tail_read.load_tail``)."""
        return self._run(load_tail(RedisRows(self), ends, reach))

    def load_older(self, tail: Tail) -> list[tuple[int, bytes, bool]]:
        """The message records ``tail`` left unread, read when the manager needs them."""
        return self._run(load_older(RedisRows(self, tail.head), tail))

    def sessions(self) -> list[str]:
        return self._run(self._sessions())

    def generations(self) -> list[int]:
        """Every generation that still holds records (old ones are kept by revert and clear)."""
        return self._run(self._generations())

    def close(self) -> None:
        """Close the client this store made; a caller's ``client=`` stays open (it is theirs)."""
        if self._owns_client:
            self._run(self._call(Command("close", ())))

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
