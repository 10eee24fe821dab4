"""From a target (a path or a URL) to a store: the one place that knows the URL schemes.

=============================  ==========================================================
``path/to/log.jsonl``          JSONL file (``session=`` given, or a directory:
                               ``path/<session>/context.jsonl``)
``sqlite:///app.db``           SQLite file ``app.db`` (four slashes for an absolute path;
                               no ``?query``, ``#fragment`` or ``:memory:``)
``redis://host:6379/0``        Redis (``rediss://`` for TLS)
``postgresql://u:p@host/db``   PostgreSQL (``postgres://`` too)
=============================  ==========================================================

A libpq key=value string (``host=db password=... dbname=chat``) is neither: it is refused
(:func:`plain_path`) rather than made a directory named after its password, and so is a
URL that lost a slash (``postgresql:/...``).

Database targets hold many sessions; ``session=`` picks one (default ``"default"``). Backend
modules (and their client libraries) are imported only when their scheme is used.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import stat
from collections.abc import Mapping
from typing import Any

from .._config import check_flag
from ..errors import ConfigurationError
from ..messages.nesting import short_repr
from ._files import check_path, sessions_root, stat_or_none
from ._urls import describe, libpq_target, redis_url, sqlite_file, sqlite_url
from .handle import StoreHandle, jsonl_handle, shared_handle
from .jsonl import SESSION_FILE, FsyncMode, JsonlLog
from .log import SessionLog, StoreLog
from .protocol import DEFAULT_SESSION, Store
from .warm import SessionCache

__all__ = ["connect", "open_log", "open_store"]

_SCHEMES = ("sqlite://", "redis://", "rediss://", "postgresql://", "postgres://")
#: The URL schemes of the database backends (anything else is a JSONL path).
SCHEMES = _SCHEMES


def open_store(
    target: str | os.PathLike[str] | Store | StoreHandle,
    *,
    session: str | None = None,
    fsync: FsyncMode = "checkpoint",
    **options: Any,
) -> Store:
    """The record-level store for ``target`` and ``session`` (a Store is returned as is).

    ``options`` go to the backend: ``ttl`` / ``prefix`` (Redis), ``prefix`` / ``create``
    (PostgreSQL), ``prefix`` / ``busy_timeout`` (SQLite), ``strict`` and ``integrity`` (JSONL).
    """
    if isinstance(target, StoreHandle):
        if options:
            raise ConfigurationError(
                f"options go to connect(), not to a session of its handle: {sorted(options)}"
            )
        return target.session(session if session is not None else DEFAULT_SESSION)
    if isinstance(target, Store) and not isinstance(target, (str, os.PathLike)):
        return target
    if not isinstance(target, (str, os.PathLike)):
        raise ConfigurationError(
            f"a store target is a path or a URL ({', '.join(_SCHEMES)}), got {target!r}"
        )
    text = os.fspath(target)
    if isinstance(text, bytes):
        raise ConfigurationError(f"a store target must be text, got {target!r}")
    name = session if session is not None else DEFAULT_SESSION
    if options.get("integrity") and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text):
        raise ConfigurationError("integrity= (a per-line CRC) is for JSONL logs only")
    if text.startswith("sqlite://"):
        from .sqlite import SqliteStore

        return SqliteStore(sqlite_path(text), name, fsync=fsync, **known(SqliteStore, options))
    if text.startswith(("redis://", "rediss://")):
        from .redis import RedisStore

        return RedisStore(text, name, **known(RedisStore, options))
    if text.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(text, name, **known(PostgresStore, options))
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text):
        raise ConfigurationError(
            f"{describe(text)}: unknown scheme; use a path or one of {_SCHEMES}"
        )
    check_path(plain_path(text) if isinstance(target, str) else text)
    strict = options.pop("strict", False)
    integrity = options.pop("integrity", False)
    if options:
        raise ConfigurationError(f"unknown options for a JSONL store: {sorted(options)}")
    if session is None and (text.endswith(("/", os.sep)) or os.path.isdir(text)):
        session = DEFAULT_SESSION  # a directory of sessions
    return JsonlLog(
        text,
        fsync=fsync,
        strict=strict,
        session=session,
        detect_conflicts=True,
        integrity=integrity,
    )


def connect(
    target: str | os.PathLike[str] | StoreHandle,
    *,
    fsync: FsyncMode = "checkpoint",
    cache: SessionCache | None = None,
    **options: Any,
) -> StoreHandle:
    """Open ``target``'s shared connections once (per process); ``.session(id)`` per request.

    PostgreSQL: a :class:`~.postgres.ConnectionPool` (``max_idle`` idle connections kept, 8 by
    default); Redis: one client (``cluster=True`` for Redis Cluster), or the caller's own
    ``client=``, which closing the handle leaves open; SQLite: one connection
    per thread; JSONL: nothing to share. ``cache``: a :class:`~.warm.SessionCache` that keeps
    the managers of closed sessions, so the next open of a session reads only what was written
    since. Every other option is the backend's, as for :func:`open_store`, and applies to each
    session. The caller owns the handle (and the cache) and closes it.
    """
    if isinstance(target, StoreHandle):
        return target
    if cache is not None and not isinstance(cache, SessionCache):
        raise ConfigurationError(f"cache must be a SessionCache, got {type(cache).__name__}")
    probe = os.fspath(target) if isinstance(target, (str, os.PathLike)) else target
    # A handle outlives the working directory it was made in (a server may chdir later): its
    # paths are made absolute, or a later request would open another, empty database or root.
    if isinstance(probe, str) and probe.startswith("sqlite://"):
        from .sqlite import ThreadConnections

        path = os.path.abspath(sqlite_path(probe))
        shared = ThreadConnections(
            path, busy_timeout=options.get("busy_timeout", 30.0), fsync=fsync
        )
        url = sqlite_url(path)
        return shared_handle(
            url,
            lambda s: open_store(url, session=s, fsync=fsync, connections=shared, **options),
            shared.close,
            cache,
        )
    if isinstance(probe, str) and probe.startswith(("redis://", "rediss://")):
        from ._redis_client import HandleShare, make_client

        # A caller's ``client=`` is used as it is and stays open when the handle closes.
        mine = options.pop("client", None)
        cluster = check_flag("cluster", options.get("cluster", False))
        client = mine if mine is not None else make_client(probe, cluster=cluster)
        share = HandleShare()

        def close() -> None:
            share.closed = True  # the client reconnects by itself: its stores must refuse
            if mine is None:
                client.close()

        return shared_handle(
            redis_url(probe).display,
            lambda s: open_store(probe, session=s, client=client, shared=share, **options),
            close,
            cache,
        )
    if isinstance(probe, str) and probe.startswith(("postgresql://", "postgres://")):
        from .postgres import ConnectionPool

        pool_options = {k: options.pop(k) for k in ("connect_timeout", "prepare") if k in options}
        pool = ConnectionPool(probe, max_idle=options.pop("max_idle", 8), **pool_options)
        return shared_handle(
            pool.target,
            lambda s: open_store(probe, session=s, pool=pool, **pool_options, **options),
            pool.close,
            cache,
        )
    if not isinstance(probe, str):
        raise ConfigurationError(
            f"connect() takes a path or a URL ({', '.join(_SCHEMES)}), got {target!r:.80}"
        )
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", probe):
        raise ConfigurationError(
            f"{describe(probe)}: unknown scheme; use a path or one of {_SCHEMES}"
        )
    root = check_path(plain_path(probe) if isinstance(target, str) else probe).absolute()
    found = stat_or_none(root, "inspect")
    if found is not None and not stat.S_ISDIR(found.st_mode):
        raise ConfigurationError(f"{root}: connect() needs a directory of JSONL sessions")
    sessions_root(root, SESSION_FILE)
    return jsonl_handle(
        str(root), lambda s: open_store(root, session=s, fsync=fsync, **options), cache
    )


def known(store: type, options: dict[str, Any]) -> dict[str, Any]:
    """``options``, if ``store``'s constructor takes each of them by name; else a
    ``ConfigurationError`` listing those it does not (a backend's option given to another,
    such as ``ttl=`` to SQLite, raised a bare ``TypeError``)."""
    takes = _keywords(store)
    unknown = sorted(k for k in options if k not in takes)
    if unknown:
        raise ConfigurationError(
            f"unknown options for a {store.__name__}: {unknown}; it takes {sorted(takes)}"
        )
    return options


@functools.cache
def _keywords(store: type) -> frozenset[str]:
    """The keyword options a store class's constructor names (its signature: a constant)."""
    params = inspect.signature(store).parameters.values()
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return frozenset(p.name for p in params if p.kind in kinds) - {"self", "url", "session", "path"}


