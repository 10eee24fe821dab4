"""The tiktoken counter's upper bound: never below the real tokenizer's count, on hostile text too.

``trim()`` decides "everything fits" on this bound without tokenizing (tests/budget/
test_oneshot_bound.py); a bound below the real count would send a prompt over budget. Expected
values are the real tiktoken encodings' counts at test time.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("tiktoken")

from context_manager.counting import CharEstimator
from context_manager.counting.chunked import CHUNK
from context_manager.counting.tiktoken_counter import TiktokenCounter, utf8_bound
from context_manager.messages import Message, normalize

COUNTERS = [
    TiktokenCounter("gpt-4o", cache_size=0),
    TiktokenCounter("gpt-4", cache_size=0),
    TiktokenCounter("gpt-4o", chat_format="chatml", cache_size=0),
    TiktokenCounter("gpt-3.5-turbo", chat_format="chatml", cache_size=0),
]

#: Pieces that stress a byte bound: lone and paired surrogates (tiktoken replaces them), astral
#: and combining characters, whitespace and digit runs, special-token text.
PIECES = st.sampled_from(
    [
        "a",
        " ",
        "\n",
        "\t",
        "  ",
        "1",
        "é",
        "e\u0301",
        "中",
        "😀",
        "\ud800",
        "\udfff",
        "\ud83d\ude00",
        "<|endoftext|>",
        "<|im_start|>",
        "\x00",
        "ﷺ",
        "﷽",
    ]
)
HOSTILE = st.one_of(st.text(max_size=80), st.lists(PIECES, max_size=80).map("".join))
EXAMPLES = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def message(draw: st.DrawFn) -> Message:
    shape = draw(st.sampled_from(["text", "named", "calls", "anthropic", "blocks"]))
    role = draw(st.sampled_from(["system", "developer", "user", "assistant"]))
    raw: dict[str, Any]
    if shape == "text":
        raw = {"role": role, "content": draw(HOSTILE)}
    elif shape == "named":
        raw = {"role": role, "content": draw(HOSTILE), "name": draw(HOSTILE) or "n"}
    elif shape == "calls":
        calls = [
            {
                "id": f"c{k}",
                "type": "function",
                "function": {"name": draw(HOSTILE) or "f", "arguments": draw(HOSTILE)},
            }
            for k in range(draw(st.integers(1, 3)))
        ]
        raw = {"role": "assistant", "content": draw(st.none() | HOSTILE), "tool_calls": calls}
    elif shape == "anthropic":
        raw = {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": draw(HOSTILE)},
                {"type": "text", "text": draw(HOSTILE)},
            ],
        }
    else:
        raw = {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": draw(HOSTILE), "signature": "s"},
                {"type": "text", "text": draw(HOSTILE)},
                {"type": "tool_use", "id": "u", "name": "fn", "input": {"q": draw(HOSTILE)}},
            ],
        }
    return normalize(raw)


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: f"{c.encoding_name}-{c.chat_format}")
@EXAMPLES
@given(rec=message())
def test_the_bound_is_never_below_the_count(counter: TiktokenCounter, rec: Message) -> None:
    bound = counter.message_bound()
    assert bound is not None
    assert bound(rec) >= counter.count_message(rec)


@EXAMPLES
@given(text=HOSTILE)
def test_a_text_takes_no_more_tokens_than_its_utf8_bytes(text: str) -> None:
    for counter in COUNTERS[:2]:
        assert utf8_bound(text) >= counter.count_text(text)


def test_long_runs_cut_into_chunks_stay_within_the_bound() -> None:
    counter = COUNTERS[0]
    runs = ("a" * (3 * CHUNK + 7), " " * (2 * CHUNK + 1), "\ud800" * (CHUNK + 3), "😀" * CHUNK)
    for text in runs:
        assert utf8_bound(text) >= counter.count_text(text)


def test_utf8_bound_measures_bytes() -> None:
    assert utf8_bound("") == 0
    assert utf8_bound("hello") == 5
    assert utf8_bound("é中😀") == len("é中😀".encode())
    assert utf8_bound("\ud800") == 3  # tiktoken encodes it as U+FFFD, 3 bytes


class _Recounting(TiktokenCounter):
    """A subclass that charges more per message: the bound no longer covers it."""

    def count_message(self, message: Message) -> int:
        return super().count_message(message) + 100


class _Retokenizing(TiktokenCounter):
    """A subclass that counts texts its own way: the bound no longer covers it."""

    def count_text(self, text: str) -> int:
        return 2 * super().count_text(text)


def test_only_the_arithmetic_the_bound_was_proven_for_offers_it() -> None:
    assert TiktokenCounter("gpt-4o").message_bound() is not None
    assert _Recounting("gpt-4o").message_bound() is None
    assert _Retokenizing("gpt-4o").message_bound() is None
    assert CharEstimator().message_bound() is None
