"""One-shot trimming: the manager's semantics for a list you already have."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from .budget.strategies import Strategy
from .counting import TokenCounter, get_counter
from .errors import ConfigurationError
from .manager import MessageContextManager
from .providers import ProviderRules


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

    ``pruning`` (a ``ToolResultPruning``) trims or clears old tool results first, in copies;
    its ratios are of ``max_tokens``. ``truncate_newest`` cuts the newest tool exchange
    head+tail to fit instead of leaving it out (False: the TS reference's older rule, drop it).
    """
    if priorities is not None and len(priorities) != len(messages):
        raise ConfigurationError(
            f"priorities has {len(priorities)} entries for {len(messages)} messages; "
            "give one priority per message"
        )
    if isinstance(strategy, str) and strategy == "fifo":
        strategy = "sliding_window"
    manager = MessageContextManager(
        max_tokens,
        counter=get_counter(counter, model=model),
        strategy=strategy,
        reserve_tokens=reserve_tokens,
        max_messages=max_messages,
        retention_ratio=retention_ratio,
        repair=repair,
        tools=tools,
        provider=provider,
        pruning=pruning,
        truncate_newest=truncate_newest,
    )
    manager.close_interrupted = False  # a given list is checked as it is (repair=True fixes it)
    pins = set(pinned)
    for i, message in enumerate(messages):
        manager.add(
            message,
            priority=priorities[i] if priorities is not None else 0,
            pinned=i in pins,
        )
    return manager.get_context()
