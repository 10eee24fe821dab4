"""Public compaction calls given a wrong argument raise the library's typed errors, never a raw
``TypeError`` / ``AttributeError`` from deep inside (checked at the door, with a message)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from context_manager import MessageContextManager, ToolResultPruning
from context_manager.compaction import (
    CompactionEntry,
    kimi_history_text,
    restore_compaction,
    to_pi_entries,
    to_pi_messages,
)
from context_manager.compaction.pi_rules import (
    convert_to_llm,
    find_cut_point,
    find_turn_start_index,
    serialize_conversation,
)
from context_manager.errors import (
    CompactionError,
    ConfigurationError,
    ContextManagerError,
    InvalidMessageError,
)


def _manager() -> MessageContextManager:
    manager = MessageContextManager(8000, counter="chars")
    for _ in range(20):
        manager.add({"role": "user", "content": "hi " * 100})
        manager.add({"role": "assistant", "content": "ok " * 100})
    return manager


CASES: dict[str, tuple[Callable[[], object], type[ContextManagerError], str]] = {
    "compact with a string policy": (
        lambda: _manager().compact(policy="pi"),
        ConfigurationError,
        "policy must be a CompactionPolicy",
    ),
    "compact with a number focus": (
        lambda: _manager().compact(focus=5),
        ConfigurationError,
        "focus",
    ),
    "entry from None": (lambda: CompactionEntry.from_dict(None), CompactionError, "object"),
    "entry from a list": (lambda: CompactionEntry.from_dict([]), CompactionError, "object"),
    "restore from a list": (
        lambda: restore_compaction(_manager(), []),
        CompactionError,
        "object",
    ),
    "to_pi_messages of a list": (
        lambda: to_pi_messages([{"role": "user", "content": [[[]]]}]),
        InvalidMessageError,
        "unsupported message type",
    ),
    "to_pi_messages with str call_names": (
        lambda: to_pi_messages({"role": "user", "content": "hi"}, "names"),
        ConfigurationError,
        "call_names",
    ),
    "to_pi_entries of None": (lambda: to_pi_entries(None), ConfigurationError, "list"),
    "to_pi_entries of [None]": (lambda: to_pi_entries([None]), InvalidMessageError, "message 0"),
    "kimi_history_text of [None]": (
        lambda: kimi_history_text([None]),
        InvalidMessageError,
        "message 0",
    ),
    "kimi_history_text of None": (lambda: kimi_history_text(None), ConfigurationError, "list"),
    "serialize_conversation of [None]": (
        lambda: serialize_conversation([None]),
        InvalidMessageError,
        "message 0 must be an object",
    ),
    "serialize_conversation of None": (
        lambda: serialize_conversation(None),
        ConfigurationError,
        "list",
    ),
    "convert_to_llm of [5]": (
        lambda: convert_to_llm([5]),
        InvalidMessageError,
        "message 0 must be an object",
    ),
    "find_cut_point on a null message": (
        lambda: find_cut_point([{"type": "message", "message": None}], 0, 1, 100),
        InvalidMessageError,
        "entry 0's message must be an object",
    ),
    "find_cut_point on a non-object entry": (
        lambda: find_cut_point([None], 0, 1, 100),
        InvalidMessageError,
        "entry 0 must be an object",
    ),
    "find_cut_point with a string index": (
        lambda: find_cut_point([], "0", 1, 100),
        ConfigurationError,
        "start_index",
    ),
    "find_cut_point with a string keep": (
        lambda: find_cut_point([], 0, 0, "100"),
        ConfigurationError,
        "keep_recent_tokens",
    ),
    "find_turn_start_index on a null message": (
        lambda: find_turn_start_index([{"type": "message", "message": None}], 0, 0),
        InvalidMessageError,
        "entry 0's message",
    ),
    "pruning with a number placeholder": (
        lambda: ToolResultPruning(placeholder=5),  # type: ignore[arg-type]
        ConfigurationError,
        "placeholder must be a string",
    ),
    "pruning with a number marker": (
        lambda: ToolResultPruning(marker=5),  # type: ignore[arg-type]
        ConfigurationError,
        "marker must be a string",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_wrong_argument_raises_a_typed_error(name: str) -> None:
    call, error, words = CASES[name]
    with pytest.raises(error, match=words):
        call()


def test_checked_doors_still_accept_what_they_documented() -> None:
    """The checks refuse only wrong values: records, accepted messages and Pi entries pass."""
    text = kimi_history_text([{"role": "user", "content": "hi"}])
    assert text == "## Message 1\nRole: user\nContent: hi"
    view = to_pi_entries([{"role": "user", "content": "hi"}], (7,))
    assert view.entries[0]["id"] == "7"
    entries = [{"type": "message", "message": {"role": "user", "content": "hi"}}]
    assert find_cut_point(entries, 0, 1, 100).first_kept_entry_index == 0
    assert serialize_conversation(convert_to_llm([entries[0]["message"]])) == "[User]: hi"


def _pi_rules() -> list[str]:
    import inspect

    from context_manager.compaction import pi_rules

    return [n for n in pi_rules.__all__ if inspect.isfunction(getattr(pi_rules, n))]


@pytest.mark.parametrize("name", _pi_rules())
@pytest.mark.parametrize("value", [None, 42, "x", [None], {"a": 1}, [[[]]]])
def test_every_pi_rule_raises_only_typed_errors(name: str, value: Any) -> None:
    """The Pi rules read Pi's own JSON; anything else is a typed error naming the rule."""
    import inspect

    from context_manager.compaction import pi_rules
    from context_manager.errors import ContextManagerError

    rule = getattr(pi_rules, name)
    required = [
        p
        for p in inspect.signature(rule).parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    try:
        rule(*[value] * len(required))
    except ContextManagerError as exc:
        assert str(exc)  # typed, and says why
