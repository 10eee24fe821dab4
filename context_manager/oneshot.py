"""One-shot trimming: the manager's semantics for a list you already have.

A stateless backend reloads a history and trims it on every request, so this is the hot path
people compare with LangChain's ``trim_messages``. Building a manager would normalize, count and
validate every message, even the 95% that are then dropped. Instead, for the sliding window
(``"sliding_window"`` / ``"fifo"``, with or without ``provider=``), ``trim`` scans from the
newest message backwards and touches only what it may keep:

* the system prompt (message 0), the pinned groups and the latest user turn are found without
  reading the rest (a pinned group is read from its pin to its edges; the latest user turn is
  found by a backwards walk that skips dicts whose role cannot be a user turn);
* groups are read newest first until the next one no longer fits the room or ``max_messages``:
  one group past the cut is read. A message joins the group before it when it carries results,
  is a parallel call item, or follows a reasoning-only item (the rules of ``ToolProtocol``);
* the tool-call protocol is replayed forwards over everything kept and the open tail, and the
  groups it forms must be the ones the scan assumed (else the full path decides);
* with ``provider=``, the newest exchange is protected and the provider's rules drop groups
  exactly as :func:`~context_manager.budget.plan.plan_context` does (same ``restrict``).

The answer is the manager's, by construction and by the property tests. Only what is never read
cannot be rejected: a broken message or protocol error *beyond the cut* is not reported (the kept
part is always checked; ``validate="all"`` restores the manager's whole-history check). On
anything else (an overflow, an invalid message, ``repair``, ``priority``, ``retention_ratio``,
whose cut depends on the offset of every group from the first, ``pruning``, or a custom
strategy) ``trim`` takes the full path, a manager filled in bulk with the cyclic GC paused, so
errors are exactly the manager's. The common OpenAI chat dicts take ``counting.fastlane``
(record and estimator count without ``normalize``) and ``messages.replay`` (their protocol
rules); other counts use the content cache (``counting.message_cache``). The scan itself lives
in ``budget.backscan``.

With every option at its default (the call a stateless chat backend makes), a history of plain
chat dicts is first offered to ``budget.chat_suffix``: one pass, no records, and when an upper
bound shows everything fits, no counting at all. It answers only what it can answer exactly as
the scan would, and hands everything else over. With ``count_cache`` on, ``budget.chat_memo``
resumes that pass from the last call on the same conversation (only new messages are read).
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

from ._config import budget_options, checked_tools
from .budget.backscan import BackwardScan, Fallback
from .budget.chat_memo import ChatMemo
from .budget.chat_suffix import chat_suffix
from .budget.strategies import SlidingWindow, Strategy, get_strategy
from .counting import CharEstimator, TokenCounter, get_counter
from .counting.message_cache import message_cache_for, on_clear
from .errors import ConfigurationError, InvalidMessageError
from .manager import MessageContextManager
from .providers import ProviderRules, fuse_turns, get_provider

_ESTIMATOR = CharEstimator()  # what counter=None means: the chat fast path reads its figures
_MEMO = ChatMemo(_ESTIMATOR)  # the chat pass resumed across calls (part of ``count_cache``)
on_clear(_MEMO.clear)


def trim(
    messages: Sequence[Any],
    max_tokens: int,
    *,
    counter: str | TokenCounter | None = None,
    model: str | None = None,
    strategy: str | Strategy = "sliding_window",
    reserve_tokens: int = 0,
    max_messages: int | None = None,
    retention_ratio: float | None = None,
    priorities: Sequence[int] | None = None,
    pinned: Collection[int] = (),
    repair: bool = False,
    tools: Sequence[Any] | None = None,
    provider: str | ProviderRules | None = None,
    count_cache: bool = True,
    validate: Literal["kept", "all"] = "kept",
    pruning: Any = None,
    truncate_newest: bool = True,
) -> list[Any]:
    """Return the messages of ``messages`` to send within ``max_tokens`` (input untouched).

    Unlike the manager, ``max_tokens`` is the input budget itself (no output reserve unless
    ``reserve_tokens`` is given). ``"fifo"`` means the same as ``"sliding_window"`` here: drop the
    oldest groups until the rest fits. ``priorities`` and ``pinned`` are per input index.

    ``retention_ratio=r`` (sliding window only) cuts to about ``r`` x the room at a user turn and
    holds that cut while what follows fits, so calling ``trim`` afresh on each request of a
    growing history returns a stable prefix (prompt caches hit). The cut is a pure function of
    the history, the same as a ``MessageContextManager`` with the same settings would return;
    the rule is stated in :class:`~context_manager.budget.strategies.SlidingWindow`.

    ``counter`` / ``model``: as for the manager, ``model`` alone picks that model's most precise
    counter and no ``counter`` nor ``model`` means chars/4; ``model`` does not set the budget here.

    ``provider`` (``"openai"``, ``"openai-responses"``, ``"anthropic"``, ``"bedrock"``,
    ``"gemini"``) keeps that API's rules and protects the newest exchange too (see
    :mod:`context_manager.providers`).

    ``count_cache`` (on by default) reuses the counts of messages already seen with the same
    counter (keyed by content), so re-trimming a reloaded history is nearly free.
    ``validate="kept"`` (default) checks every message sent and the tool-call protocol among them
    but reads nothing beyond the cut; ``"all"`` checks the whole history first, as the manager
    does on add (and as the TypeScript reference does), at the cost of reading every message.

    ``pruning``, ``truncate_newest``: as for the manager (pruning ratios are of ``max_tokens``).
    """
    if (  # the defaults a stateless chat backend passes: one backwards pass may answer
        type(messages) is list
        and type(max_tokens) is int
        and 0 < max_tokens <= 2**53
        and counter is None
        and model is None
        and type(strategy) is str
        and (strategy == "sliding_window" or strategy == "fifo")
        and type(reserve_tokens) is int
        and reserve_tokens == 0
        and max_messages is None
        and retention_ratio is None
        and priorities is None
        and type(pinned) is tuple
        and not pinned
        and not repair
        and tools is None
        and provider is None
        and validate == "kept"
        and pruning is None
    ):
        room = max_tokens - _ESTIMATOR.prompt_overhead
        cut = _MEMO.cut(messages, room) if count_cache else chat_suffix(messages, room, _ESTIMATOR)
        if cut is not None:
            return messages[: cut[0]] + messages[cut[1] :]
    if validate not in ("kept", "all"):
        raise ConfigurationError(f"validate must be 'kept' or 'all', got {validate!r}")
    if not isinstance(messages, list | tuple):
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
            raise ConfigurationError(
                f"messages must be a list of messages, got {type(messages).__name__}"
            )
        messages = list(messages)
    if priorities is not None and (
        isinstance(priorities, str | bytes) or not isinstance(priorities, Sequence)
    ):
        raise ConfigurationError(f"priorities must be a list of ints, got {priorities!r}")
    try:
        pinned = frozenset(pinned)
    except TypeError:
        raise ConfigurationError(
            f"pinned must be a collection of message indices, got {pinned!r}"
        ) from None
    if priorities is not None and len(priorities) != len(messages):
        raise ConfigurationError(
            f"priorities has {len(priorities)} entries for {len(messages)} messages; "
            "give one priority per message"
        )
    if isinstance(strategy, str) and strategy == "fifo":
        strategy = "sliding_window"
    # The manager's option checks, in its order, without building a manager.
    window, reserve = budget_options(max_tokens, None, 0.2, reserve_tokens, 0.9)
    token_counter = get_counter(counter, model=model)
    resolved = get_strategy(strategy, max_messages=max_messages, retention_ratio=retention_ratio)
    rules = get_provider(provider)
    tool_defs = checked_tools(tools)
    if (
        validate == "kept"
        and (pruning is None and not repair)
        and type(resolved) is SlidingWindow
        and resolved.retention_ratio is None
        and (priorities is None or all(type(p) is int for p in priorities))
    ):
        cache = message_cache_for(token_counter) if count_cache else None
        fixed = token_counter.prompt_overhead
        if tool_defs:
            fixed += token_counter.count_tools(list(tool_defs))
        scan = BackwardScan(messages, token_counter, cache)
        paused = gc.isenabled()  # the scan allocates records and keys, never cycles
        if paused:
            gc.disable()
        try:
            kept = scan.select(window - reserve - fixed, resolved.max_messages, pinned, rules)
            left_out = truncate_newest and messages and (not kept or kept[-1] is not messages[-1])
            if not left_out:  # else the newest group was left out: the full path may cut it
                return fuse_turns(kept) if rules and rules.strict else kept
        except (Fallback, InvalidMessageError):
            pass  # the full path decides, and raises the manager's exact error
        finally:
            if paused:
                gc.enable()
    manager = MessageContextManager(
        max_tokens,
        counter=token_counter,
        strategy=resolved,
        reserve_tokens=reserve_tokens,
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
