"""The sessions.json index: routing keys to session ids, counters, atomic writes, reset policy."""

from __future__ import annotations

import itertools
import json
import os
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from context_manager.errors import ConfigurationError, StoreCorruptionError, StoreError
from context_manager.store import index as index_module
from context_manager.store.index import ResetPolicy, SessionIndex


class Clock:
    def __init__(self, when: datetime) -> None:
        self.now = when.timestamp()

    def __call__(self) -> float:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta).total_seconds()


def ids() -> object:
    counter = itertools.count(1)
    return lambda: f"s{next(counter)}"


START = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)


def make(tmp_path: Path, policy: ResetPolicy | None = None) -> tuple[SessionIndex, Clock]:
    clock = Clock(START)
    index = SessionIndex(tmp_path / "sessions.json", policy=policy, clock=clock, new_id=ids())  # type: ignore[arg-type]
    return index, clock


def test_resolve_creates_then_reuses_a_session(tmp_path: Path) -> None:
    index, clock = make(tmp_path)
    first = index.resolve("user:1")
    clock.advance(minutes=5)
    again = index.resolve("user:1")
    other = index.resolve("user:2")
    assert (first.session_id, again.session_id, other.session_id) == ("s1", "s1", "s2")
    assert again.updated_at - first.updated_at == 5 * 60_000
    assert again.created_at == first.created_at
    assert index.session_path(again) == tmp_path / "s1.jsonl"


def test_file_uses_openclaw_camel_case_and_keeps_unknown_fields(tmp_path: Path) -> None:
    index, _ = make(tmp_path)
    index.resolve("k")
    data = json.loads((tmp_path / "sessions.json").read_text())
    assert data == {
        "k": {
            "sessionId": "s1",
            "updatedAt": int(START.timestamp() * 1000),
            "createdAt": int(START.timestamp() * 1000),
            "inputTokens": 0,
            "outputTokens": 0,
            "totalTokens": 0,
            "contextTokens": 0,
            "compactionCount": 0,
        }
    }
    data["k"]["thinkingLevel"] = "high"  # written by another tool
    (tmp_path / "sessions.json").write_text(json.dumps(data))
    index.record_usage("k", input_tokens=10, output_tokens=3, context_tokens=10)
    index.reset("k")
    stored = json.loads((tmp_path / "sessions.json").read_text())["k"]
    assert stored["thinkingLevel"] == "high" and stored["sessionId"] == "s2"


def test_counters_compaction_and_memory_flush_cycle(tmp_path: Path) -> None:
    index, _ = make(tmp_path)
    index.resolve("k")
    index.record_usage("k", input_tokens=100_000, output_tokens=500, context_tokens=100_000)
    entry = index.record_usage("k", input_tokens=105_000, output_tokens=700, context_tokens=105_000)
    assert (entry.input_tokens, entry.output_tokens, entry.total_tokens) == (205_000, 1200, 206_200)
    window = 128_000  # flush threshold: 128000 - 20000 - 4000 = 104000
    assert index.needs_memory_flush("k", context_window=window)
    index.record_memory_flush("k")
    assert not index.needs_memory_flush("k", context_window=window)  # once per cycle
    index.record_compaction("k", context_tokens=30_000)
    assert not index.needs_memory_flush("k", context_window=window)  # below threshold again
    index.record_usage("k", context_tokens=104_000)
    assert index.needs_memory_flush("k", context_window=window)  # new cycle, threshold reached
    index.record_usage("k", context_tokens=103_999)
    assert not index.needs_memory_flush("k", context_window=window)
    assert not index.needs_memory_flush("unknown", context_window=window)


def test_reset_starts_a_new_session_with_fresh_counters(tmp_path: Path) -> None:
    index, _ = make(tmp_path)
    index.resolve("k")
    index.record_usage("k", input_tokens=5, context_tokens=5)
    index.record_compaction("k")
    fresh = index.reset("k")
    assert fresh.session_id == "s2"
    assert (fresh.input_tokens, fresh.compaction_count, fresh.context_tokens) == (0, 0, 0)
    assert index.get("k") == fresh


