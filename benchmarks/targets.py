"""The targets the enforcer checks: the spec's, and our own (stricter) bar.

Each target names one benchmark (its pytest-benchmark ``name``), the statistic compared and the
limit. Times are medians in seconds, optionally divided by an ``extra_info`` size (per 1K
characters / tokens). A target whose benchmark is missing from the run counts as missed: a suite
that stopped running must not pass silently.
"""

from __future__ import annotations

from dataclasses import dataclass

from .common import QUICK_MEMORY_SIZES, SIZES, STRATEGIES


@dataclass(frozen=True)
class Target:
    label: str
    benchmark: str
    limit: float
    #: "median" (seconds), or an ``extra_info`` key holding the value to compare.
    stat: str = "median"
    #: ``extra_info`` key the median is divided by (e.g. ``kchars``: per 1K characters).
    per: str | None = None
    unit: str = "s"
    #: "spec": the issue's targets, always enforced. "bar": our own stricter bar, and "stress":
    #: the spec's limit on an extreme input; both enforced in full runs, reported in quick ones.
    kind: str = "spec"


MS = 1e-3
US = 1e-6


def targets(quick: bool = False) -> list[Target]:
    """Every target; ``quick`` runs check memory up to 30k messages instead of 100k."""
    memory_sizes = QUICK_MEMORY_SIZES if quick else SIZES
    out: list[Target] = []
    for counter in ("chars", "tiktoken"):
        for chars in (200, 2_000):
            out.append(
                Target(
                    f"add one ~{chars}-char message ({counter})",
                    f"test_add[{counter}-{chars}]",
                    1 * MS,
                )
            )
    # Issue 36: an estimator add stays <= 10 us, enforced in every run (a caller could notice
    # that next to a model call; below it, a faster add is not worth a second path).
    out.append(
        Target("add one ~200-char message (estimator) <= 10 us", "test_add[chars-200]", 10 * US)
    )
    out.append(
        Target(
            "estimator counting per 1K chars", "test_estimator_count[1000]", 0.1 * MS, per="kchars"
        )
    )
    out.append(
        Target(
            "estimator counting per 1K chars (100K-char message)",
            "test_estimator_count[100000]",
            0.1 * MS,
            per="kchars",
        )
    )
    out.append(
        Target(
            "tiktoken counting per 1K tokens", "test_tiktoken_count[4000]", 1 * MS, per="ktokens"
        )
    )
    for strategy in STRATEGIES:
        for n in SIZES:
            out.append(
                Target(
                    f"get_context {strategy} @ {n:,} messages",
                    f"test_get_context[{strategy}-{n}]",
                    10 * MS,
                )
            )
        out.append(
            Target(
                f"get_context {strategy} @ 100,000, all fit (1e9 window)",
                f"test_get_context_large_window[{strategy}-all]",
                10 * MS,
            )
        )
        # Most-but-not-all fit: priority then keeps ~12k scattered runs (gathered through a byte
        # mask); enforced in full runs only, as it sits closest to the limit on a loaded machine.
        out.append(
            Target(
                f"get_context {strategy} @ 100,000, 76% fit (15M window)",
                f"test_get_context_large_window[{strategy}-most]",
                10 * MS,
                kind="stress",
            )
        )
        out.append(
            Target(
                f"get_context {strategy} @ 100,000 messages < 1 ms",
                f"test_get_context[{strategy}-100000]",
                1 * MS,
                kind="bar",
            )
        )
        out.append(
            Target(
                f"add + get_context {strategy} @ 100,000, 76% fit",
                f"test_get_context_after_add[{strategy}]",
                10 * MS,
                kind="stress",
            )
        )
    # Priority < 1 ms at 100k whatever share is kept (issue 15), full runs.
    for label, case in (
        ("all fit", "large_window[priority-all]"),
        ("76% fit", "large_window[priority-most]"),
        ("76% fit, one add between calls", "after_add[priority]"),
    ):
        out.append(
            Target(
                f"get_context priority @ 100,000, {label} < 1 ms",
                f"test_get_context_{case}",
                1 * MS,
                kind="bar",
            )
        )
    for n in memory_sizes:
        out.append(
            Target(
                f"memory held by the manager / raw UTF-8 @ {n:,}",
                f"test_memory[{n}]",
                2.0,
                stat="manager_ratio",
                unit="x",
            )
        )
    # Prompt-cache replay (bench_cache.py): deterministic, so quick runs enforce it as well.
    out.append(
        Target(
            "cache misses at retention_ratio=0.7 (1 - cached-prefix share) <= 20%",
            "test_cache_replay[0.7]",
            0.20,
            stat="cache_miss_share",
            unit="%",
        )
    )
    out.append(
        Target(
            "budget unused on average at retention_ratio=0.7 <= 40%",
            "test_cache_replay[0.7]",
            0.40,
            stat="unused_budget_share",
            unit="%",
        )
    )
    largest = max(memory_sizes)
    out.append(
        Target(
            f"memory linear: bytes per raw byte @ {largest:,} vs @ 1,000",
            f"test_memory[{largest}]",
            1.25,
            stat="growth_vs_1k",
            unit="x",
        )
    )
    return out


@dataclass(frozen=True)
class RatioTarget:
    """``theirs / ours`` (medians of two benchmarks of one run) must be at least ``at_least``.

    ``enforced=False``: printed with its verdict, never fails the run (the issue's goal where
    it is not robustly met on a loaded machine, reported so the gap stays visible).
    """

    label: str
    ours: str
    theirs: str
    at_least: float
    enforced: bool = True


