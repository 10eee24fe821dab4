"""Pruning never makes a result longer: a result its placeholder (or stub, or trim) would not
shorten is sent as it is, is not counted as pruned, and frees no negative tokens.

The oracle is the same conversation in a manager without pruning: what it sends for the short
results is what the pruned manager must send for them.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import MessageContextManager, ToolResultPruning
from context_manager.offload import MemoryOffload, stub_handle


def session(pruning: ToolResultPruning | None, results: list[str]) -> MessageContextManager:
    manager = MessageContextManager(
        1000,
        counter="chars",
        reserve_tokens=0,
        provider="openai",
        **({"pruning": pruning} if pruning is not None else {}),
    )
    for i, text in enumerate(results):
        manager.add({"role": "user", "content": f"step {i}"})
        call = {"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
        manager.add({"role": "tool", "tool_call_id": f"c{i}", "content": text})
        manager.get_context()
    return manager


def tool_texts(context: list[Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in context if m.get("role") == "tool"}


def test_results_shorter_than_the_placeholder_are_never_cleared() -> None:
    results = ["ok"] * 100
    plain = session(None, results).get_context()
    manager = session(ToolResultPruning.anthropic(trigger_tokens=300, keep_last=1), results)
    context = manager.get_context()
    assert context == plain  # as many turns fit as without pruning, each result as it was
    report = manager.stats().pruning
    assert report is not None
    assert (report.results_cleared, report.tokens_freed) == (0, 0)


def test_long_results_are_still_cleared_beside_short_ones() -> None:
    pruning = ToolResultPruning.anthropic(trigger_tokens=300, keep_last=1)
    results = ["ok" if i % 2 else "listing " * 40 for i in range(40)]
    manager = session(pruning, results)
    texts = tool_texts(manager.get_context())
    assert pruning.placeholder in texts.values()
    for call_id, text in texts.items():
        original = results[int(call_id[1:])]
        assert len(text) <= len(original), call_id
        if original == "ok":
            assert text == "ok"
    report = manager.stats().pruning
    assert report is not None and report.results_cleared > 0 and report.tokens_freed > 0


def test_with_an_offload_area_the_stub_must_be_shorter_too() -> None:
    """Longer than the placeholder, shorter than the placeholder and the note naming the handle:
    the stub would be longer, so the result stays and nothing is stored for it."""
    area = MemoryOffload("s")
    pruning = ToolResultPruning.anthropic(trigger_tokens=300, keep_last=1, offload=area)
    medium = "x" * (len(pruning.placeholder) + 20)
    manager = session(pruning, [medium] * 60)
    assert set(tool_texts(manager.get_context()).values()) == {medium}
    assert len(area) == 0
    report = manager.stats().pruning
    assert report is not None and report.tokens_freed == 0


def test_a_trim_that_would_not_be_shorter_is_not_made() -> None:
    """``max_chars`` at ``head_chars + tail_chars``: a result a few chars over it would come
    back with the cut marker added, longer than it was."""
    pruning = ToolResultPruning.openclaw(
        max_chars=200, head_chars=100, tail_chars=100, soft_ratio=0.0, hard_clear=False
    )
    slightly_over = "y" * 205
    results = [slightly_over] * 30
    plain = session(None, results).get_context()
    manager = session(pruning, results)
    assert manager.get_context() == plain
    report = manager.stats().pruning
    assert report is not None and (report.results_trimmed, report.tokens_freed) == (0, 0)


def one_result(pruning: ToolResultPruning | None, text: str, counter: str) -> MessageContextManager:
    manager = MessageContextManager(
        100_000,
        counter=counter,
        reserve_tokens=0,
        **({"pruning": pruning} if pruning is not None else {}),
    )
    manager.add({"role": "user", "content": "go"})
    for i in range(5):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
        manager.add({"role": "tool", "tool_call_id": f"c{i}", "content": text})
    manager.add({"role": "user", "content": "next"})
    return manager


def trim_to_stub(area: MemoryOffload) -> ToolResultPruning:
    """Trim every result over 100 chars to 40 + 40, as an offload stub in ``area``."""
    return ToolResultPruning(
        max_chars=100,
        head_chars=40,
        tail_chars=40,
        soft_ratio=None,
        hard_clear=False,
        keep_last=0,
        offload=area,
    )


@pytest.mark.parametrize("size", [101, 192, 300])
def test_a_trim_whose_offload_stub_would_be_longer_is_not_made(size: int) -> None:
    """The stub a trim is sent as with an offload area (the note naming the handle, head and
    tail) is much longer than a plain trim: a result it would not shorten stays whole and
    nothing is stored for it."""
    area = MemoryOffload("s")
    pruning = trim_to_stub(area)
    text = "x" * size
    manager = one_result(pruning, text, "chars")
    plain = one_result(None, text, "chars")
    assert manager.get_context() == plain.get_context()
    assert manager.context_tokens() == plain.context_tokens()
    assert len(area) == 0
    report = manager.stats().pruning
    assert report is not None and (report.results_trimmed, report.tokens_freed) == (0, 0)


def test_a_long_result_is_still_offloaded_to_a_shorter_stub() -> None:
    area = MemoryOffload("s")
    pruning = trim_to_stub(area)
    text = "word " * 400
    manager = one_result(pruning, text, "chars")
    texts = tool_texts(manager.get_context())
    assert all(len(sent) < len(text) and stub_handle(sent) for sent in texts.values())
    report = manager.stats().pruning
    assert report is not None and report.results_trimmed == 5
    assert manager.context_tokens() < one_result(None, text, "chars").context_tokens()


def test_a_placeholder_costing_more_tokens_than_its_result_is_not_sent() -> None:
    """64 '=' are 64 chars but a handful of o200k tokens, fewer than the 33-char placeholder:
    clearing them would grow the context. Measured in tokens, they stay as they are."""
    pytest.importorskip("tiktoken")
    pruning = ToolResultPruning(
        max_chars=None,
        soft_ratio=None,
        hard_ratio=0.0001,
        min_prunable_chars=0,
        keep_last=0,
        clear_until="all",
    )
    counter = "tiktoken:o200k_base"
    cheap = "=" * 64
    manager = one_result(pruning, cheap, counter)
    plain = one_result(None, cheap, counter)
    assert manager.get_context() == plain.get_context()
    assert manager.context_tokens() == plain.context_tokens()
    report = manager.stats().pruning
    assert report is not None and (report.results_cleared, report.tokens_freed) == (0, 0)
    # a result its placeholder is cheaper than is still cleared, and frees tokens
    costly = "listing files " * 10
    manager = one_result(pruning, costly, counter)
    assert set(tool_texts(manager.get_context()).values()) == {pruning.placeholder}
    saved = one_result(None, costly, counter).context_tokens() - manager.context_tokens()
    report = manager.stats().pruning
    assert report is not None and report.tokens_freed == saved > 0


def test_an_offloaded_result_is_stored_only_when_its_stub_is_sent() -> None:
    """The stub is sized with the handle the put will give (derived from the text), so a clear
    that would not be cheaper stores nothing: no entry the request does not name. Sizes around
    the break-even point under o200k, where a handle's digits decide."""
    from context_manager import ToolResultPruning, trim
    from context_manager.offload import MemoryOffload

    for n in range(150, 400, 7):
        area = MemoryOffload()
        messages: list[dict[str, object]] = [{"role": "user", "content": "go"}]
        for i in range(3):
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "read", "arguments": "{}"},
            }
            content = ("word " * 400)[:n] if i == 0 else "x"
            messages += [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": content},
            ]
        pruning = ToolResultPruning.anthropic(trigger_tokens=1, keep_last=1, offload=area)
        sent = repr(trim(messages, 100_000, pruning=pruning, counter="tiktoken:o200k_base"))
        stored = {entry.token for entry in area.entries()}
        assert all(token in sent for token in stored), n
