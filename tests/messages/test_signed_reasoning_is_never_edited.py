"""Signed reasoning (Anthropic thinking signatures and redacted thinking, Gemini thought
signatures, OpenAI encrypted reasoning items, pydantic-ai and LangChain thinking with
signatures) is kept byte-identical with its turn or dropped whole with it, never reordered,
truncated or split from the calls it precedes: under every strategy, every pruning preset,
thinking clearing, truncation of the newest exchange and compaction, in real SDK objects and
in dicts. Checked by :mod:`.signed_reasoning`, which shares no code with the library."""

from __future__ import annotations

import copy
import itertools
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_manager import MessageContextManager, trim
from context_manager.compaction.pruning import ToolResultPruning
from context_manager.errors import ContextOverflowError
from context_manager.providers import validate

from .signed_reasoning import SIGNED_SHAPES, signed_problems, signed_shape, wire

PRUNINGS: dict[str, Any] = {
    "none": None,
    "openclaw": ToolResultPruning.openclaw(),
    "anthropic": ToolResultPruning.anthropic(trigger_tokens=2_000),
    "thinking-cleared": ToolResultPruning.anthropic(
        trigger_tokens=2_000, clear_thinking_keep=0, clear_tool_inputs=True
    ),
}
STRATEGIES = ["sliding_window", "fifo", "priority"]


class _Summarizer:
    def __call__(self, request: Any) -> str:
        return "summary of the earlier work"


def _session(
    shape_name: str,
    strategy: str,
    pruning: Any,
    *,
    seed: int = 0,
    turns: int = 40,
    compact_every: int = 0,
    seen: set[str] | None = None,
) -> tuple[int, list[str]]:
    """An agent loop with signed reasoning before every call; returns (requests, problems).
    ``seen`` collects the names of the events that happened (truncation, compaction, ...)."""
    shape = signed_shape(shape_name)
    rng = random.Random(seed)
    manager = MessageContextManager(
        1_800,
        counter="chars",
        reserve_tokens=300,
        strategy=strategy,
        provider=shape.provider,
        pruning=pruning,
    )
    if seen is not None:
        manager.subscribe(lambda event: seen.add(type(event).__name__))
    given: list[Any] = []
    problems: list[str] = []
    requests = 0
    cleared = pruning is not None and pruning.clear_thinking_keep is not None

    def add(message: Any) -> None:
        given.append(message)
        manager.add(message, priority=rng.randint(0, 3))

    def request() -> None:
        nonlocal requests
        try:
            context = manager.get_context()
        except ContextOverflowError:
            return
        requests += 1
        found = signed_problems(given, context, cleared=cleared)
        rules = shape.provider or "openai"
        found += [f"validate: {p}" for p in validate(context, rules, source=given)]
        problems.extend(f"request {requests}: {p}" for p in found)

    serial = itertools.count()
    for t in range(turns):
        add(shape.user(f"turn {t}: look at item {rng.randint(0, 99)}"))
        for _round in range(rng.randint(1, 2)):
            names = rng.choice([["read"], ["read", "grep"], ["grep", "read", "read"]])
            calls = [
                (f"call_{next(serial)}", name, {"path": f"f{t}.{k}.{rng.random():.6f}"})
                for k, name in enumerate(names)
            ]
            for message in shape.calls(t, calls):
                add(message)
            results = [
                (i, n, f"{n} out {t} " + "x" * rng.choice([40, 400, 2_500, 8_000]))
                for i, n, _a in calls
            ]
            for message in shape.results(results):
                add(message)
            request()
        for message in shape.reply(f"answer {t}"):
            add(message)
        if compact_every and t % compact_every == compact_every - 1:
            manager.compact(_Summarizer())
            request()
    return requests, problems


@pytest.mark.parametrize("pruning", list(PRUNINGS))
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("shape", SIGNED_SHAPES)
def test_signed_reasoning_survives_every_strategy_and_pruning(
    shape: str, strategy: str, pruning: str
) -> None:
    seen: set[str] = set()
    requests, problems = _session(shape, strategy, PRUNINGS[pruning], seed=len(shape), seen=seen)
    assert requests > 30 and "ToolResultTruncated" in seen  # the newest exchange was cut
    assert not problems, problems[:3]


