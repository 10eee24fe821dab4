"""Cache-aware clearing (``ToolResultPruning(cache=...)``): is the cache warm, and what must a
clear save to pay for the part of it that it breaks. The prices rule is
``prompt_cache.economics``; this module applies it to a budgeted context.

A manager sends at most its budget. While everything held fits, clearing ``freed`` tokens sends
``freed`` fewer, and the context changes from the first cleared result on. Once the history is
cut (more held than the budget), room freed by a clear is refilled with older messages: the
whole context changes, and only what brings it under the budget is sent fewer.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ...prompt_cache.economics import cache_expired, min_worthwhile_saving
from ...prompt_cache.rules import CacheRules

if TYPE_CHECKING:
    from ...budget._ledger import Ledger

__all__ = ["CacheAge", "clear_need", "sent_saving", "worth_of"]


class CacheAge:
    """Whether the provider's cache is cold for this request.

    A request is stamped when the history it plans is first planned: more plans of the same
    history (``stats()`` while idle, ``get_context`` again) are the same request and do not
    refresh the age. The age is then the time since the previous history was first planned.
    """

    __slots__ = ("_at", "_clock", "_history", "_previous", "previous_history")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._history = -1
        self._at: float | None = None
        self._previous: float | None = None
        #: The history size of the previous request (what its cache entry may cover).
        self.previous_history = 0

    def cold(self, rules: CacheRules, history: int) -> bool:
        """Stamp a plan of ``history`` (a size that only grows) and judge the cache."""
        now = self._clock()
        if history != self._history:
            self.previous_history = max(self._history, 0)
            self._previous, self._history, self._at = self._at, history, now
        return cache_expired(rules, None if self._previous is None else now - self._previous)


def sent_saving(held: int, budget: int, freed: int) -> int:
    """Tokens fewer sent when ``freed`` of ``held`` go: only what brings it under ``budget``."""
    return min(held, budget) - min(held - freed, budget)


def clear_need(rules: CacheRules, payback: int, held: int, budget: int, suffix: int) -> int:
    """Fewest tokens a clear must take off every request (see :func:`sent_saving`) when
    ``suffix`` tokens lie from its first changed position to the end of what is held."""
    sent = min(held, budget)
    changed = sent if held > budget else min(max(suffix, 0), sent)
    return min_worthwhile_saving(changed, rules, payback)


def worth_of(
    rules: CacheRules,
    payback: int,
    ledger: Ledger,
    held: int,
    budget: int,
    pending: Mapping[int, float],
    saved: Mapping[int, int],
    previous: int,
) -> tuple[int, int]:
    """(the fewest sent tokens a rewrite must save, the most it could save) for rewriting the
    messages ``pending`` names (seq -> share of the message's tokens the rewrite removes, in
    order), which already saved ``saved`` (seq -> tokens); ``previous`` is the history size of
    the previous request: the rewrite changes what that request cached behind its first
    changed message (messages new since then are written either way)."""
    if not pending:
        return 0, 0
    tokens, seqs = ledger.tokens, ledger.seq
    most = sum(
        int((tokens[i] - saved.get(seq, 0)) * min(share, 1.0))
        for seq, share in pending.items()
        if (i := bisect_left(seqs, seq)) < len(seqs) and seqs[i] == seq
    )
    g, h = ledger.group_of_seq(next(iter(pending))), ledger.group_of_seq(previous)
    behind = sum(saved.get(seq, 0) for seq in pending if seq < previous)
    suffix = ledger.cum[h] - ledger.cum[g] - behind if h > g else 0
    return clear_need(rules, payback, held, budget, suffix), sent_saving(held, budget, most)
