"""The steps of the SQL flows (``_sql.py``, ``_sql_tail.py``) and how a stored body becomes a
line: what a driver (``_sqldb.py``, ``postgres_async.py``) performs, kept apart from the flows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import StoreError


class ConnectionLost(StoreError):
    """Raised by a transaction whose connection broke mid-way: a write in flight may or may not
    have committed. :meth:`SqlFlows._write` resolves it (reconnect, send again) or turns it into
    ``StoreOutcomeUnknownError``."""


@dataclass(frozen=True, slots=True)
class Sql:
    """Run one statement (``many``: once per row of ``params``); the result is its rows."""

    text: str
    params: Sequence[Any] = ()
    many: bool = False


class Reconnect:
    """Replace the connection (the old one broke); a failure raises ``StoreError``."""


RECONNECT = Reconnect()


def line_of(body: str | bytes) -> bytes:
    """A stored body as the line a reader replays (newline-terminated bytes)."""
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    return data if data.endswith(b"\n") else data + b"\n"
