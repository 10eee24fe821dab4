"""Pi's cut-point rules (``findCutPoint``, ``findTurnStartIndex``): where compaction may cut."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigurationError
from ...messages import message_list
from ._shapes import PiEntry, PiMessage, _pi_object
from .estimate import estimate_tokens

# Tuples, not sets: a hostile entry's role or type may be unhashable.
_CUT_ROLES = ("user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary")
_USERLIKE_ENTRY_TYPES = ("branch_summary", "custom_message")


@dataclass(frozen=True, slots=True)
class CutPoint:
    """Where to cut: keep entries from ``first_kept_entry_index`` on.

    ``is_split_turn`` says the cut falls inside a turn whose start (a user-like entry) sits at
    ``turn_start_index``; that turn's prefix then needs its own summary. ``-1`` means none.
    """

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool

    def to_pi(self) -> dict[str, Any]:
        """Pi's object shape ``{firstKeptEntryIndex, turnStartIndex, isSplitTurn}``."""
        return {
            "firstKeptEntryIndex": self.first_kept_entry_index,
            "turnStartIndex": self.turn_start_index,
            "isSplitTurn": self.is_split_turn,
        }


def _index(name: str, value: object) -> int:
    if type(value) is not int:  # a bool or a float would index wrongly, a string not at all
        raise ConfigurationError(f"{name} must be an int, got {type(value).__name__}")
    return value


def _entry(entries: Sequence[PiEntry], index: int) -> PiEntry:
    """Entry ``index``, checked: in range (Pi would read `undefined` here and throw) and an
    object; a ``message`` entry must carry a message object (Pi reads its ``role``)."""
    if not 0 <= index < len(entries):
        raise ConfigurationError(f"entry index {index} is outside 0..{len(entries) - 1}")
    entry = _pi_object(entries[index], f"entry {index}")
    if entry.get("type") == "message":
        _pi_object(entry.get("message"), f"entry {index}'s message")
    return entry


def _is_valid_cut(entry: PiEntry) -> bool:
    """A cut may land on any user-visible turn piece except a tool result (it needs its call)."""
    kind = entry.get("type")
    if kind == "message":
        return entry["message"].get("role") in _CUT_ROLES
    return kind in _USERLIKE_ENTRY_TYPES


def _starts_turn(entry: PiEntry) -> bool:
    kind = entry.get("type")
    if kind in _USERLIKE_ENTRY_TYPES:
        return True
    return kind == "message" and entry["message"].get("role") in ("user", "bashExecution")


def find_turn_start_index(entries: Sequence[PiEntry], entry_index: int, start_index: int) -> int:
    """Index of the user / bashExecution / branch_summary / custom_message entry that starts the
    turn holding ``entry_index``, searching back to ``start_index``; ``-1`` if there is none."""
    entries = message_list(entries)
    entry_index, start_index = (
        _index("entry_index", entry_index),
        _index("start_index", start_index),
    )
    for i in range(entry_index, start_index - 1, -1):
        if _starts_turn(_entry(entries, i)):
            return i
    return -1


def find_cut_point(
    entries: Sequence[PiEntry],
    start_index: int,
    end_index: int,
    keep_recent_tokens: float,
    estimate: Callable[[PiMessage], int] = estimate_tokens,
) -> CutPoint:
    """Pi's ``findCutPoint`` over ``entries[start_index:end_index]``.

    Walks back from the newest entry summing message estimates; once the sum reaches
    ``keep_recent_tokens`` the cut goes to the first valid cut point at or after that entry (if
    there is none, Pi keeps everything from the first valid cut point). The cut then extends back
    over non-message entries until a message or compaction entry. ``estimate`` lets callers pass
    cached per-message counts; it must agree with :func:`estimate_tokens` to stay Pi-exact.
    Cost: O(entries walked back) plus a short forward scan.
    """
    entries = message_list(entries)
    start_index, end_index = _index("start_index", start_index), _index("end_index", end_index)
    if isinstance(keep_recent_tokens, bool) or not isinstance(keep_recent_tokens, int | float):
        raise ConfigurationError(
            f"keep_recent_tokens must be a number, got {type(keep_recent_tokens).__name__}"
        )
    if not callable(estimate):
        raise ConfigurationError(f"estimate must be a callable, got {type(estimate).__name__}")
    if start_index < end_index and (start_index < 0 or end_index > len(entries)):
        # Pi reads `undefined` there and throws; Python would wrap or raise IndexError.
        raise ConfigurationError(
            f"cut range {start_index}..{end_index} is outside the {len(entries)} entries"
        )
    first_valid = next(
        (i for i in range(start_index, end_index) if _is_valid_cut(_entry(entries, i))), None
    )
    if first_valid is None:
        return CutPoint(start_index, -1, False)
    cut = first_valid
    accumulated = 0
    for i in range(end_index - 1, start_index - 1, -1):
        entry = _entry(entries, i)
        if entry.get("type") != "message":
            continue
        accumulated += estimate(entry["message"])
        if accumulated >= keep_recent_tokens:
            cut = next((c for c in range(i, end_index) if _is_valid_cut(_entry(entries, c))), cut)
            break
    while cut > start_index:
        previous = _entry(entries, cut - 1).get("type")
        if previous in ("compaction", "message"):
            break
        cut -= 1
    cut_entry = _entry(entries, cut)
    is_user = cut_entry.get("type") == "message" and cut_entry["message"].get("role") == "user"
    turn_start = -1 if is_user else find_turn_start_index(entries, cut, start_index)
    return CutPoint(cut, turn_start, not is_user and turn_start != -1)