#: A database scheme with a slash or both missing (``postgresql:/u:pw@db/chat``): not a path.
_SCHEME_TYPO = re.compile(
    "(" + "|".join(re.escape(s.removesuffix("://")) for s in _SCHEMES) + "):(?!//)", re.IGNORECASE
)


def plain_path(text: str) -> str:
    """``text``, refused when it reads as a database target rather than a path: a libpq
    key=value connection string, or a URL whose scheme lost a slash.

    Taken as a path, ``host=db user=app password=pw dbname=chat`` became a directory named after
    the password (and ``store.target``, ``repr`` and ``sessions list`` showed it), and so did
    ``postgresql:/app:pw@db/chat``, whose sessions then lived in a local directory no other
    worker reads. The error names the URL to write, never the password. Only text is checked:
    a ``Path`` object is a path by the caller's own word.
    """
    typo = _SCHEME_TYPO.match(text)
    if typo is not None:
        scheme = typo[1].lower()
        raise ConfigurationError(
            f"a target starting with '{typo[0]}' without '//' is not a path: write the URL as "
            f"{scheme}://... (a directory whose name reads like one: give it as ./name)"
        )
    url = libpq_target(text)
    if url is not None:
        raise ConfigurationError(
            "a libpq key=value connection string (host=... dbname=...) is not a store target; "
            f"for PostgreSQL write it as a URL: {url} (a password goes after the user, "
            "percent-encoded: postgresql://user:password@host/db). A directory whose name "
            "reads like one: give it as ./name"
        )
    return text


