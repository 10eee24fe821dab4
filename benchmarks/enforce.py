"""Run the benchmark suites and fail when a target is missed.

    python -m benchmarks.enforce            # everything, peers included (several minutes)
    python -m benchmarks.enforce --quick    # CI: every spec target, fewer rounds, no peers
    python -m benchmarks.enforce --from-json run.json   # re-check a saved run

Medians are compared, never means or single runs, so a noisy shared machine moves the margin,
not the verdict. An enforced target missed in the full pass is measured again on its own (both
sides of a ratio, in one process), after a pause, up to ``REMEASURES`` times, and passes when one
attempt meets it: a burst of load on a shared 2-core machine can stall one suite for its whole
timing window, while a regression is slow in every attempt.
Spec targets always fail the run when missed; our own stricter bars and the
stress cases (spec limit, extreme input) fail it in the full run and are reported (not enforced)
in quick mode, where noise on a shared CI machine could flip them.
A target whose benchmark did not run counts as missed, and so does any failing suite.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .targets import Target, ratio_targets, targets

ROOT = Path(__file__).resolve().parent.parent
#: A missed enforced target is measured again on its own up to this many times, after a pause
#: each, and passes when one attempt meets it. This shared 2-core machine has slow phases that
#: last seconds to minutes (everything 1.6-2x slower: an estimator add at 12-15 us where it
#: takes 8 us otherwise), and a target sits close to such a limit; a regression is slow in
#: every attempt.
REMEASURES = 4
REMEASURE_PAUSE = 30.0  # seconds
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "latest.json"


def pytest_command(
    json_path: Path, *, quick: bool, peers: bool, extra: list[str], only: list[str] | None = None
) -> list[str]:
    """The pytest run; ``only``: these node ids instead of every suite."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        *(only or [str(ROOT / "benchmarks")]),
        "-o",
        "python_files=bench_*.py",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
        f"--benchmark-json={json_path}",
        "--benchmark-sort=name",
        "--benchmark-columns=median,iqr,rounds",
    ]
    if quick:
        command += ["--benchmark-max-time=0.25", "--benchmark-min-rounds=5"]
    if not peers:
        command += ["-m", "not peers"]
    return command + extra


def run(
    json_path: Path, *, quick: bool, peers: bool, extra: list[str], only: list[str] | None = None
) -> int:
    json_path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, BENCH_QUICK="1" if quick else "0")
    command = pytest_command(json_path, quick=quick, peers=peers, extra=extra, only=only)
    print("$", " ".join(command), flush=True)
    return subprocess.call(command, cwd=ROOT, env=env)


