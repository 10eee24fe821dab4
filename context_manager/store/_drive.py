"""One control flow, two drivers: how every store operation is written once for sync and async.

A store operation (an append, a load, a revert, a journal's commit) is a generator, a *flow*,
that decides everything: the statements or script calls, the order, the checks, the retries,
the typed errors. It yields a *step* (an SQL statement with its parameters, a Redis script
call, a record-level store operation) whenever it needs the outside world, and receives the
step's result, or the step's failure thrown in at the ``yield``. :func:`drive` performs steps
by blocking on a sync client; :func:`adrive` awaits them on an async client. So ``try`` /
``except`` / ``finally`` in a flow (a rollback, a reconnect-once, a rebuild after a failed
append) behave the same under both drivers, and a backend's SQL, Lua and record rules exist
once. The pattern is ``compaction/_flow.py``'s; the steps here are plain data that each
backend's driver knows how to perform (its performer), not callables.

A performer turns its client's exceptions into :class:`Failed` (with ``lost`` saying whether the
connection broke, which a flow may not judge from the exception alone), so flows never name a
client library's exception types.
"""

from __future__ import annotations

from .._flows import Flow, adrive, drive
from ..errors import StoreError

__all__ = ["Failed", "Flow", "adrive", "drive"]


class Failed(StoreError):
    """A step's client raised ``error``; ``lost``: the connection is broken (a write in flight
    may or may not have been applied). Thrown into the flow, which turns it into a typed error
    with the backend's wording; it never reaches a caller."""

    def __init__(self, error: BaseException, *, lost: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.lost = lost
