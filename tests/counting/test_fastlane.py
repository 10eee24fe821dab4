"""The fast lane reads and counts exactly as ``normalize`` + ``count_message`` do, or declines.

Inputs are drawn around the three lane shapes (plain, tool result, assistant tool calls) with
every way to leave them: extra or missing keys, wrong types, aliases, empty ids, astral and
lone-surrogate text, dict subclasses. Whenever the lane answers, the answer must be the general
path's; when the general path raises, the lane must decline.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_manager.counting import CharEstimator, TokenCounter
from context_manager.counting.fastlane import lane_for, read_fast
from context_manager.counting.tiktoken_counter import TiktokenCounter
from context_manager.errors import InvalidMessageError
from context_manager.messages import Message, normalize
from context_manager.messages.record import ToolCall
from context_manager.messages.replay import replay_chat

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
    try:
        return normalize(message)
    except InvalidMessageError:
        return None


@given(chat_dicts())
def test_read_fast_is_normalize_or_declines(message: Any) -> None:
    fast = read_fast(message)
    if fast is not None:
        assert fast == _general(message)


@given(chat_dicts())
def test_estimator_lane_counts_as_count_message(message: Any) -> None:
    rec = _general(message)
    for counter in COUNTERS:
        lane = lane_for(counter)
        assert lane is not None
        got = lane(message)
        if got is not None:
            assert rec is not None
            assert got == (rec, counter.count_message(rec))


@pytest.fixture(scope="module")
def tiktoken_counter() -> TiktokenCounter:
    return TiktokenCounter(encoding="o200k_base")


def test_tiktoken_counts_the_fast_record_as_normalized(tiktoken_counter: TiktokenCounter) -> None:
    """A real tokenizer keeps no lane (it uses the content cache) but reads with ``read_fast``."""
    assert lane_for(tiktoken_counter) is None

    @given(chat_dicts())
    def check(message: Any) -> None:
        fast = read_fast(message)
        if fast is not None:
            rec = normalize(message)
            assert tiktoken_counter.count_message(fast) == tiktoken_counter.count_message(rec)

    check()


def test_lane_only_for_the_exact_estimator() -> None:
    class Custom(CharEstimator):
        pass

    assert lane_for(Custom()) is None
    lane = lane_for(CharEstimator())
    assert lane is not None
    assert lane({"role": "user", "content": "😀" * 3}) == (Message("user", "😀" * 3), 2 + 3)
    assert lane({"role": "human", "content": "x"}) is None
    assert lane(("user", "x")) is None


# --- the chat replay agrees with ToolProtocol -------------------------------------------------

IDS = st.sampled_from(["a", "b", "c", "~f"])


@st.composite
def records(draw: st.DrawFn) -> list[Message]:
    out = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "result", "odd"]))
        if kind in ("user", "assistant"):
            out.append(Message(kind, draw(TEXT)))
        elif kind == "calls":
            ids = draw(st.lists(IDS, min_size=1, max_size=3))
            calls = tuple(ToolCall(i, "f", "") for i in ids)
            out.append(Message("assistant", "", tool_calls=calls))
        elif kind == "result":
            out.append(Message("tool", "r", tool_call_id=draw(IDS)))
        else:
            out.append(Message("assistant", "", tool_calls=(ToolCall("a", "f", ""),), item=True))
    return out


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[Message], list[int]]:
    """Mostly valid exchanges (with their group starts), sometimes a result missing or reused."""
    out: list[Message] = []
    starts: list[int] = []
    fresh = iter(range(1000))
    for _ in range(draw(st.integers(1, 5))):
        starts.append(len(out))
        if draw(st.booleans()):
            out.append(Message(draw(st.sampled_from(["user", "assistant"])), draw(TEXT)))
            continue
        ids = [f"c{next(fresh)}" for _ in range(draw(st.integers(1, 3)))]
        if draw(st.integers(0, 6)) == 0:
            ids.append(draw(st.sampled_from(["c0", "~f"])))
        out.append(Message("assistant", "", tool_calls=tuple(ToolCall(i, "f", "") for i in ids)))
        answered = draw(st.permutations(ids))
        if draw(st.integers(0, 6)) == 0:
            answered = answered[: draw(st.integers(0, len(answered)))]
        out.extend(Message("tool", "r", tool_call_id=i) for i in answered)
    return out, starts


@given(st.one_of(records().map(lambda r: (r, [])), conversations()), st.data())
def test_replay_chat_agrees_with_tool_protocol(
    case: tuple[list[Message], list[int]], data: st.DataObject
) -> None:
    """When the quick replay answers, ``BackwardScan.check`` without it gives the same answer."""
    import context_manager.budget.backscan as backscan

    recs, starts = case
    cuts: list[int] = [s for s in starts if s > 0]
    if len(recs) > 1 and (not starts or data.draw(st.booleans())):
        cuts = sorted(set(data.draw(st.lists(st.integers(1, len(recs) - 1), max_size=4))))
    bounds = [0, *cuts, len(recs)]
    spans = list(itertools.pairwise(bounds))
    if data.draw(st.booleans()) and len(spans) > 1:
        spans.pop(data.draw(st.integers(0, len(spans) - 1)))  # a gap: the replay starts afresh
    by_index = dict(enumerate(recs))
    quick = replay_chat(by_index, spans)
    if quick is None:
        return
    scan = backscan.BackwardScan(list(recs), CharEstimator(), None)
    scan.recs.update(by_index)
    real = backscan.replay_chat
    backscan.replay_chat = lambda recs, spans: None  # the general replay alone
    try:
        assert scan.check(spans) is quick
    finally:
        backscan.replay_chat = real