def compact(json_path: Path) -> None:
    """Drop the per-round timings pytest-benchmark stores (megabytes); keep stats and extra_info."""
    data = json.loads(json_path.read_text())
    for bench in data["benchmarks"]:
        bench["stats"].pop("data", None)
    json_path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def load(json_path: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(json_path.read_text())
    return {b["name"]: b for b in data["benchmarks"]}


def value_of(target: Target, bench: dict[str, Any]) -> float:
    if target.stat != "median":
        return float(bench["extra_info"][target.stat])
    median = float(bench["stats"]["median"])
    if target.per is not None:
        median /= float(bench["extra_info"][target.per])
    return median


def fmt(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "%":
        return f"{value:.1%}"
    if math.isnan(value):
        return "-"
    for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if value >= scale:
            return f"{value / scale:.3g} {name}"
    return f"{value / 1e-9:.3g} ns"


def check(results: dict[str, dict[str, Any]], *, quick: bool) -> tuple[list[str], list[str]]:
    """Print every target; return (missed and enforced, missed but only reported)."""
    failed: list[str] = []
    warned: list[str] = []
    print(f"\n{'kind':<6} {'target':<58} {'limit':>9} {'median':>9} {'margin':>8}  result")
    for target in targets(quick):
        bench = results.get(target.benchmark)
        per = f" /1K {target.per[1:]}" if target.per else ""
        if bench is None:
            value, margin, verdict = math.nan, math.nan, "MISSING"
        else:
            value = value_of(target, bench)
            margin = target.limit / value if value > 0 else math.inf
            verdict = "ok" if value <= target.limit else "MISSED"
        enforced = target.kind == "spec" or not quick
        if verdict != "ok":
            (failed if enforced else warned).append(target.label)
            if not enforced:
                verdict += " (reported)"
        margin_text = "-" if math.isnan(margin) else f"{margin:.1f}x"
        print(
            f"{target.kind:<6} {target.label:<58} {fmt(target.limit, target.unit):>9} "
            f"{fmt(value, target.unit) + per:>9} {margin_text:>8}  {verdict}"
        )
    return failed, warned


def ratio_of(ours: dict[str, Any], theirs: dict[str, Any]) -> float:
    """``theirs / ours``: from the interleaved timing the peer's case recorded when it has one
    with this ``ours`` (``bench_oneshot.paired``: both sides under the same load; ``with`` names
    the case it was paired with), else the two medians."""
    pair = (theirs.get("extra_info") or {}).get("paired")
    if (
        isinstance(pair, dict)
        and pair.get("ours")
        and pair.get("with", ours.get("name")) == ours.get("name")
    ):
        return float(pair["theirs"]) / float(pair["ours"])
    return float(theirs["stats"]["median"]) / float(ours["stats"]["median"])


def check_ratios(results: dict[str, dict[str, Any]], *, quick: bool) -> tuple[list[str], list[str]]:
    """Ratio targets (ours vs a peer, same run); a missing side counts as missed.

    Returns (missed and enforced, missed but only reported)."""
    failed: list[str] = []
    warned: list[str] = []
    print(f"\n{'ratio target (theirs / ours)':<66} {'limit':>7} {'ratio':>8}  result")
    for target in ratio_targets(quick):
        a, b = results.get(target.ours), results.get(target.theirs)
        if a is None or b is None:
            ratio, verdict = math.nan, "MISSING"
        else:
            ratio = ratio_of(a, b)
            verdict = "ok" if ratio >= target.at_least else "MISSED"
        if verdict != "ok":
            (failed if target.enforced else warned).append(target.label)
            if not target.enforced:
                verdict += " (goal, reported)"
        elif target.goal is not None and ratio < target.goal:
            verdict += f" (below the {target.goal:g}x goal, reported)"
            warned.append(f"{target.label} (goal {target.goal:g}x)")
        print(f"{target.label:<66} {target.at_least:>6g}x {ratio:>7.1f}x  {verdict}")
    return failed, warned


def oneshot_table(results: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown rows: per budget and size, each peer's median and its time / ours."""
    peers = (
        "before",
        "langchain_approx",
        "litellm",
        "ours_tiktoken",
        "langchain_tiktoken",
        "ours_default",
    )
    rows = [
        "| messages | budget | ours | " + " | ".join(peers) + " |",
        "|---:|---:|---:|" + "---:|" * len(peers),
    ]
    cells: dict[tuple[int, int], dict[str, float]] = {}
    for name, bench in results.items():
        if name.startswith("test_oneshot["):
            info = bench.get("extra_info") or {}
            if not {"budget", "messages", "peer"} <= info.keys():
                continue  # not a bench_oneshot record (a hand-made run)
            key = (int(info["budget"]), int(info["messages"]))
            cells.setdefault(key, {})[info["peer"]] = float(bench["stats"]["median"])
    for (budget, n), row in sorted(cells.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
        ours = row.get("ours")
        if ours is None:
            continue
        text = [f"{n:,}", f"{budget:,}", fmt(ours, "s")]
        for peer in peers:
            t = row.get(peer)
            base = row.get("ours_tiktoken") if peer == "langchain_tiktoken" else ours
            if t is None or base is None:
                text.append("-")
            elif peer == "ours_tiktoken":
                text.append(fmt(t, "s"))  # the base of the next column, not a peer
            else:
                text.append(f"{fmt(t, 's')} ({t / base:.1f}x)")
        rows.append("| " + " | ".join(text) + " |")
    for name in sorted(results):
        if name.startswith("test_oneshot_repeat[ours_cached-"):
            n = int((results[name].get("extra_info") or {}).get("messages", 0))
            lc = results.get(f"test_oneshot_repeat[langchain_approx-{n}]")
            if lc is not None:
                a, b = float(results[name]["stats"]["median"]), float(lc["stats"]["median"])
                rows.append(
                    f"| {n:,} repeated, +1 new, caller's cache | 102,400 | {fmt(a, 's')} | - | "
                    f"{fmt(b, 's')} ({b / a:.1f}x) | - | - | - |"
                )
    return rows


def print_reported(results: dict[str, dict[str, Any]], *, quick: bool) -> None:
    """Medians of the benchmarks no target reads (20K-char adds, store, compaction, ...)."""
    covered = {t.benchmark for t in targets(quick)}
    covered |= {n for t in ratio_targets(quick) for n in (t.ours, t.theirs)}
    rest = [
        name
        for name in sorted(results)
        if name not in covered
        and not name.startswith(("test_trim[", "test_orphans[", "test_memory[", "test_oneshot"))
    ]
    if rest:
        print(f"\nreported, no target{'':<40} {'median':>9}")
        for name in rest:
            print(f"{name:<59} {fmt(float(results[name]['stats']['median']), 's'):>9}")


RATIOS = (
    ("one-shot, estimator", "ours", ("langchain_approx",)),
    ("one-shot, tiktoken", "ours_tiktoken", ("langchain_tiktoken", "litellm")),
    (
        "per request (get_context)",
        "get_context",
        ("langchain_approx", "langchain_tiktoken", "litellm"),
    ),
)


def peer_median(results: dict[str, dict[str, Any]], peer: str, n: int) -> float | None:
    name = (
        f"test_get_context[sliding_window-{n}]"
        if peer == "get_context"
        else f"test_trim[{peer}-{n}]"
    )
    bench = results.get(name)
    return float(bench["stats"]["median"]) if bench else None


def ratios(results: dict[str, dict[str, Any]]) -> list[tuple[str, str, int, float, float]]:
    """(comparison, peer, n, ours, theirs) for every pair measured in this run."""
    out = []
    sizes = sorted(
        {
            int(b["extra_info"]["messages"])
            for b in results.values()
            if b["name"].startswith("test_trim[")
        }
    )
    for label, ours, theirs in RATIOS:
        for peer in theirs:
            for n in sizes:
                a, b = peer_median(results, ours, n), peer_median(results, peer, n)
                if a is not None and b is not None:
                    out.append((label, peer, n, a, b))
    return out


def print_peers(results: dict[str, dict[str, Any]]) -> None:
    rows = ratios(results)
    if not rows:
        return
    print(
        f"\n{'comparison':<27} {'peer':<20} {'messages':>8} {'ours':>9} {'theirs':>9} "
        f"{'ours/theirs':>12}"
    )
    for label, peer, n, a, b in rows:
        print(f"{label:<27} {peer:<20} {n:>8,} {fmt(a, 's'):>9} {fmt(b, 's'):>9} {a / b:>12.2g}")
    orphans = [b for name, b in sorted(results.items()) if name.startswith("test_orphans[")]
    if orphans:
        print(
            f"\n{'orphaned tool results':<34} {'conversations':>13} {'with orphans':>13} "
            f"{'with dangling calls':>20}"
        )
        for bench in orphans:
            info = bench["extra_info"]
            print(
                f"{info['peer']:<34} {info['conversations']:>13} {info['with_orphans']:>13} "
                f"{info['with_dangling']:>20}"
            )


def verdicts(results: dict[str, dict[str, Any]], *, quick: bool) -> tuple[list[str], list[str]]:
    """Every target and ratio target checked and printed: (missed and enforced, reported)."""
    failed, warned = check(results, quick=quick)
    ratio_failed, ratio_warned = check_ratios(results, quick=quick)
    return failed + ratio_failed, warned + ratio_warned


def remeasure(
    results: dict[str, dict[str, Any]],
    missed: list[str],
    json_path: Path,
    *,
    quick: bool,
    extra: list[str],
) -> dict[str, dict[str, Any]]:
    """The benchmarks behind the ``missed`` target labels, run again in one process."""
    names = {t.benchmark for t in targets(quick) if t.label in missed}
    for ratio in ratio_targets(quick):
        if ratio.label in missed:
            names |= {ratio.ours, ratio.theirs}
    ids = sorted({results[n]["fullname"] for n in names if "fullname" in results.get(n, {})})
    if not ids:
        return {}
    second = json_path.with_name(json_path.stem + ".again.json")
    run(second, quick=quick, peers=True, extra=extra, only=ids)
    if not second.exists():
        return {}
    compact(second)
    return {name: bench for name, bench in load(second).items() if name in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.enforce",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="CI mode: fewer rounds, no peers")
    parser.add_argument(
        "--peers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run the peer comparison (default: on, off with --quick)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=DEFAULT_JSON,
        help=f"where pytest-benchmark writes its results ({DEFAULT_JSON})",
    )
    parser.add_argument("--from-json", type=Path, help="check a saved run instead of running")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    args = parser.parse_args(argv)
    json_path = args.from_json or args.json
    status = 0
    if args.from_json is None:
        peers = (not args.quick) if args.peers is None else args.peers
        status = run(json_path, quick=args.quick, peers=peers, extra=args.pytest_args)
        if not json_path.exists():
            print(f"no results written to {json_path}", file=sys.stderr)
            return status or 1
        compact(json_path)
    results = load(json_path)
    quick = args.quick or "test_memory[30000]" in results  # a saved quick run
    failed, warned = verdicts(results, quick=quick)
    for attempt in range(1, REMEASURES + 1):
        if not failed or args.from_json is not None:
            break
        time.sleep(REMEASURE_PAUSE)  # let a burst of load on the shared machine pass
        again = remeasure(results, failed, json_path, quick=quick, extra=args.pytest_args)
        if not again:
            break
        results.update(again)
        print(f"\nre-measured on their own ({attempt} of {REMEASURES}): {', '.join(sorted(again))}")
        failed, warned = verdicts(results, quick=quick)
    if any(name.startswith("test_oneshot[") for name in results):
        print("\none-shot trim (time, and time / ours):")
        print("\n".join(oneshot_table(results)))
    print_reported(results, quick=quick)
    print_peers(results)
    if status != 0:
        print(f"\nFAIL: a benchmark suite failed (pytest exit status {status}); see above")
    if failed:
        print(f"\nFAIL: {len(failed)} target(s) missed: " + "; ".join(failed))
    if warned:
        print(
            f"\nnote: {len(warned)} target(s) missed, reported only (bar/stress in quick mode, "
            "one-shot goals): " + "; ".join(warned)
        )
    if status == 0 and not failed:
        print("\nall targets met")
    return 1 if status != 0 or failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
