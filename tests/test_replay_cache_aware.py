"""The replay's ``cache_aware`` setting: pruning priced with the replay's cache rules, on its
simulated clock."""

from __future__ import annotations

import random

import pytest

from context_manager.counting import get_counter
from context_manager.errors import ConfigurationError
from context_manager.prompt_cache import cache_rules
from context_manager.replay import DEFAULT_SETTINGS, replay

Msg = dict[str, object]


def agent_session(turns: int, seed: int = 7) -> list[Msg]:
    """User turns, each followed by a few tool steps with outputs of mixed sizes."""
    rng = random.Random(seed)
    out: list[Msg] = [{"role": "system", "content": "You fix bugs. " * 100}]
    n = 0
    for turn in range(turns):
        out.append({"role": "user", "content": f"task {turn}: " + "please " * rng.randint(5, 60)})
        for _ in range(rng.randint(1, 4)):
            fn = {"name": "read", "arguments": f'{{"path": "f{n}.py"}}'}
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": f"c{n}", "function": fn}],
                }
            )
            size = rng.choice((300, 2_000, 9_000, 30_000))
            out.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"{n} " * (size // 2)})
            n += 1
        out.append({"role": "assistant", "content": f"done with task {turn}"})
    return out


@pytest.mark.parametrize(
    ("provider", "model"), [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5")]
)
def test_with_every_entry_expired_cache_aware_prunes_like_plain_pruning(
    provider: str, model: str
) -> None:
    messages = agent_session(40)
    plain, aware = replay(
        messages,
        cache_rules(provider, model),
        budget=8_000,
        counter=get_counter("chars"),
        settings=("prune=openclaw", "prune=openclaw+cache_aware"),
        seconds_between=301.0,  # both providers' shortest lifetime is 300 s
    )
    assert plain.rows == aware.rows and plain.cost > 0


@pytest.mark.parametrize(
    ("provider", "model"), [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5")]
)
def test_with_a_warm_cache_cache_aware_pruning_costs_no_more(provider: str, model: str) -> None:
    messages = agent_session(40)
    settings = (
        "sliding_window",
        "prune=openclaw",
        "prune=openclaw+cache_aware",
        "retention=0.7+prune=openclaw",
        "retention=0.7+prune=openclaw+cache_aware",
    )
    results = replay(
        messages,
        cache_rules(provider, model),
        budget=8_000,
        counter=get_counter("chars"),
        settings=settings,
        seconds_between=10.0,
    )
    cost = {r.setting: r.cost for r in results}
    assert cost["prune=openclaw"] > cost["sliding_window"]  # the rewrites cost
    assert cost["prune=openclaw+cache_aware"] < cost["prune=openclaw"]
    assert cost["retention=0.7+prune=openclaw+cache_aware"] < cost["retention=0.7+prune=openclaw"]
    assert all(r.invalid == 0 for r in results)


def test_cache_aware_is_in_the_default_settings_and_needs_a_pruning() -> None:
    assert any("cache_aware" in s for s in DEFAULT_SETTINGS)
    for spec in ("cache_aware", "retention=0.7+cache_aware", "langchain+cache_aware"):
        with pytest.raises(ConfigurationError):
            replay(
                agent_session(2),
                cache_rules("openai", "gpt-5"),
                budget=8_000,
                counter=get_counter("chars"),
                settings=(spec,),
            )
