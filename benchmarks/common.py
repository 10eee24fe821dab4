"""Shared settings and helpers for the benchmark suites.

``BENCH_QUICK=1`` (set by ``python -m benchmarks.enforce --quick``) keeps every spec size
(1k/10k/100k messages) but takes fewer rounds, so CI gets the same targets in less time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from context_manager import MessageContextManager
from context_manager.messages import normalize

from . import corpus

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
SIZES = (1_000, 10_000, 100_000)
#: tracemalloc makes adds ~3x slower: quick mode checks linearity up to 30k messages.
QUICK_MEMORY_SIZES = (1_000, 10_000, 30_000)
MEMORY_SIZES = QUICK_MEMORY_SIZES if QUICK else SIZES
STRATEGIES = ("fifo", "sliding_window", "priority")
#: A 128k-token window with the default 20% output reserve: every size above 1k gets trimmed.
WINDOW = 128_000


def rounds(full: int, quick: int) -> int:
    return quick if QUICK else full


def filled_manager(
    n: int, strategy: str = "sliding_window", *, counter: Any = "chars", max_tokens: int = WINDOW
) -> MessageContextManager:
    """A manager that has been given the first ``n`` corpus messages (priorities for priority)."""
    messages = corpus.conversation(n)
    manager = MessageContextManager(max_tokens, strategy=strategy, counter=counter)
    if strategy == "priority":
        for message, priority in zip(messages, corpus.priorities(messages), strict=True):
            manager.add(message, priority=priority)
    else:
        for message in messages:
            manager.add(message)
    return manager


def check_context(manager: MessageContextManager, n: int) -> list[Any]:
    """Refuse to time a broken context: it must fill most of the budget and respect the protocol.

    The returned messages are recounted from scratch (not read from the manager's bookkeeping):
    a benchmark of an empty or orphaned context would be fast and meaningless, so this fails the
    run instead.
    """
    context = manager.get_context()
    counter = manager.counter
    used = counter.prompt_overhead + sum(counter.count_message(normalize(m)) for m in context)
    expected = min(manager.token_count + counter.prompt_overhead, manager.budget_tokens)
    if used < 0.8 * expected or used > manager.budget_tokens:
        raise AssertionError(
            f"{manager.strategy.name} at {n} messages: the {len(context)} messages returned "
            f"count {used} tokens, expected about {expected} (budget {manager.budget_tokens}, "
            f"{len(manager)} held): the history was lost or misread"
        )
    problem = protocol_problem(context)
    if problem:
        raise AssertionError(f"{manager.strategy.name} at {n} messages: {problem}")
    return context


def _ids(message: Any) -> tuple[list[str], list[str]]:
    """(call ids issued, call ids answered) by an OpenAI dict or a LangChain message."""
    if isinstance(message, dict):
        calls = [c["id"] for c in message.get("tool_calls") or ()]
        result = message.get("tool_call_id")
        return calls, [result] if message.get("role") == "tool" and result else []
    calls = [c["id"] for c in getattr(message, "tool_calls", None) or ()]
    result = getattr(message, "tool_call_id", None)
    return calls, [result] if getattr(message, "type", "") == "tool" and result else []


def protocol_problem(messages: list[Any]) -> str | None:
    """Why ``messages`` would be rejected by a chat API (orphan result / call missing results)."""
    orphans, dangling = broken_tool_pairs(messages)
    if orphans:
        return f"{orphans} tool result(s) without their call"
    if dangling:
        return f"{dangling} tool call(s) without their result"
    return None


def broken_tool_pairs(messages: list[Any]) -> tuple[int, int]:
    """(orphaned results, calls without a result) in ``messages``."""
    issued: set[str] = set()
    answered: set[str] = set()
    orphans = 0
    for message in messages:
        calls, results = _ids(message)
        issued.update(calls)
        for rid in results:
            if rid in issued:
                answered.add(rid)
            else:
                orphans += 1
    return orphans, len(issued - answered)


def cycle(items: list[Any]) -> Iterator[Any]:
    """Endless iteration for pools (each item is used once per lap)."""
    while True:
        yield from items