def sqlite_path(text: str) -> str:
    """The file a ``sqlite:///...`` URL names (:func:`~._urls.sqlite_file`: relative after 3
    slashes, absolute after 4; no query, fragment or ``:memory:``)."""
    path = sqlite_file(text)
    check_path(path)  # NUL: a typed error, not ValueError from os
    return path


def open_log(
    target: str | os.PathLike[str] | Store | StoreHandle,
    *,
    session: str | None = None,
    fsync: FsyncMode = "checkpoint",
    strict: bool = False,
    store_options: dict[str, Any] | None = None,
) -> SessionLog:
    """The session log a manager writes through: the JSONL log itself, else a ``StoreLog``."""
    if store_options is not None and not (
        isinstance(store_options, Mapping) and all(isinstance(k, str) for k in store_options)
    ):
        raise ConfigurationError(
            f"store_options must be a dict of option names, got {short_repr(store_options, 60)}"
        )
    options = dict(store_options or {})
    is_path = isinstance(target, (str, os.PathLike)) and not os.fspath(target).startswith(_SCHEMES)
    if isinstance(target, StoreHandle):
        is_path = False
    if is_path:
        options["strict"] = strict
    store = open_store(target, session=session, fsync=fsync, **options)
    if isinstance(store, JsonlLog):
        if not is_path:
            store.strict = store.strict or strict
        return store
    return StoreLog(store, strict=strict)
