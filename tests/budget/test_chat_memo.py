"""Repeated ``trim()`` calls on a growing history (``budget.chat_memo``) answer as fresh ones.

A stateless backend's requests, generated: a history grows by new turns and tool groups, is
retried with another last message, edited (a new dict, or the caller's dict changed in place),
reloaded from JSON, trimmed under several budgets; now and then a hostile message is put in.
After every step, ``trim(history, budget)`` (the memo on, the default) must return the very
objects ``trim(..., count_cache=False)`` returns (no memo), or the same error; for valid
histories both must equal the naive oracle (``tests/naive.py``, no library code).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_manager import ContextOverflowError, trim
from context_manager.budget import chat_memo
from context_manager.counting.message_cache import clear_message_caches
from context_manager.errors import InvalidMessageError
from context_manager.oneshot import _MEMO

from ..conversations import TEXTS
from ..naive import NaiveCounter, naive_select
from .test_oneshot import HOSTILE, chat_history

EXAMPLES = settings(
    max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def outcome(messages: list[Any], budget: int, **options: Any) -> Any:
    try:
        return [id(m) for m in trim(messages, budget, **options)]
    except ContextOverflowError as exc:
        return ("overflow", exc.required, exc.budget)
    except InvalidMessageError as exc:
        return ("invalid", exc.index)


def oracle(messages: list[Any], budget: int) -> Any:
    kept = naive_select(messages, counter=NaiveCounter(), budget=budget, strategy="sliding_window")
    return kept if kept == "overflow" else [id(messages[i]) for i in kept]


@st.composite
def new_turns(draw: st.DrawFn, tag: str) -> list[Any]:
    """One to three new messages: plain turns, or a whole (parallel) tool group."""
    if draw(st.booleans()):
        roles = draw(st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=3))
        return [{"role": role, "content": draw(TEXTS)} for role in roles]
    ids = [f"{tag}_{j}" for j in range(draw(st.integers(1, 2)))]
    calls = [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": draw(TEXTS)}}
        for i in ids
    ]
    return [
        {"role": "assistant", "content": draw(st.none() | TEXTS), "tool_calls": calls},
        *({"role": "tool", "tool_call_id": i, "content": draw(TEXTS)} for i in ids),
    ]


STEPS = st.sampled_from(["grow", "grow", "grow", "retry", "edit", "mutate", "reload", "hostile"])


@EXAMPLES
@given(
    start=chat_history(),
    system=st.booleans(),
    steps=st.lists(STEPS, min_size=1, max_size=12),
    data=st.data(),
)
def test_repeated_trims_answer_as_fresh_ones(
    start: list[Any], system: bool, steps: list[str], data: st.DataObject
) -> None:
    _MEMO.clear()
    opening = [{"role": "user", "content": "an opening that stays"}]
    history = ([{"role": "system", "content": "Be brief."}] if system else []) + opening + start
    total = 3 + sum(len(json.dumps(m)) // 4 for m in history)
    budgets = (total // 2 + 1, total // 5 + 7, 10 * total)
    hostile = False
    marks: list[int] = []  # lengths before each growth: where a retry goes back to
    for step_no, step in enumerate(steps):
        tag = f"s{step_no}"
        if step == "grow":
            marks.append(len(history))
            history = history + data.draw(new_turns(tag))
        elif step == "retry" and any(mark < len(history) for mark in marks):
            # The previous request again, with another new message (a whole group).
            back = max(mark for mark in marks if mark < len(history))
            history = history[:back] + data.draw(new_turns(tag))
        elif step in ("edit", "mutate") and history:
            at = data.draw(st.integers(0, len(history) - 1))
            message = history[at]
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                text = data.draw(TEXTS)
                if step == "mutate":
                    message["content"] = text  # the caller's dict, changed in place
                else:
                    history = [*history[:at], {**message, "content": text}, *history[at + 1 :]]
        elif step == "reload" and not hostile:
            history = json.loads(json.dumps(history))
        elif step == "hostile":
            at = data.draw(st.integers(0, len(history)))
            history = [*history[:at], data.draw(st.sampled_from(HOSTILE)), *history[at:]]
            hostile = True
        for budget in budgets:
            for _ in range(3):  # the memo records from the second sighting, resumes from the third
                fresh = outcome(history, budget, count_cache=False)
                assert outcome(history, budget) == fresh, (step, budget)
            if not hostile and not isinstance(fresh, tuple):
                assert fresh == oracle(history, budget), (step, budget)


def test_a_resumed_history_reads_only_the_new_messages() -> None:
    """Counted, not timed: a growing history is read once, then only its new messages are."""
    _MEMO.clear()
    history: list[Any] = [{"role": "system", "content": "Be brief."}]
    history += [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i} " * 40} for i in range(300)
    ]
    reads: list[int] = []
    real_walk = chat_memo.walk

    def counting_walk(messages: list[Any], floor: int, *args: Any, **kw: Any) -> Any:
        read = real_walk(messages, floor, *args, **kw)
        reads.append(len(messages) - (read.stop if read and read.stop >= 0 else floor))
        return read

    chat_memo.walk = counting_walk  # type: ignore[assignment]
    try:
        for request in range(6):
            history = json.loads(json.dumps(history))  # reloaded: new objects, equal contents
            history += [
                {"role": "assistant", "content": f"reply {request}"},
                {"role": "user", "content": f"question {request}"},
            ]
            kept = trim(history, 4_000)
            assert 10 < len(kept) < len(history)
    finally:
        chat_memo.walk = real_walk  # type: ignore[assignment]
    assert min(reads[:2]) > 10  # a fingerprint only, then recorded: each reads what it keeps
    assert reads[2:] == [2, 2, 2, 2]  # resumed: only the two new messages


def test_the_memo_is_bounded() -> None:
    _MEMO.clear()
    for conversation in range(chat_memo.MAX_STATES + 40):
        history = [
            {"role": "user", "content": f"conversation {conversation}"},
            {"role": "assistant", "content": "x" * 400},
        ]
        for _ in range(3):
            trim(history, 1_000)
    held = sum(len(states) for states in _MEMO._states.values())
    assert 0 < held <= chat_memo.MAX_STATES
    assert _MEMO._count == held


def test_a_message_that_will_not_compare_is_a_miss() -> None:
    """A message whose ``__eq__`` raises, where the memo compares what it read: the memo takes it
    as a miss and the fresh path answers (no error escapes from the comparison)."""
    compared: list[object] = []

    class Liar(dict[str, Any]):
        def __eq__(self, other: object) -> bool:
            compared.append(other)
            raise RuntimeError("no comparing me")

        __hash__ = None  # type: ignore[assignment]

    _MEMO.clear()
    history: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "more"},
    ]
    for _ in range(3):
        trim(history, 1_000)
    assert _MEMO._count == 1
    history = [*history[:2], Liar(role="user", content="more")]
    assert outcome(history, 1_000) == outcome(history, 1_000, count_cache=False)
    assert compared  # the memo did compare it


def test_threads_sharing_the_memo_get_fresh_answers() -> None:
    """Four threads trim interleaved requests of the same conversations (states are shared,
    stored and evicted concurrently); every answer is checked against a memo-less call."""
    _MEMO.clear()
    errors: list[str] = []

    def worker(seed: int) -> None:
        history: list[Any] = [{"role": "system", "content": "Be brief."}]
        history.append({"role": "user", "content": f"conversation {seed % 2}"})
        for request in range(60):
            history = json.loads(json.dumps(history))
            history += [
                {"role": "assistant", "content": "é" * (request % 7 * 50) + f"reply {request}"},
                {"role": "user", "content": f"question {request} " * (seed + 1)},
            ]
            for budget in (300, 900):
                got, fresh = outcome(history, budget), outcome(history, budget, count_cache=False)
                if got != fresh:
                    errors.append(f"thread {seed}, request {request}, budget {budget}")

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert _MEMO._count > 0


def test_clearing_the_count_caches_clears_the_memo() -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    for _ in range(3):
        trim(history, 1_000)
    assert _MEMO._count > 0
    clear_message_caches()
    assert _MEMO._count == 0 and not _MEMO._states


def test_huge_and_hostile_texts_resume_exactly() -> None:
    """A 1 MB tool result, lone surrogates, astral characters and whitespace runs in a growing
    history: every call answers as a fresh one, and what the memo holds stays within bounds."""
    _MEMO.clear()
    call = {"id": "big", "type": "function", "function": {"name": "dump", "arguments": "{}"}}
    history: list[Any] = [
        {"role": "system", "content": "\ud800 lone \udfff surrogates"},
        {"role": "user", "content": "😀" * 2_000},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "big", "content": "x" * 1_000_000},
    ]
    for request in range(8):
        history = json.loads(json.dumps(history))
        history += [
            {"role": "user", "content": " \t\n" * 5_000 + f"question {request}"},
            {"role": "assistant", "content": "é" * 300},
        ]
        for budget in (5_000, 300_000):
            assert outcome(history, budget) == outcome(history, budget, count_cache=False)
    assert 0 < _MEMO._tokens <= chat_memo.MAX_TOKENS
