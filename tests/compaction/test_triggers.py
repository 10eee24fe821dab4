"""Triggers: threshold rules (Pi fixtures), the once-per-cycle flush hook, overflow recovery."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from context_manager.compaction import (
    CompactionEvent,
    CompactionTriggers,
    FlushInfo,
    SimpleCompaction,
    add_compaction_listener,
    asend_with_recovery,
    is_context_overflow,
    send_with_recovery,
)
from context_manager.errors import ConfigurationError, ContextOverflowError
from context_manager.manager import MessageContextManager

from .helpers import RecordingSummarizer, coding_session, load_cases
from .test_pi_parity import FakeAPIError

POLICY = SimpleCompaction()


def test_threshold_rule_equals_pi_should_compact() -> None:
    cases = [
        c
        for c in load_cases("pi.shouldCompact")
        if isinstance(c["input"]["settings"].get("reserveTokens"), int)
        and c["input"]["settings"]["reserveTokens"] >= 0
        and isinstance(c["input"]["settings"].get("enabled"), bool)
        and all(isinstance(c["input"][k], int) for k in ("contextTokens", "contextWindow"))
    ]
    assert len(cases) > 1000
    for case in cases:
        s = case["input"]["settings"]
        rule = CompactionTriggers(
            reserve_tokens=s["reserveTokens"], reserve_floor=0, enabled=s["enabled"]
        )
        got = rule.should_compact(case["input"]["contextTokens"], case["input"]["contextWindow"])
        assert got == case["expected"], case["id"]


def test_reserve_floor_ratio_and_strictness() -> None:
    rule = CompactionTriggers()  # reserve 16384 raised to the 20000 floor
    assert rule.effective_reserve == 20_000
    assert not rule.should_compact(80_000, 100_000)
    assert rule.should_compact(80_001, 100_000)
    no_floor = CompactionTriggers(reserve_floor=0)
    assert not no_floor.should_compact(83_616, 100_000)
    assert no_floor.should_compact(83_617, 100_000)
    kimi = CompactionTriggers(reserve_tokens=0, reserve_floor=0, ratio=0.85)
    assert not kimi.should_compact(84_999, 100_000)
    assert kimi.should_compact(85_000, 100_000)
    assert not CompactionTriggers(enabled=False, ratio=0.5).should_compact(99_999, 100_000)
    assert rule.flush_threshold(100_000) == 76_000
    assert rule.should_flush(76_000, 100_000) and not rule.should_flush(75_999, 100_000)
    with pytest.raises(ConfigurationError):
        CompactionTriggers(ratio=1.5)
    with pytest.raises(ConfigurationError):
        CompactionTriggers(reserve_floor=-1)


def test_flush_hook_fires_once_per_compaction_cycle() -> None:
    manager = MessageContextManager(40_000, reserve_tokens=1000)
    flushes: list[FlushInfo] = []
    triggers = CompactionTriggers(
        reserve_tokens=5000, reserve_floor=0, soft_threshold_tokens=5000, on_flush=flushes.append
    )
    turn = iter(range(1000))

    def grow() -> None:
        manager.extend(coding_session(1, start=next(turn), filler=2000))

    # flush at 40000 - 5000 - 5000 = 30000 tokens; compaction above 35000
    while manager.used_tokens < 30_000:
        grow()
        assert triggers.before_request(manager, policy=POLICY) is None
    assert len(flushes) == 1
    assert flushes[0].threshold == 30_000 and flushes[0].cycle == 0
    assert flushes[0].tokens >= 30_000
    assert triggers.before_request(manager, policy=POLICY) is None  # same cycle: no refire
    assert len(flushes) == 1
    while manager.used_tokens <= 35_000:
        grow()
    events: list[CompactionEvent] = []
    add_compaction_listener(manager, events.append)
    entry = triggers.before_request(manager, policy=POLICY)
    assert entry is not None and entry.reason == "threshold"
    assert [e.reason for e in events] == ["threshold", "threshold"]
    assert len(flushes) == 1  # the flush of this cycle already ran
    while manager.used_tokens < 30_000:
        grow()
    triggers.before_request(manager, policy=POLICY)
    assert len(flushes) == 2 and flushes[1].cycle == 1


def test_async_flush_hook() -> None:
    manager = MessageContextManager(10_000, reserve_tokens=100)
    manager.extend(coding_session(10, filler=600))
    seen: list[int] = []

    async def flush(info: FlushInfo) -> None:
        await asyncio.sleep(0)
        seen.append(info.tokens)

    assert 4000 < manager.used_tokens < 10_000
    triggers = CompactionTriggers(
        reserve_tokens=6000, reserve_floor=0, soft_threshold_tokens=1000, on_flush=flush
    )
    entry = asyncio.run(triggers.abefore_request(manager, policy=POLICY))
    assert seen and entry is not None and entry.reason == "threshold"
    with pytest.raises(ConfigurationError, match="abefore_request"):
        CompactionTriggers(
            reserve_floor=0, soft_threshold_tokens=10**6, on_flush=flush
        ).before_request(MessageContextManager(1000))


OVERFLOW = FakeAPIError(
    "Error code: 400 - This model's maximum context length is 8192 tokens",
    status_code=400,
    code="context_length_exceeded",
)


class Provider:
    """Scripted send function: raises / returns the scripted outcomes, records what it got."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.contexts: list[list[Any]] = []

    def __call__(self, context: list[Any]) -> Any:
        self.contexts.append(context)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def _recording(manager: MessageContextManager) -> list[CompactionEvent]:
    events: list[CompactionEvent] = []
    add_compaction_listener(manager, events.append)
    return events


