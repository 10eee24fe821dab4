"""Running a compaction on a manager: plan, summarize, then apply (in that order).

The summarizer is awaited *before* ``manager.apply_compaction``, so a cancelled or failed
compaction leaves no entry and an untouched history. One compaction at a time per manager: a
second call while one runs raises :class:`CompactionInProgressError` at once (it does not wait;
waiting would let a stale plan run twice). Listeners get ``start`` / ``end`` events.

Whatever the summarizer wrote is checked before it is applied: the facts of the dropped messages
it lost are put back in a bounded block, and the entry records a manifest of the drop
(``manifest.py``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import (
    CompactionError,
    CompactionInProgressError,
    CompactionTooLargeError,
    ConfigurationError,
    NothingToCompactError,
)
from ..events import Cleared, Compacted, Event
from ..host import HistoryItem, ManagerHost
from ..messages.shapes import user_text
from ._flow import Flow, Parallel, run_async, run_sync
from .entry import REASONS, Clock, CompactionEntry, CompactionManifest, utc_timestamp
from .extractive import ExtractiveSummarizer
from .manifest import checked_summary, watch
from .policies import CompactionPlan, CompactionPolicy, TokenBudgetCompaction
from .prompts import summary_message_text
from .pruning.fallback import PruningFallback, prune_instead
from .summarizers import SummaryRequest, summary_flow


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """``start`` before the summarizer runs; ``end`` after it was applied, failed or aborted.

    ``aborted`` means cancelled; ``error`` holds a failure's text; ``will_retry`` says the
    caller will resend the request that overflowed (overflow recovery).
    """

    type: Literal["start", "end"]
    reason: str
    tokens_before: int
    first_kept_index: int
    will_retry: bool = False
    aborted: bool = False
    error: str | None = None
    entry: CompactionEntry | None = None


CompactionListener = Callable[[CompactionEvent], None]


class CompactionState:
    """Per-manager compaction bookkeeping, owned by the manager (``manager.extension``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.listeners: list[CompactionListener] = []
        #: Compactions applied so far (restored ones included): one "cycle" each.
        self.cycle = 0
        #: Bumped on ``clear``, so a plan made before it is never applied after it.
        self.generation = 0
        #: The cycle in which the soft-threshold flush hook last fired (None: never).
        self.flushed_cycle: int | None = None
        #: Automatic compactions in a row that failed or freed too little, and the token count
        #: below which the open circuit breaker skips them (None: closed); see the triggers.
        self.strikes = 0
        self.retry_at: int | None = None

    def on_manager_event(self, event: Event) -> None:
        if isinstance(event, Compacted):
            self.cycle += 1
        elif isinstance(event, Cleared):
            self.generation += 1
            self.flushed_cycle = None  # a new conversation may flush again
            self.strikes, self.retry_at = 0, None

    def emit(self, event: CompactionEvent) -> None:
        for listener in list(self.listeners):
            listener(event)


def state_of(manager: ManagerHost) -> CompactionState:
    """The manager's compaction state, created (and subscribed to its events) on first use."""

    def create() -> CompactionState:
        state = CompactionState()
        manager.subscribe(state.on_manager_event)
        return state

    return manager.extension(CompactionState, create)


def add_compaction_listener(manager: ManagerHost, listener: CompactionListener) -> None:
    """Call ``listener(CompactionEvent)`` on every compaction start / end of ``manager``."""
    state_of(manager).listeners.append(listener)


def remove_compaction_listener(manager: ManagerHost, listener: CompactionListener) -> None:
    state_of(manager).listeners.remove(listener)


def summary_message(summary: str, conversation: Sequence[Any] = ()) -> Any:
    """The user message that carries a summary to the model (sent after the system prompt), in
    the shape of ``conversation`` (a Gemini ``Content``, a pydantic-ai request, ...)."""
    return user_text(conversation, summary_message_text(summary))


def _previous(entry: Any) -> tuple[str | None, int | None, Mapping[str, Sequence[str]] | None]:
    """Summary, cut and file details of the latest entry (an object or a restored dict)."""
    if entry is None:
        return None, None, None
    if isinstance(entry, Mapping):
        details = entry.get("details")
        return (
            entry.get("summary"),
            entry.get("first_kept_index"),
            details if isinstance(details, Mapping) else None,
        )
    return entry.summary, entry.first_kept_index, entry.details


def default_policy(manager: ManagerHost) -> CompactionPolicy:
    return TokenBudgetCompaction.for_budget(int(manager.budget_tokens))


@dataclass(slots=True)
class _Job:
    previous: Any
    previous_summary: str | None
    plan: CompactionPlan
    requests: list[SummaryRequest]
    tokens_before: int
    reason: str
    generation: int
    dropped: tuple[HistoryItem, ...] = ()
    keep_facts: bool = True


def _plan(
    manager: ManagerHost,
    state: CompactionState,
    policy: CompactionPolicy | None,
    focus: str | None,
    reason: str,
) -> _Job:
    if reason not in REASONS:
        raise CompactionError(f"unknown compaction reason {reason!r}; use one of {REASONS}")
    if policy is not None and not callable(getattr(policy, "plan", None)):
        raise ConfigurationError(
            f"policy must be a CompactionPolicy (e.g. TokenBudgetCompaction(...) or "
            f"SimpleCompaction()), or None for the default; got {type(policy).__name__}"
        )
    if focus is not None and not isinstance(focus, str):
        raise ConfigurationError(f"focus must be a string or None, got {type(focus).__name__}")
    previous = manager.compaction
    previous_summary, previous_cut, details = _previous(previous)
    items = [
        item
        for item in manager.history()
        if not item.pinned and (previous_cut is None or item.index >= previous_cut)
    ]
    plan = (policy or default_policy(manager)).plan(items, details)
    return _Job(
        previous,
        previous_summary,
        plan,
        plan.requests(previous_summary, focus),
        int(manager.used_tokens),
        reason,
        state.generation,
        tuple(item for item in items if item.index < plan.first_kept_index),
        bool(getattr(policy, "keep_facts", True)),  # a policy's option (default on)
    )


def _event(job: _Job, kind: Literal["start", "end"], **extra: Any) -> CompactionEvent:
    return CompactionEvent(kind, job.reason, job.tokens_before, job.plan.first_kept_index, **extra)


def _apply(
    manager: ManagerHost,
    state: CompactionState,
    job: _Job,
    texts: Sequence[str],
    will_retry: bool,
    clock: Clock,
) -> CompactionEntry:
    if manager.compaction is not job.previous or state.generation != job.generation:
        raise CompactionError(
            "the history was cleared or compacted elsewhere while this compaction ran; its "
            "plan is stale and was not applied (run compact() again)"
        )
    plan = job.plan
    items = manager.history()
    room = manager.summary_room  # counted, beside what is always sent; calibrated like a request
    summary = plan.combine(texts, job.previous_summary)
    summary, manifest = _with_facts(manager, job, summary, items, room)
    message = _fitting_summary(manager, summary, items, room)
    entry = CompactionEntry(
        summary=summary,
        first_kept_index=plan.first_kept_index,
        tokens_before=job.tokens_before,
        details={"read_files": list(plan.read_files), "modified_files": list(plan.modified_files)},
        reason=job.reason,
        created_at=clock(),
        manifest=manifest,
    )
    watch(manager)  # the manager's list of compactions (compactions(manager)) gets this one
    manager.apply_compaction(message, entry.first_kept_index, entry)
    state.emit(_event(job, "end", will_retry=will_retry, entry=entry))
    return entry


def _with_facts(
    manager: ManagerHost, job: _Job, summary: str, items: Sequence[HistoryItem], room: int
) -> tuple[str, CompactionManifest]:
    """The summary with the facts it lost appended (``manifest.checked_summary``), and the
    manifest. The whole stays within what the budget leaves beside the parts always sent; the
    block within the summary's unused output budget, or a quarter of it if the summary used
    more. Off (``keep_facts=False`` on the policy): the manifest still says what was lost."""
    conversation = [it.message for it in items]

    def count(text: str) -> int:
        return manager.count_message(summary_message(text, conversation))

    previous = getattr(job.previous, "manifest", None)
    cap = job.plan.summary_max_tokens
    return checked_summary(
        summary,
        job.dropped,
        job.plan.first_kept_index,
        previous if isinstance(previous, CompactionManifest) else None,
        keep_facts=job.keep_facts,
        count=count,
        limit=room,
        block_tokens=max(cap - count(summary), cap // 4) if job.keep_facts else 0,
    )


def _fitting_summary(
    manager: ManagerHost, summary: str, items: Sequence[HistoryItem], room: int
) -> Any:
    """The summary message to apply, refused if it could never be sent: it, with what is always
    sent (system prompt, pinned messages, priming, tools), would exceed the budget, so every
    later request would overflow. Both sides are counted tokens, the budget calibrated as every
    request is fitted (``summary_room``): the counted history beside a usage-anchored total
    would mix units (a usage report made small summaries fail and oversized ones pass).
    Raises :class:`CompactionTooLargeError` (``required``: the budget plus what it is over by);
    nothing is applied."""
    message = summary_message(summary, [it.message for it in items])
    over = manager.count_message(message) - room
    if over > 0:
        budget = int(manager.budget_tokens)
        raise CompactionTooLargeError(
            f"the compaction was not applied: its summary with the parts always sent is {over} "
            f"tokens over the budget of {budget} (lower the summary's max tokens, or the file "
            "lists; unpin messages)",
            required=budget + over,
            budget=budget,
        )
    return message


def _acquire(state: CompactionState) -> None:
    if not state.lock.acquire(blocking=False):
        raise CompactionInProgressError(
            "a compaction is already running on this manager; wait for it to finish "
            "(compaction never runs concurrently with itself)"
        )


def compaction_flow(
    manager: ManagerHost,
    summarizer: Any = None,
    *,
    focus: str | None = None,
    policy: CompactionPolicy | None = None,
    reason: str = "manual",
    will_retry: bool = False,
    clock: Clock = utc_timestamp,
    fallback: bool = True,
) -> Flow[CompactionEntry | PruningFallback]:
    """Plan, summarize (the one step a driver performs), then apply; events on both ends.

    With ``fallback``, a history too short to summarize makes the manager's view clear old tool
    results instead (:func:`~context_manager.compaction.pruning.fallback.prune_instead`).
    """
    state = state_of(manager)
    _acquire(state)
    try:
        try:
            job = _plan(manager, state, policy, focus, reason)
        except NothingToCompactError as exc:
            if not fallback:
                raise
            return prune_instead(manager, exc, reason)
        run = summarizer or manager.summarizer or ExtractiveSummarizer()
        state.emit(_event(job, "start", will_retry=will_retry))
        try:
            texts = yield Parallel(tuple(summary_flow(run, r) for r in job.requests))
            return _apply(manager, state, job, texts, will_retry, clock)
        except BaseException as exc:
            aborted = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
            state.emit(_event(job, "end", aborted=aborted, error=None if aborted else str(exc)))
            raise
    finally:
        state.lock.release()


def compact_manager(
    manager: ManagerHost, summarizer: Any = None, **options: Any
) -> CompactionEntry | PruningFallback:
    """Compact ``manager`` now (sync); async summarizers are run to completion here.

    ``summarizer`` defaults to ``manager.summarizer``, then to :class:`ExtractiveSummarizer`;
    ``policy`` defaults to :class:`TokenBudgetCompaction` sized for the manager's budget. Options
    are :func:`compaction_flow`'s. Returns a :class:`PruningFallback` instead of an entry when
    the history was too short to summarize and the view now clears old tool results; raises
    :class:`CompactionTooLargeError` (nothing applied) when the summary could never fit.
    """
    return run_sync(compaction_flow(manager, summarizer, **options))


async def acompact_manager(
    manager: ManagerHost, summarizer: Any = None, **options: Any
) -> CompactionEntry | PruningFallback:
    """Async :func:`compact_manager`: split-turn requests run concurrently; sync summarizers run
    in a worker thread. Cancelling it leaves no entry and the history untouched."""
    return await run_async(compaction_flow(manager, summarizer, **options))


def restore_compaction(
    manager: ManagerHost, data: Mapping[str, Any] | CompactionEntry
) -> CompactionEntry:
    """Re-apply a persisted entry (e.g. from a store's log) without summarizing again."""
    entry = data if isinstance(data, CompactionEntry) else CompactionEntry.from_dict(data)
    held = [item.message for item in manager.history()]
    manager.apply_compaction(summary_message(entry.summary, held), entry.first_kept_index, entry)
    return entry
