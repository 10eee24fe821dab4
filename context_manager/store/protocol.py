"""The record-level store contract every backend (JSONL, SQLite, Redis, PostgreSQL) satisfies.

A *store* holds the records of one session (one conversation, named by a session id) in order,
and knows the other sessions of the same target (a directory, a database, a Redis prefix). It
does not know messages: the session layer encodes them into records (``records.py``) and replays
them, so every backend receives the same records and restores through the same reader.

Vocabulary:

- a *record* is a JSON object (``{"role": ..., ...}``), the line format of ``records.py``;
- a *position* numbers the records of a generation from 0 (JSONL: the 0-based line number);
- a *generation* is one version of the session's history: ``revert_to`` and ``clear`` start a
  new one and keep the old one (JSONL: the old file is rotated to ``context_N.jsonl``);
- the *head* is where the next record goes: ``(generation, position)``.

Concurrency contract (several workers, processes or machines, on one session): **a writer whose
view is stale gets :class:`~context_manager.errors.StoreConflictError` and retries.** A store
object remembers the head it last saw (by :meth:`Store.load` or its own writes); ``append`` and
``checkpoint`` succeed only when the session's head is still that one, atomically (a lock, a
transaction, a Lua script), so appends are never lost, duplicated or interleaved, and a worker
never writes after history it has not seen. ``revert_to`` and ``clear`` are not conditional
(they only start a new generation; the old one is kept) but they move every other writer's view
out of date. A store that has not loaded anything yet appends blindly (no view to be stale).
We chose the typed error over a silent catch-up because the writer's caller holds state built
from its view (a manager's memory); only the caller knows how to redo its work on fresh state.
A head never matches again once the session changed (``Head.epoch``), and appends are exactly
once (record ids; see :meth:`Store.append`).

Deleting (:class:`DeletableStore`, every backend of this package): ``delete`` removes the session
for good (every generation, its offloaded results, its entry in ``sessions()``). It is not
conditional either; afterwards every other writer's head is stale (a deleted session rebuilt by
a new write has a new epoch, or a new file), so their writes get ``StoreConflictError`` instead
of silently recreating half a session. A separate protocol so a caller's own store (a wrapper,
a test double) stays a :class:`Store` without implementing it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ._line_ends import LineEnds

__all__ = [
    "DEFAULT_SESSION",
    "AsyncDeletableStore",
    "AsyncStore",
    "Batch",
    "DeletableStore",
    "Head",
    "NewestFirst",
    "Skipped",
    "Store",
    "Tail",
    "check_session_id",
    "extends",
]

#: The session a database target uses when ``session=`` is not given.
DEFAULT_SESSION = "default"

_SESSION_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@=+-]{0,199}")


def check_session_id(session: object) -> str:
    """Session ids are 1-200 characters of ``[A-Za-z0-9_.:@=+-]`` (not starting with ``.``).

    One rule for every backend, so a session copies between backends under the same id and the
    id is a safe directory name, Redis key part and SQL value.
    """
    if not isinstance(session, str) or not _SESSION_ID.fullmatch(session):
        raise ConfigurationError(
            f"session id {session!r} is invalid: use 1-200 characters from letters, digits and "
            "_ . : @ = + - (not starting with '.' or '-')"
        )
    return session


@dataclass(frozen=True, slots=True)
class Head:
    """Where the next record of a session goes; two equal heads mean nobody wrote in between."""

    generation: int
    position: int
    #: Backend bookkeeping that must also match (JSONL: the file's byte length; else 0).
    offset: int = 0
    #: A value that never repeats for a new state of the session, so a head cannot match again
    #: after the session changed and came back to the same generation and position (ABA):
    #: JSONL: a digest of the file's last bytes; Redis and SQL: a random epoch drawn when the
    #: session (or its generation) is created, so an expired or deleted session rebuilt to the
    #: same position has another one.
    epoch: str = ""


def extends(new: Head, old: Head) -> bool:
    """True when a session at ``new`` holds everything it held at ``old`` unchanged, plus
    maybe more: same generation and epoch (nothing rewritten, not rebuilt), not shorter."""
    return (
        new.generation == old.generation and new.epoch == old.epoch and new.position >= old.position
    )


@dataclass(slots=True)
class Batch:
    """What :meth:`Store.load` returns: the head it read at, and the records from ``start`` on.

    Records come back as their stored JSON text (one line, ``bytes``), so one reader
    (``replayer.Replayer``) validates and decodes them identically for every backend.
    """

    head: Head
    lines: list[tuple[int, bytes]] = field(default_factory=list)
    #: JSONL only: the file ended in a line a killed writer left unfinished (ignored).
    torn_tail: bool = False


@dataclass(slots=True)
class Tail:
    """What a SQL or Redis store's open that leaves the oldest messages unread returns
    (``_tail_read.load_tail``): the newest records as ``(number, line, complete)``, from
    position ``cut`` on (0: every record), the records before ``cut`` that are no message as
    ``(position, line, stored tokens of the messages before it)``, and the stored tokens of the
    messages before ``cut``."""

    head: Head
    lines: list[tuple[int, bytes, bool]] = field(default_factory=list)
    cut: int = 0
    older: list[tuple[int, bytes, int]] = field(default_factory=list)
    tokens: int = 0
    #: Read from the latest compaction on instead: the records it needs, the message records
    #: it leaves out as :class:`Skipped` runs (``Replayer._resume``).
    resumed: list[tuple[int, bytes, bool] | Skipped] | None = None

    @property
    def unread(self) -> int:
        """How many message records before ``cut`` the open left unread."""
        return self.cut - len(self.older)


class Skipped(NamedTuple):
    """``messages`` consecutive message records a read from a compaction on leaves out."""

    messages: int


@runtime_checkable
class Store(Protocol):
    """One session of one backend. Methods raise only ``StoreError`` (and subclasses),
    ``CheckpointNotFoundError`` and ``ConfigurationError``."""

    @property
    def session(self) -> str:
        """The session id."""
        ...

    @property
    def target(self) -> str:
        """Where the session lives, for messages (a path, or a URL without its password)."""
        ...

    @property
    def head(self) -> Head | None:
        """The head this object last saw (None before its first load or write)."""
        ...

    def load(self, start: int = 0) -> Batch:
        """The current generation's records at positions ``>= start``; updates :attr:`head`."""
        ...

    def load_after(self, head: Head) -> Batch | None:
        """The records after ``head`` when the session still extends it (nothing before it
        was rewritten, the generation is the same, it was not rebuilt after expiring), else
        None: the caller must read everything again. Updates :attr:`head` when it reads."""
        ...

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        """Append ``records`` in one atomic step and return their positions.

        Exactly once: when the first record carries an id (``_cm.id``, see
        ``records.record_id``) that the current generation already holds, nothing is written and
        the positions it was stored at are returned (a retry of a write whose reply was lost).
        Otherwise raises ``StoreConflictError`` (nothing written) when the session moved past
        :attr:`head`, and ``StoreOutcomeUnknownError`` when the connection broke with the write
        in flight. ``durable`` asks for the strongest persistence the backend offers.
        """
        ...

    def checkpoint(self) -> int:
        """Append the next ``_checkpoint`` record (ids 0, 1, ... per generation); its id."""
        ...

    def revert_to(self, checkpoint_id: int) -> object:
        """Start a new generation holding the records before checkpoint ``checkpoint_id``."""
        ...

    def clear(self) -> None:
        """Start a new, empty generation (the old one is kept)."""
        ...

    def sessions(self) -> list[str]:
        """Every session id of this target that has records (sorted)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class NewestFirst(Protocol):
    """A sync :class:`Store` whose open may leave the oldest message records where they are
    (SQLite, PostgreSQL, Redis: ``_tail_read.py``); an async store reads them all at its open,
    as a later read would block the event loop."""

    def load_tail(self, ends: LineEnds, reach: int) -> Tail | None:
        """The newest records, as far as ``reach`` stored tokens, and what the older ones
        hold; None: the open must read every record (:meth:`Store.load`)."""
        ...

    def load_older(self, tail: Tail) -> list[tuple[int, bytes, bool]]:
        """The message records ``tail`` left unread, read when the manager needs them."""
        ...


@runtime_checkable
class AsyncStore(Protocol):
    """:class:`Store` for asyncio: the same operations, with the same meaning, awaited.

    Made by :func:`~context_manager.store.aconnect` (``await handle.session(id)``): Redis on
    ``redis.asyncio``, PostgreSQL on psycopg's ``AsyncConnection`` (both drive the sync
    backend's flows, ``_drive.py``), SQLite and JSONL as the sync store run in a worker thread.
    """

    @property
    def session(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def head(self) -> Head | None: ...

    async def load(self, start: int = 0) -> Batch: ...
    async def load_after(self, head: Head) -> Batch | None: ...
    async def append(
        self, records: Sequence[Mapping[str, Any]], *, durable: bool = False
    ) -> list[int]: ...
    async def checkpoint(self) -> int: ...
    async def revert_to(self, checkpoint_id: int) -> object: ...
    async def clear(self) -> None: ...
    async def sessions(self) -> list[str]: ...
    async def aclose(self) -> None: ...


@runtime_checkable
class DeletableStore(Store, Protocol):
    """A :class:`Store` that can delete its session (JSONL, SQLite, Redis, PostgreSQL)."""

    def delete(self) -> bool:
        """Delete the session for good: every generation, its offloaded results and its entry
        in :meth:`~Store.sessions`, in one atomic step (a rename, a transaction, a script).
        True when there was something to delete. Afterwards this store's view is the empty
        session (it may write again, starting a new one); any other writer's is stale."""
        ...


@runtime_checkable
class AsyncDeletableStore(AsyncStore, Protocol):
    """:class:`DeletableStore` for asyncio."""

    async def delete(self) -> bool: ...
