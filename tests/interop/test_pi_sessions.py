"""Pi session transcripts: our reader equals Pi's own SessionManager/buildSessionContext.

Expected values come from running @mariozechner/pi-coding-agent 0.73.1 on seeded session files
(compat_fixtures/gen/pi_session.mjs -> compat_fixtures/fixtures/pi.buildSessionContext.json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_manager.interop import pi_sessions as transcripts
from context_manager.parity.verify import describe_failure, load_runners, verify_file

FIXTURE = (
    Path(__file__).resolve().parents[2]
    / "compat_fixtures"
    / "fixtures"
    / "pi.buildSessionContext.json"
)


@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]
    return data


def test_every_generated_session_matches_pi() -> None:
    result = verify_file(FIXTURE, load_runners())
    report = "\n".join(describe_failure(*f) for f in result.failures)
    assert result.error is None
    assert result.total >= 800
    assert result.passed == result.total, report


def test_fixtures_cover_every_entry_kind(cases: list[dict[str, Any]]) -> None:
    roles = {m["role"] for c in cases for m in c["expected"]["messages"]}
    assert roles == {
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "compactionSummary",
        "branchSummary",
    }
    kinds = {
        json.loads(line).get("type")
        for c in cases
        for line in c["input"]["jsonl"].splitlines()
        if line.startswith('{"type"')
    }
    assert {
        "compaction",
        "branch_summary",
        "custom_message",
        "model_change",
        "thinking_level_change",
        "label",
        "session_info",
        "custom",
    } <= kinds
    assert any(c["input"].get("leafId", "") is None for c in cases)
    assert any(c["id"].startswith("v1-") and c["expected"]["messages"] for c in cases)


def test_read_pi_session_from_a_file(tmp_path: Path, cases: list[dict[str, Any]]) -> None:
    case = next(
        c
        for c in cases
        if "leafId" not in c["input"]
        and any(m["role"] == "compactionSummary" for m in c["expected"]["messages"])
    )
    path = tmp_path / "session.jsonl"
    path.write_text(case["input"]["jsonl"], encoding="utf-8")
    assert json.loads(json.dumps(transcripts.read_pi_session(path))) == case["expected"]


def test_a_changed_entry_changes_the_context(cases: list[dict[str, Any]]) -> None:
    """Guard against a reader that passes by ignoring its input."""
    case = next(
        c for c in cases if len(c["expected"]["messages"]) > 3 and "leafId" not in c["input"]
    )
    lines = case["input"]["jsonl"].splitlines()
    last = json.loads(lines[-1])
    last["parentId"] = None  # detach the leaf from its branch
    lines[-1] = json.dumps(last)
    result = transcripts.session_context_from_text("\n".join(lines))
    assert result["messages"] != case["expected"]["messages"]
