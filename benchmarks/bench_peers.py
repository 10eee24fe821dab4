"""Side by side: our trimming vs LangChain's and litellm's on the same conversations.

``test_trim`` times one-shot trimming of the 1k/10k/100k corpus prefixes to a 102,400-token
budget (a 128k window minus the 20% reserve our manager keeps by default). ``ours`` and
``ours_tiktoken`` start from nothing (normalize, count, select); a chat backend using the
manager pays only ``get_context()`` per request (``bench_context``), which the report compares
too. A peer whose first call at a size does not finish within ``BENCH_PEER_CAP`` seconds
(default 60; interrupted by a timer signal) is skipped at that size and at larger ones, and the
reason is printed.

``test_orphans`` trims the same 200 random conversations (10-120 messages, random budgets) with
each library and counts outputs holding a tool result without its call ("orphans", which chat
APIs reject) or a call without all its results ("dangling"). Ours must have none.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from context_manager.errors import ContextOverflowError

from . import corpus, peers
from .common import SIZES, broken_tool_pairs

pytestmark = pytest.mark.peers

BUDGET = 102_400
CAP = float(os.environ.get("BENCH_PEER_CAP", "60"))
#: Seconds of measurement per case (rounds = this / one call, between 1 and 30).
TIME_PER_CASE = float(os.environ.get("BENCH_PEER_TIME", "10"))

#: name -> (module it needs, trimmer factory, input form)
PEERS: dict[str, tuple[str, Callable[[], peers.Trimmer], str]] = {
    "ours": ("context_manager", lambda: peers.ours, "dicts"),
    "ours_tiktoken": ("tiktoken", lambda: peers.ours_tiktoken, "dicts"),
    "langchain_approx": ("langchain_core", peers.langchain_approx, "langchain"),
    "langchain_tiktoken": ("langchain_core", peers.langchain_tiktoken, "langchain"),
    "litellm": ("litellm", peers.litellm_trim, "dicts"),
}

_inputs: dict[tuple[str, int], list[Any]] = {}
_too_slow: dict[str, int] = {}


class _OverCap(BaseException):
    """Raised by the timer; a BaseException so ``except Exception`` in a peer cannot eat it."""


def _capped(trimmer: peers.Trimmer, messages: list[Any]) -> tuple[list[Any], float]:
    """One call, interrupted after ``CAP`` seconds; returns (kept, seconds)."""

    def alarm(signum: int, frame: Any) -> None:
        raise _OverCap

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, CAP)
    start = time.perf_counter()
    try:
        kept = trimmer(messages, BUDGET)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return kept, time.perf_counter() - start


def _input(form: str, n: int) -> list[Any]:
    key = (form, n)
    if key not in _inputs:
        messages = corpus.conversation(n)
        _inputs[key] = peers.langchain_messages(messages) if form == "langchain" else messages
    return _inputs[key]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("peer", list(PEERS))
def test_trim(benchmark: Any, peer: str, n: int) -> None:
    module, factory, form = PEERS[peer]
    pytest.importorskip(module)
    if peer in _too_slow:
        pytest.skip(
            f"{peer} at {n} messages: not run, one call at {_too_slow[peer]} messages "
            f"already took over {CAP:.0f} s"
        )
    trimmer = factory()
    messages = _input(form, n)
    try:
        kept, seconds = _capped(trimmer, messages)
    except _OverCap:
        _too_slow[peer] = n
        pytest.skip(f"{peer} at {n} messages: one call did not finish in {CAP:.0f} s")
    rounds = max(1, min(30, int(TIME_PER_CASE / max(seconds, 1e-9))))
    benchmark.pedantic(trimmer, args=(messages, BUDGET), rounds=rounds, iterations=1)
    orphans, dangling = broken_tool_pairs(kept)
    benchmark.extra_info.update(
        {"peer": peer, "messages": n, "kept": len(kept), "orphans": orphans, "dangling": dangling}
    )
    if peer.startswith("ours"):
        assert (orphans, dangling) == (0, 0)


def _orphan_cases() -> list[tuple[list[dict[str, Any]], int]]:
    rng = random.Random(corpus.SEED + 11)
    cases = []
    for i in range(200):
        messages = corpus.generate(rng.randint(10, 120), seed=corpus.SEED * 1000 + i)
        total = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 4 * len(messages)
        cases.append((messages, max(200, int(total * rng.uniform(0.2, 0.9)))))
    return cases


ORPHAN_PEERS: dict[str, tuple[str, Callable[[], peers.Trimmer], str]] = {
    "ours": ("context_manager", lambda: peers.ours, "dicts"),
    "langchain_approx": ("langchain_core", peers.langchain_approx, "langchain"),
    "langchain_approx_start_on_human": (
        "langchain_core",
        lambda: peers.langchain_approx("human"),
        "langchain",
    ),
    "langchain_tiktoken": ("langchain_core", peers.langchain_tiktoken, "langchain"),
    "litellm": ("litellm", peers.litellm_trim, "dicts"),
}


@pytest.mark.parametrize("peer", list(ORPHAN_PEERS))
def test_orphans(benchmark: Any, peer: str) -> None:
    module, factory, form = ORPHAN_PEERS[peer]
    pytest.importorskip(module)
    trimmer = factory()
    cases = _orphan_cases()
    if form == "langchain":
        cases = [(peers.langchain_messages(m), budget) for m, budget in cases]

    def run() -> dict[str, int]:
        tally = {"conversations": len(cases), "with_orphans": 0, "with_dangling": 0, "refused": 0}
        for messages, budget in cases:
            try:
                kept = trimmer(messages, budget)
            except ContextOverflowError:
                tally["refused"] += 1
                continue
            orphans, dangling = broken_tool_pairs(kept)
            tally["with_orphans"] += orphans > 0
            tally["with_dangling"] += dangling > 0
        return tally

    tally = benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update({"peer": peer, **tally})
    if peer == "ours":
        assert tally["with_orphans"] == tally["with_dangling"] == 0
