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

#: Why a compaction ran (Pi's event reasons).
REASONS = ("manual", "threshold", "overflow")


def utc_timestamp() -> str:
    """ISO 8601 UTC with milliseconds and ``Z``, the form JS ``toISOString()`` writes."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


Clock = Callable[[], str]


@dataclass(frozen=True, slots=True)
class CompactionEntry:
    """One applied compaction.

    ``first_kept_index`` is the stable history index of the first message kept verbatim;
    ``tokens_before`` what the whole history cost (manager counter) just before compacting;
    ``details`` holds ``read_files`` / ``modified_files`` accumulated over every round.
    """

    summary: str
    first_kept_index: int
    tokens_before: int
    details: dict[str, list[str]] = field(
        default_factory=lambda: {"read_files": [], "modified_files": []}
    )
    reason: str = "manual"
    created_at: str = field(default_factory=utc_timestamp)

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
        return {
            "summary": self.summary,
            "first_kept_index": self.first_kept_index,
            "tokens_before": self.tokens_before,
            "details": {"read_files": self.read_files, "modified_files": self.modified_files},
            "reason": self.reason,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompactionEntry:
        """Rebuild from :meth:`to_dict` output (extra keys, e.g. a store's, are ignored)."""
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
                f"first_kept_index and tokens_before ints; got {data!r}"
            )
        details = data.get("details") or {}
        if not isinstance(details, Mapping):
            raise CompactionError(f"compaction details must be an object, got {details!r}")
        files = {key: _paths(details.get(key), key) for key in ("read_files", "modified_files")}
        return cls(
            summary,
            first_kept,
            tokens_before,
            files,
            str(data.get("reason", "manual")),
            str(data.get("created_at", "")),
        )


def _paths(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CompactionError(f"compaction details.{key} must be a list of file paths")
    return list(value)