def test_overflow_compacts_once_and_retries_once() -> None:
    manager = MessageContextManager(100_000)
    manager.extend(coding_session(8))
    events = _recording(manager)
    send = Provider(OVERFLOW, {"content": "ok"})
    llm = RecordingSummarizer()
    reply = send_with_recovery(manager, send, summarizer=llm, policy=POLICY)
    assert reply == {"content": "ok"}
    assert len(send.contexts) == 2 and len(llm.requests) == 1
    assert len(send.contexts[1]) < len(send.contexts[0])
    assert send.contexts[1][0] is manager.summary
    assert [(e.type, e.reason, e.will_retry) for e in events] == [
        ("start", "overflow", True),
        ("end", "overflow", True),
    ]
    assert manager.compaction is not None and manager.compaction.reason == "overflow"


def test_second_overflow_surfaces_as_context_overflow_error() -> None:
    manager = MessageContextManager(100_000)
    manager.extend(coding_session(8))
    send = Provider(OVERFLOW, OVERFLOW, {"content": "never reached"})
    with pytest.raises(ContextOverflowError, match="again after compacting") as info:
        send_with_recovery(manager, send, policy=POLICY)
    assert info.value.__cause__ is OVERFLOW
    assert len(send.contexts) == 2
    assert len(send.outcomes) == 1


def test_overflow_reported_in_a_reply_and_other_errors() -> None:
    manager = MessageContextManager(100_000)
    manager.extend(coding_session(8))
    pi_reply = {
        "role": "assistant",
        "content": [],
        "stopReason": "error",
        "errorMessage": "prompt is too long: 213462 tokens > 200000 maximum",
    }
    send = Provider(pi_reply, {"role": "assistant", "content": [], "stopReason": "stop"})
    assert send_with_recovery(manager, send, policy=POLICY)["stopReason"] == "stop"
    other = MessageContextManager(100_000)
    other.extend(coding_session(8))
    boom = FakeAPIError("Rate limit reached: too many tokens per minute", status_code=429)
    with pytest.raises(FakeAPIError):
        send_with_recovery(other, Provider(boom), policy=POLICY)
    assert other.compaction is None
    plain = MessageContextManager(100_000)
    plain.extend(coding_session(8))
    assert send_with_recovery(plain, Provider("prompt is too long"), policy=POLICY) == (
        "prompt is too long"
    )  # a returned string is a reply, never an error
    assert plain.compaction is None


