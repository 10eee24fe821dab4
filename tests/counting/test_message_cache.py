"""``MessageCountCache``: a cache the caller owns, bounded in bytes, one per purpose.

Exercised through ``trim(..., cache=...)`` and the cache's public figures only. Whatever the
cache holds, the answer is the uncached one.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from context_manager import MessageContextManager, trim
from context_manager.counting import CharEstimator, MessageCountCache, SafeEstimator
from context_manager.errors import ConfigurationError


def _history(n: int, size: int = 1_000, tag: str = "") -> list[Any]:
    return [
        {"role": "user" if i % 2 else "assistant", "content": f"{tag}{i} " + "x" * size}
        for i in range(n)
    ]


def test_the_bound_holds_and_the_oldest_entries_go_first() -> None:
    cache = MessageCountCache(max_bytes=60_000)
    counter = SafeEstimator()  # no fast lane: every message goes through the cache
    history = _history(200)
    assert trim(history, 10**9, counter=counter, cache=cache) == history
    assert 0 < cache.bytes <= 60_000 and 0 < len(cache) < 200
    # The newest messages were read first, so the oldest entries are the newest messages:
    # reading the history again misses them and hits what was read last.
    misses = cache.misses
    assert trim(copy.deepcopy(history), 10**9, counter=counter, cache=cache) == history
    assert cache.misses > misses and cache.hits > 0
    assert cache.bytes <= 60_000


def test_a_message_larger_than_the_cache_is_never_stored() -> None:
    cache = MessageCountCache(max_bytes=10_000)
    history = _history(3, size=20_000)
    trim(history, 10**9, counter=SafeEstimator(), cache=cache)
    assert len(cache) == 0 and cache.bytes == 0


def test_counters_keep_their_counts_apart() -> None:
    """One cache, several counters: estimators by settings (``get_counter`` builds new ones),
    other counters by instance; each answers as it would without the cache."""
    cache = MessageCountCache()
    history = _history(50, size=400)
    counters = [CharEstimator(), CharEstimator(), CharEstimator(2.0), SafeEstimator()]
    for budget in (2_000, 5_000):
        for counter in counters:
            for _ in range(2):
                got = trim(history, budget, counter=counter, cache=cache)
                assert got == trim(history, budget, counter=counter)


def test_many_counter_instances_do_not_grow_it_without_bound() -> None:
    cache = MessageCountCache()
    history = _history(5, size=100)
    for _ in range(100):  # a new counter instance a call
        trim(history, 10**9, counter=SafeEstimator(), cache=cache)
    assert len(cache) <= 16 * 5
    assert cache.bytes <= 16 * 5 * 1_000  # 16 counters of 5 short messages each


def test_clear_forgets_everything() -> None:
    cache = MessageCountCache()
    trim(_history(10), 10**9, counter=SafeEstimator(), cache=cache)
    assert len(cache) and cache.bytes
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "64MB", None])
def test_max_bytes_must_be_a_non_negative_int(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_bytes"):
        MessageCountCache(max_bytes=bad)


def test_threads_of_a_worker_may_share_one() -> None:
    cache = MessageCountCache(max_bytes=200_000)
    counter = SafeEstimator()
    histories = [_history(60, size=300, tag=f"t{t}-") for t in range(4)]
    expected = [trim(h, 3_000, counter=counter) for h in histories]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(20):
                assert (
                    trim(copy.deepcopy(histories[k]), 3_000, counter=counter, cache=cache)
                    == (expected[k])
                )
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert 0 < cache.bytes <= 200_000


def _document(pages: int) -> Any:
    """A Gemini turn with a PDF of ``pages`` pages, as google-genai builds it."""
    types = pytest.importorskip("google.genai.types")
    pdf = b"%PDF-1.4\n" + b"1 0 obj << /Type /Page >> endobj\n" * pages + b"%%EOF"
    return types.Content(
        role="user",
        parts=[
            types.Part(text="summarize"),
            types.Part(inline_data=types.Blob(mime_type="application/pdf", data=pdf)),
        ],
    )


def test_messages_that_differ_only_in_their_documents_are_counted_apart() -> None:
    """The same text with a 1-page and a 200-page PDF: the cache learned the short one first,
    and the long one must still be counted as long (its pages are what the estimate bills)."""
    types = pytest.importorskip("google.genai.types")
    last = types.Content(role="user", parts=[types.Part(text="and now?")])
    count = MessageContextManager(10**7).count_message  # the default counter, as trim's
    short, long = count(_document(1)), count(_document(200))
    assert long > 2 * short  # pages are billed, not bytes: the fixture means something
    budget = (short + long) // 2 + 100
    cache = MessageCountCache()
    assert len(trim([_document(1), last], budget, cache=cache)) == 2  # fits: learned
    uncached = trim([_document(200), last], budget)
    assert len(uncached) == 1  # the long document does not fit
    assert trim([_document(200), last], budget, cache=cache) == uncached


def test_the_bytes_of_tool_call_arguments_count_toward_the_bound() -> None:
    """An SDK object's record is the key: its tool call's 200 kB of arguments are held by the
    cache and counted in ``bytes``."""
    types = pytest.importorskip("google.genai.types")
    call = types.Content(
        role="model",
        parts=[types.Part(function_call=types.FunctionCall(name="w", args={"x": "y" * 200_000}))],
    )
    cache = MessageCountCache()
    trim([types.Content(role="user", parts=[types.Part(text="go")]), call], 10**7, cache=cache)
    assert cache.bytes > 200_000


def test_a_record_holding_lists_is_counted_without_being_cached() -> None:
    """A caller's own ``Message`` built with lists where the record keeps tuples cannot be a
    key: it is counted as without a cache, never an untyped ``TypeError``."""
    from context_manager.messages import Message
    from context_manager.messages.record import Image, ToolCall

    odd = Message(
        "assistant",
        "look",
        images=[Image()],  # type: ignore[arg-type]
        tool_calls=[ToolCall("c1", "f", "{}")],  # type: ignore[arg-type]
    )
    history = [
        {"role": "user", "content": "hi"},
        odd,
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    cache = MessageCountCache()
    assert trim(history, 10**6, cache=cache) == trim(history, 10**6)
