"""Our TypeScript reference of the trimming rules (compat_fixtures/reference/trim.ts) vs Python.

* Every case of ``reference.trim.*`` (expected values computed by the TS reference under Node)
  passes through ``context_manager.trim()``: kept indices, overflow, and the typed errors for
  broken tool-call protocol, malformed messages and bad options (``reference.trim.invalid``).
* The naive Python oracle (tests/naive.py, the plain statement of the rules) agrees with the TS
  reference on every case too, so the reference states the same rules, not merely the same code.
* When Node and the pinned packages are installed, the reference type-checks under ``tsc --strict``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from context_manager.errors import ConfigurationError
from context_manager.messages import normalize
from context_manager.parity.reference import (
    FIXTURE_SUITES,
    REFERENCE_PACKAGE,
    estimator_from_options,
    run_trim_case,
)
from context_manager.parity.verify import describe_failure, load_runners, verify_file

from ..naive import naive_select


class _LibraryReading:
    """The reference's messages use every content shape the TS reference reads (thinking,
    images, documents, audio...), so here the oracle is handed the library's own reading and
    counts: this test compares the *selection rules* with the TS reference; the counts are proven
    separately, case by case, by the fixtures themselves (test_every_fixture_case_passes)."""

    def __init__(self, counter: Any) -> None:
        self.counter = counter
        self.prompt_overhead = counter.prompt_overhead

    def read(self, m: Any) -> Any:
        return normalize(m)

    def count(self, m: Any) -> int:
        return int(self.counter.count_message(normalize(m)))


ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "compat_fixtures" / "fixtures"
REFERENCE_DIR = ROOT / "compat_fixtures" / "reference"
SUITES = sorted(FIXTURE_SUITES)
TRIM_SUITES = ["reference.trim.priority", "reference.trim.sliding_window"]


def _cases(suite: str) -> list[dict[str, Any]]:
    data = json.loads((FIXTURES / f"{suite}.json").read_text(encoding="utf-8"))
    assert data["suite"] == suite
    assert data["package"] == REFERENCE_PACKAGE
    assert data["function"] == "trim"
    cases: list[dict[str, Any]] = data["cases"]
    return cases


@pytest.mark.parametrize("suite", SUITES)
def test_every_fixture_case_passes(suite: str) -> None:
    result = verify_file(FIXTURES / f"{suite}.json", load_runners(), max_failures=10)
    report = "\n".join(describe_failure(*failure) for failure in result.failures)
    assert result.error is None
    assert result.passed == result.total, f"{result.total - result.passed} mismatches:\n{report}"


@pytest.mark.parametrize("suite", TRIM_SUITES)
def test_suite_has_enough_variety(suite: str) -> None:
    cases = _cases(suite)
    random = [c for c in cases if not c["id"].startswith("edge-")]
    assert len(random) >= 1000
    outcomes = {"overflow": 0, "everything": 0, "trimmed": 0}
    for case in cases:
        expected, n = case["expected"], len(case["input"]["messages"])
        if isinstance(expected, dict):
            key = "overflow"
        else:
            key = "everything" if len(expected) == n else "trimmed"
        outcomes[key] += 1
    assert min(outcomes.values()) >= 100, outcomes  # each outcome is well exercised


@pytest.mark.parametrize("suite", TRIM_SUITES)
def test_naive_oracle_states_the_same_rules(suite: str) -> None:
    """tests/naive.py (recounting everything, no bisect) gives the TS reference's answer."""
    disagreements = []
    for case in _cases(suite):
        options = case["input"]["options"]
        messages = case["input"]["messages"]
        try:
            counter = _LibraryReading(estimator_from_options(options["estimator"]))
            answer: Any = naive_select(
                messages,
                counter=counter,
                budget=options["maxTokens"] - options["reserveTokens"],
                strategy=options["strategy"],
                pinned=set(options["pinned"]),
                priorities=options["priorities"],
                max_messages=options["maxMessages"],
            )
        except Exception as exc:  # reported below like any other disagreement
            answer = f"{type(exc).__name__}: {exc}"
        expected = case["expected"]
        wanted = "overflow" if isinstance(expected, dict) else expected
        if answer != wanted:
            disagreements.append((case["id"], wanted, answer))
    assert disagreements == [], disagreements[:5]


