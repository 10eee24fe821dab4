"""A linear-time check that needs no absolute time: compare with a linear pass over the same text.

A quadratic pattern on 1 MB takes minutes; a linear one takes about as long as a few Python-level
passes over the text. The bound is a ratio to a baseline measured in the same test (a pure Python
loop over every character), plus a small constant for fixed costs, so it holds on slow machines.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Generous: a linear regex pass is ~1-10 x the baseline; quadratic on 1 MB is > 1000 x.
RATIO = 20.0
#: Fixed costs (imports, first-call compiles) that do not grow with the input.
CONSTANT_S = 0.25


def _baseline(text: str) -> float:
    start = time.perf_counter()
    count = 0
    for ch in text:  # one Python-level step per character: linear by construction
        if ch == "\x00":
            count += 1
    text.count(" ")
    return time.perf_counter() - start


def _timed(run: Callable[[str], object], text: str) -> float:
    start = time.perf_counter()
    run(text)
    return time.perf_counter() - start


def assert_linear(
    run: Callable[[str], object], text: str, *, what: str, ratio: float = RATIO
) -> None:
    """``run(text)`` must take at most ``ratio`` x the baseline pass over ``text`` (+ a constant).

    Use a larger ``ratio`` for whole pipelines that pass over the text several times.
    """
    baseline = min(_baseline(text) for _ in range(2))
    bound = ratio * baseline + CONSTANT_S
    elapsed = _timed(run, text)
    if elapsed > bound:  # once more: a garbage collection or a busy neighbour does not repeat,
        elapsed = min(elapsed, _timed(run, text))  # a super-linear pattern does
    assert elapsed <= bound, (
        f"{what}: {elapsed:.3f}s on {len(text):,} chars, baseline {baseline:.4f}s "
        f"(ratio {elapsed / max(baseline, 1e-9):.1f}, bound {ratio:g} x + {CONSTANT_S}s)"
    )


def python_calls(run: Callable[[], object]) -> int:
    """How many calls (Python and C) ``run()`` makes: a cost that does not depend on the machine's
    load, so growth with history size can be asserted without timing."""
    import sys
    from types import FrameType

    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls
