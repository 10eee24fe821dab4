"""Per-section caps: tool results held under a share of the window by clearing the oldest first
(the pruning machinery), tool definitions over their cap a typed error or a warning.

Token numbers follow the chars/4 rule (``counter="chars"``: a message costs
``ceil(chars / 4) + 3``).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest

from context_manager import MessageContextManager
from context_manager.budget.sections import SectionCaps, SectionCapWarning
from context_manager.compaction.pruning import OPENCLAW_PLACEHOLDER, ToolResultPruning
from context_manager.errors import ConfigurationError, SectionCapError
from context_manager.prompt_cache import cache_rules

WINDOW = 10_000
RESULT_CHARS = 4_000


def tokens(chars: int) -> int:
    return math.ceil(chars / 4) + 3


def call(i: int) -> dict[str, object]:
    fn = {"name": "read", "arguments": "{}"}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "function": fn}]}


def result(i: int) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": f"c{i}", "content": str(i % 10) * RESULT_CHARS}


def caps_only(share: float, keep_last: int = 1, **extra: object) -> ToolResultPruning:
    """Pruning with every other trigger off: only the cap clears."""
    return ToolResultPruning(
        max_chars=None,
        soft_ratio=None,
        hard_ratio=None,
        keep_last=keep_last,
        caps=SectionCaps(tool_results_share=share),
        **extra,  # type: ignore[arg-type]
    )


def expected_cleared(held: int, share: float, keep_last: int) -> int:
    """Oldest first, while the results hold more than the cap; the newest are protected."""
    cap = int(share * WINDOW)
    intact, cleared = tokens(RESULT_CHARS), tokens(len(OPENCLAW_PLACEHOLDER))
    n = 0
    while n < max(held - keep_last, 0) and n * cleared + (held - n) * intact > cap:
        n += 1
    return n


@pytest.mark.parametrize(("share", "keep_last"), [(0.3, 1), (0.5, 2), (0.12, 1), (1.0, 0)])
def test_tool_results_stay_under_their_share_oldest_cleared_first(
    share: float, keep_last: int
) -> None:
    manager = MessageContextManager(
        WINDOW, reserve_tokens=0, counter="chars", pruning=caps_only(share, keep_last)
    )
    manager.add({"role": "user", "content": "read them all"})
    for k in range(1, 9):
        manager.extend([call(k - 1), result(k - 1)])
        context = manager.get_context()
        n = expected_cleared(k, share, keep_last)
        results = [m for m in context if m.get("role") == "tool"]
        assert [m["content"] == OPENCLAW_PLACEHOLDER for m in results] == [True] * n + [False] * (
            k - n
        )
        stats = manager.stats()
        assert stats.pruning.results_cleared == n
        sent = n * tokens(len(OPENCLAW_PLACEHOLDER)) + (k - n) * tokens(RESULT_CHARS)
        assert stats.sections["tool_results"] == sent
        if n < k - keep_last:  # not held back by the protected newest results
            assert sent <= share * WINDOW
    assert manager.messages[2]["content"] == "0" * RESULT_CHARS  # history untouched


def test_a_cap_beats_the_cache_cost() -> None:
    """With a warm cache a clear of one old result does not pay; over the cap it happens."""
    clock = [0.0]
    rules = cache_rules("anthropic", "claude-sonnet-4-5")
    extra = {"cache": rules, "clock": lambda: clock[0], "keep_unit": "tool_uses"}
    for share, cleared in ((0.25, True), (None, False)):
        caps = SectionCaps(tool_results_share=share)
        pruning = ToolResultPruning.anthropic(
            trigger_tokens=2_000,
            keep_last=2,
            caps=caps,
            **extra,  # type: ignore[arg-type]
        )
        manager = MessageContextManager(WINDOW, reserve_tokens=0, counter="chars", pruning=pruning)
        manager.add({"role": "user", "content": "go"})
        for i in range(3):
            manager.extend([call(i), result(i)])
            manager.get_context()
            clock[0] += 5
        assert (manager.stats().pruning.results_cleared > 0) == cleared, share


def big_tools(n: int) -> list[dict[str, object]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": "Does a thing. " * 100,
                "parameters": {"type": "object", "properties": {}},
            },
        }
        for i in range(n)
    ]


def test_tool_definitions_over_their_cap_are_a_typed_error() -> None:
    tools = big_tools(3)
    caps = SectionCaps(tool_schemas_tokens=500)
    with pytest.raises(SectionCapError) as info:
        MessageContextManager(
            WINDOW, counter="chars", tools=tools, pruning=ToolResultPruning(caps=caps)
        )
    error = info.value
    assert (error.section, error.cap) == ("tools", 500) and error.tokens > 500
    assert isinstance(error, ConfigurationError) and "500" in str(error)
    # The same tools under a cap they fit: no error, and the count is what stats() reports.
    roomy = SectionCaps(tool_schemas_tokens=error.tokens)
    manager = MessageContextManager(
        WINDOW, counter="chars", tools=tools, pruning=ToolResultPruning(caps=roomy)
    )
    assert manager.stats().sections["tools"] == error.tokens
    with pytest.raises(SectionCapError):  # switching pruning on later checks it too
        manager.use_pruning(ToolResultPruning(caps=caps))


def test_tool_definitions_over_their_cap_can_warn_instead() -> None:
    caps = SectionCaps(tool_schemas_tokens=10, on_exceed="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager = MessageContextManager(
            WINDOW, counter="chars", tools=big_tools(1), pruning=ToolResultPruning(caps=caps)
        )
    (warning,) = [w for w in caught if issubclass(w.category, SectionCapWarning)]
    assert Path(warning.filename) == Path(__file__)  # points at the caller
    manager.add({"role": "user", "content": "hi"})
    assert manager.get_context()[-1]["content"] == "hi"


@pytest.mark.parametrize(
    "bad",
    [
        {"tool_results_share": 0},
        {"tool_results_share": 1.5},
        {"tool_results_share": True},
        {"tool_schemas_tokens": -1},
        {"tool_schemas_tokens": 2.5},
        {"on_exceed": "ignore"},
    ],
)
def test_bad_caps_are_typed_errors(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        SectionCaps(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        ToolResultPruning(caps={"tool_results_share": 0.5})  # type: ignore[arg-type]
