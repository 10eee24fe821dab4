"""A usage record keeps our count of the context it measured, so a reopened session calibrates on
what the live manager counted, not on the context the replayed state would send.

The case that showed it: a compaction with nothing to summarize falls back to clearing old tool
results in the view (``PruningFallback``), which is not part of the log. The live manager was
billed for the pruned context; replay counted the unpruned one, about twice as large, and
learned a factor of about 0.5 instead of 1.05: the reopened manager sent twice what fits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.compaction.pruning import PruningFallback, emergency_pruning
from context_manager.counting import CharEstimator
from context_manager.store import AsyncSessionStore

from .aio import aopen, run
from .backends import Backend, user

OPTIONS: dict[str, Any] = {
    "max_tokens": 30_000,
    "reserve_tokens": 0,
    "strategy": "sliding_window",
    "counter": "chars",
}
BILLED = 1.05  # the provider bills 5% more than chars/4 counts


def tool_session(results: int, size: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [user("go")]
    for i in range(results):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x" * size})
    return out


NEXT = user("next " + "w" * 4_000)


def observed(manager: MessageContextManager) -> dict[str, Any]:
    """What a caller sees of the calibration: the factor, the usage-anchored total, what fits."""
    stats = manager.stats()
    return {
        "calibrated": stats.calibrated,
        "calibration": stats.calibration,
        "used_tokens": stats.used_tokens,
        "remaining_tokens": stats.remaining_tokens,
        "near_limit": stats.near_limit,
        "context_tokens": stats.context_tokens,
        "context": manager.get_context(),
    }


def live_session(manager: MessageContextManager) -> tuple[int, dict[str, Any]]:
    """The fallback, then a report billed on the pruned context; returns what we counted of it
    and what the live manager shows after one more message."""
    manager.extend(tool_session(3, 40_000))
    assert isinstance(manager.compact(), PruningFallback)
    counted = manager.context_tokens()
    manager.record_usage(int(counted * BILLED))
    manager.add(NEXT)
    return counted, observed(manager)


def reopened(manager: MessageContextManager) -> dict[str, Any]:
    """What the reopened manager shows once the caller installs the same view again."""
    manager.use_pruning(emergency_pruning())
    return observed(manager)


def usage_lines(path: Path) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["role"] == "_usage"]


def rewrite_usage(path: Path, change: Any) -> None:
    """Apply ``change`` to the ``_cm`` of every ``_usage`` line (a hand edit of the file)."""
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["role"] == "_usage":
            change(record.setdefault("_cm", {}))
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


def test_a_reopened_session_calibrates_as_the_live_manager_did_on_every_backend(
    backend: Backend,
) -> None:
    live = backend.manager(**OPTIONS)
    _, seen = live_session(live)
    assert 1.04 < seen["calibration"] < 1.06
    live.store.close()
    for _ in range(2):  # and again after a reopen, which wrote nothing
        again = backend.manager(**OPTIONS)
        assert reopened(again) == seen
        again.store.close()


def test_an_async_session_keeps_our_count_too(backend: Backend) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        manager = await aopen(backend, **OPTIONS)
        store = manager.store
        assert isinstance(store, AsyncSessionStore)
        async with store.batch():
            manager.extend(tool_session(3, 40_000))
        assert isinstance(await manager.acompact(), PruningFallback)
        async with store.batch():
            manager.record_usage(int(manager.context_tokens() * BILLED))
            manager.add(NEXT)
        seen = observed(manager)
        await store.aclose()
        again = await aopen(backend, **OPTIONS)
        back = reopened(again)
        await again.store.aclose()
        return seen, back

    seen, back = run(scenario())
    assert 1.04 < seen["calibration"] < 1.06
    assert back == seen
    sync = backend.manager(**OPTIONS)  # and the sync API reads the same record
    assert reopened(sync) == seen
    sync.store.close()


def replayed_by_hand(reported: int, **options: Any) -> dict[str, Any]:
    """The same history and report fed to a manager without a store, the view unpruned: what a
    replay that counts the context again learns."""
    manager = MessageContextManager(**{**OPTIONS, **options})
    manager.extend(tool_session(3, 40_000))
    manager.record_usage(reported)
    manager.add(NEXT)
    return reopened(manager)


def test_a_usage_record_without_our_count_is_counted_again_as_before(tmp_path: Path) -> None:
    live = MessageContextManager.open(tmp_path, **OPTIONS)
    counted, seen = live_session(live)
    live.store.close()
    path = Path(live.store.path)
    [line] = usage_lines(path)
    assert line["_cm"]["count"] == [counted, live.counter.fingerprint()]

    rewrite_usage(path, lambda attrs: attrs.pop("count"))  # as a writer before the key wrote it
    old = MessageContextManager.open(tmp_path, **OPTIONS, strict=True)
    back = reopened(old)
    assert back == replayed_by_hand(int(counted * BILLED))
    assert back["calibration"] < 0.6 < seen["calibration"]  # the unpruned context, recounted


def test_our_count_is_taken_under_the_same_counting_only(tmp_path: Path) -> None:
    live = MessageContextManager.open(tmp_path, **OPTIONS)
    counted, _ = live_session(live)
    live.store.close()
    path = Path(live.store.path)
    reported = int(counted * BILLED)
    rewrite_usage(path, lambda attrs: attrs["count"].__setitem__(0, reported // 2))

    same = MessageContextManager.open(tmp_path, **OPTIONS, strict=True)
    assert 2.0 <= same.stats().calibration <= 2.01  # the hand-edited count: reported / (r // 2)
    same.store.close()

    other = CharEstimator(3)  # another fingerprint: the count is not ours, the context recounted
    assert other.fingerprint() != live.counter.fingerprint()
    moved = MessageContextManager.open(tmp_path, **{**OPTIONS, "counter": other}, strict=True)
    assert reopened(moved) == replayed_by_hand(reported, counter=CharEstimator(3))


def test_a_report_when_nothing_fitted_is_stored_as_such(tmp_path: Path) -> None:
    options = {**OPTIONS, "max_tokens": 1_000}
    live = MessageContextManager.open(tmp_path, **options)
    live.add(user("w" * 8_000), pinned=True)  # a pinned message past the budget: nothing fits
    live.record_usage(2_500)
    seen = live.stats()
    live.store.close()
    [line] = usage_lines(Path(live.store.path))
    assert line["_cm"]["count"] == [None, live.counter.fingerprint()]
    back = MessageContextManager.open(tmp_path, **options, strict=True).stats()
    assert (back.calibrated, back.calibration, back.used_tokens) == (True, 1.0, 2_500)
    assert back == seen


FP = "<fingerprint>"  # replaced by the writer's: a matching fingerprint beside a bad number
DAMAGED = ["12", [12], [-1, FP], [True, FP], [2.5, FP], [2**60, FP], [12, 3], {"tokens": 12}]


@pytest.mark.parametrize("attrs", [*({"count": v} for v in DAMAGED), 7, [1]])
def test_a_damaged_count_is_counted_again_like_a_damaged_message_count(
    tmp_path: Path, attrs: Any
) -> None:
    """Our count is a cache of what replay can count again: damage costs the shortcut, never
    the report (a damaged message count is treated the same way)."""
    live = MessageContextManager.open(tmp_path, **OPTIONS)
    live.add(user("w" * 4_000))
    live.record_usage(1_500)
    live.store.close()
    path = Path(live.store.path)
    text = json.dumps(attrs).replace(json.dumps(FP), json.dumps(live.counter.fingerprint()))
    message, _ = path.read_text().splitlines()  # the message, then the report
    path.write_text(f'{message}\n{{"role": "_usage", "token_count": 1500, "_cm": {text}}}\n')

    by_hand = MessageContextManager(**OPTIONS)
    by_hand.add(user("w" * 4_000))
    by_hand.record_usage(1_500)  # counted from the state, as replay now does
    for strict in (True, False):
        back = MessageContextManager.open(tmp_path, **OPTIONS, strict=strict)
        assert back.stats() == by_hand.stats()
        assert back.stats().calibrated and back.stats().calibration > 1.4
        back.store.close()


@pytest.mark.parametrize(
    "counted",
    [-1, True, 2.5, "7", 2**53 + 1, 10**400],
    ids=["negative", "bool", "float", "str", "2**53+1", "10**400"],
)
def test_record_usage_counted_refuses_a_count_that_is_not_a_token_count(counted: Any) -> None:
    from context_manager.errors import ConfigurationError

    manager = MessageContextManager(**OPTIONS)
    manager.add(user("w" * 4_000))
    before = manager.stats()
    with pytest.raises(ConfigurationError, match="counted must be an int from 0 to"):
        manager.record_usage_counted(1_500, counted)
    assert manager.stats() == before
    manager.record_usage_counted(1_500, 1_000)  # billed 1.5x what we counted
    assert 1.49 < manager.stats().calibration < 1.51


@pytest.mark.parametrize(
    "usage",
    [10**400, 2**53 + 1, {"prompt_tokens": 10**400}, {"input_tokens": 10**309}],
    ids=["10**400", "2**53+1", "openai-dict", "anthropic-dict"],
)
def test_a_report_too_large_to_be_a_count_is_refused_before_it_is_stored(
    tmp_path: Path, usage: Any
) -> None:
    """A report past 2**53 tokens is no prompt size: it is refused with a typed error, and
    nothing is written (it used to be stored, then overflow the ratio on every reopen)."""
    from context_manager.errors import ConfigurationError

    manager = MessageContextManager.open(tmp_path, **OPTIONS)
    manager.add(user("w" * 4_000))
    before = manager.stats()
    with pytest.raises(ConfigurationError, match="from 0 to 9007199254740992"):
        manager.record_usage(usage)
    assert manager.stats() == before
    manager.store.close()
    assert usage_lines(Path(manager.store.path)) == []
    assert MessageContextManager.open(tmp_path, **OPTIONS, strict=True).stats() == before


def test_a_stored_report_too_large_to_be_a_count_is_a_damaged_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Written by another tool or by hand: skipped by its number (strict: corruption), never an
    untyped error that keeps the session from opening."""
    import logging

    from context_manager.errors import StoreCorruptionError

    live = MessageContextManager.open(tmp_path, **OPTIONS)
    live.add(user("w" * 4_000))
    before = live.stats()
    live.store.close()
    path = Path(live.store.path)
    with path.open("a") as f:
        f.write(f'{{"role": "_usage", "token_count": {10**400}}}\n')
    with pytest.raises(StoreCorruptionError, match="line 2"):
        MessageContextManager.open(tmp_path, **OPTIONS, strict=True)
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        assert MessageContextManager.open(tmp_path, **OPTIONS).stats() == before
    assert "line 2" in caplog.text
