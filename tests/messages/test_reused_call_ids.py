"""Servers that reuse tool-call ids: llama.cpp's server returns one id for every call, Kimi K3
numbers calls per reply (``search:0`` in each), Grok sends ``call_0``. An id names one *open*
call: once that call is answered the id may come back, and the next result answers the new
call, as the server that made them reads it. Each request is checked with OpenAI's chat rule,
written here: every call answered by tool messages right after its assistant message, before
anything else, and no tool message without a call of the message before it."""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import InvalidMessageError, MessageContextManager, trim
from context_manager.messages.groups import INTERRUPTED_RESULT
from context_manager.providers import validate


def calls(*ids: str, turn: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": i,
                "type": "function",
                "function": {"name": "run", "arguments": f'{{"t":{turn}}}'},
            }
            for i in ids
        ],
    }


def answer(call_id: str, turn: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": f"turn {turn}: " + "output " * 40}


def openai_chat_problems(messages: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    waiting: list[str] = []
    issued: set[str] = set()
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if m["tool_call_id"] not in issued:
                problems.append(f"{i}: tool message {m['tool_call_id']!r} answers no call")
            waiting = [c for c in waiting if c != m["tool_call_id"]]
            continue
        if waiting:
            problems.append(f"{i}: calls {waiting} unanswered")
        waiting = [c["id"] for c in m.get("tool_calls") or []]
        issued = set(waiting)
    return problems + ([f"end: calls {waiting} unanswered"] if waiting else [])


def session(turns: int, ids: tuple[str, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in range(turns):
        out.append({"role": "user", "content": f"step {t}"})
        out.append(calls(*ids, turn=t))
        out += [answer(i, t) for i in ids]
        out.append({"role": "assistant", "content": f"done with step {t}"})
    return out


@pytest.mark.parametrize(
    "ids", [("call_0",), ("run:0", "run:1"), ("ZsSt4SkIFMRz0HtqT7MTlimNvzlKM896",)]
)
def test_every_request_of_a_long_session_pairs_each_result_with_its_call(
    ids: tuple[str, ...],
) -> None:
    manager = MessageContextManager(2_000, counter="chars", reserve_tokens=0)
    history: list[dict[str, Any]] = []
    for message in session(200, ids):
        manager.add(message)
        history.append(message)
        sent = manager.get_context()
        assert openai_chat_problems(sent) == []
        assert manager.context_tokens() <= 2_000
    assert len(manager.messages) == len(history)  # nothing refused or dropped from the history
    for budget in (300, 1_000, 5_000, 100_000):
        kept = trim(history, budget, counter="chars")
        assert openai_chat_problems(kept) == []
        assert kept[-1] is history[-1]


def test_a_result_travels_with_the_call_it_answers_at_every_budget() -> None:
    history = session(6, ("call_0",))
    seen = set()
    for budget in range(40, 1_500, 7):
        kept = {id(m) for m in trim(history, budget, counter="chars")}
        for k, message in enumerate(history):
            if message["role"] == "tool":  # its call is the message right before it
                assert (id(message) in kept) == (id(history[k - 1]) in kept), budget
        seen.add(len(kept))
    assert len(seen) > 5  # the budgets cut the session in many places


def test_an_interrupted_call_is_closed_and_its_id_can_come_back() -> None:
    manager = MessageContextManager(10_000, counter="chars")
    manager.extend([{"role": "user", "content": "a"}, calls("call_0", turn=0)])
    manager.add({"role": "user", "content": "never mind"})  # closes call_0 as interrupted
    manager.extend([calls("call_0", turn=1), answer("call_0", 1)])
    sent = manager.get_context()
    assert openai_chat_problems(sent) == []
    closures = [m for m in sent if m["role"] == "tool" and m["content"] == INTERRUPTED_RESULT]
    assert len(closures) == 1


def test_an_id_is_refused_while_its_call_is_open() -> None:
    manager = MessageContextManager(10_000, counter="chars")
    with pytest.raises(InvalidMessageError, match="appears twice in one message"):
        manager.extend([{"role": "user", "content": "a"}, calls("call_0", "call_0", turn=0)])
    responses = MessageContextManager(10_000, counter="chars")
    item = {"type": "function_call", "call_id": "c", "name": "run", "arguments": "{}"}
    responses.extend([{"role": "user", "content": "a"}, item])
    with pytest.raises(InvalidMessageError, match="'c' is still open"):
        responses.add(dict(item))  # a parallel call item naming the open call again


def test_validate_names_the_providers_that_want_unique_ids() -> None:
    """Chat Completions pairs a result with the call message before it; Anthropic rejects a
    request whose tool_use ids repeat ("tool_use ids must be unique") and the Responses API
    pairs by call_id over the whole input."""
    history = session(3, ("call_0",))
    assert validate(history, "openai") == []
    again = [p for p in validate(history, "anthropic") if p.rule == "unique-ids"]
    assert [p.index for p in again] == [5, 9]  # the second and third turns call again
    responses = [
        {"role": "user", "content": "a"},
        {"type": "function_call", "call_id": "c", "name": "run", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "1"},
        {"role": "user", "content": "b"},
        {"type": "function_call", "call_id": "c", "name": "run", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "2"},
    ]
    assert [p.rule for p in validate(responses, "openai-responses")] == ["unique-ids"]
