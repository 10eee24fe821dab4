"""CacheTracker's cost per request: what changed, not the whole context; same reports as the
stateless path.

The cost is counted, not timed: the Python-level calls (``sys.setprofile``) one request makes
must not grow with the messages held, so a session that grows one message a request stays
linear overall. Calls that C code makes (an identity check per held message) are not counted.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import MessageContextManager
from context_manager.prompt_cache import CacheTracker, cache_report, cache_rules, track_cache

from .linear_time import python_calls

Msg = dict[str, Any]


def message(i: int) -> Msg:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " * 20}


def tracker_request_calls(held: int, provider: str) -> int:
    tracker = CacheTracker(cache_rules(provider), "chars", clock=None)
    history = [{"role": "system", "content": "rules " * 400}] + [message(i) for i in range(held)]
    tracker.observe(history, system=True)
    history = [*history, message(held), message(held + 1)]
    return python_calls(lambda: tracker.observe(history, system=True))


def test_a_request_that_extends_the_last_one_costs_what_it_adds() -> None:
    for provider in ("openai", "anthropic"):
        small, large = tracker_request_calls(500, provider), tracker_request_calls(4000, provider)
        assert large <= small + 20, (provider, small, large)


def test_a_tracked_manager_request_does_not_grow_with_the_history() -> None:
    def calls(held: int) -> int:
        manager = MessageContextManager(10**7, counter="chars")
        track_cache(manager, "openai", "gpt-5")
        for i in range(held):
            manager.add(message(i))
        manager.get_context()
        manager.add(message(held))
        return python_calls(manager.get_context)

    small, large = calls(500), calls(4000)
    assert large <= small + 20, (small, large)


# -- the incremental tracker reports what the stateless path reports ---------------------------
@st.composite
def sessions(draw: st.DrawFn) -> list[list[Msg]]:
    """Contexts of one conversation: each grows, drops its oldest messages, edits or shortens
    the last one; the messages kept are the same objects, as a manager sends them."""
    pool = [message(i) for i in range(60)]
    system = {"role": "system", "content": "rules " * draw(st.integers(1, 600))}
    start, end = 0, draw(st.integers(1, 8))
    out: list[list[Msg]] = []
    for _ in range(draw(st.integers(1, 12))):
        move = draw(st.sampled_from(["grow", "grow", "drop", "edit", "shorten", "same"]))
        if move == "grow":
            end = min(end + draw(st.integers(1, 4)), len(pool))
        elif move == "drop":
            start = min(start + draw(st.integers(1, 3)), end - 1)
        elif move == "shorten":
            end = max(end - 1, start + 1)
        context = [system, *pool[start:end]]
        if move == "edit":
            k = draw(st.integers(1, len(context) - 1))
            context[k] = {**context[k], "content": context[k]["content"] + "(edited)"}
        out.append(context)
    return out


@settings(max_examples=150, deadline=None)
@given(sessions(), st.sampled_from(["openai", "anthropic", "gemini"]))
def test_tracker_reports_equal_the_stateless_reports(
    contexts: list[list[Msg]], provider: str
) -> None:
    tracker = CacheTracker(cache_rules(provider), "chars", clock=None)
    previous = None
    for context in contexts:
        expected = cache_report(previous, context, provider)
        assert tracker.observe(context, system=True) == expected
        previous = context
