"""Pi parity: every recorded case from the real TypeScript packages must be reproduced exactly.

The fixture files come from ``compat_fixtures/gen/pi.mjs`` (real Pi 0.73.1 under Node). The
focused tests below pick single recorded cases by id, so each expected value still comes from Pi;
they exist to name the tricky rules (UTF-16 lengths, split turns, regex semantics) in one place.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from context_manager._js import js_date_ms, js_regex  # only for guards no public call reaches
from context_manager.compaction import pi_rules as pi
from context_manager.errors import ConfigurationError, InvalidMessageError
from context_manager.interop import pi_sessions
from context_manager.parity import pi as pi_parity
from context_manager.parity.verify import describe_failure, verify_file

FIXTURES = Path(__file__).resolve().parents[2] / "compat_fixtures" / "fixtures"
# Suites written by compat_fixtures/gen/pi.mjs (other pi.* files belong to other generators).
SUITES = (
    "pi.estimateTokens",
    "pi.findCutPoint",
    "pi.findTurnStartIndex",
    "pi.shouldCompact",
    "pi.calculateContextTokens",
    "pi.getLastAssistantUsage",
    "pi.estimateContextTokens",
    "pi.convertToLlm",
    "pi.serializeConversation",
    "pi.isContextOverflow",
    "pi.getOverflowPatterns",
    "pi.defaultCompactionSettings",
    "pi.fileOperations",
    "pi.sessionContext",
    "pi.prepareCompaction",
    "pi.malformedInput",
)
SUITE_FILES = [FIXTURES / f"{name}.json" for name in SUITES]
MIN_CASES = {
    "pi.estimateTokens": 1000,
    "pi.findCutPoint": 1000,
    "pi.shouldCompact": 1000,
    "pi.calculateContextTokens": 1000,
    "pi.serializeConversation": 1000,
    "pi.isContextOverflow": 1000,
    "pi.fileOperations": 1000,
    "pi.prepareCompaction": 1000,
}


@cache
def _suite(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _case(suite: str, case_id: str) -> tuple[Any, Any]:
    for case in _suite(suite)["cases"]:
        if case["id"] == case_id:
            return case["input"], case["expected"]
    raise AssertionError(f"fixture {suite} has no case {case_id!r}")


def test_every_required_suite_is_present_and_large_enough() -> None:
    for suite, minimum in MIN_CASES.items():
        assert len(_suite(suite)["cases"]) >= minimum
    assert set(pi_parity.FIXTURE_SUITES) == set(SUITES)
    assert all(_suite(name)["suite"] == name for name in SUITES)


@pytest.mark.parametrize("path", SUITE_FILES, ids=lambda p: p.stem)
def test_suite_matches_pi_exactly(path: Path) -> None:
    result = verify_file(path, dict(pi_parity.FIXTURE_SUITES))
    assert result.error is None
    assert result.package.startswith("@mariozechner/pi-") and result.package.endswith("@0.73.1")
    details = "\n".join(describe_failure(*f) for f in result.failures)
    assert result.passed == result.total, details


# --- estimateTokens: .length is UTF-16 -----------------------------------------------------------


@pytest.mark.parametrize(
    "case_id",
    [
        "emoji-user-string",
        "zwj-family",
        "combining",
        "toolcall-unicode-args",
        "toolcall-numbers",
        "toolcall-numeric-keys",
        "control-chars",
    ],
)
def test_estimate_tokens_measures_like_js(case_id: str) -> None:
    message, expected = _case("pi.estimateTokens", case_id)
    assert pi.estimate_tokens(message) == expected


def test_emoji_counts_two_units_each() -> None:
    message, expected = _case("pi.estimateTokens", "emoji-user-string")
    assert expected == 2  # 3 emoji = 6 UTF-16 units -> ceil(6/4); code points would give 1
    assert len(message["content"].encode("utf-16-le")) // 2 == 6 and len(message["content"]) == 3


def test_image_blocks_cost_4800_chars_in_tool_results_only() -> None:
    result, expected = _case("pi.estimateTokens", "toolresult-image")
    assert pi.estimate_tokens(result) == expected == 1200
    user, expected_user = _case("pi.estimateTokens", "user-image-only")
    assert pi.estimate_tokens(user) == expected_user == 0


# --- findCutPoint ------------------------------------------------------------------------------


def _cut(case: dict[str, Any]) -> pi.CutPoint:
    return pi.find_cut_point(
        case["entries"], case["startIndex"], case["endIndex"], case["keepRecentTokens"]
    )


def test_cut_inside_a_turn_is_a_split_turn() -> None:
    case, expected = _case("pi.findCutPoint", "turn-keep-30")
    cut = _cut(case)
    assert cut.to_pi() == expected
    assert cut.is_split_turn and cut.turn_start_index == 0 and cut.first_kept_entry_index > 0


def test_budget_reached_exactly_on_a_user_message_is_not_split() -> None:
    for keep in (20, 21, 30):
        case, expected = _case("pi.findCutPoint", f"turn-keep-{keep}")
        assert _cut(case).to_pi() == expected
    case, expected = _case("pi.findCutPoint", "turn-keep-20")
    assert expected == {"firstKeptEntryIndex": 5, "turnStartIndex": -1, "isSplitTurn": False}


def test_never_cuts_at_a_tool_result_and_falls_back_to_first_cut_point() -> None:
    case, expected = _case("pi.findCutPoint", "budget-hit-on-trailing-result")
    assert _cut(case).to_pi() == expected
    assert expected["firstKeptEntryIndex"] == 0  # Pi's default when no cut point follows


def test_cut_extends_over_settings_entries_but_not_past_a_compaction() -> None:
    for case_id in ("non-message-extension-15", "compaction-boundary-15"):
        case, expected = _case("pi.findCutPoint", case_id)
        assert _cut(case).to_pi() == expected


def test_find_cut_point_accepts_cached_estimates() -> None:
    case, expected = _case("pi.findCutPoint", "turn-keep-30")
    calls: list[int] = []

    def cached(message: pi.PiMessage) -> int:
        calls.append(1)
        return pi.estimate_tokens(message)

    cut = pi.find_cut_point(case["entries"], 0, len(case["entries"]), 30, cached)
    assert cut.to_pi() == expected
    assert len(calls) < len(case["entries"])  # stops walking once the budget is reached


def test_out_of_range_indices_raise_instead_of_wrapping() -> None:
    case, _ = _case("pi.findCutPoint", "turn-keep-30")
    with pytest.raises(ConfigurationError):
        pi.find_cut_point(case["entries"], 0, len(case["entries"]) + 1, 10)
    results, _ = _case("pi.findCutPoint", "only-tool-results")
    assert pi.find_turn_start_index(results["entries"], 1, 0) == -1
    with pytest.raises(ConfigurationError):
        pi.find_turn_start_index(results["entries"], 1, -1)  # Python would read entries[-1]


# --- shouldCompact / usage ------------------------------------------------------------------------


def test_should_compact_is_strictly_greater_than_window_minus_reserve() -> None:
    results = {}
    for delta in (-1, 0, 1):
        case, expected = _case("pi.shouldCompact", f"boundary-{delta}")
        results[delta] = pi.should_compact(
            case["contextTokens"], case["contextWindow"], case["settings"]
        )
        assert results[delta] == expected
    assert results == {-1: False, 0: False, 1: True}


def test_enabled_uses_js_truthiness() -> None:
    case, expected = _case("pi.shouldCompact", "enabled-[]")
    assert expected is True and not bool([])  # [] is truthy in JS, falsy in Python
    assert pi.should_compact(case["contextTokens"], case["contextWindow"], case["settings"])


def test_total_tokens_zero_falls_back_to_components() -> None:
    usage, expected = _case("pi.calculateContextTokens", "total-zero-falls-back")
    assert pi.calculate_context_tokens(usage) == expected == 20


# --- isContextOverflow ---------------------------------------------------------------------------


def _overflow_text(text: str) -> bool:
    for case in _suite("pi.isContextOverflow")["cases"]:
        inp = case["input"]
        if inp["message"].get("errorMessage") == text and inp["message"]["stopReason"] == "error":
            assert (
                pi.is_context_overflow(inp["message"], inp.get("contextWindow")) == case["expected"]
            )
            return bool(case["expected"])
    raise AssertionError(f"no fixture case for {text!r}")


def test_rate_limit_and_throttling_are_not_overflow() -> None:
    assert _overflow_text("prompt is too long: 213462 tokens > 200000 maximum")
    assert not _overflow_text("Throttling error: Too many tokens, please wait before trying again.")
    # Pi's comment cites Bedrock's "ThrottlingException: Too many tokens" as excluded, but its
    # exclusion regex only knows the "Throttling error:" prefix, so the real Pi says overflow.
    assert _overflow_text("ThrottlingException: Too many tokens, please wait before trying again.")
    assert not _overflow_text("Rate limit reached: context_length_exceeded")
    assert not _overflow_text("429 Too Many Requests: token limit exceeded")


def test_js_regex_semantics_differ_from_python_re() -> None:
    # Each of these is decided differently by Python's re with IGNORECASE.
    assert not _overflow_text("too many to\u212aens")  # Kelvin sign
    assert not _overflow_text("too many token\u017f")  # long s
    assert not _overflow_text("input token count\r\nexceeds the maximum")  # . stops at \r
    assert not _overflow_text("maximum prompt length is \u0661\u0662\u0663")  # \d is ASCII
    assert _overflow_text("400\u00a0(no body)")  # JS \s includes NBSP ...
    assert not _overflow_text("400\u001c(no body)")  # ... but not \x1c
    assert re.search("too many tokens", "too many to\u212aens", re.IGNORECASE)


def test_silent_and_length_overflow_need_a_window() -> None:
    for case_id, want in (
        ("stop-undefined-100001-0", False),
        ("stop-100000-100001-0", True),
        ("stop-100000-100000-0", False),
        ("length-99pct-98999", False),
        ("length-99pct-99000", True),
        ("length-out1-100000-100001-0", False),
    ):
        case, expected = _case("pi.isContextOverflow", case_id)
        assert pi.is_context_overflow(case["message"], case.get("contextWindow")) == expected
        assert expected is want


def test_guards_no_public_call_reaches() -> None:
    """Kept on the private helpers: every public caller passes Pi's constant patterns (flag
    ``i`` on ASCII text) and reads timestamps with NaN for what JS reading is not reproduced,
    so these refusals cannot be reached through the public API."""
    with pytest.raises(ConfigurationError):
        js_regex("a", "g")
    with pytest.raises(ConfigurationError):
        js_regex("é", "i")
    with pytest.raises(InvalidMessageError):
        js_date_ms("2026-01-01T00:00")  # local time in JS: refused, not guessed


# --- serialization -------------------------------------------------------------------------------


def test_tool_result_truncation_can_halve_an_emoji_like_js() -> None:
    messages, expected = _case("pi.serializeConversation", "result-split-surrogate")
    out = pi.serialize_conversation(pi.convert_to_llm(messages))
    assert out == expected
    assert "\ud83d\n\n[... 5 more characters truncated]" in out  # lone high surrogate kept


def test_js_number_and_key_order_in_tool_call_json() -> None:
    messages, expected = _case("pi.serializeConversation", "assistant-only-calls")
    assert pi.serialize_conversation(pi.convert_to_llm(messages)) == expected
    assert "n=1e-7" in expected and '{"2":[1,"😀"],"b":null}' in expected


def _call_arguments(arguments: dict[str, Any]) -> str:
    """How ``serialize_conversation`` writes one tool call's arguments (JS's JSON.stringify)."""
    call = {"type": "toolCall", "id": "1", "name": "f", "arguments": arguments}
    message = {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 1}
    out = pi.serialize_conversation(pi.convert_to_llm([message]))
    assert out.startswith("[Assistant tool calls]: f(") and out.endswith(")")
    return out.removeprefix("[Assistant tool calls]: f(").removesuffix(")")


def _custom_message_time(timestamp: Any) -> Any:
    """The time a session entry stamped ``timestamp`` gets (JS's ``new Date(x).getTime()``)."""
    entry = {**_SESSION[2], "timestamp": timestamp}
    context = pi.build_session_context([_SESSION[0], _SESSION[1], entry]).to_pi()
    return context["messages"][-1]["timestamp"]


def test_js_numbers_strings_and_key_order_in_tool_call_arguments() -> None:
    numbers = {"a": 1e-7, "b": 1e21, "c": 1e16, "d": 0.000001, "e": -0.0}
    assert _call_arguments(numbers) == "a=1e-7, b=1e+21, c=10000000000000000, d=0.000001, e=0"
    nested = {"b": 1, "10": 2, "2": [None, True]}  # integer-like keys first, ascending
    assert _call_arguments(nested) == "2=[null,true], 10=2, b=1"
    assert _call_arguments({"v": nested}) == 'v={"2":[null,true],"10":2,"b":1}'
    assert _call_arguments({"s": "\u2028\ud83d\x01"}) == 's="\u2028\\ud83d\\u0001"'


def test_tool_result_truncation_counts_and_cuts_utf16_units() -> None:
    messages, _ = _case("pi.serializeConversation", "result-split-surrogate")
    result = {**messages[0], "content": [{"type": "text", "text": "a" * 1999 + "😀a\ud83d"}]}
    out = pi.serialize_conversation(pi.convert_to_llm([result]))
    # 2,003 units: the cut at 2,000 halves the emoji; a lone surrogate counts one unit.
    assert out.endswith("a" * 1999 + "\ud83d\n\n[... 3 more characters truncated]")


def test_js_dates_in_session_entries() -> None:
    # Values below were printed by Node 20 (new Date(x).getTime()).
    assert _custom_message_time("2026-02-30") == _custom_message_time("2026-03-02")  # rolls over
    assert _custom_message_time("2026-02-30") is not None
    assert _custom_message_time("2026-13-01") is None
    assert _custom_message_time(None) == 0 and _custom_message_time(True) == 1  # the epoch
    assert _custom_message_time("2026-01-01T00:00") is None  # local time in JS: not guessed
    assert _custom_message_time("not a date") is None
    assert _custom_message_time("2026-04-31") == 1777593600000


def test_js_trim_of_a_session_file() -> None:
    """Pi trims the file with String.prototype.trim: BOM and line separators go, while U+001C
    and U+0085 (which str.strip() would drop) stay and spoil the header line."""
    header = '{"type":"session","id":"s","version":3}'
    entry = '{"type":"label","id":"x","parentId":null}'
    parsed = pi_sessions.parse_session_lines("\ufeff\u2028" + header + "\n" + entry + "\ufeff")
    assert [e["type"] for e in parsed] == ["session", "label"]
    assert pi_sessions.parse_session_lines("\x1c" + header + "\n" + entry) == []
    assert pi_sessions.parse_session_lines("\x85" + header + "\n" + entry) == []
    assert [e["type"] for e in pi_sessions.parse_session_lines(header + "\n" + entry)] == [
        "session",
        "label",
    ]


def test_null_block_raises_typed_error() -> None:
    with pytest.raises(InvalidMessageError):
        pi.estimate_tokens({"role": "assistant", "content": [None]})


# --- file operations and prepareCompaction -----------------------------------------------------


def test_file_lists_sort_by_utf16_units() -> None:
    messages, expected = _case("pi.fileOperations", "sort-utf16-order")
    ops = pi.create_file_ops()
    for message in messages:
        pi.extract_file_ops_from_message(message, ops)
    read_files, _ = pi.compute_file_lists(ops)
    assert read_files == expected["readFiles"]
    assert read_files != sorted(read_files)  # code-point order would differ


def test_prepare_compaction_returns_none_when_path_ends_in_compaction() -> None:
    cases = [
        c
        for c in _suite("pi.prepareCompaction")["cases"]
        if c["input"]["entries"] and c["input"]["entries"][-1]["type"] == "compaction"
    ]
    assert cases
    for case in cases:
        assert case["expected"] is None
        assert pi.prepare_compaction(case["input"]["entries"], case["input"]["settings"]) is None


def test_prepare_compaction_split_turn_has_prefix_messages() -> None:
    split = [
        c
        for c in _suite("pi.prepareCompaction")["cases"]
        if c["expected"] and c["expected"]["isSplitTurn"]
    ]
    assert len(split) > 100
    # A cut on a bashExecution message is a split turn that starts at the cut itself: Pi then
    # reports isSplitTurn with an empty prefix (and compact() skips the prefix summary).
    assert any(not c["expected"]["turnPrefixMessages"] for c in split)
    case = next(c for c in split if c["expected"]["turnPrefixMessages"])
    prepared = pi.prepare_compaction(case["input"]["entries"], case["input"]["settings"])
    assert prepared is not None and prepared.is_split_turn
    assert json.loads(json.dumps(prepared.to_pi())) == case["expected"]
    assert prepared.turn_prefix_messages


# --- buildSessionContext: leaf choice, undefined fields, cycles --------------------------------
# Expected values printed by buildSessionContext of pi-coding-agent 0.73.1 under Node 20.
_SESSION = [
    {
        "type": "message",
        "id": "a",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1},
    },
    {
        "type": "thinking_level_change",
        "id": "b",
        "parentId": "a",
        "timestamp": "2026-01-01T00:00:01.000Z",
    },
    {
        "type": "custom_message",
        "id": "c",
        "parentId": "b",
        "timestamp": None,
        "customType": "memo",
        "content": "x",
        "display": False,
    },
]
_HI = {"role": "user", "content": "hi", "timestamp": 1}
_MEMO = {"role": "custom", "customType": "memo", "content": "x", "display": False, "timestamp": 0}


def test_session_context_leaf_choice() -> None:
    assert pi.build_session_context(_SESSION).to_pi() == {"messages": [_HI, _MEMO], "model": None}
    assert pi.build_session_context(_SESSION, None).to_pi() == {
        "messages": [],
        "thinkingLevel": "off",
        "model": None,
    }  # null: before the first entry
    assert pi.build_session_context(_SESSION, "a").to_pi() == {
        "messages": [_HI],
        "thinkingLevel": "off",
        "model": None,
    }
    unknown = pi.build_session_context(_SESSION, "nope")  # falls back to the last entry
    assert unknown.to_pi() == {"messages": [_HI, _MEMO], "model": None}
    assert unknown.thinking_level is None and not unknown.thinking_level_given


def test_session_context_parent_cycle_raises() -> None:
    looped = [dict(_SESSION[0], parentId="c"), *_SESSION[1:]]
    with pytest.raises(InvalidMessageError, match="cycle"):
        pi.build_session_context(looped)
