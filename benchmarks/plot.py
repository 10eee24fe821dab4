"""Plot time vs number of messages (log-log), ours vs peers, from a benchmark run.

    python -m benchmarks.plot --run     # run every suite (peers included), then plot
    python -m benchmarks.plot           # plot the last run (benchmarks/results/full.json)

Writes ``docs/benchmarks.png``. Needs matplotlib (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .enforce import ROOT, load
from .enforce import main as enforce_main

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "full.json"
DEFAULT_PNG = ROOT / "docs" / "benchmarks.png"

#: (benchmark name pattern, label, style, sizes) in drawing order. The one-shot series come from
#: ``bench_oneshot`` (20 to 100,000 messages, the 102,400-token budget, cold calls); per-request
#: ``get_context()`` from ``bench_context`` (1k to 100k, the manager's 128k window).
ONESHOT_SIZES = (20, 100, 1_000, 10_000, 100_000)
MANAGER_SIZES = (1_000, 10_000, 100_000)
SERIES = (
    (
        "test_get_context[sliding_window-{n}]",
        "ours: get_context(), sliding_window",
        "-o",
        MANAGER_SIZES,
    ),
    ("test_get_context[priority-{n}]", "ours: get_context(), priority", "-o", MANAGER_SIZES),
    ("test_oneshot[ours-102400-{n}]", "ours: one-shot trim(), estimator", "-s", ONESHOT_SIZES),
    (
        "test_oneshot[ours_tiktoken-102400-{n}]",
        "ours: one-shot trim(), tiktoken",
        "-s",
        ONESHOT_SIZES,
    ),
    (
        "test_oneshot_repeat[ours_cached-{n}]",
        "ours: trim() again, history reloaded + 1 new",
        ":s",
        ONESHOT_SIZES,
    ),
    (
        "test_oneshot[langchain_approx-102400-{n}]",
        "LangChain trim_messages, approximate",
        "--^",
        ONESHOT_SIZES,
    ),
    (
        "test_oneshot[langchain_tiktoken-102400-{n}]",
        "LangChain trim_messages, tiktoken",
        "--^",
        ONESHOT_SIZES,
    ),
    ("test_oneshot[litellm-102400-{n}]", "litellm trim_messages", "--v", ONESHOT_SIZES),
)


def series(results: dict[str, dict[str, Any]]) -> list[tuple[str, str, list[int], list[float]]]:
    out = []
    for pattern, label, style, sizes in SERIES:
        xs, ys = [], []
        for n in sizes:
            bench = results.get(pattern.format(n=n))
            if bench is not None:
                xs.append(n)
                ys.append(float(bench["stats"]["median"]))
        if xs:
            out.append((label, style, xs, ys))
    return out


def plot(json_path: Path, png_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 5), dpi=100)
    for label, style, xs, ys in series(load(json_path)):
        ax.plot(xs, ys, style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(list(ONESHOT_SIZES), [f"{n:,}" for n in ONESHOT_SIZES])
    ax.set_xlabel("messages in the history")
    ax.set_ylabel("median seconds per call (log)")
    ax.set_title("Trimming to a 102,400-token budget (128k window)")
    ax.axhline(0.01, color="grey", linewidth=0.8, linestyle=":")
    ax.text(20, 0.0115, "spec: 10 ms", color="grey", fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.text(
        0.99,
        0.01,
        "missing point: not run (litellm takes minutes a call from 10,000 messages)",
        ha="right",
        fontsize=7,
        color="grey",
    )
    fig.tight_layout()
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, metadata={"Software": None})
    plt.close(fig)
    print(f"wrote {png_path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.plot",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("json", nargs="?", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--out", type=Path, default=DEFAULT_PNG)
    parser.add_argument("--run", action="store_true", help="run every suite first")
    args = parser.parse_args(argv)
    status = enforce_main(["--json", str(args.json)]) if args.run else 0
    plot(args.json, args.out)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
