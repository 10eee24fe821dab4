"""The commonest chat dicts are read as the general reader reads them and counted by the rule.

``normalize`` reads plain, tool-result and tool-call dicts before its general reader
(``messages/chat_dicts.py``), and ``trim()`` counts them without a cache lookup. Inputs are drawn
around those three shapes with every way to leave them: extra or missing keys, wrong types,
aliases, empty ids, astral and lone-surrogate text, dict subclasses. Whenever the shortcut
answers, the answer must be the general reader's; when the general reader raises, the shortcut
must decline and ``normalize`` must raise; and a counter that is not the plain estimator keeps
its own rule.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_manager import trim
from context_manager.counting import CharEstimator, TokenCounter
from context_manager.counting.fastlane import lane_for
from context_manager.counting.tiktoken_counter import TiktokenCounter
from context_manager.errors import InvalidMessageError
from context_manager.messages import Message, normalize
from context_manager.messages.chat_dicts import read_common

from ..naive import naive_read

CHARS = ["a", " ", "é", "中", "😀", "\ud800", "\n", "{"]
TEXT = st.text(alphabet=st.sampled_from(CHARS), max_size=12)
ROLE = st.sampled_from(["user", "assistant", "system", "developer", "tool", "human", "ai", "x"])
ODD = st.one_of(st.none(), st.integers(), st.lists(st.integers(), max_size=1), TEXT)


@st.composite
def calls(draw: st.DrawFn) -> Any:
    def one() -> Any:
        fn: Any = {"name": draw(st.one_of(TEXT, ODD))}
        if draw(st.booleans()):
            fn["arguments"] = draw(st.one_of(TEXT, ODD, st.just({"a": 1})))
        call: Any = {"id": draw(st.one_of(TEXT, ODD)), "type": "function", "function": fn}
        if draw(st.booleans()):
            call = draw(st.sampled_from([call, fn, [call], None]))
        return call

    return [one() for _ in range(draw(st.integers(0, 3)))]


@st.composite
def chat_dicts(draw: st.DrawFn) -> Any:
    message: dict[str, Any] = {"role": draw(ROLE)}
    shape = draw(st.sampled_from(["plain", "tool", "calls"]))
    if shape != "calls" or draw(st.booleans()):
        message["content"] = draw(st.one_of(TEXT, TEXT, ODD))
    if shape == "tool":
        message["tool_call_id"] = draw(st.one_of(TEXT, ODD))
    if shape == "calls":
        message["tool_calls"] = draw(st.one_of(calls(), ODD))
    if draw(st.integers(0, 5)) == 0:
        message[draw(st.sampled_from(["name", "type", "extra", "reasoning"]))] = draw(TEXT)
    if draw(st.integers(0, 9)) == 0:
        return OrderedDict(message)
    return message


COUNTERS: list[TokenCounter] = [
    CharEstimator(),
    CharEstimator(3.5, message_overhead=0, prompt_overhead=0),
    CharEstimator(1.0, message_overhead=7),
]


def _general(message: Any) -> Message | None:
    """The general reader's record: a read-only view of the same dict is a mapping, not a
    ``dict``, so ``normalize`` reads it without the shortcut."""
    try:
        return normalize(MappingProxyType(message))
    except InvalidMessageError:
        return None


@given(chat_dicts())
def test_common_chat_dicts_are_read_as_the_general_reader_reads_them(message: Any) -> None:
    fast = read_common(message)
    general = _general(message)
    if fast is not None:
        assert fast == general
    if general is None:  # what the general reader refuses, normalize refuses
        with pytest.raises(InvalidMessageError):
            normalize(message)
    else:
        assert normalize(message) == general


def _oracle(message: dict[str, Any], counter: CharEstimator) -> int:
    """The estimator's rule for the three shapes, from the dict itself (no library code):
    ``ceil(chars / chars_per_token)`` (``message_overhead`` is added by the caller), chars in
    UTF-16 units of the content and of each call's name and arguments, as the naive oracle
    (``tests/naive.py``) reads them."""
    chars = naive_read(message).chars
    return (
        -(-chars // int(counter.chars_per_token))
        if counter.chars_per_token == int(counter.chars_per_token)
        else math.ceil(chars / counter.chars_per_token)
    )


@given(chat_dicts())
def test_the_estimator_counts_common_chat_dicts_as_its_rule_says(message: Any) -> None:
    rec = _general(message)
    for counter in COUNTERS:
        assert isinstance(counter, CharEstimator)
        lane = lane_for(counter)
        assert lane is not None
        got = lane(message)
        if got is not None:
            assert rec is not None
            assert got == (rec, _oracle(message, counter) + counter.message_overhead)
            assert counter.message_costs([rec, rec]) == [got[1], got[1]]


@given(st.lists(chat_dicts(), max_size=8))
def test_a_block_costs_what_each_message_costs(messages: list[Any]) -> None:
    """``message_costs`` (how ``trim`` counts a block) is ``count_message`` of each, also for a
    subclass that changes ``count_message``."""

    class Doubled(CharEstimator):
        def count_message(self, message: Message) -> int:
            return 2 * super().count_message(message)

    records = [r for r in map(_general, messages) if r is not None]
    for counter in [*COUNTERS, Doubled()]:
        assert counter.message_costs(records) == [counter.count_message(r) for r in records]


@pytest.fixture(scope="module")
def tiktoken_counter() -> TiktokenCounter:
    return TiktokenCounter(encoding="o200k_base")


def test_tiktoken_counts_common_chat_dicts_as_their_normalized_records(
    tiktoken_counter: TiktokenCounter,
) -> None:
    """A real tokenizer keeps no lane (it uses the content cache); the shortcut's records count as
    the general reader's."""
    assert lane_for(tiktoken_counter) is None

    @given(chat_dicts())
    def check(message: Any) -> None:
        fast = read_common(message)
        if fast is not None:
            rec = _general(message)
            assert rec is not None
            assert tiktoken_counter.count_message(fast) == tiktoken_counter.count_message(rec)

    check()


def test_a_subclassed_estimator_keeps_its_own_rule() -> None:
    class Custom(CharEstimator):
        pass

    class Doubled(CharEstimator):
        def count_message(self, message: Message) -> int:
            return 2 * super().count_message(message)

    assert lane_for(Custom()) is None
    history = [{"role": "user", "content": "x" * 40}, {"role": "assistant", "content": "y" * 40}]
    history.append({"role": "user", "content": "z" * 40})
    plain = CharEstimator()
    budget = sum(plain.count_message(normalize(m)) for m in history) + plain.prompt_overhead
    assert trim(history, budget, counter=plain) == history
    assert trim(history, budget, counter=Doubled()) == history[-1:]  # 2 x 13 each, + 3
    lane = lane_for(CharEstimator())
    assert lane is not None
    assert lane({"role": "user", "content": "😀" * 3}) == (Message("user", "😀" * 3), 2 + 3)
    assert lane({"role": "human", "content": "x"}) is None
    assert lane(("user", "x")) is None
