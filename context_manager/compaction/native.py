"""Provider-native compaction: the provider compacts, the history keeps its items as given.

OpenAI's ``responses.compact`` returns a ``compaction`` item (encrypted, readable only by
OpenAI) that stands for everything before it; Anthropic's server compaction
(``compact_20260112``) returns an assistant turn that starts with a ``compaction`` block. The
caller supplies the *compactor*, a function that calls their client and returns those output
items (sync or async); this module only decides when it may run and what to do with its answer:

- The items are appended to the history from the latest compaction item on, as returned (never
  edited: a store logs them like any message). What came before is not rewritten; the context
  simply starts at the latest compaction (``budget/compacted.py``), so the old turns stay in
  the log and a store reopens to the same context.
- The native compactor is used only for the provider the next request goes to. Another
  provider (a model switch), a history whose latest compaction another provider made (which
  this one cannot read), a compactor that raises, or one that returns no compaction item made
  by that provider: each falls back to ours, the summary flow of :mod:`.runner`, which itself
  falls back to pruning old tool results; the view trims whatever is left.

One generator flow, driven by :func:`~._flow.run_sync` or :func:`~._flow.run_async`, as for
``compact`` / ``acompact``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..errors import CompactionError, ContextManagerError, NothingToCompactError
from ..host import ManagerHost
from ..messages import Message, normalize
from ..providers import ProviderRules, get_provider, reads_compaction
from ._flow import Call, Flow, run_async, run_sync
from .entry import CompactionEntry
from .pruning.fallback import PruningFallback
from .runner import CompactionEvent, _acquire, compaction_flow, state_of

__all__ = [
    "FellBack",
    "NativeCompacted",
    "NativeCompactor",
    "acompact_native",
    "compact_native",
    "native_compaction_flow",
]

#: ``compactor(messages) -> output items`` (or an awaitable of them): ``messages`` are the held
#: messages from the latest native compaction on (system prompt excluded).
NativeCompactor = Callable[[list[Any]], Sequence[Any] | Awaitable[Sequence[Any]]]

#: The maker whose compaction each provider rule set reads (the makers ``reads_compaction``
#: knows); a provider not listed has no native compaction.
_MAKER = {"openai-responses": "openai", "anthropic": "anthropic"}
#: How much of a compactor's error a fallback's reason quotes (SDK errors can be pages long).
_SAY = 300


@dataclass(frozen=True, slots=True)
class NativeCompacted:
    """The provider compacted: ``items`` (its output from the compaction item on, as returned)
    were appended; ``tokens_before`` is what the whole history cost before, ``tokens`` what
    the appended items cost."""

    provider: str
    items: tuple[Any, ...]
    tokens_before: int
    tokens: int


@dataclass(frozen=True, slots=True)
class FellBack:
    """The native compactor was not used (``reason`` says why); ``result`` is ours: the summary
    entry applied, the pruning the view now does, or None when the history was too short for
    either (the view trims it, as always)."""

    reason: str
    result: CompactionEntry | PruningFallback | None


def _latest_maker(records: Sequence[Message]) -> tuple[int, str]:
    """Position and maker of the latest native compaction among ``records``, or ``(-1, "")``."""
    for k in range(len(records) - 1, -1, -1):
        if records[k].compaction:
            return k, records[k].compaction
    return -1, ""


def _usable(output: Any, maker: str) -> list[Any]:
    """The output items from the latest compaction on; ``CompactionError`` when the output
    holds no compaction made by ``maker``, or anything we cannot read."""
    if isinstance(output, str | bytes) or not isinstance(output, Sequence):
        raise CompactionError(
            f"the native compactor returned {type(output).__name__}; return its output items "
            "(e.g. responses.compact(...).output, or the assistant turn holding the block)"
        )
    items = list(output)
    try:
        records = [normalize(item, k) for k, item in enumerate(items)]
    except ContextManagerError as exc:
        raise CompactionError(f"the native compactor returned an unreadable item: {exc}") from exc
    at, made_by = _latest_maker(records)
    if at < 0:
        raise CompactionError("the native compactor returned no compaction item")
    if made_by != maker:
        raise CompactionError(f"the native compactor returned a compaction made by {made_by}")
    return items[at:]


def native_compaction_flow(
    manager: ManagerHost,
    compactor: NativeCompactor,
    *,
    provider: str | ProviderRules,
    summarizer: Any = None,
    **options: Any,
) -> Flow[NativeCompacted | FellBack]:
    """Run ``compactor`` for ``provider`` (the API the next request goes to) and append its
    items; else fall back to ours (``summarizer`` and ``options`` go to
    :func:`~.runner.compaction_flow`: ``focus``, ``policy``, ``reason``, ``clock``)."""
    rules = get_provider(provider)
    assert rules is not None  # a name or rules: get_provider raised on anything else
    maker = _MAKER.get(rules.name, "")
    items = manager.history()
    at, made_by = _latest_maker([item.record for item in items])
    reason = ""
    if not maker:
        reason = f"{rules.name} has no native compaction"
    elif made_by and not reads_compaction(rules, made_by):
        reason = f"the history's latest compaction was made by {made_by}, not {maker}"
    appended: list[Any] = []
    if not reason:
        state = state_of(manager)
        _acquire(state)
        # Listeners hear a start and an end, as for ours (the first kept index is where the
        # appended items begin: nothing of the history is rewritten).
        generation, last = state.generation, items[-1].index if items else -1
        event = partial(
            CompactionEvent,
            reason=str(options.get("reason", "manual")),
            tokens_before=int(manager.used_tokens),
            first_kept_index=last + 1,
        )
        state.emit(event("start"))
        try:
            messages = [item.message for item in items[max(at, 0) :]]
            if at < 0 and manager.summary is not None:  # ours stands for what came before
                messages.insert(0, manager.summary)
            try:
                output = yield Call(compactor, (messages,), thread=True)
                appended = _usable(output, maker)
            except (KeyboardInterrupt, asyncio.CancelledError):
                state.emit(event("end", aborted=True))
                raise
            except Exception as exc:  # the provider's or the client's failure: ours instead
                reason = f"the native compactor failed: {type(exc).__name__}: {exc}"[:_SAY]
                state.emit(event("end", error=reason))
            if not reason:
                now = manager.history()
                if state.generation != generation or (now[-1].index if now else -1) != last:
                    state.emit(event("end", error="the history changed"))
                    raise CompactionError(
                        "the history changed while the native compactor ran; its output was "
                        "not applied (compact again)"
                    )
                before = int(manager.used_tokens)
                with manager.locked():
                    for item in appended:
                        manager.add(item)
                tokens = sum(manager.count_message(item) for item in appended)
                state.emit(event("end"))
                return NativeCompacted(maker, tuple(appended), before, tokens)
        finally:
            state.lock.release()
    try:
        ours = yield from compaction_flow(manager, summarizer, **options)
    except NothingToCompactError:
        return FellBack(reason, None)  # nothing to summarize nor prune: the view trims
    return FellBack(reason, ours)


def compact_native(
    manager: ManagerHost,
    compactor: NativeCompactor,
    *,
    provider: str | ProviderRules,
    summarizer: Any = None,
    **options: Any,
) -> NativeCompacted | FellBack:
    """Compact ``manager`` with the provider's own compactor, or ours (sync); an async
    compactor is run to completion here. See :func:`native_compaction_flow`."""
    flow = native_compaction_flow(
        manager, compactor, provider=provider, summarizer=summarizer, **options
    )
    return run_sync(flow)


async def acompact_native(
    manager: ManagerHost,
    compactor: NativeCompactor,
    *,
    provider: str | ProviderRules,
    summarizer: Any = None,
    **options: Any,
) -> NativeCompacted | FellBack:
    """Async :func:`compact_native`: a sync compactor runs in a worker thread."""
    flow = native_compaction_flow(
        manager, compactor, provider=provider, summarizer=summarizer, **options
    )
    return await run_async(flow)
