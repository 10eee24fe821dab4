"""What the sync and the async journal share: a change encoded into records, and the journal's
operations written once as flows (``_drive.py``) whose steps are record-level store operations.

:class:`JournalCore` is the base of :class:`~.session.SessionStore` (performs each :class:`Op`
on a sync :class:`~.log.SessionLog`) and :class:`~.async_session.AsyncSessionStore` (awaits it
on an :class:`~.async_session.AsyncLog`). The flows:

- :meth:`JournalCore._reload_flow`: catch up with the store (only the records after this
  worker's view when the session still extends it; else rebuild from every record);
- :meth:`JournalCore._commit_flow`: a batch's collected operations, in order; if one fails,
  memory is rebuilt as the store has it (memory changed as the batch went) and the error is
  raised. If the rebuild fails too, or the commit was interrupted (a cancelled task), the
  journal is *stale*: the next reload rebuilds from every record, and a sync write refuses
  until then. A write whose outcome is unknown and that the rebuild found stored is
  remembered, so :meth:`landed` answers yes for it afterwards. A reload or a revert is stale
  too from the step that moves the store's view (a read, a revert) until memory applied it:
  interrupted in between (a cancelled task whose step ran to its end in a worker thread, a
  replay error), the store would accept writes on top of records memory never took in;
- :meth:`JournalCore._open_flow`, :meth:`JournalCore._resume_flow` (a manager parked in a
  ``warm.SessionCache``, caught up) and :meth:`JournalCore._revert_flow`.

A journal opened through a handle with a session cache parks its manager when it is closed: it
stays attached and refuses every write from then on, so a parked manager cannot change unseen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import ContextManagerError, StoreError, StoreOutcomeUnknownError
from ..events import Change, Cleared, Compacted, MessageAdded, SystemPromptSet, UsageRecorded
from ..host import ManagerHost
from ..messages.codec import encode
from ._drive import Flow
from ._replay import (
    Unresumable,
    compaction_record,
    new_manager,
    replay,
    resume_key,
    set_hooks,
    system_original,
)
from ._unread import UnreadHistory
from .protocol import Head, Tail
from .records import ATTRS_KEY, COMPACTION, COUNT_KEY, new_record_id, record_id
from .replayer import Item, Records, Replayer, RestoredLog, StoredMessage, UnreadRun
from .warm import Parked

__all__ = ["JournalCore", "Op"]

M = TypeVar("M", bound=ManagerHost)


@dataclass(frozen=True, slots=True)
class Op:
    """A record-level store operation: ``read`` (the session log, replayed), ``load_after``,
    ``append`` (``durable`` passed on), ``checkpoint``, ``revert_to``, ``clear``."""

    name: str
    args: tuple[Any, ...] = ()
    durable: bool = False


class JournalCore:
    """State and flows of a persistent session's journal (see the module docstring)."""

    def __init__(self, log: Any, restored: RestoredLog) -> None:
        self.log = log
        #: What the log held when it was last read (opened, reverted or rebuilt).
        self.restored = restored
        self._manager: ManagerHost | None = None
        #: Memory may hold changes the store refused (see the module docstring).
        self.stale = False
        self._recovered: frozenset[str] = frozenset()
        #: Set by an open through a handle with a session cache: parks the manager on close.
        self.park: Callable[[Parked], None] | None = None
        self.options: Any = None
        self._parked = False
        self._closed = False

    @property
    def path(self) -> Any:
        """The log's path (JSONL) or the store's target."""
        return getattr(self.log, "path", self.log.target)

    @property
    def target(self) -> str:
        """Where the session lives (a path, or a URL without its password)."""
        return str(self.log.target)

    def attach(self, manager: ManagerHost) -> None:
        self._manager = manager
        manager.attach_journal(self)  # type: ignore[arg-type]

    # -- changes into records ----------------------------------------------------------------
    def _typed(self, change: Change, exc: BaseException) -> ContextManagerError | None:
        """An encoding or I/O failure of ``write`` as a typed error (None: not one of those)."""
        if isinstance(exc, (UnicodeError, ValueError, TypeError, RecursionError, OverflowError)):
            return StoreError(
                f"{self.target}: cannot store {type(change).__name__}: {exc}; nothing was "
                "added (the value has no lossless JSON form, e.g. a lone surrogate or NaN)"
            )
        if isinstance(exc, OSError):
            return StoreError(
                f"{self.target}: cannot write {type(change).__name__}: "
                f"{exc.strerror or exc}; nothing was changed in memory"
            )
        return None

    def _encode(self, change: Change, rid: str) -> None:
        """Every change but ``Cleared`` (which each journal orders with its own I/O)."""
        log = self.log
        if isinstance(change, MessageAdded):
            payload, tag = encode(change.message)
            if tag is None and ATTRS_KEY in payload:
                tag = "dict"  # the message's own "_cm" key: keep it inside the wrapper, intact
            # The count travels with its counter's fingerprint: a restore under the same
            # counting takes it instead of counting again (store/records.py, COUNT_KEY).
            fingerprint = self._fingerprint()
            extra: dict[str, Any] = {}
            if fingerprint is not None:
                extra[COUNT_KEY] = [change.tokens, fingerprint]
            if tag is not None:  # Kimi-readable wrapper; the object itself travels in _cm
                wrapper: dict[str, Any] = {"role": change.record.role, "content": None}
                if change.record.tool_call_id is not None:
                    wrapper["tool_call_id"] = change.record.tool_call_id
                payload, extra = wrapper, {"type": tag, "payload": payload, **extra}
            log.append_message(
                payload,
                pinned=change.pinned,
                priority=change.priority,
                extra=extra,
                record_id=rid,
            )
            self.restored.history += 1  # a message record, at the history's next index
        elif isinstance(change, SystemPromptSet):
            original = system_original(change.message)
            log.write_system_prompt(change.record.text, original, record_id=rid)
        elif isinstance(change, UsageRecorded):
            # Our side of the ratio travels too: a restore under the same counting calibrates
            # on the context the live manager counted, not on the replayed one.
            fingerprint = self._fingerprint()
            count = None if fingerprint is None else (change.counted, fingerprint)
            log.append_usage(change.input_tokens, count=count, record_id=rid)
        elif isinstance(change, Compacted):
            log.append_compaction(compaction_record(change, self.restored), record_id=rid)

    def _fingerprint(self) -> str | None:
        manager = self._manager
        return None if manager is None else manager.counter.fingerprint()

    def _write_ahead(self, change: Change, clear: Callable[[], None]) -> None:
        """Encode ``change`` into records before memory changes (a ``Cleared``: ``clear`` orders
        it with the journal's own I/O, then a kept system prompt is written again); encoding
        and I/O failures become typed errors, so the manager stays unchanged."""
        try:
            rid = new_record_id()  # exactly-once: every backend refuses to store an id twice
            if isinstance(change, Cleared):
                clear()
                restored = self.restored  # a new generation
                restored.history, restored.history_gaps, restored.skipped_lines = 0, [], []
                self._prompt_after_clear(change.keep_system_prompt, rid)
            else:
                self._encode(change, rid)
        except ContextManagerError:
            raise
        except Exception as exc:
            typed = self._typed(change, exc)
            if typed is None:
                raise
            raise typed from exc

    def _prompt_after_clear(self, keep_system_prompt: bool, rid: str) -> None:
        """A clear that keeps the system prompt writes it again in the new generation."""
        manager = self._manager
        if keep_system_prompt and manager is not None and manager.system_prompt:
            original = system_original(manager.system_message)
            self.log.write_system_prompt(manager.system_prompt, original, record_id=rid)

    # -- records into memory -----------------------------------------------------------------
    def _apply(self, manager: ManagerHost, sequence: Records, *, fresh: bool) -> None:
        """Replay ``sequence`` into ``manager`` (after a clear when ``fresh``: a full read,
        whose ``self.restored`` learns the messages the manager could not read)."""
        with manager.locked():
            manager.attach_journal(None)
            try:
                if fresh:
                    manager.clear(keep_system_prompt=False)
                replay(
                    manager,
                    sequence,
                    strict=self.log.strict,
                    path=self.target,
                    tally=self.restored,
                    restored=self.restored if fresh else None,
                )
            finally:
                manager.attach_journal(self)  # type: ignore[arg-type]

    def _open_flow(self, cls: type[M], options: dict[str, Any]) -> Flow[tuple[M, Any]]:
        """Read the session and build a manager from it (no journal attached yet); the read
        starts at the latest compaction when the manager allows it (``_replay.resume_key``)."""
        given = dict(options)
        manager, system_prompt, hooks = new_manager(cls, options)
        resume = resume_key(manager)
        while True:
            restored, sequence = yield from self._moving(Op("read", (resume,)))
            self.restored = restored
            unread = UnreadHistory(lambda: new_manager(cls, dict(given))[0], self)
            try:
                replay(
                    manager,
                    sequence,
                    strict=self.log.strict,
                    path=self.target,
                    tally=restored,
                    restored=restored,
                    unread=unread,
                )
                break
            except Unresumable:
                manager, resume = new_manager(cls, dict(given))[0], None
        set_hooks(manager, hooks)
        self.stale = False
        return manager, system_prompt

    def _moving(self, op: Op) -> Flow[Any]:
        """Perform ``op``, a step that moves the store's view (a read, a revert), leaving the
        journal stale until the caller has applied what it did to memory (and cleared it): a
        cancellation thrown in here comes after the step ran (a worker thread is waited for),
        and a failure after it (a replay error) would otherwise leave the view ahead of
        memory. A step that itself raised an ``Exception`` moved nothing: stale as before."""
        was, self.stale = self.stale, True
        try:
            return (yield op)
        except Exception:
            self.stale = was
            raise

    def _resume_flow(
        self, cls: type[M], options: dict[str, Any], parked: Parked | None
    ) -> Flow[tuple[M, Any]]:
        """A parked manager (``warm.py``) brought up to date with what was written since it
        was closed; a full read when there is none or the session no longer extends it."""
        if parked is not None:
            self.restored = parked.restored  # what _records_after adds to (a full read resets it)
            sequence = yield from self._records_after(parked.head)
            if sequence is not None:
                manager: M = parked.manager
                self._apply(manager, sequence, fresh=False)
                self.stale = False
                system_prompt = options.pop("system_prompt", None)
                set_hooks(manager, options)
                return manager, system_prompt
        return (yield from self._open_flow(cls, options))

    def _records_after(self, head: Head) -> Flow[Records | None]:
        """The records written after ``head``, when they can be applied on top of memory that
        stood there (None: the session was rewritten since, or a compaction is among them)."""
        batch = yield from self._moving(Op("load_after", (head,)))
        if batch is None or batch.torn_tail:
            return None
        replayer = Replayer.of_rows(self.target, batch.lines, strict=self.log.strict)
        if any(_rewinds(item) for item in replayer.sequence):
            return None
        self.restored.skipped_lines += replayer.state.skipped_lines  # unreadable lines seen
        return replayer.sequence

    def _reload_flow(
        self, manager: ManagerHost, wanted: tuple[str, ...], *, full: bool = False
    ) -> Flow[bool]:
        """Catch ``manager`` up with the store; True when every id in ``wanted`` is stored
        (among the records read, or found by the rebuild after a failed commit)."""
        # Closed, its manager may be parked in a session cache, which must not see it move.
        self._refuse_if_closed()
        recovered = bool(wanted) and set(wanted) <= self._recovered
        head = self.log.store.head
        if head is not None and not (full or self.stale):
            sequence = yield from self._records_after(head)
            if sequence is not None:
                self._apply(manager, sequence, fresh=False)
                self.stale = False
                return recovered or _holds(sequence, wanted)
        restored, sequence = yield from self._moving(Op("read"))
        self.restored = restored
        self._apply(manager, sequence, fresh=True)
        self.stale = False
        return recovered or _holds(sequence, wanted)

    def _checkpoint_flow(self) -> Flow[int]:
        """Append the next checkpoint; its id."""
        self._refuse_if_closed()
        return int((yield Op("checkpoint")))

    def _revert_flow(self, manager: ManagerHost, checkpoint_id: int) -> Flow[None]:
        self._refuse_if_closed()  # a new generation would drop what others wrote since
        yield from self._moving(Op("revert_to", (checkpoint_id,)))
        yield from self._reload_flow(manager, (), full=True)

    def _rebuild_flow(self) -> Flow[None]:
        """Memory as the store has it, after an atomic batch stored nothing; a failed rebuild
        leaves the journal stale (the next reload rebuilds, and sync writes refuse until then)."""
        manager = self._manager
        if manager is None:
            return
        try:
            yield from self._reload_flow(manager, (), full=True)
        except Exception:
            self.stale = True

    def _commit_flow(self, ops: list[Op]) -> Flow[None]:
        """Run a batch's operations in order; on a failure rebuild memory, then raise it. A
        batch that ends after its store was closed writes nothing: memory, which took its
        changes, is then ahead of the store (stale)."""
        if self._closed:
            self.stale = True
            self._refuse_if_closed()
        try:
            for op in ops:  # noqa: UP028 - each op's result is sent back (yield from cannot)
                yield op
        except GeneratorExit:
            raise
        except BaseException as exc:
            manager = self._manager
            if manager is None:
                raise
            if not isinstance(exc, Exception):  # cancelled / interrupted: no more I/O now
                self.stale = True
                raise
            wanted = exc.record_ids if isinstance(exc, StoreOutcomeUnknownError) else ()
            try:
                found = yield from self._reload_flow(manager, wanted, full=True)
            except Exception as rebuild:
                self.stale = True
                found = False
                exc.add_note(
                    f"memory could not be rebuilt from the store ({type(rebuild).__name__}: "
                    f"{rebuild}); the next reload rebuilds it"
                )
            except BaseException:
                self.stale = True
                raise
            self._recovered = frozenset(wanted) if found else frozenset()
            raise  # the failure the caller asked about, as it was

    def _park_manager(self, batching: bool) -> None:
        """On close: hand the manager to the session cache (when the open came with one and
        memory is what the store holds: not stale, no batch still to be written), and refuse
        writes from now on."""
        park, self.park, self._closed = self.park, None, True
        manager, head = self._manager, self.log.store.head
        if park is None or manager is None or head is None or self.stale or batching:
            return
        self._parked = True
        park(Parked(self.options, manager, head, self.restored))

    def _refuse_if_closed(self) -> None:
        """A closed session's store takes no write, on every backend (a write could otherwise
        reconnect silently on one and fail on another)."""
        if self._closed:
            where = " and its manager went back to the session cache" if self._parked else ""
            raise StoreError(
                f"{self.target}: this session's store is closed{where}; open the session again "
                "to change it; nothing was changed"
            )

    def read_older(self, tail: Tail) -> list[tuple[int, bytes, bool]]:
        """The message records a SQL or Redis store's open left in the store (``_unread.py``),
        read through this session's store: only while it is open."""
        store = self.log.store
        if self._closed or not hasattr(store, "load_older"):
            raise StoreError(
                f"{self.target}: the {tail.unread} oldest messages of this "
                "session were left in the store by its open, to be read when first needed, "
                "and its store is closed: read what needs them (history(), stats()) before "
                "closing, or open the session again"
            )
        return store.load_older(tail)  # type: ignore[no-any-return]

    def _refuse_if_stale(self) -> None:
        self._refuse_if_closed()
        if self.stale:
            raise StoreError(
                f"{self.target}: a batch's write failed and memory could not be rebuilt from "
                "the store; reload the session (manager.store.reload(manager)) before writing; "
                "nothing was changed"
            )


def _rewinds(item: Item) -> bool:
    """A record an incremental reload cannot apply on top of memory (a compaction's indices
    count every message line of the generation)."""
    return isinstance(item, dict) and item.get("role") == COMPACTION


def _holds(sequence: Records, wanted: tuple[str, ...]) -> bool:
    if not wanted:
        return False
    ids = {
        item.record_id if isinstance(item, StoredMessage) else record_id(item)
        for item in sequence
        if not isinstance(item, UnreadRun)  # (an open's: never reloaded)
    }
    return all(rid in ids for rid in wanted)