def test_counters_on_unknown_key_raise(tmp_path: Path) -> None:
    index, _ = make(tmp_path)
    with pytest.raises(KeyError, match="resolve"):
        index.record_usage("nobody", input_tokens=1)


def test_idle_expiry(tmp_path: Path) -> None:
    index, clock = make(tmp_path, ResetPolicy(idle_minutes=30))
    assert index.resolve("k").session_id == "s1"
    clock.advance(minutes=30)
    assert index.resolve("k").session_id == "s1"  # exactly 30 minutes idle is not stale
    clock.advance(minutes=30, seconds=1)
    assert index.resolve("k").session_id == "s2"


def test_daily_reset_at_hour(tmp_path: Path) -> None:
    policy = ResetPolicy(daily_at_hour=4, tz=UTC)
    index, clock = make(tmp_path, policy)  # starts 15:00 on the 10th
    assert index.resolve("k").session_id == "s1"
    clock.advance(hours=12, minutes=59)  # 03:59 on the 11th: before the boundary
    assert index.resolve("k").session_id == "s1"
    clock.advance(minutes=2)  # 04:01: last activity (03:59) is before 04:00
    assert index.resolve("k").session_id == "s2"
    clock.advance(hours=23)  # 03:01 next day: still the same daily window
    assert index.resolve("k").session_id == "s2"


def test_daily_boundary_honours_the_time_zone() -> None:
    tz = timezone(timedelta(hours=-5))
    now = datetime(2026, 3, 10, 3, 30, tzinfo=tz)  # 03:30 local, before 04:00 local
    boundary = ResetPolicy(daily_at_hour=4, tz=tz).last_daily_boundary(int(now.timestamp() * 1000))
    assert datetime.fromtimestamp(boundary / 1000, tz) == datetime(2026, 3, 9, 4, 0, tzinfo=tz)


@pytest.mark.parametrize(
    "bad",
    [
        {"idle_minutes": 0},
        {"idle_minutes": float("nan")},  # compares False with every age: never a reset
        {"idle_minutes": "30"},
        {"daily_at_hour": 24},
        {"daily_at_hour": 3.5},
        {"daily_at_hour": 3, "tz": "UTC"},  # a name, not a tzinfo
    ],
)
def test_bad_policy_is_a_configuration_error(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        ResetPolicy(**bad)  # type: ignore[arg-type]


def test_a_session_id_that_names_no_file_is_corruption(tmp_path: Path) -> None:
    """A lone surrogate is a valid JSON escape in an edited sessions.json, and no file name."""
    (tmp_path / "sessions.json").write_text(
        '{"user:1": {"sessionId": "\\ud800", "updatedAt": 1, "createdAt": 1}}'
    )
    index = SessionIndex(tmp_path / "sessions.json")
    entry = index.get("user:1")
    assert entry is not None
    with pytest.raises(StoreCorruptionError, match="not a usable path"):
        index.session_path(entry)


def test_write_is_atomic_temp_then_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index, _ = make(tmp_path)
    index.resolve("k")
    before = (tmp_path / "sessions.json").read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(index_module.os, "replace", crash)
    with pytest.raises(StoreError, match="simulated"):
        index.reset("k")
    assert (tmp_path / "sessions.json").read_bytes() == before  # old index intact


def test_corrupt_index_raises_store_corruption(tmp_path: Path) -> None:
    (tmp_path / "sessions.json").write_text('{"k": {"sessionId": "a"')
    index, _ = make(tmp_path)
    with pytest.raises(StoreCorruptionError, match="not valid JSON"):
        index.load()


def test_concurrent_updates_from_threads_and_instances_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    SessionIndex(path, fsync=False).resolve("k")

    def work() -> None:
        own = SessionIndex(path, fsync=False)  # its own lock descriptor, like another process
        for _ in range(25):
            own.record_usage("k", input_tokens=1, output_tokens=2)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    entry = SessionIndex(path).get("k")
    assert entry is not None
    assert (entry.input_tokens, entry.output_tokens, entry.total_tokens) == (150, 300, 450)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