def test_overflow_reports_required_and_budget() -> None:
    case = {
        "messages": [{"role": "system", "content": "x" * 40}, {"role": "user", "content": "hi"}],
        "options": {
            "maxTokens": 20,
            "reserveTokens": 5,
            "strategy": "priority",
            "estimator": {"charsPerToken": 4},
        },
    }
    # 3 priming + (10 + 3) system + (1 + 3) user = 20 tokens; the budget is 20 - 5 = 15.
    assert run_trim_case(case) == {"error": "overflow", "required": 20, "budget": 15}


def test_kept_messages_are_found_by_identity_not_equality() -> None:
    def twins() -> list[Any]:
        return [
            {"role": "assistant", "content": "same"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "same"},
        ]

    assert run_trim_case({"messages": twins(), "options": {"maxTokens": 1000}}) == [0, 1, 2]
    # 3 priming + 4 + 4 tokens: the older twin goes, so index 0 must not be reported.
    assert run_trim_case({"messages": twins(), "options": {"maxTokens": 11}}) == [1, 2]


def test_invalid_suite_covers_every_outcome() -> None:
    cases = _cases("reference.trim.invalid")
    kinds = {c["expected"]["error"] if isinstance(c["expected"], dict) else "kept" for c in cases}
    assert kinds >= {"invalid_message", "configuration", "kept"}
    assert len(cases) >= 400


def test_bad_case_shape_is_a_typed_error() -> None:
    with pytest.raises(ConfigurationError):
        run_trim_case({"messages": "not a list", "options": {}})


@pytest.mark.skipif(
    shutil.which("node") is None
    or not (ROOT / "compat_fixtures" / "node_modules" / ".bin" / "tsc").exists(),
    reason="needs node and compat_fixtures/node_modules (npm ci)",
)
def test_reference_type_checks_strictly() -> None:
    tsc = ROOT / "compat_fixtures" / "node_modules" / ".bin" / "tsc"
    done = subprocess.run(
        [str(tsc), "-p", str(REFERENCE_DIR / "tsconfig.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


PROVIDER_NAMES = ["anthropic", "bedrock", "gemini", "openai", "openai-responses"]


def test_provider_suite_covers_every_provider_and_outcome() -> None:
    """Each provider meets both strategies on random conversations, and the provider changes
    the answer often (the rules and the newest-exchange protection are exercised, not idle)."""
    cases = _cases("reference.trim.providers")
    random = [c for c in cases if not c["id"].startswith("edge-")]
    seen = {(c["input"]["options"]["provider"], c["input"]["options"]["strategy"]) for c in random}
    assert seen == {(p, s) for p in PROVIDER_NAMES for s in ("sliding_window", "priority")}
    assert len(random) >= 500
    changed = {p: 0 for p in PROVIDER_NAMES}
    overflow = 0
    for case in random:
        options = dict(case["input"]["options"])
        provider = options.pop("provider")
        plain = run_trim_case({"messages": case["input"]["messages"], "options": options})
        if json.loads(json.dumps(plain)) != case["expected"]:
            changed[provider] += 1
        overflow += isinstance(case["expected"], dict)
    assert min(changed.values()) >= 10, changed
    assert overflow >= 50


def test_provider_edge_cases_state_each_rule() -> None:
    expected = {c["id"]: c["expected"] for c in _cases("reference.trim.providers")}
    # [sys, u, a, a, u, a]: the cut leaves an assistant turn first; Anthropic-like APIs drop it.
    assert expected["edge-none-assistant-first-after-cut"] == [0, 3, 4, 5]
    assert expected["edge-openai-assistant-first-after-cut"] == [0, 3, 4, 5]
    for provider in ("anthropic", "bedrock", "gemini"):
        assert expected[f"edge-{provider}-assistant-first-after-cut"] == [0, 4, 5]
        assert expected[f"edge-{provider}-gap-brings-users-together"] == [0, 5]
    for provider in PROVIDER_NAMES:  # the tool exchange the model just received stays
        assert expected[f"edge-{provider}-newest-exchange-beyond-max-messages"] == [0, 1, 3, 4]
        assert expected[f"edge-{provider}-priority-keeps-openai-exchange"] == [0, 1, 3, 4]
    assert expected["edge-none-newest-exchange-beyond-max-messages"] == [0, 1]
    assert expected["edge-unknown-provider"] == {"error": "configuration"}
