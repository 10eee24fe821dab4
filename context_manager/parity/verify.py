"""Check fixture files produced by TypeScript implementations against our Python reproductions.

A fixture file (schema in ``compat_fixtures/README.md``) names its ``suite``; each module listed in
``RUNNER_MODULES`` exposes ``FIXTURE_SUITES: dict[str, Callable[[input], output]]``. A case passes
when the runner's output, after a JSON round trip, equals ``expected`` exactly.
"""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUNNER_MODULES = (
    "context_manager.parity.pi",
    "context_manager.parity.langchain",
    "context_manager.parity.tokens",
    "context_manager.parity.reference",
    "context_manager.parity.pi_sessions",
    "context_manager.parity.openclaw",
)

Runner = Callable[[Any], Any]


def load_runners() -> dict[str, Runner]:
    runners: dict[str, Runner] = {}
    for name in RUNNER_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # that area is not built (yet); its suites will report "no runner"
            raise
        runners.update(getattr(module, "FIXTURE_SUITES", {}))
    return runners


@dataclass
class SuiteResult:
    suite: str
    package: str
    path: Path
    total: int = 0
    passed: int = 0
    failures: list[tuple[str, Any, Any]] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.passed == self.total


def _normalized(value: Any) -> Any:
    return json.loads(json.dumps(value))


def verify_file(path: Path, runners: dict[str, Runner], max_failures: int = 5) -> SuiteResult:
    data = json.loads(path.read_text(encoding="utf-8"))
    result = SuiteResult(data.get("suite", path.stem), data.get("package", "?"), path)
    runner = runners.get(result.suite)
    cases = data.get("cases", [])
    result.total = len(cases)
    if runner is None:
        result.error = f"no Python runner for suite {result.suite!r}"
        return result
    for case in cases:
        try:
            actual = _normalized(runner(case["input"]))
        except Exception as exc:  # a crash is a mismatch, reported like one
            actual = {"error": f"{type(exc).__name__}: {exc}"}
        if actual == case["expected"]:
            result.passed += 1
        elif len(result.failures) < max_failures:
            result.failures.append((str(case.get("id", "?")), case["expected"], actual))
    return result


def fixture_files(directory: Path) -> list[Path]:
    skip = {"package.json", "package-lock.json"}
    return sorted(
        p for p in directory.rglob("*.json") if p.name not in skip and "node_modules" not in p.parts
    )


def describe_failure(case_id: str, expected: Any, actual: Any) -> str:
    exp = json.dumps(expected, indent=1, ensure_ascii=False, sort_keys=True).splitlines()
    act = json.dumps(actual, indent=1, ensure_ascii=False, sort_keys=True).splitlines()
    diff = difflib.unified_diff(exp, act, "expected (TypeScript)", "actual (Python)", lineterm="")
    return f"  case {case_id}:\n" + "\n".join("    " + line for line in list(diff)[:40])


def verify_directory(
    directory: Path, runners: dict[str, Runner] | None = None
) -> list[SuiteResult]:
    runners = load_runners() if runners is None else runners
    results = []
    for path in fixture_files(directory):
        try:
            head = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError):  # not JSON we read (bad text, a 5,000-digit int)
            continue  # so not a fixture file
        if isinstance(head, dict) and "suite" in head and "cases" in head:
            results.append(verify_file(path, runners))
    return results
