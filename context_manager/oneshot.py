"""One-shot trimming: the manager's semantics for a list you already have.

A stateless backend reloads a history and trims it on every request, so this is the hot path
people compare with LangChain's ``trim_messages``. Building a manager would normalize, count and
validate every message, even the 95% that are then dropped. Instead, for the sliding window
(with or without ``provider=``), ``trim`` scans from the newest message backwards and touches
only what it may keep:

* the system prompt (message 0), the pinned groups and the latest user turn are found without
  reading the rest (a pinned group is read from its pin to its edges; the latest user turn is
  found by a backwards walk that skips dicts whose role cannot be a user turn);
* groups are read newest first, in blocks, until the next one no longer fits the room or
  ``max_messages`` (a few messages past the cut are read); group edges are the protocol's rule
  read locally (``messages.groups.joins_previous``);
* the tool-call protocol (``ToolProtocol``) is replayed forwards over everything kept and the
  open tail: what it accepts it groups as the scan did (property-tested), and what it rejects
  sends the call to the full path;
* with ``provider=``, the newest exchange is protected and the provider's rules drop groups
  exactly as :func:`~context_manager.budget.plan.plan_context` does (same ``restrict``).

The answer is the manager's, by construction and by the property tests. Only what is never read
cannot be rejected: a broken message or protocol error *beyond the cut* is not reported (the kept
part is always checked; ``validate="all"`` restores the manager's whole-history check). On
anything else (an overflow, an invalid message, ``repair``, ``priority``, ``retention_ratio``,
whose cut depends on the offset of every group from the first, ``pruning``, or a custom
strategy) ``trim`` takes the full path, a manager filled in bulk with the cyclic GC paused, so
errors are exactly the manager's. There is one scan for every option and shape: no option needs
a gate of its own, and none can be ignored by a faster copy. The scan lives in
``budget.backscan``.

Nothing is remembered between calls unless the caller asks: ``cache=`` takes a
:class:`~context_manager.counting.MessageCountCache` the caller created and owns (its bound and
lifetime are the caller's), and the default keeps nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Sequence
from typing import Any, Literal

from ._config import budget_options, check_flag, check_int, check_priority, checked_tools
from .budget.allowance import Allowance
from .budget.backscan import BackwardScan, Fallback
from .budget.calibration import Calibration
from .budget.pruned import Pruning
from .budget.strategies import FIFO, SlidingWindow, Strategy, get_strategy
from .counting import MessageCountCache, TokenCounter, get_counter
from .errors import ConfigurationError, InvalidMessageError
from .manager import MessageContextManager
from .messages import message_list
from .messages.nesting import short_repr
from .providers import ProviderRules, fuse_turns, get_provider

_FIFO_IN_TRIM = (
    "strategy 'fifo' evicts on each add, so what it keeps depends on the order of the adds, and "
    "differs from the sliding window's answer (e.g. while a tool call awaits its results, or "
    "once the latest user turn moves); trim() has a list, not a history of adds: pass "
    "strategy='sliding_window' (the default), or add the messages to a "
    "MessageContextManager(strategy='fifo')"
)


def trim(
    messages: Sequence[Any],
    budget_tokens: int,
    *,
    counter: str | TokenCounter | None = None,
    model: str | None = None,
    strategy: str | Strategy = "sliding_window",
    max_messages: int | None = None,
    retention_ratio: float | None = None,
    priorities: Sequence[int] | None = None,
    pinned: Collection[int] = (),
    repair: bool = False,
    tools: Sequence[Any] | None = None,
    provider: str | ProviderRules | None = None,
    cache: MessageCountCache | None = None,
    validate: Literal["kept", "all"] = "kept",
    pruning: Pruning | None = None,
    truncate_newest: bool = True,
) -> list[Any]:
    """Return the messages of ``messages`` to send within ``budget_tokens`` (input untouched).

    ``budget_tokens`` is what the context may use, the manager's ``budget_tokens`` (its
    ``max_tokens`` window less the reply's reserve): reply priming and tool definitions count in
    it, the reply does not. ``priorities`` and ``pinned`` are per input index.
    ``strategy``: ``"sliding_window"`` (drop the oldest groups until the rest fits),
    ``"priority"`` or a :class:`~context_manager.budget.strategies.Strategy`; ``"fifo"`` raises
    :class:`ConfigurationError`, since FIFO's answer depends on the order of adds, which a list
    does not have.

    ``retention_ratio=r`` (sliding window only) cuts to about ``r`` x the room at a user turn and
    holds that cut while what follows fits, so calling ``trim`` afresh on each request of a
    growing history returns a stable prefix (prompt caches hit). The cut is a pure function of
    the history, the same as a ``MessageContextManager`` with the same settings would return;
    the rule is stated in :class:`~context_manager.budget.strategies.SlidingWindow`.

    ``counter`` / ``model``: as for the manager, ``model`` alone picks that model's most precise
    counter and no ``counter`` nor ``model`` means the safe estimate (``"estimate"``; chars/4 is
    ``counter="chars"``); ``model`` does not set the budget here.

    ``provider`` (``"openai"``, ``"openai-responses"``, ``"anthropic"``, ``"bedrock"``,
    ``"gemini"``) keeps that API's rules and protects the newest exchange too (see
    :mod:`context_manager.providers`).

    ``cache``: a :class:`~context_manager.counting.MessageCountCache` you create and keep (per
    worker, tenant or conversation): counts of messages already seen, keyed by content, so
    re-trimming a reloaded history skips counting (and, for plain dicts, normalizing) what it
    counted before. None (the default) keeps nothing between calls.
    ``validate="kept"`` (default) checks every message sent and the tool-call protocol among them
    but reads nothing beyond the cut; ``"all"`` checks the whole history first, as the manager
    does on add (and as the TypeScript reference does), at the cost of reading every message.

    ``pruning``, ``truncate_newest``: as for the manager (pruning ratios are of ``budget_tokens``).
    """
    if validate not in ("kept", "all"):
        raise ConfigurationError(
            f"validate must be 'kept' or 'all', got {short_repr(validate, 60)}"
        )
    if not isinstance(messages, list | tuple):
        messages = message_list(messages)
    if priorities is not None and (
        isinstance(priorities, str | bytes) or not isinstance(priorities, Sequence)
    ):
        raise ConfigurationError(
            f"priorities must be a list of ints, got {short_repr(priorities, 60)}"
        )
    try:
        pins: frozenset[Any] | None = frozenset(pinned)
    except TypeError:
        pins = None
    if pins is None or not all(type(i) is int for i in pins):  # (one past the list pins nothing)
        raise ConfigurationError(
            f"pinned must be a collection of message indices, got {short_repr(pinned, 60)}"
        )
    pinned = pins
    check_flag("truncate_newest", truncate_newest)
    if priorities is not None and len(priorities) != len(messages):
        raise ConfigurationError(
            f"priorities has {len(priorities)} entries for {len(messages)} messages; "
            "give one priority per message"
        )
    for priority in priorities or ():  # the manager's rule, before either path reads them
        check_priority(priority)
    if strategy == "fifo" if isinstance(strategy, str) else isinstance(strategy, FIFO):
        raise ConfigurationError(_FIFO_IN_TRIM)
    if cache is not None and not isinstance(cache, MessageCountCache):
        raise ConfigurationError(
            f"cache must be a MessageCountCache (or None), got {type(cache).__name__}"
        )
    # The manager's option checks, in its order, without building a manager.
    check_int("budget_tokens", budget_tokens, 1)
    window, _ = budget_options(budget_tokens, None, 0.2, 0, 0.9)
    token_counter = get_counter(counter, model=model)
    resolved = get_strategy(strategy, max_messages=max_messages, retention_ratio=retention_ratio)
    rules = get_provider(provider)
    tool_defs = checked_tools(tools)
    if (
        validate == "kept"
        and (pruning is None and not repair)
        and type(resolved) is SlidingWindow
        and resolved.retention_ratio is None
    ):
        allowance = Allowance.counted(token_counter, window, 0, tool_defs, Calibration(False))
        scan = BackwardScan(messages, token_counter, cache)
        paused = gc.isenabled()  # the scan allocates records and keys, never cycles
        if paused:
            gc.disable()
        try:
            kept = scan.select(allowance.cap, resolved.max_messages, pinned, rules)
            left_out = truncate_newest and messages and (not kept or kept[-1] is not messages[-1])
            if not left_out:  # else the newest group was left out: the full path may cut it
                return fuse_turns(kept, rules) if rules else kept
        except (Fallback, InvalidMessageError):
            pass  # the full path decides, and raises the manager's exact error
        finally:
            if paused:
                gc.enable()
    manager = MessageContextManager(
        budget_tokens,
        counter=token_counter,
        strategy=resolved,
        reserve_tokens=0,
        repair=repair,
        tools=tools,
        provider=rules,
        pruning=pruning,
        truncate_newest=truncate_newest,
    )
    manager.close_interrupted = False  # a given list is checked as it is (repair=True fixes it)
    return _fill(manager, messages, priorities, pinned)


def _fill(
    manager: MessageContextManager,
    messages: Sequence[Any],
    priorities: Sequence[int] | None,
    pinned: Collection[int],
) -> list[Any]:
    """The full path: every message added, with the cyclic GC paused during the bulk add."""
    pins = set(pinned)
    add = manager.add
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        if priorities is None and not pins:
            for message in messages:
                add(message)
        else:
            for i, message in enumerate(messages):
                add(
                    message,
                    priority=priorities[i] if priorities is not None else 0,
                    pinned=i in pins,
                )
    finally:
        if paused:
            gc.enable()
    return manager.get_context()
