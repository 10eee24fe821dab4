"""Long texts never crash a tokenizer, stay exact when cut at pre-token boundaries, and the
caches stay bounded by size."""

from __future__ import annotations

import gc
import weakref

import pytest

pytest.importorskip("tiktoken")
pytest.importorskip("faker")

from context_manager.counting.cache import LONG_CHARS
from context_manager.counting.chunked import CHUNK, chunked_len, guarded
from context_manager.counting.tiktoken_counter import TiktokenCounter
from context_manager.counting.tiktoken_loader import load_encoding
from context_manager.errors import TokenizerUnavailableError

from .corpus import corpus


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_long_mixed_texts_count_exactly(encoding: str) -> None:
    texts = corpus(7, repeat=2)
    text = "\n".join(texts[name] for name in sorted(texts)) * 3
    assert len(text) > 8 * CHUNK
    raw = load_encoding(encoding)
    assert TiktokenCounter(encoding=encoding).count_text(text) == len(raw.encode_ordinary(text))


def test_a_megabyte_of_spaces_is_counted_not_a_panic() -> None:
    text = " " * 1_000_000
    raw = load_encoding("o200k_base")
    with pytest.raises(TokenizerUnavailableError, match="PanicException"):
        guarded(lambda t: len(raw.encode_ordinary(t)), text, "tiktoken:o200k_base")
    counted = TiktokenCounter(encoding="o200k_base").count_text(text)
    full, rest = divmod(len(text), CHUNK)
    pieces = full * len(raw.encode_ordinary(" " * CHUNK)) + len(raw.encode_ordinary(" " * rest))
    assert abs(counted - pieces) <= 2 * (full + 1)


@pytest.mark.parametrize("text", ["a" * 300_000, "\n" * 300_000, "ab " * 100_000 + "😀" * 1000])
def test_runs_without_boundaries_stay_within_tolerance(text: str) -> None:
    raw = load_encoding("cl100k_base")
    exact = len(raw.encode_ordinary(text))
    counted = chunked_len(lambda t: len(raw.encode_ordinary(t)), text, "cl100k")
    assert abs(counted - exact) <= 2 * (len(text) // CHUNK + 1)


class _Text(str):
    """A text that can be watched with a weak reference (to see what the cache keeps alive)."""


def test_long_text_cache_is_bounded_by_characters() -> None:
    counter = TiktokenCounter(encoding="o200k_base")
    watched = []
    for i in range(12):
        text = _Text(f"{i:02d} " + "word " * 179_999)  # 12 x 0.9 MB, distinct, each cacheable
        counter.count_text(text)
        watched.append(weakref.ref(text))
        del text
    gc.collect()
    alive = [text for ref in watched if (text := ref()) is not None]
    assert alive, "the newest long text should be cached"
    assert sum(map(len, alive)) <= LONG_CHARS  # older ones were let go, not only skipped
    hits = counter.cache_info().hits
    assert counter.count_text(alive[-1]) > 0 and counter.cache_info().hits == hits + 1
    assert counter.count_text("1 " + "word " * 200_000) > 0
