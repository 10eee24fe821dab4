"""A long session that was never compacted opens from its newest messages: the open reads as
far back as twice the budget, and holds the older ones unread until something needs them.

The oracle is the live manager (what the user had before closing) and a ``strict=True`` open,
which reads and checks every record. What a request, an add, ``token_count`` and ``len()``
need of the older messages (how many, their tokens) is read from the end of their lines; the
history, ``messages``, ``stats()``, a compaction or a request reaching that far read them
first. The laziness itself shows where a damaged old line is reported: when it is first read.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.compaction import SimpleCompaction
from context_manager.errors import InvalidMessageError

from .backends import Backend, user
from .test_open_from_compaction import exchange

SMALL = {"max_tokens": 2_000, "system_prompt": "You are terse."}


def observed(manager: MessageContextManager) -> dict[str, Any]:
    """What a caller reads of a manager: the request first (it must not need the old
    messages), then the history and statistics (which do)."""
    cheap = {
        "context": manager.get_context(),
        "token_count": manager.token_count,
        "used_tokens": manager.used_tokens,
        "length": len(manager),
        "context_tokens": manager.context_tokens(),
    }
    stats = manager.stats()
    history = [(h.index, h.message, h.tokens, h.pinned, h.priority) for h in manager.history()]
    return {
        **cheap,
        "history": history,
        "messages": manager.messages,
        "counts": (stats.counts_by_role, stats.tokens_by_role, stats.calibration),
    }


def build(manager: MessageContextManager, turns: int) -> None:
    for i in range(turns):
        manager.extend(exchange(i))
        manager.record_usage(manager.context_tokens() * (110 + i % 5) // 100)


def reopen(backend: Backend, **options: Any) -> MessageContextManager:
    return backend.manager("s", **{**SMALL, **options})


def test_a_long_session_reopens_holding_and_sending_what_the_live_one_did(
    backend: Backend,
) -> None:
    live = reopen(backend)
    build(live, 60)  # 240 messages, about 5x the budget
    expected = observed(live)
    live.store.close()

    assert observed(reopen(backend)) == expected
    assert observed(reopen(backend, strict=True)) == expected

    # It goes on as the live one would: more turns, a compaction, then a reopen again.
    reopened = reopen(backend)
    reopened.get_context()
    build(reopened, 3)
    reopened.compact(lambda text: "summary", policy=SimpleCompaction(max_preserved_messages=8))
    reopened.add(user("and now?"))
    expected = observed(reopened)
    reopened.store.close()
    assert observed(reopen(backend)) == expected
    assert observed(reopen(backend, strict=True)) == expected


def damage_an_old_line(backend: Backend) -> None:
    """Break the middle of the second user line, keeping how it starts and ends."""
    if backend.name == "jsonl":
        log = Path(backend.target) / "s" / "context.jsonl"
        lines = log.read_bytes().splitlines(keepends=True)
        k = [n for n, line in enumerate(lines) if line.startswith(b'{"role":"user"')][1]
        lines[k] = lines[k].replace(b"why why", b'why" why', 1)  # no longer JSON
        log.write_bytes(b"".join(lines))
    else:
        pytest.skip("the files of a JSONL session are the ones a test can damage in place")


def test_an_old_line_is_read_when_the_history_is_first_needed(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    live = reopen(backend)
    build(live, 40)
    live.store.close()
    damage_an_old_line(backend)

    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = reopen(backend)
        context = reopened.get_context()
        reopened.add(user("one more"))
        assert "corrupt" not in caplog.text  # never read: too old for any request
        history = reopened.history()  # reads the older messages now, and reports the line
    assert "corrupt" in caplog.text
    assert len(history) == 40 * 4  # 160 lines, one unreadable, one added
    assert [h.index for h in history] == list(range(160))
    assert context[-1] == exchange(39)[-1]
    # A compaction written now keeps the indices a reader finds past the unreadable line.
    reopened.apply_compaction(user("summary"), 150)
    expected = observed(reopened)
    reopened.store.close()
    assert observed(reopen(backend)) == expected


@pytest.mark.parametrize(
    "options",
    [{"retention_ratio": 0.5}, {"strategy": "priority"}, {"max_messages": 30}],
)
def test_every_strategy_and_option_sends_what_a_full_read_sends(
    backend: Backend, options: dict[str, Any]
) -> None:
    live = reopen(backend, **options)
    build(live, 40)
    expected = observed(live)
    live.store.close()
    assert observed(reopen(backend, **options)) == expected


def test_a_budget_raised_by_calibration_sends_what_a_full_read_sends(
    backend: Backend,
) -> None:
    """Usage reports a little above half our counts (the lowest ratio calibration takes) let
    a request send almost twice the budget in counted tokens: as far as the open reads."""
    live = reopen(backend)
    for i in range(40):
        live.extend(exchange(i))
        live.record_usage(max(1, live.context_tokens() * 51 // 100))
    expected = observed(live)
    live.store.close()
    assert observed(reopen(backend)) == expected


def claude_message(i: int, content: list[dict[str, Any]]) -> Any:
    """An assistant turn as the Anthropic SDK returns it."""
    anthropic = pytest.importorskip("anthropic")
    return anthropic.types.Message(
        id=f"msg_{i}",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=content,
        stop_reason="tool_use" if content[-1]["type"] == "tool_use" else "end_turn",
        usage={"input_tokens": 1, "output_tokens": 1},
    )


def test_an_interrupted_call_and_objects_of_an_sdk_reopen_as_they_were(backend: Backend) -> None:
    live = reopen(backend, provider="anthropic")
    for i in range(40):
        live.add(user(f"question {i}: " + "why " * 40))
        call = {"type": "tool_use", "id": f"tu_{i}", "name": "look", "input": {}}
        live.add(claude_message(i, [{"type": "text", "text": "looking"}, call]))
        if i % 3:  # answered; otherwise the next user turn interrupts the call
            live.add(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"tu_{i}", "content": "x " * 50}
                    ],
                }
            )
    expected = observed(live)
    live.store.close()
    assert observed(reopen(backend, provider="anthropic")) == expected
    assert observed(reopen(backend, provider="anthropic", strict=True)) == expected


def test_an_async_open_reads_the_newest_too(backend: Backend) -> None:
    live = reopen(backend)
    build(live, 40)
    expected = observed(live)
    live.store.close()

    assert backend.opened_in_tasks(observed, 3, **SMALL) == [expected] * 3


def test_revert_and_clear_after_a_partial_open(backend: Backend) -> None:
    live = reopen(backend)
    build(live, 20)
    checkpoint = live.checkpoint()
    build(live, 20)
    live.store.close()

    reopened = reopen(backend)
    reopened.get_context()
    reopened.revert_to(checkpoint)
    assert [h.index for h in reopened.history()] == list(range(80))
    reopened.clear()
    assert len(reopened) == 1 and reopened.history() == []  # the system prompt stays
    reopened.store.close()


def test_responses_items_reopen_as_they_were(backend: Backend) -> None:
    """Items of the Responses API (what the Agents SDK stores): calls and their outputs are
    items of their own, with the type first."""
    live = reopen(backend)
    for i in range(40):
        live.add(user(f"question {i}: " + "why " * 40))
        live.add({"type": "function_call", "call_id": f"fc_{i}", "name": "look", "arguments": "{}"})
        live.add({"type": "function_call_output", "call_id": f"fc_{i}", "output": "x " * 50})
        live.add(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"answer {i}"}],
            }
        )
    expected = observed(live)
    live.store.close()
    assert observed(reopen(backend)) == expected
    assert observed(reopen(backend, strict=True)) == expected


def test_a_result_for_an_old_call_is_refused_as_a_full_read_refuses_it(backend: Backend) -> None:
    live = reopen(backend)
    build(live, 40)
    live.store.close()
    errors = []
    for options in ({}, {"strict": True}):
        reopened = reopen(backend, **options)
        with pytest.raises(InvalidMessageError) as refused:
            reopened.add({"role": "tool", "tool_call_id": "call_0", "content": "late"})
        errors.append(str(refused.value))
        reopened.store.close()
    assert "duplicate result" in errors[1]
    assert errors[0] == errors[1]


def alter_an_old_line(backend: Backend, old: bytes, new: bytes) -> None:
    """Change the first line holding ``old``."""
    log = Path(backend.target) / "s" / "context.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    k = next(n for n, line in enumerate(lines) if old in line)
    lines[k] = lines[k].replace(old, new, 1)
    log.write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    ("options", "old", "new"),
    [
        # damaged under a CRC: the bytes say so without parsing the line
        ({"integrity": True}, b"why why", b"why who"),
        # an object whose type cannot be read back here (an SDK not installed, say)
        ({"provider": "anthropic"}, b'"type":"anthropic.Message"', b'"type":"anthropic.Nope"'),
    ],
)
def test_an_old_line_a_full_read_would_skip_makes_the_open_read_every_line(
    backend: Backend,
    caplog: pytest.LogCaptureFixture,
    options: dict[str, Any],
    old: bytes,
    new: bytes,
) -> None:
    if backend.name != "jsonl":
        pytest.skip("the files of a JSONL session are the ones a test can damage in place")
    live = reopen(backend, **options)
    for i in range(40):
        live.add(user(f"question {i}: " + "why " * 40))
        live.add(claude_message(i, [{"type": "text", "text": f"answer {i} " + "so " * 30}]))
    live.store.close()
    alter_an_old_line(backend, old, new)

    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = reopen(backend, **options)
        assert "line" in caplog.text  # reported at the open, as a full read reports it
        assert len(reopened) == 1 + 79  # the system prompt, every message but the skipped one
        reopened.store.close()


def test_a_system_message_after_a_damaged_first_line_reopens_as_a_full_read_has_it(
    backend: Backend,
) -> None:
    """A full read skips the damaged first line, so the system message after it leads the
    history and becomes the system prompt: a lazy open must find the same."""
    if backend.name != "jsonl":
        pytest.skip("the files of a JSONL session are the ones a test can damage in place")
    live = backend.manager("s", max_tokens=2_000)
    live.add(user("hello " * 10))
    live.add({"role": "system", "content": "answer in French"})
    build(live, 40)
    live.store.close()
    alter_an_old_line(backend, b"hello hello", b'hello" hello')

    def held(manager: MessageContextManager) -> Any:  # what the budget does not change
        history = [(h.index, h.message, h.tokens) for h in manager.history()]
        return manager.system_prompt, manager.token_count, len(manager), history

    lazy = backend.manager("s", max_tokens=2_000)  # reads the newest 4,000 tokens
    full = backend.manager("s", max_tokens=1_000_000)  # reads every line
    assert held(lazy) == held(full)
    assert lazy.system_prompt == "answer in French"
