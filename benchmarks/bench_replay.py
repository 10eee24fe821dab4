"""The replay on a long tool-heavy agent session: cost per setting, for the cache guide.

    python -m benchmarks.bench_replay            # tables for Anthropic and OpenAI, docs/replay.png
    python -m benchmarks.bench_replay --no-plot

The session is ``bench_cache``'s seeded 300-turn coding-agent session (prose, parallel tool
calls, long tool outputs). It is replayed exactly as ``context-manager replay`` does, under a
20,000-token budget counted with tiktoken (o200k_base), and priced with each provider's cache
rules (``context_manager.prompt_cache``). The pytest test asserts the guide's claim: the
recommended setting costs measurably less than the plain sliding window and than LangChain's
``trim_messages`` at the same budget, under both providers' rules.
"""

from __future__ import annotations

import argparse

from context_manager.prompt_cache import cache_rules
from context_manager.replay import ReplayResult, recommend, replay, table

from . import bench_cache

BUDGET = 20_000
PROVIDERS = (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5"))
#: The recommendation must cost at most this share of the plain window's and LangChain's.
TARGET = 0.8


def run(provider: str, model: str, turns: int = bench_cache.TURNS) -> list[ReplayResult]:
    messages, _ = bench_cache.session(turns)
    return replay(
        list(messages), cache_rules(provider, model), budget=BUDGET, counter=bench_cache.counter()
    )


def check(results: list[ReplayResult]) -> ReplayResult:
    """The recommended setting, after asserting it beats the plain window and LangChain."""
    by_name = {r.setting: r for r in results}
    best = recommend(results)
    assert best is not None
    for rival in ("sliding_window", "langchain"):
        assert best.cost <= TARGET * by_name[rival].cost, (best.setting, rival)
    return best


def test_recommended_setting_beats_the_plain_window_and_langchain() -> None:
    for provider, model in PROVIDERS:
        check(run(provider, model, turns=120))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_replay", description=__doc__)
    parser.add_argument("--turns", type=int, default=bench_cache.TURNS)
    parser.add_argument("--plot", default="docs/replay.png")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    messages, _ = bench_cache.session(args.turns)
    print(f"{args.turns} user turns, {len(messages):,} messages, budget {BUDGET:,} (o200k_base)")
    for provider, model in PROVIDERS:
        results = run(provider, model, args.turns)
        best = check(results)
        print(f"\n{provider} ({model}):\n{table(results)}\nrecommended: {best.setting}")
        if provider == "anthropic" and not args.no_plot:
            from context_manager.replay.plot import plot

            title = f"{args.turns}-turn agent session, {model}, budget {BUDGET:,} tokens"
            print(f"plot: {plot(results, args.plot, title)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
