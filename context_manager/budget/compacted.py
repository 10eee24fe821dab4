"""The providers' rule for native compaction, once: what precedes the latest compaction is
not sent.

An OpenAI Responses ``compaction`` item stands for everything before it (items before the
latest one may be dropped), and Anthropic rejects a request whose server-compaction block is
not the first block of the conversation, or that holds two of them. So when the history holds
a native compaction (a record with :attr:`~context_manager.messages.Message.compaction` set),
the context starts at the latest one: the system prompt and pinned messages are still sent,
the latest user turn is protected when it comes after it (else the compaction, which stands
for it, is protected in its place), and the compaction is never dropped by a provider's rules.
Under a provider that cannot read it (a model switch) the compaction is not sent and sets no
floor (``restrict.restrict`` drops it).

The rule is a floor under every strategy: each one already decides within
``[view.floor, view.complete)``, so raising the floor of the view it reads makes all of them
(and a custom one) obey, with no second copy of the fit rule. ``trim()``'s backward scan sets
the same floor where it meets the item (``budget/backscan.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import copy
from operator import attrgetter
from typing import TypeVar

from ..messages import Message
from ..providers import ProviderRules, reads_compaction
from ._ledger import Ledger

__all__ = [
    "after_compaction",
    "compaction_group",
    "foreign_compaction",
    "newest_sendable",
    "sendable",
    "sent_summary",
]

T = TypeVar("T")

_MAKER = attrgetter("compaction")


def sendable(rec: Message, rules: ProviderRules | None) -> bool:
    """``rec`` carries a native compaction a request under ``rules`` can carry."""
    return bool(rec.compaction) and reads_compaction(rules, rec.compaction)


def _latest(ledger: Ledger) -> tuple[int, str]:
    """The held group holding the latest native compaction and its maker, or ``(-1, "")``."""
    g = ledger.native
    if not ledger.floor <= g < ledger.complete:
        return -1, ""
    records = ledger.records[ledger.group_start[g] : ledger.group_end(g)]
    return g, next((r.compaction for r in records if r.compaction), "")


def newest_sendable(records: Sequence[Message], rules: ProviderRules | None) -> int:
    """The first of ``records`` carrying a native compaction ``rules`` can carry, or -1: one
    C-level pass when none carries any (the usual case), as ``trim()`` reads what it keeps."""
    if not any(map(_MAKER, records)):
        return -1
    return next((k for k, rec in enumerate(records) if sendable(rec, rules)), -1)


def compaction_group(ledger: Ledger, rules: ProviderRules | None) -> int:
    """The group of the latest native compaction a request under ``rules`` can carry, or -1."""
    g, maker = _latest(ledger)
    return g if g >= 0 and reads_compaction(rules, maker) else -1


def sent_summary(ledger: Ledger, rules: ProviderRules | None, summary: T | None) -> T | None:
    """The manager's own compaction summary when it is sent: not when a native compaction the
    provider reads is held. What the summary stands for came before that compaction (a later
    cut of ours past it would have removed it), so the native one stands for it too, and it
    must open the conversation (Anthropic refuses a request where it does not)."""
    return summary if compaction_group(ledger, rules) < 0 else None


def foreign_compaction(ledger: Ledger, rules: ProviderRules | None) -> bool:
    """The latest native compaction was made by a provider ``rules`` cannot read (a model
    switch): it is not sent, and is no floor (the turns before it are all the model gets)."""
    g, maker = _latest(ledger)
    return g >= 0 and not reads_compaction(rules, maker)


def after_compaction(ledger: Ledger, rules: ProviderRules | None) -> Ledger:
    """``ledger`` as strategies see it: floor raised to the latest native compaction, which is
    protected in place of the latest user turn when that comes before it (it stands for it).

    A read-only copy sharing every list (O(attributes)); the ledger itself when there is no
    compaction to honour. The priority levels are brought up to date first and shared, so the
    copy never files them again.
    """
    g = compaction_group(ledger, rules)
    if g < 0 or (g <= ledger.floor and not 0 <= ledger.protected < g):
        return ledger  # (FIFO may keep the latest user turn below its floor)
    ledger.levels  # noqa: B018 (catch the shared levels up before the copy shares them)
    view = copy(ledger)
    view.floor = max(g, ledger.floor)
    if view.protected < g:
        view.protected = g  # it stands for the latest user turn: sent, or the overflow says so
    return view
