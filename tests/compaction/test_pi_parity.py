"""Compaction agrees with Pi: cut points, summarized messages, file lists and overflow detection.

Expected values are the committed fixtures recorded from the real Pi 0.73.1 packages. Pi session
entries that have a lossless equivalent in our records (same estimate per message) are converted
to records, planned by our policy through ``convert.py`` and compared with what Pi returned.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager.compaction import TokenBudgetCompaction, is_context_overflow
from context_manager.compaction.pi_rules import (
    FileOps,
    compute_file_lists,
    convert_to_llm,
    serialize_conversation,
)
from context_manager.errors import CompactionError, ConfigurationError

from .helpers import Item, load_cases, records_for


def _convertible(suite: str) -> list[tuple[dict[str, Any], list[Item]]]:
    out = []
    for case in load_cases(suite):
        entries = case["input"]["entries"]
        whole = case["input"].get("startIndex", 0) == 0 and case["input"].get(
            "endIndex", len(entries)
        ) == len(entries)
        records = records_for(entries) if whole else None
        if records is not None:
            out.append((case, [Item(10 + i, r) for i, r in enumerate(records)]))
    return out


CUT_CASES = _convertible("pi.findCutPoint")
PREPARE_CASES = [
    (c, items) for c, items in _convertible("pi.prepareCompaction") if c["expected"] is not None
]


def test_enough_fixture_cases_convert() -> None:
    assert len(CUT_CASES) >= 150
    assert sum(c["expected"]["isSplitTurn"] for c, _ in CUT_CASES) >= 10
    assert len(PREPARE_CASES) >= 80


@pytest.mark.parametrize(("case", "items"), CUT_CASES, ids=[c["id"] for c, _ in CUT_CASES])
def test_cut_point_equals_pi(case: dict[str, Any], items: list[Item]) -> None:
    keep = case["input"]["keepRecentTokens"]
    if keep < 0:  # Pi treats it like 0; we refuse the configuration instead
        with pytest.raises(ConfigurationError):
            TokenBudgetCompaction(keep_recent_tokens=keep)
        return
    policy = TokenBudgetCompaction(keep_recent_tokens=keep)
    _, cut = policy.find_cut(items)
    expected = case["expected"]
    assert cut.first == expected["firstKeptEntryIndex"]
    assert cut.is_split_turn == expected["isSplitTurn"]
    if expected["isSplitTurn"]:
        assert cut.turn == expected["turnStartIndex"]
    if 0 < cut.first < len(items):  # a cut at 0 means "nothing to compact"
        assert not items[cut.first].record.result_ids


@pytest.mark.parametrize(("case", "items"), PREPARE_CASES, ids=[c["id"] for c, _ in PREPARE_CASES])
def test_plan_equals_pi_prepare_compaction(case: dict[str, Any], items: list[Item]) -> None:
    settings = case["input"]["settings"]
    expected = case["expected"]
    policy = TokenBudgetCompaction(
        keep_recent_tokens=settings["keepRecentTokens"], reserve_tokens=settings["reserveTokens"]
    )
    if not expected["messagesToSummarize"] and not expected["isSplitTurn"]:
        with pytest.raises(CompactionError, match="nothing to compact"):
            policy.plan(items)
        return
    plan = policy.plan(items)
    position = next(
        i for i, e in enumerate(case["input"]["entries"]) if e["id"] == expected["firstKeptEntryId"]
    )
    assert plan.first_kept_index == items[position].index
    assert plan.is_split_turn == expected["isSplitTurn"]
    assert plan.conversation == serialize_conversation(
        convert_to_llm(expected["messagesToSummarize"])
    )
    assert plan.prefix_conversation == serialize_conversation(
        convert_to_llm(expected["turnPrefixMessages"])
    )
    ops = expected["fileOps"]
    read, modified = compute_file_lists(
        FileOps(
            dict.fromkeys(ops["read"]), dict.fromkeys(ops["written"]), dict.fromkeys(ops["edited"])
        )
    )
    assert list(plan.read_files) == read
    assert list(plan.modified_files) == modified
    assert plan.summary_max_tokens == int(0.8 * settings["reserveTokens"])
    assert plan.prefix_max_tokens == int(0.5 * settings["reserveTokens"])


OVERFLOW_CASES = load_cases("pi.isContextOverflow")


def test_overflow_fixtures_all_agree() -> None:
    assert len(OVERFLOW_CASES) > 1000
    for case in OVERFLOW_CASES:
        got = is_context_overflow(case["input"]["message"], case["input"].get("contextWindow"))
        assert got == case["expected"], case["id"]


class FakeAPIError(Exception):
    """Shaped like openai.APIStatusError / anthropic.APIStatusError (duck-typed)."""

    def __init__(
        self, message: str, *, status_code: int, body: Any = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.body = body
        self.code = code


def _error_cases() -> list[dict[str, Any]]:
    """Fixture cases decided by the error text alone (what SDK exceptions carry)."""
    return [
        c
        for c in OVERFLOW_CASES
        if c["input"]["message"].get("stopReason") == "error"
        and isinstance(c["input"]["message"].get("errorMessage"), str)
        and c["input"]["message"]["errorMessage"]
    ]


def test_overflow_text_and_sdk_exception_forms_agree_with_pi() -> None:
    cases = _error_cases()
    assert len(cases) > 300
    assert {c["expected"] for c in cases} == {True, False}
    for case in cases:
        text = case["input"]["message"]["errorMessage"]
        assert is_context_overflow(text) == case["expected"], case["id"]
        error = FakeAPIError(text, status_code=400, body={"error": {"message": text}})
        assert is_context_overflow(error) == case["expected"], case["id"]
