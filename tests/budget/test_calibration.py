"""Calibration from usage acts on budget decisions: what is sent, can_add, the near-limit warning.

The provider is played by the real tokenizer: each "response" reports the prompt tokens OpenAI
bills for the context we sent, computed with tiktoken's o200k_base and the cookbook formula
(``count_tokens(..., model="gpt-4o")``, checked elsewhere against OpenAI's published figures).
The manager counts with a counter that undercounts that by 2x.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import ConfigurationError, MessageContextManager
from context_manager.budget.calibration import HIGH, LOW, MIN_COUNTED, Calibration
from context_manager.counting import TokenCounter, count_tokens, get_counter
from context_manager.messages import Message

pytest.importorskip("tiktoken")

REAL = get_counter(model="gpt-4o")
WORDS = [
    *("alpha", "beta", "gamma", "delta", "数据", "库", "2024-05-01", "{'k':", "[1,", "2]}"),
    *("error:", "timeout", "at", "0x7f3a"),
]


class HalfCounter(TokenCounter):
    """Half of what the provider bills (an estimate that undercounts 2x)."""

    name = "half"
    prompt_overhead = 1

    def count_text(self, text: str) -> int:
        return math.ceil(REAL.count_text(text) / 2)

    def count_message(self, message: Message) -> int:
        return math.ceil(REAL.count_message(message) / 2)


def billed(context: list[Any]) -> int:
    return count_tokens(context, model="gpt-4o")


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def converse(manager: MessageContextManager, turns: int, seed: int = 0) -> list[int]:
    """Run a chat; returns the billed size of every request sent."""
    rng = random.Random(seed)
    sent = []
    for _ in range(turns):
        manager.add({"role": "user", "content": text(rng, rng.randint(20, 200))})
        tokens = billed(manager.get_context())
        sent.append(tokens)
        manager.record_usage({"prompt_tokens": tokens, "completion_tokens": 50})
        manager.add({"role": "assistant", "content": text(rng, rng.randint(20, 120))})
    return sent


def over(sent: list[int], budget: int) -> int:
    return sum(tokens > budget for tokens in sent)


def test_undercounting_counter_is_corrected_by_usage() -> None:
    def manager(calibrate: bool | None) -> MessageContextManager:
        return MessageContextManager(
            8000, reserve_tokens=0, counter=HalfCounter(), calibrate=calibrate
        )

    plain, calibrated = manager(False), manager(None)  # None: on, the counter is an estimate
    before = converse(plain, 60)
    after = converse(calibrated, 60)
    assert over(before, 8000) >= 35  # uncorrected: every request overflows once the chat is long
    assert max(before) > 1.8 * 8000
    assert over(after, 8000) == 0  # corrected from the first usage report on
    assert max(after) > 7800  # and the window is still used
    assert 1.8 < calibrated.stats().calibration < 2.05
    assert plain.stats().calibration == 1.0


def test_chars_on_chinese_text_is_corrected_though_billed_over_3x() -> None:
    """chars/4 counts a Chinese character as a quarter token; o200k bills about one each. That
    undercount is real, not an odd record: after the first report the chat fits the window."""
    rng = random.Random(5)
    hanzi = "数据处理完成错误文件读取成功测试模型上下文窗口预算"
    manager = MessageContextManager(3_000, reserve_tokens=0, counter="chars", provider="openai")
    sent = []
    for _ in range(60):
        line = "".join(rng.choice(hanzi) for _ in range(rng.randint(40, 200)))
        manager.add({"role": "user", "content": line})
        tokens = billed(manager.get_context())
        sent.append(tokens)
        manager.record_usage({"prompt_tokens": tokens, "completion_tokens": 10})
        manager.add({"role": "assistant", "content": line[: rng.randint(10, 60)]})
    ratio = sent[-1] / count_tokens(manager.get_context(), counter="chars")
    assert ratio > 3.0  # what the old [0.5, 3] rule ignored as an outlier
    assert over(sent[5:], 3_000) == 0
    assert max(sent) > 2_500  # the window is still used


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), budget=st.integers(3_000, 20_000))
def test_property_calibrated_contexts_fit_the_real_budget(seed: int, budget: int) -> None:
    manager = MessageContextManager(budget, reserve_tokens=0, counter=HalfCounter())
    sent = converse(manager, 40, seed)
    assert max(sent) <= budget


def test_can_add_and_near_limit_use_the_factor() -> None:
    warned: list[int] = []
    manager = MessageContextManager(
        10_000, reserve_tokens=0, counter=HalfCounter(), on_near_limit=lambda s: warned.append(1)
    )
    rng = random.Random(1)
    manager.add({"role": "user", "content": text(rng, 600)})
    reported = billed(manager.get_context())
    manager.record_usage(reported)
    at = manager.token_count  # what we had counted when the usage was reported
    assert manager.stats().calibration > 1.8
    room = manager.budget_tokens - manager.used_tokens
    words = 10
    while REAL.count_message(Message("user", text(random.Random(2), words))) <= room + 50:
        words += 10
    big = {"role": "user", "content": text(random.Random(2), words)}
    ours, real = manager.count_message(big), REAL.count_message(Message("user", big["content"]))
    assert ours < room < real  # by our count it fits; by the real count it does not
    assert not manager.can_add(big)
    while not warned:
        manager.add({"role": "assistant", "content": text(rng, 40)})
    assert reported + manager.token_count - at < 0.9 * 10_000  # uncorrected: no warning yet


def test_exact_counters_and_pi_parity_keep_the_plain_anchor() -> None:
    exact = MessageContextManager(8000, model="gpt-4o")
    assert_learns_nothing(exact)  # tiktoken is exact: nothing to correct
    pi = MessageContextManager(8000, counter="chars", calibrate=False)
    rng = random.Random(3)
    pi.add({"role": "user", "content": text(rng, 900)})
    pi.record_usage(5000)
    pi.add({"role": "user", "content": "x" * 40})
    assert pi.used_tokens == 5000 + 10 + 3  # Pi: reported + counted growth, unscaled
    assert pi.stats().calibration == 1.0


def test_outliers_and_tiny_contexts_are_ignored() -> None:
    calibration = Calibration(True)
    assert not calibration.observe(10_000, MIN_COUNTED - 1)
    assert not calibration.observe(int(1000 * (LOW - 0.1)), 1000)
    assert calibration.factor == 1.0
    assert calibration.observe(2000, 1000) and calibration.factor == 2.0
    assert calibration.observe(1000, 1000)  # smoothed, not replaced
    assert 1.6 < calibration.factor < 2.0
    assert not Calibration(False).observe(2000, 1000)


def test_factor_survives_reopen_and_resets_on_clear(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    manager = MessageContextManager.open(
        path, max_tokens=8000, reserve_tokens=0, counter=HalfCounter()
    )
    converse(manager, 10)
    factor = manager.stats().calibration
    assert factor > 1.5
    reopened = MessageContextManager.open(
        path, max_tokens=8000, reserve_tokens=0, counter=HalfCounter()
    )
    assert reopened.stats().calibration == pytest.approx(factor)
    assert reopened.get_context() == manager.get_context()
    reopened.clear()
    assert reopened.stats().calibration == 1.0
    configured = MessageContextManager.from_config({"calibrate": False, "counter": "estimate"})
    assert_learns_nothing(configured)
    assert_learns_nothing(MessageContextManager(8000, counter="chars", calibrate=False))
    learning = MessageContextManager(8000, counter="chars")  # an estimate: calibrates by default
    with pytest.raises(AssertionError):
        assert_learns_nothing(learning)


def assert_learns_nothing(manager: MessageContextManager) -> None:
    """A usage report of twice our count (a trusted sample: a context of over 500 counted tokens,
    a ratio inside [LOW, HIGH]) teaches no factor: budget decisions stay on the plain anchor."""
    rng = random.Random(4)
    manager.add({"role": "user", "content": text(rng, 900)})
    counted = manager.context_tokens()
    assert counted >= MIN_COUNTED and LOW <= 2.0 <= HIGH
    manager.record_usage(2 * counted)
    manager.add({"role": "assistant", "content": "x" * 400})
    grown = manager.count_message({"role": "assistant", "content": "x" * 400})
    assert manager.stats().calibration == 1.0
    assert manager.used_tokens == 2 * counted + grown  # reported + counted growth, unscaled


def test_usage_of_a_windowed_context_still_counts_the_turns_left_out() -> None:
    """The provider bills what was sent; a sliding window sent only the newest turns, so the
    whole history still costs what the real tokenizer says it does (not the bill)."""
    manager = MessageContextManager(3_000, model="gpt-4o", reserve_tokens=0)
    manager.set_system_prompt("You are terse.")
    rng = random.Random(5)
    history = [{"role": ("user", "assistant")[i % 2], "content": text(rng, 60)} for i in range(80)]
    manager.extend(history)
    sent = manager.get_context()
    assert len(sent) < len(history)  # the window left turns out
    manager.record_usage(billed(sent))
    whole = billed([{"role": "system", "content": "You are terse."}, *history])
    assert manager.used_tokens == whole
    assert manager.stats().used_tokens == whole


def test_a_usage_report_does_not_outlive_the_compaction_that_cut_what_it_measured() -> None:
    manager = MessageContextManager(3_000, model="gpt-4o", reserve_tokens=0)
    rng = random.Random(6)
    history = [{"role": ("user", "assistant")[i % 2], "content": text(rng, 60)} for i in range(40)]
    manager.extend(history)
    manager.record_usage(200)  # a figure for another context (less than what is cut below)
    summary = {"role": "user", "content": "Summary: we talked."}
    manager.apply_compaction(summary, 30)
    assert manager.used_tokens == billed([summary, *history[30:]])


@pytest.mark.parametrize("bad", [math.nan, math.inf, 5.7, True, "lots"])
def test_a_usage_report_with_a_value_no_provider_sends_is_refused(
    tmp_path: Path, bad: object
) -> None:
    """A damaged report (NaN, a float, a bool, text in a token field) was read as 0 and logged
    as a report of 0 tokens; it is refused, and nothing is recorded. A missing field is 0."""
    manager = MessageContextManager.open(tmp_path, session="s", max_tokens=10_000)
    manager.add({"role": "user", "content": "hi"})
    report = {"input_tokens": 500, "output_tokens": 3, "cache_read_input_tokens": bad}
    with pytest.raises(ConfigurationError, match="cache_read_input_tokens"):
        manager.record_usage(report)
    manager.record_usage({"input_tokens": 500, "output_tokens": 3, "cache_read_input_tokens": None})
    manager.store.close()
    log = (tmp_path / "s" / "context.jsonl").read_text()
    usage = [json.loads(line) for line in log.splitlines() if '"_usage"' in line]
    assert [record["token_count"] for record in usage] == [500]
