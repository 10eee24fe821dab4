"""The Redis backend's keys as read back: which names from a scan or the sessions index are a
session's, where a scan of them goes, and the errors a script's reply stands for (``redis.py``
holds the flows).

Why apart: keys are data that anyone with access to the server can edit, so a name read back is
checked here before it becomes a session id or a generation number. A listing skips a name it
cannot use with a warning naming it, as a restore skips a damaged log line (docs/security.md):
one stray key (``<prefix>{s}:g:old``, a non-UTF-8 member of ``<prefix>sessions``) must not make
``sessions()`` or ``generations()`` fail for every other entry with a ``UnicodeDecodeError`` or
``ValueError``. A session's own ``gen`` key is not skipped: every read and write of the session
depends on it, so a damaged one is :class:`StoreCorruptionError` (``_redis_lua.GENERATION``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

from ..errors import ConfigurationError, StoreCorruptionError, StoreError
from ..messages.nesting import short_repr
from .protocol import check_session_id

__all__ = ["generations", "pattern", "scan", "script_reply", "session_ids", "text"]

logger = logging.getLogger("context_manager.store")

# A generation list's name after the session's prefix, as the scripts write it (Lua prints a
# number of at most 14 digits without exponent or leading zeros).
_GENERATION = re.compile(rb"g:(0|[1-9][0-9]{0,13})")
_GLOB = re.compile(r"([*?\[\]\\])")


def text(value: Any) -> str:
    """A reply as text (an epoch, a setting): redis-py gives bytes, as replies are not decoded."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _raw(name: bytes | str) -> bytes:
    return name.encode() if isinstance(name, str) else bytes(name)


def pattern(start: str) -> str:
    """A ``SCAN`` pattern for the keys whose names start with ``start``: a key prefix may hold
    glob characters (``*?[]\\``), which would match other sessions' keys unescaped."""
    return _GLOB.sub(r"\\\1", start) + "*"


def scan(client: Any, match: str) -> dict[str, Any]:
    """``scan_iter``'s arguments for one session's keys matching ``match``: on Redis Cluster only
    the node of its hash tag is scanned, as a scan of every primary fails while any one is down,
    even for a session whose node is up (a delete did not need the other nodes)."""
    node = getattr(client, "get_node_from_key", None)
    return {"match": match, "count": 1000, **({"target_nodes": node(match)} if node else {})}


def session_ids(members: Iterable[bytes | str], where: str) -> list[str]:
    """The members of the sessions index ``where`` that are session ids (others skipped, with a
    warning: no store can open them)."""
    found = []
    for member in members:
        try:
            found.append(check_session_id(_raw(member).decode()))
        except (UnicodeDecodeError, ConfigurationError):
            logger.warning("%s: skipping %s: not a session id (damaged)", where, short_repr(member))
    return found


def generations(keys: Iterable[bytes | str], base: str, where: str) -> list[int]:
    """The generation numbers of the generation lists among ``keys`` (names starting with
    ``base``, the session's prefix); any other name is skipped with a warning."""
    found = set()
    start = len(base.encode())
    for key in keys:
        match = _GENERATION.fullmatch(_raw(key), start)
        if match is None:
            logger.warning(
                "%s: skipping key %s: not a generation (damaged)", where, short_repr(key)
            )
        else:
            found.add(int(match.group(1)))
    return sorted(found)


def script_reply(where: str, reply: Any) -> Any:
    """A script's ``reply``, or the error it stands for (``_redis_lua.py``): ``{'damaged', key}``
    when ``key`` holds a number this store never writes, ``{'changed'}`` when a delete found the
    session's generation moved by more than it may loop over."""
    if isinstance(reply, list) and reply[:1] == [b"damaged"]:
        key = _raw(reply[1]).decode(errors="replace")
        raise StoreCorruptionError(
            f"{where}: key {short_repr(key, 200)} holds a number this store never writes (a "
            "non-negative integer in range): the session's keys were edited or damaged; fix them "
            "or delete the session",
            path=key,
        )
    if reply == [b"changed"]:
        raise StoreError(
            f"{where}: its generation moved by over 1000 while it was being deleted; nothing was "
            "deleted: delete it again"
        )
    return reply
