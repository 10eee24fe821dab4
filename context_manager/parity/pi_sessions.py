"""Fixture runner for ``pi.buildSessionContext`` (Pi session files read by ``SessionManager``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..interop.pi_sessions import session_context_from_text


def _run_case(case: dict[str, Any]) -> dict[str, Any]:
    if "leafId" in case:
        return session_context_from_text(case["jsonl"], case["leafId"])
    return session_context_from_text(case["jsonl"])


FIXTURE_SUITES: dict[str, Callable[[Any], Any]] = {"pi.buildSessionContext": _run_case}
