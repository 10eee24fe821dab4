"""Fixture runner for OpenClaw's session pruning (``compat_fixtures/fixtures/openclaw.*.json``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..compaction.pruning.openclaw import config_from_openclaw, openclaw_prune


def _run_session_pruning(case: dict[str, Any]) -> Any:
    config = config_from_openclaw(case["config"])
    messages = case["messages"]
    out = openclaw_prune(messages, case["contextWindowTokens"], config)
    changed = {str(i): m for i, m in enumerate(out) if m is not messages[i]}
    return {"length": len(out), "changed": changed}


FIXTURE_SUITES: dict[str, Callable[[Any], Any]] = {
    "openclaw.sessionPruning": _run_session_pruning,
}
