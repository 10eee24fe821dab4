"""A ContextOverflowError says what the request needs at the least, so a caller can size a retry.

The newest tool exchange is cut head+tail to fit (``truncate_newest``, the default), so what
the protected parts need at the least is that exchange with its results cut to nothing. The
error used to count the result uncut: a 90 KB result read "need 46,435 tokens" when about 480
were short, and a caller sizing a retry (or picking a model) from ``exc.required`` was misled.
Checked the way a caller uses the figure: a window of ``required`` tokens fits, one less does not.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import ContextOverflowError, MessageContextManager

ROWS = "".join(f"line {i}: value={i * 7 % 1000} status=ok\n" for i in range(3000))  # ~90 KB


def _openai(result: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        {"role": "user", "content": "word " * 400},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]


def _anthropic(result: str) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}
    answer = {"type": "tool_result", "tool_use_id": "toolu_1", "content": result}
    return [
        {"role": "user", "content": "word " * 400},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [answer]},
    ]


def _required(history: list[dict[str, Any]], provider: str, **options: Any) -> int:
    manager = MessageContextManager(400, reserve_tokens=0, provider=provider, **options)
    manager.extend(history)
    with pytest.raises(ContextOverflowError) as caught:
        manager.get_context()
    return caught.value.required


def _fits(history: list[dict[str, Any]], provider: str, window: int) -> bool:
    manager = MessageContextManager(window, reserve_tokens=0, provider=provider)
    manager.extend(history)
    try:
        context = manager.get_context()
    except ContextOverflowError:
        return False
    assert context[0] == history[0]  # the user turn, then the exchange, its result cut
    assert len(context) == len(history)
    return True


@pytest.mark.parametrize(("provider", "build"), [("openai", _openai), ("anthropic", _anthropic)])
def test_the_newest_result_counts_cut_to_nothing(provider: str, build: Any) -> None:
    small = _required(build("ok"), provider)
    big = _required(build(ROWS), provider)
    assert small < big < small + 60  # a cut marker more than "ok", not 90 KB more
    assert _fits(build(ROWS), provider, big)
    assert not _fits(build(ROWS), provider, big - 1)


@pytest.mark.parametrize(("provider", "build"), [("openai", _openai), ("anthropic", _anthropic)])
def test_without_truncation_the_result_counts_whole(provider: str, build: Any) -> None:
    whole = _required(build(ROWS), provider, truncate_newest=False)
    assert whole > 10 * _required(build("ok"), provider, truncate_newest=False)
