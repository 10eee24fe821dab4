"""The record a compaction leaves behind: JSON-ready, so a store can persist and replay it.

History stays append-only; an entry only says "send ``summary`` instead of everything before
``first_kept_index``". Only the latest entry matters: each round folds the previous summary in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import CompactionError
from ..messages.nesting import short_repr
from .facts import KINDS, Fact

#: Why a compaction ran (Pi's event reasons).
REASONS = ("manual", "threshold", "overflow")


def utc_timestamp() -> str:
    """ISO 8601 UTC with milliseconds and ``Z``, the form JS ``toISOString()`` writes."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


Clock = Callable[[], str]


#: What a fact's ``status`` may be in a manifest (see :class:`~.facts.Fact`).
FACT_STATUSES = ("kept", "readded", "omitted", "lost")


@dataclass(frozen=True, slots=True)
class CompactionManifest:
    """What one compaction dropped, so a compaction can be checked after the fact.

    The messages at history indices ``first_index`` to ``end_index`` (exclusive; pinned ones
    stay and are not counted) were replaced: ``messages`` of them, ``tokens`` by the manager's
    counter. ``facts`` are those the compaction tracked (extracted from what it dropped, plus
    the previous compaction's), each with the status the summary check gave it;
    ``untracked`` more were found beyond the cap. ``facts_block`` says whether lost facts were
    put back (the policy's ``keep_facts``).
    """

    first_index: int
    end_index: int
    messages: int
    tokens: int
    facts: tuple[Fact, ...] = ()
    untracked: int = 0
    facts_block: bool = True

    def by_status(self, status: str) -> list[Fact]:
        return [fact for fact in self.facts if fact.status == status]

    @property
    def lost(self) -> list[Fact]:
        """Facts the summary did not state (re-added, omitted or left lost)."""
        return [fact for fact in self.facts if fact.status != "kept"]

    def counts(self) -> dict[str, int]:
        """How many facts have each status."""
        out = dict.fromkeys(FACT_STATUSES, 0)
        for fact in self.facts:
            out[fact.status] = out.get(fact.status, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_index": self.first_index,
            "end_index": self.end_index,
            "messages": self.messages,
            "tokens": self.tokens,
            "facts": [
                {"kind": f.kind, "text": f.text, "index": f.index, "status": f.status}
                for f in self.facts
            ],
            "untracked": self.untracked,
            "facts_block": self.facts_block,
        }

    @classmethod
    def from_dict(cls, data: Any) -> CompactionManifest:
        """Rebuild from :meth:`to_dict` output; a malformed one raises ``CompactionError``."""
        if not isinstance(data, Mapping):
            raise CompactionError(
                f"a compaction manifest must be an object, got {short_repr(data, 80)}"
            )
        keys = ("first_index", "end_index", "messages", "tokens", "untracked")
        numbers = [data.get(k, 0 if k == "untracked" else None) for k in keys]
        if not all(type(n) is int for n in numbers):
            raise CompactionError(
                "a compaction manifest needs integer first_index, end_index, messages, tokens "
                "and untracked"
            )
        raw = data.get("facts") or []
        if not isinstance(raw, list):
            raise CompactionError("a compaction manifest's facts must be a list")
        facts = tuple(_fact(item) for item in raw)
        first, end, messages, tokens, untracked = (int(n) for n in numbers)
        return cls(first, end, messages, tokens, facts, untracked, bool(data.get("facts_block")))


def _fact(item: Any) -> Fact:
    if (
        not isinstance(item, Mapping)
        or item.get("kind") not in KINDS
        or not isinstance(item.get("text"), str)
        or not isinstance(item.get("index", -1), int)
        or item.get("status") not in FACT_STATUSES
    ):
        raise CompactionError(
            f"a manifest fact needs kind (one of {', '.join(KINDS)}), text, index and status "
            f"(one of {', '.join(FACT_STATUSES)}); got {item!r:.120}"
        )
    return Fact(item["kind"], item["text"], int(item.get("index", -1)), item["status"])


@dataclass(frozen=True, slots=True)
class CompactionEntry:
    """One applied compaction.

    ``first_kept_index`` is the stable history index of the first message kept verbatim;
    ``tokens_before`` what the whole history cost (manager counter) just before compacting;
    ``details`` holds ``read_files`` / ``modified_files`` accumulated over every round;
    ``manifest`` what this round dropped and which facts survived (None for an entry written
    before manifests existed, or applied by hand).
    """

    summary: str
    first_kept_index: int
    tokens_before: int
    details: dict[str, list[str]] = field(
        default_factory=lambda: {"read_files": [], "modified_files": []}
    )
    reason: str = "manual"
    created_at: str = field(default_factory=utc_timestamp)
    manifest: CompactionManifest | None = None

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise CompactionError(
                f"compaction reason {self.reason!r} is unknown; use one of {', '.join(REASONS)}"
            )

    @property
    def read_files(self) -> list[str]:
        return list(self.details.get("read_files", []))

    @property
    def modified_files(self) -> list[str]:
        return list(self.details.get("modified_files", []))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only, keys in a fixed order (stable log lines)."""
        out = {
            "summary": self.summary,
            "first_kept_index": self.first_kept_index,
            "tokens_before": self.tokens_before,
            "details": {"read_files": self.read_files, "modified_files": self.modified_files},
            "reason": self.reason,
            "created_at": self.created_at,
        }
        if self.manifest is not None:
            out["manifest"] = self.manifest.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompactionEntry:
        """Rebuild from :meth:`to_dict` output (extra keys, e.g. a store's, are ignored)."""
        if not isinstance(data, Mapping):
            raise CompactionError(
                f"a compaction record must be an object (CompactionEntry.to_dict() output), "
                f"got {type(data).__name__}"
            )
        try:
            summary, first_kept = data["summary"], data["first_kept_index"]
            tokens_before = data["tokens_before"]
        except KeyError as exc:
            raise CompactionError(
                f"compaction record lacks {exc.args[0]!r}; expected the keys CompactionEntry."
                "to_dict() writes (summary, first_kept_index, tokens_before, ...)"
            ) from None
        if (
            not isinstance(summary, str)
            or not isinstance(first_kept, int)
            or not isinstance(tokens_before, int)
        ):
            raise CompactionError(
                "compaction record has wrong types: summary must be a string, "
                f"first_kept_index and tokens_before ints; got {short_repr(data, 60)}"
            )
        details = data.get("details") or {}
        if not isinstance(details, Mapping):
            raise CompactionError(f"compaction details must be an object, got {details!r}")
        files = {key: _paths(details.get(key), key) for key in ("read_files", "modified_files")}
        manifest = data.get("manifest")
        return cls(
            summary,
            first_kept,
            tokens_before,
            files,
            str(data.get("reason", "manual")),
            str(data.get("created_at", "")),
            None if manifest is None else CompactionManifest.from_dict(manifest),
        )


def _paths(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CompactionError(f"compaction details.{key} must be a list of file paths")
    return list(value)
