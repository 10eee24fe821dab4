"""The circuit breaker of automatic compaction: a loop of compactions that free too little, or
fail, stops (each one is a summarizer call and a rewritten prompt prefix) and resumes once the
history has grown."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from context_manager.compaction import CompactionTriggers, TokenBudgetCompaction
from context_manager.errors import CompactionError, ConfigurationError
from context_manager.manager import MessageContextManager

from .helpers import RecordingSummarizer, coding_session

WINDOW = 40_000
POLICY = TokenBudgetCompaction()  # keeps the newest 20,000 tokens
TRIGGERS = CompactionTriggers(reserve_tokens=5_000, reserve_floor=0)  # compacts above 35,000


def wordy() -> RecordingSummarizer:
    """A summarizer whose summaries are about as long as what they replace (~19,000 tokens):
    a compaction frees less than 5% of the window and leaves the history over the threshold,
    and every later request tries again (and finds nothing more to compact)."""
    return RecordingSummarizer("word " * 15_200)


def filled(turns: int = 24) -> MessageContextManager:
    manager = MessageContextManager(WINDOW, reserve_tokens=1_000, counter="chars")
    manager.extend(coding_session(turns, filler=2_000))
    assert manager.used_tokens > 35_000
    return manager


def requests(manager: MessageContextManager, summarizer: Any, n: int) -> list[str | None]:
    """What ``n`` requests' automatic compaction did: "compacted", "freed little", "raised"
    (the error propagates to the caller) or None (not attempted, or nothing to compact: that is
    no error, the request goes on, and it counts toward the breaker)."""
    out: list[str | None] = []
    for _ in range(n):
        before = manager.used_tokens
        try:
            entry = TRIGGERS.before_request(manager, summarizer, policy=POLICY)
        except CompactionError:
            out.append("raised")
            continue
        if entry is None:
            out.append(None)
        else:
            out.append("compacted" if before - manager.used_tokens >= 2_000 else "freed little")
    return out


def test_a_compaction_loop_stops_after_three_in_a_row(caplog: pytest.LogCaptureFixture) -> None:
    manager = filled()
    summarizer = wordy()
    with caplog.at_level(logging.WARNING, logger="context_manager.compaction"):
        assert requests(manager, summarizer, 2) == ["freed little", None]
        assert "automatic compaction stopped" not in caplog.text  # two in a row: not yet
        done = requests(manager, summarizer, 4)
    assert done == [None, None, None, None]
    assert "the last found nothing to compact" in caplog.text
    calls = len(summarizer.requests)  # one compaction (a summary request, and a split turn's)
    assert requests(manager, summarizer, 2) == [None, None]
    assert len(summarizer.requests) == calls  # skipped requests call no summarizer
    assert manager.used_tokens > 35_000  # still over the threshold: the loop was real
    assert caplog.text.count("automatic compaction stopped") == 1


def test_the_breaker_closes_once_the_history_grew() -> None:
    manager = filled()
    summarizer = wordy()
    assert requests(manager, summarizer, 4)[-1] is None
    manager.extend(coding_session(2, start=100, filler=2_000))  # > 2,000 tokens more
    summarizer.reply = "short notes"
    assert requests(manager, summarizer, 1) == ["compacted"]
    assert manager.used_tokens < 35_000


def test_a_failing_summarizer_is_tried_three_times_then_left_alone() -> None:
    manager = filled()
    calls = []

    def down(request: Any) -> str:
        calls.append(request)
        raise RuntimeError("503 from the summarizer's API")

    assert requests(manager, down, 5) == ["raised", "raised", "raised", None, None]
    assert len(calls) == 3
    assert manager.summary is None  # nothing was applied


def test_a_compaction_that_frees_enough_starts_the_count_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager = filled()
    summarizer = wordy()
    assert requests(manager, summarizer, 1) == ["freed little"]
    manager.extend(coding_session(2, start=100, filler=2_000))
    summarizer.reply = "short notes"
    assert requests(manager, summarizer, 1) == ["compacted"]
    manager.extend(coding_session(14, start=200, filler=2_000))
    summarizer.reply = "word " * 15_200
    # Three more in a row before it stops (two, had the first weak one still counted).
    with caplog.at_level(logging.WARNING, logger="context_manager.compaction"):
        assert requests(manager, summarizer, 2) == ["freed little", None]
        assert "automatic compaction stopped" not in caplog.text
        assert requests(manager, summarizer, 2) == [None, None]
    assert caplog.text.count("automatic compaction stopped") == 1


def test_off_and_bad_settings() -> None:
    manager = filled()
    never = CompactionTriggers(reserve_tokens=5_000, reserve_floor=0, breaker_after=0)
    summarizer = wordy()
    never.before_request(manager, summarizer, policy=POLICY)
    for _ in range(4):  # nothing to compact each time, and no breaker to stop trying
        assert never.before_request(manager, summarizer, policy=POLICY) is None
    for bad in ({"breaker_after": -1}, {"breaker_after": True}, {"min_freed_ratio": 1.0}):
        with pytest.raises(ConfigurationError):
            CompactionTriggers(**bad)