def test_unrecoverable_when_nothing_can_be_compacted() -> None:
    manager = MessageContextManager(100_000)
    manager.extend([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    with pytest.raises(ContextOverflowError, match="compaction could not help"):
        send_with_recovery(manager, Provider(OVERFLOW), policy=POLICY)


def test_async_recovery() -> None:
    manager = MessageContextManager(100_000)
    manager.extend(coding_session(8))
    calls: list[int] = []

    async def send(context: list[Any]) -> str:
        calls.append(len(context))
        if len(calls) == 1:
            raise OVERFLOW
        return "done"

    assert asyncio.run(asend_with_recovery(manager, send, policy=POLICY)) == "done"
    assert calls[1] < calls[0]

    async def always(context: list[Any]) -> str:
        raise OVERFLOW

    again = MessageContextManager(100_000)
    again.extend(coding_session(8))
    with pytest.raises(ContextOverflowError):
        asyncio.run(asend_with_recovery(again, always, policy=POLICY))


class Usage:
    def __init__(self, **fields: int) -> None:
        self.__dict__.update(fields)


class Reply:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def test_sdk_shapes() -> None:
    assert is_context_overflow(
        FakeAPIError("bad request", status_code=400, code="context_length_exceeded")
    )
    assert is_context_overflow(FakeAPIError("Request Entity Too Large", status_code=413))
    assert not is_context_overflow(FakeAPIError("too many tokens", status_code=429))
    anthropic_body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 200001 tokens > 200000 maximum",
        },
    }
    assert is_context_overflow(
        FakeAPIError("Error code: 400", status_code=400, body=anthropic_body)
    )
    assert not is_context_overflow(
        FakeAPIError(
            "Error code: 400 - invalid tool schema",
            status_code=400,
            body={"error": {"message": "invalid tool schema"}},
        )
    )
    assert is_context_overflow({"error": {"code": "context_length_exceeded", "message": "x"}})
    assert not is_context_overflow(ValueError("some other failure"))
    # silent overflow in OpenAI / Anthropic replies, judged by Pi's usage rules
    openai = Reply(
        choices=[Reply(finish_reason="length")],
        usage=Usage(prompt_tokens=7990, completion_tokens=0),
    )
    assert is_context_overflow(openai, 8000)
    assert not is_context_overflow(openai)  # no window: usage cannot be judged
    assert not is_context_overflow(
        Reply(
            choices=[Reply(finish_reason="stop")],
            usage=Usage(prompt_tokens=7990, completion_tokens=5),
        ),
        8000,
    )
    anthropic = {
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 150_000, "cache_read_input_tokens": 60_000, "output_tokens": 12},
    }
    assert is_context_overflow(anthropic, 200_000)
    assert not is_context_overflow(anthropic, 250_000)


def test_before_request_does_not_raise_when_the_newest_exchange_alone_crosses_the_threshold() -> (
    None
):
    """One big tool result crosses the threshold: summarizing cannot help (the history is that
    exchange). The documented loop calls before_request with no try, then sends what fits."""
    manager = MessageContextManager(16_000, counter="chars")
    call = {"id": "c", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
    manager.add({"role": "user", "content": "read the log"})
    manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
    manager.add({"role": "tool", "tool_call_id": "c", "content": "line\n" * 11_000})
    triggers = CompactionTriggers(reserve_tokens=4_000, reserve_floor=0)
    assert triggers.before_request(manager) is None
    context = manager.get_context()  # the newest result is cut to fit, and sent with its call
    assert [m["role"] for m in context] == ["user", "assistant", "tool"]
    assert manager.stats().context_tokens <= manager.budget_tokens
