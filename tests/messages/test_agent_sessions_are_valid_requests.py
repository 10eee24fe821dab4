"""Long agent sessions per provider, built with the real SDKs, under tight budgets: every request
(``get_context()`` before each model call) passes that provider's independent rule checker.

Each session has 220 user turns, parallel calls (the same function twice in one turn, as models
do; Gemini's without ids), results large enough to force trimming and head+tail cuts, and
interrupts: a new user turn while calls are open (some of their results in, where the format
sends results one by one). Half the sessions prune old results to placeholders. The closures,
cuts and placeholders the library makes must take the conversation's own shape, or the
checker (see ``agent_shapes``) rejects the request.

Measured on the library before synthesized messages took the conversation's shape (seed 7,
without / with pruning): Anthropic 214 / 340 of 375 requests invalid, Responses 228 / 340,
Gemini 244 of 352 (and 137 adds refused: parallel calls to one function), Bedrock 215 / 215 of
369, pydantic-ai 235 / 236 of 369, LangChain 231 / 342 of 375; OpenAI chat 0.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from context_manager import ToolResultPruning

from .agent_shapes import SHAPES, Shape, run_session

PRUNING = ToolResultPruning(
    max_chars=1_200,
    head_chars=400,
    tail_chars=400,
    soft_ratio=0.2,
    hard_ratio=0.4,
    min_prunable_chars=0,
    keep_last=2,
    clear_until="all",
)


def _watched(shape: Shape, seen: dict[str, int]) -> Shape:
    """``shape`` whose checker also tallies what the library made in the requests it checks."""

    def check(context: Any) -> list[str]:
        text = repr(context)
        seen["closures"] += "interrupted before it returned" in text
        seen["placeholders"] += "Old tool result content cleared" in text
        seen["cuts"] += "Tool result trimmed" in text
        return shape.check(context)

    return dataclasses.replace(shape, check=check)


@pytest.mark.parametrize("pruning", [None, PRUNING], ids=["plain", "pruning"])
@pytest.mark.parametrize("name", list(SHAPES))
def test_every_request_of_a_long_agent_session_is_valid(name: str, pruning: Any) -> None:
    seen = {"closures": 0, "placeholders": 0, "cuts": 0}
    shape = _watched(SHAPES[name](), seen)
    report = run_session(shape, seed=7, turns=220, pruning=pruning)
    assert report.refused == 0, report
    assert report.invalid == 0, report
    assert report.overflows == 0, report
    assert report.requests > 300, report
    # the session exercised what the library makes (else a pass would prove nothing)
    assert seen["closures"] > 50, seen
    if pruning is not None:
        assert seen["placeholders"] > 50, seen
        assert seen["cuts"] > 0, seen


@pytest.mark.parametrize("name", list(SHAPES))
def test_other_seeds_and_budgets(name: str) -> None:
    shape = SHAPES[name]()
    for seed, max_tokens in ((1, 900), (2, 3_000)):
        report = run_session(shape, seed=seed, turns=120, max_tokens=max_tokens)
        assert (report.refused, report.invalid) == (0, 0), (seed, max_tokens, report)


# -- the checkers are not vacuous ------------------------------------------------------------
def _exchange(shape: Shape, answer: list[Any]) -> list[Any]:
    calls = [("c1" if shape.ids else "", "read", {"p": 1}), ("c2" if shape.ids else "", "read", {})]
    return [shape.user("go"), *shape.calls(1, calls), *answer, *shape.reply("done")]


@pytest.mark.parametrize("name", list(SHAPES))
def test_each_checker_rejects_what_its_provider_rejects(name: str) -> None:
    shape = SHAPES[name]()
    ids = ("c1", "c2") if shape.ids else ("", "")
    results = [(ids[0], "read", "one"), (ids[1], "read", "two")]
    assert shape.check(_exchange(shape, shape.results(results))) == []
    assert shape.check(_exchange(shape, [])), "calls without results"
    foreign = [{"role": "tool", "tool_call_id": i or "x", "content": "r"} for i in ids]
    if name not in ("openai",):
        assert shape.check(_exchange(shape, foreign)), "results in another provider's shape"
    orphan = [shape.user("hi"), *shape.results(results)]
    assert shape.check(orphan), "results without their calls"