@pytest.mark.parametrize("shape", SIGNED_SHAPES)
def test_signed_reasoning_survives_compaction(shape: str) -> None:
    seen: set[str] = set()
    requests, problems = _session(
        shape, "sliding_window", PRUNINGS["anthropic"], seed=7, turns=30, compact_every=6, seen=seen
    )
    assert requests > 30 and "Compacted" in seen
    assert not problems, problems[:3]


@pytest.mark.parametrize("shape", SIGNED_SHAPES)
def test_inputs_are_not_mutated(shape: str) -> None:
    built = signed_shape(shape)
    messages = [built.user("hi")]
    messages += built.calls(1, [("call_1", "read", {"path": "a"}), ("call_2", "grep", {})])
    before = copy.deepcopy([wire(m) for m in messages])
    manager = MessageContextManager(
        10_000, counter="chars", pruning=PRUNINGS["thinking-cleared"], provider=built.provider
    )
    manager.extend(messages)
    manager.get_context()
    assert [wire(m) for m in messages] == before


# -- property: mixed shapes, trim() and the manager ------------------------------------------
_MIXABLE = SIGNED_SHAPES


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=st.lists(
        st.tuples(
            st.sampled_from(_MIXABLE),
            st.integers(1, 3),
            st.sampled_from([10, 300, 2_000]),
        ),
        min_size=1,
        max_size=12,
    ),
    budget=st.integers(300, 4_000),
    strategy=st.sampled_from(STRATEGIES),
    pruning=st.sampled_from(list(PRUNINGS)),
)
def test_signed_blocks_in_any_context_are_the_input_bytes(
    plan: list[tuple[str, int, int]], budget: int, strategy: str, pruning: str
) -> None:
    given_messages: list[Any] = []
    serial = itertools.count()
    for t, (name, n, size) in enumerate(plan):
        shape = signed_shape(name)
        given_messages.append(shape.user(f"turn {t}"))
        ids = [f"c{next(serial)}" for _ in range(n)]
        calls = [(i, "read", {"call": i}) for i in ids]  # unique args: Gemini calls have no id
        given_messages += shape.calls(t, calls)
        given_messages += shape.results([(i, nm, "r" * size) for i, nm, _a in calls])
        given_messages += shape.reply(f"answer {t}")
    cfg = PRUNINGS[pruning]
    cleared = cfg is not None and cfg.clear_thinking_keep is not None
    try:
        one_shot = "sliding_window" if strategy == "fifo" else strategy  # trim() has no fifo
        trimmed = trim(given_messages, budget, counter="chars", strategy=one_shot)
    except ContextOverflowError:
        trimmed = None
    if trimmed is not None:
        assert not signed_problems(given_messages, trimmed, cleared=False)
    manager = MessageContextManager(budget + 200, counter="chars", reserve_tokens=200, pruning=cfg)
    manager.extend(given_messages)
    try:
        context = manager.get_context()
    except ContextOverflowError:
        return
    assert not signed_problems(given_messages, context, cleared=cleared)


def test_thinking_clearing_drops_whole_blocks_of_older_turns_only() -> None:
    shape = signed_shape("anthropic-dicts")
    given: list[Any] = []
    for t in range(6):
        given.append(shape.user(f"turn {t}"))
        given += shape.calls(t, [(f"call_{t}", "read", {"t": t})])
        given += shape.results([(f"call_{t}", "read", "out")])
        if t < 5:
            given += shape.reply(f"answer {t}")
    manager = MessageContextManager(
        100_000, counter="chars", pruning=ToolResultPruning(clear_thinking_keep=0)
    )
    manager.extend(given)
    context = manager.get_context()
    kinds = [
        [b["type"] for b in m["content"]]
        for m in context
        if m["role"] == "assistant" and any(b["type"] == "tool_use" for b in m["content"])
    ]
    assert kinds[-1][0] == "thinking"  # the last tool-calling turn keeps its thinking, first
    assert all(k == ["tool_use"] for k in kinds[:-1])  # older turns lost whole blocks only
    assert manager.stats().pruning.thinking_cleared == 5
    assert not signed_problems(given, context, cleared=True)
    assert validate(context, "anthropic", source=given) == []