#: Enforced one-shot speedups vs LangChain: (counter, messages, budget) -> at least x. Every
#: bar is at least the issue's goal (3x below 1,000 messages, 10x from 1,000 up) and below what
#: runs on this loaded 2-core machine measured (table in docs/guide/oneshot.md).
ONESHOT_ENFORCED = {
    # The 3x below 1,000 messages: the chat pass (budget.chat_suffix) measured 10-13x
    # at 20 messages, 4.6-4.7x at 100 when all fits, 6-17x at 100 with a cut (0.6-1.2x before).
    ("ours", 20, 8_000): 3.0,
    ("ours", 20, 102_400): 3.0,
    ("ours", 100, 8_000): 3.0,
    ("ours", 100, 102_400): 3.0,  # 3.5-3.6x (3.2-3.4x before the walk read keys by
    # subscript and skipped the fit check on results): the closest margin, as everything fits
    # and every message is read and charged; both sides timed in alternating blocks (paired)
    ("ours", 1_000, 102_400): 10.0,  # 17.6-21.4x (5-7x before the chat pass)
    ("ours", 1_000, 8_000): 10.0,  # 25-73x
    ("ours", 10_000, 8_000): 100.0,  # 249-553x
    ("ours", 10_000, 102_400): 10.0,  # 22-27x: the goal, met with a 2x margin
    ("ours", 100_000, 8_000): 300.0,  # 2,000x
    ("ours", 100_000, 102_400): 30.0,  # 90x
    # With tiktoken below 1,000 messages: a history whose UTF-8 bytes fit the budget is never
    # tokenized (budget.backscan's bound pass); 0.9-1.0x before it, when both sides tokenized
    # every kept text with the same Rust encoder.
    ("ours_tiktoken", 20, 8_000): 3.0,  # 5.7x (the 20 messages' bytes fit 8,000)
    ("ours_tiktoken", 20, 102_400): 3.0,  # 5.4x
    ("ours_tiktoken", 100, 8_000): 3.0,  # 7.4x: a cut, the kept part tokenized exactly
    ("ours_tiktoken", 100, 102_400): 5.0,  # 14.5x
    ("ours_tiktoken", 1_000, 8_000): 10.0,  # 34x
    # 11.4-12.3x. LangChain's binary search tokenizes about 11.7x the messages we do here (all
    # 1,000, then ~10 prefixes of ~580), and both sides spend ~95% of a message in tiktoken's
    # encoder: the ratio cannot go much past that count ratio, so this bar has the least slack.
    ("ours_tiktoken", 1_000, 102_400): 10.0,
    ("ours_tiktoken", 10_000, 8_000): 50.0,  # 270x
    ("ours_tiktoken", 10_000, 102_400): 10.0,  # 42x
    ("ours_tiktoken", 100_000, 8_000): 300.0,  # 2,600x
    ("ours_tiktoken", 100_000, 102_400): 50.0,  # 330x
}
#: Enforced repeated-call speedups (history reloaded + one new message, cache on): the issue's
#: 20x from 1,000 messages up. The memo (budget.chat_memo) reads only the new message and
#: compares the rest in C: measured 43-81x at 1,000 and 87-245x at 10,000 (9-11x and 38-52x
#: before it).
REPEAT_ENFORCED = {1_000: 20.0, 10_000: 20.0, 100_000: 40.0}


def _goal(n: int) -> float:
    """The issue's goal: >= 3x below 1,000 messages, >= 10x from 1,000 up."""
    return 3.0 if n < 1_000 else 10.0


def oneshot_ratio_targets(quick: bool = False) -> list[RatioTarget]:
    """One-shot ``trim()`` vs LangChain ``trim_messages`` (bench_oneshot).

    Enforced where :data:`ONESHOT_ENFORCED` / :data:`REPEAT_ENFORCED` set a bar (the headline:
    an order of magnitude from 10,000 messages up); everywhere else the issue's goal is reported.
    """
    from .bench_oneshot import BUDGETS, FULL_SIZES, QUICK_SIZES

    sizes = QUICK_SIZES if quick else FULL_SIZES
    out: list[RatioTarget] = []
    for budget in BUDGETS:
        for n in sizes:
            for ours, theirs in (
                ("ours", "langchain_approx"),
                ("ours_tiktoken", "langchain_tiktoken"),
            ):
                bar = ONESHOT_ENFORCED.get((ours, n, budget))
                out.append(
                    RatioTarget(
                        f"one-shot {ours} vs {theirs} @ {n:,} msgs, {budget:,} tokens",
                        f"test_oneshot[{ours}-{budget}-{n}]",
                        f"test_oneshot[{theirs}-{budget}-{n}]",
                        bar if bar is not None else _goal(n),
                        enforced=bar is not None,
                    )
                )
    for n in (s for s in sizes if s >= 1_000):
        bar = REPEAT_ENFORCED.get(n)
        out.append(
            RatioTarget(
                f"repeated trim (history + 1 new) vs langchain_approx @ {n:,} msgs",
                f"test_oneshot_repeat[ours_cached-{n}]",
                f"test_oneshot_repeat[langchain_approx-{n}]",
                bar if bar is not None else 20.0,
                enforced=bar is not None,
            )
        )
    return out
