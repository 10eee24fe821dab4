"""A session keeps each message's count with its counter's fingerprint, so reopening it under the
same counting does not count the history again; any other counter counts it afresh.

Expected counts come from tiktoken itself (OpenAI's cookbook formula: 3 tokens of framing per
message plus the role and the content), never from the manager that wrote them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.counting import CharEstimator, SafeEstimator
from context_manager.counting.tiktoken_counter import TiktokenCounter
from context_manager.counting.tiktoken_loader import load_encoding
from context_manager.messages import Message

from .backends import Backend

TEXTS = ["hello there", "a longer reply about the weather in Paris", "ok", "naïve café 東京"]


def cookbook(role: str, content: str) -> int:
    enc = load_encoding("o200k_base")  # tiktoken's own Encoding, read from the bundled file
    return 3 + len(enc.encode(role)) + len(enc.encode(content))


def conversation() -> list[dict[str, Any]]:
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": text} for i, text in enumerate(TEXTS)]


def test_a_reopened_session_has_the_real_tokenizer_counts_on_every_backend(
    backend: Backend,
) -> None:
    writer = backend.manager(counter="chars")  # written under another counting
    writer.extend(conversation())
    writer.store.close()
    expected = [cookbook(m["role"], m["content"]) for m in conversation()]
    for turn in range(3):  # later opens take the counts of the lines written under tiktoken
        reader = backend.manager(counter=TiktokenCounter(encoding="o200k_base"))
        assert [item.tokens for item in reader.history()] == expected
        reader.add({"role": "user", "content": f"one more, turn {turn}"})
        expected.append(cookbook("user", f"one more, turn {turn}"))
        reader.store.close()


def _rewrite_counts(path: Path, tokens: int) -> None:
    """Set every message line's recorded count to ``tokens`` (a hand edit of the file)."""
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if "count" in record.get("_cm", {}):
            record["_cm"]["count"][0] = tokens
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


def test_the_recorded_count_is_taken_under_the_same_counting_only(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    writer = MessageContextManager.open(path, max_tokens=100_000, counter="chars")
    writer.extend(conversation())
    writer.store.close()
    _rewrite_counts(path, 777)  # a value no counter gives these messages

    same = MessageContextManager.open(path, max_tokens=100_000, counter="chars")
    assert [item.tokens for item in same.history()] == [777] * len(TEXTS)
    same.store.close()
    other = MessageContextManager.open(path, max_tokens=100_000, counter=CharEstimator(3))
    assert [item.tokens for item in other.history()] == [
        -(-len(text) // 3) + 3
        for text in TEXTS  # chars/3 plus 3 per message, by hand
    ]


class MyCounter(CharEstimator):
    """A caller's own rule: every message costs 1 (its counts are never taken from a line)."""

    def count_message(self, message: Message) -> int:
        return 1


def test_a_counter_defined_outside_the_package_always_counts(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    writer = MessageContextManager.open(path, max_tokens=100_000, counter=MyCounter())
    writer.extend(conversation())
    writer.store.close()
    assert MyCounter().fingerprint() is None
    reader = MessageContextManager.open(path, max_tokens=100_000, counter=MyCounter())
    assert [item.tokens for item in reader.history()] == [1] * len(TEXTS)


@pytest.mark.parametrize(
    "value", [None, "12", [12], [-1, "x"], [True, "x"], [12, 3], {"tokens": 12}, [2**60, "x"]]
)
def test_a_malformed_recorded_count_is_ignored_not_refused(tmp_path: Path, value: Any) -> None:
    path = tmp_path / "context.jsonl"
    writer = MessageContextManager.open(path, max_tokens=100_000, counter="chars")
    writer.add({"role": "user", "content": "hello there"})
    writer.store.close()
    record = json.loads(path.read_text())
    fingerprint = record["_cm"]["count"][1]
    if isinstance(value, list) and len(value) == 2 and value[1] == "x":
        value[1] = fingerprint  # a fingerprint that matches, beside a bad number
    record["_cm"]["count"] = value
    path.write_text(json.dumps(record) + "\n")
    reader = MessageContextManager.open(path, max_tokens=100_000, counter="chars", strict=True)
    assert [item.tokens for item in reader.history()] == [-(-len("hello there") // 4) + 3]


def test_fingerprints_differ_exactly_when_the_counting_does() -> None:
    assert CharEstimator().fingerprint() == CharEstimator().fingerprint()
    assert CharEstimator(3).fingerprint() != CharEstimator(4).fingerprint()
    assert SafeEstimator().fingerprint() != SafeEstimator(message_overhead=4).fingerprint()
    o200k, cl100k = TiktokenCounter(encoding="o200k_base"), TiktokenCounter(encoding="cl100k_base")
    assert o200k.fingerprint() != cl100k.fingerprint()
    counter = CharEstimator(4)
    before = counter.fingerprint()
    counter.chars_per_token = 3  # a counter changed after a write does not keep its fingerprint
    assert counter.fingerprint() == CharEstimator(3).fingerprint() != before


@pytest.mark.parametrize("tokens", [-1, True, 2.5, "7", [7], 2**53 + 1])
def test_add_counted_refuses_a_count_that_is_not_a_token_count(tokens: Any) -> None:
    from context_manager.errors import ConfigurationError

    manager = MessageContextManager(1_000, counter="chars")
    manager.add({"role": "user", "content": "kept"})
    with pytest.raises(
        ConfigurationError, match="tokens must be an int from 0 to 9007199254740992"
    ):
        manager.add_counted({"role": "user", "content": "hello"}, tokens)
    assert [item.tokens for item in manager.history()] == [4]  # ceil(4 / 4) + 3, unchanged
    assert manager.add_counted({"role": "user", "content": "hello"}, 9) == 9
