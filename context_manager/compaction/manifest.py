"""Compaction you can check: the facts block a summary gets, and what each drop removed.

After a summarizer returns, :func:`checked_summary` finds the facts of the dropped messages
(``facts.py``) that the summary does not state and appends them as a labelled block, within a
token budget (least important first out, their number said). It does this for every
summarizer: the check reads the summary text, never the summarizer. The
:class:`~.entry.CompactionManifest` it returns goes into the compaction's entry, so every store
persists it with the ``_compaction`` record.

A manager's compactions (and, once :func:`watch` ran, its FIFO evictions, which are not logged)
are kept in a per-manager :class:`DropLog` (``manager.extension``): :func:`compactions` and
:func:`evictions` list them. A store replays ``_compaction`` records through the same log, so a
reopened manager lists the compactions of its session too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..events import Cleared, Compacted, Event, Evicted
from ..host import HistoryItem, ManagerHost
from ..messages import normalize
from .entry import CompactionEntry, CompactionManifest
from .facts import (
    MAX_FACTS,
    MAX_TRACKED_FACTS,
    Fact,
    extract_facts,
    lost_facts,
    rank_facts,
    render_facts_block,
)
from .prompts import file_blocks_start

__all__ = [
    "DropLog",
    "EvictionRecord",
    "checked_summary",
    "compactions",
    "evictions",
    "watch",
]


def checked_summary(
    summary: str,
    dropped: Sequence[HistoryItem],
    end_index: int,
    previous: CompactionManifest | None,
    *,
    keep_facts: bool,
    count: Callable[[str], int],
    limit: int,
    block_tokens: int,
) -> tuple[str, CompactionManifest]:
    """``summary`` with the facts it lost added before its file lists (when ``keep_facts``),
    and the manifest.

    ``dropped`` are the history items the compaction replaces (``end_index`` is the first kept
    one); ``previous`` the last compaction's manifest, whose facts are checked again (an LLM
    folding the previous summary in may drop them now). ``count(text)`` is what the summary
    message for ``text`` costs; the result costs at most ``limit`` and its block at most
    ``block_tokens``. The block holds the most facts that fit (a binary search: O(log n)
    counts); the rest are ``omitted`` and their number is stated. It tracks the most important
    facts, as many as the block could hold (one per 8 tokens; 200 to 2,000).
    """
    most = max(MAX_FACTS, min(MAX_TRACKED_FACTS, block_tokens // 8))
    found = extract_facts(
        [item.record for item in dropped], [item.index for item in dropped], limit=most
    )
    tracked = rank_facts(found.facts, previous.facts if previous else (), limit=most)
    lost = lost_facts(tracked.facts, summary)
    status = dict.fromkeys(((f.kind, f.text) for f in lost), "omitted" if keep_facts else "lost")
    if keep_facts and lost:
        ceiling = min(limit, count(summary) + block_tokens)

        at = file_blocks_start(summary)  # the block goes before the file lists

        def with_block(k: int) -> str:
            block = render_facts_block(lost[:k], len(lost) - k)
            return f"{summary[:at]}\n\n{block}{summary[at:]}"

        low, high = -1, len(lost)  # with_block(low) fits (-1: none tried yet); high: unknown
        while low < high:
            mid = (low + high + 1) // 2
            if count(with_block(mid)) <= ceiling:
                low = mid
            else:
                high = mid - 1
        if low >= 0:
            summary = with_block(low)
            status.update(dict.fromkeys(((f.kind, f.text) for f in lost[:low]), "readded"))
    facts = tuple(replace(f, status=status.get((f.kind, f.text), "kept")) for f in tracked.facts)
    manifest = CompactionManifest(
        first_index=dropped[0].index if dropped else end_index,
        end_index=end_index,
        messages=len(dropped),
        tokens=sum(item.tokens for item in dropped),
        facts=facts,
        untracked=found.over_limit + tracked.over_limit,
        facts_block=keep_facts,
    )
    return summary, manifest


# --- What a manager dropped ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvictionRecord:
    """One FIFO eviction: ``messages`` dropped for good, their ``tokens`` (manager counter) and
    the facts they stated (ranked, at most :data:`~.facts.MAX_FACTS`; ``untracked`` more).

    Evictions are not logged, so only those seen since :func:`watch` are listed, and the
    event does not carry history indices (``number`` counts the evictions seen instead)."""

    number: int
    messages: int
    tokens: int
    facts: tuple[Fact, ...]
    untracked: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "messages": self.messages,
            "tokens": self.tokens,
            "facts": [{"kind": f.kind, "text": f.text} for f in self.facts],
            "untracked": self.untracked,
        }


#: Eviction records kept per manager (the oldest go first; FIFO may evict on every add).
MAX_EVICTION_RECORDS = 256


class DropLog:
    """A manager's compactions (all applied since it was watched, restored ones included) and
    its newest evictions; cleared with the history."""

    def __init__(self, manager: ManagerHost) -> None:
        self._manager = manager
        self.entries: list[Any] = []
        self.evictions: deque[EvictionRecord] = deque(maxlen=MAX_EVICTION_RECORDS)
        self.evicted = 0  # evictions seen, older records included

    def on_event(self, event: Event) -> None:
        if isinstance(event, Compacted):
            if event.entry is not None:
                self.entries.append(event.entry)
        elif isinstance(event, Cleared):
            self.entries.clear()
            self.evictions.clear()
        elif isinstance(event, Evicted):
            self._evicted(event.messages)

    def _evicted(self, messages: Sequence[Any]) -> None:
        records = [normalize(message) for message in messages]
        found = extract_facts(records, [-1] * len(records))
        tokens = sum(self._manager.count_message(message) for message in messages)
        self.evicted += 1
        record = EvictionRecord(
            self.evicted,
            len(messages),
            tokens,
            tuple(replace(f, status="lost") for f in found.facts),
            found.over_limit,
        )
        self.evictions.append(record)


def watch(manager: ManagerHost) -> DropLog:
    """Start recording what ``manager`` drops (idempotent); compaction calls it itself."""

    def create() -> DropLog:
        log = DropLog(manager)
        manager.subscribe(log.on_event)
        return log

    return manager.extension(DropLog, create)


def compactions(manager: ManagerHost) -> list[CompactionEntry]:
    """The compactions applied to ``manager`` since it was created or opened (a store-backed
    manager: every compaction of its session's current history), oldest first. Each entry's
    ``manifest`` says what it dropped and which facts survived (None for entries written
    before manifests existed)."""
    log = watch(manager)
    with manager.locked():
        listed = [e for e in log.entries if isinstance(e, CompactionEntry)]
        latest = manager.compaction
        if not listed and isinstance(latest, CompactionEntry):
            listed = [latest]  # applied before anything watched this manager
        return listed


def evictions(manager: ManagerHost) -> list[EvictionRecord]:
    """The newest FIFO evictions seen since :func:`watch` (at most 256), oldest first."""
    log = watch(manager)
    with manager.locked():
        return list(log.evictions)
