"""Gemini returns parallel calls without ids, the same function possibly twice in one turn, and
pairs their responses by position: the k-th response to a function answers its k-th call. The
contents here are built as the API returns them (``types.Content`` validated from the REST
JSON, ``FunctionCall`` without ``id``)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from context_manager import MessageContextManager, normalize, trim
from context_manager.messages.groups import ToolProtocol, joins_previous
from context_manager.providers import validate

from .provider_checkers import gemini_problems


def content(data: dict[str, Any]) -> Any:
    from google.genai import types

    return types.Content.model_validate(data)


def user(text: str) -> Any:
    return content({"role": "user", "parts": [{"text": text}]})


def calls(*names: str) -> Any:
    parts = [
        {"functionCall": {"name": n, "args": {"path": f"{n}{k}"}}} for k, n in enumerate(names)
    ]
    return content({"role": "model", "parts": parts})


def responses(*names: str) -> Any:
    parts = [{"functionResponse": {"name": n, "response": {"output": n}}} for n in names]
    return content({"role": "user", "parts": parts})


def session(turns: int) -> list[Any]:
    out: list[Any] = []
    for t in range(turns):
        out += [
            user(f"question {t}"),
            calls("read", "read", "grep"),
            responses("read", "read", "grep"),
            content({"role": "model", "parts": [{"text": f"answer {t} " + "x" * 200}]}),
        ]
    return out


def test_parallel_calls_to_one_function_are_accepted_and_grouped() -> None:
    history = session(3)
    manager = MessageContextManager(100_000, counter="chars", provider="gemini")
    manager.extend(history)  # no "tool call id ... appears twice"
    assert manager.messages == history
    assert validate(history, "gemini") == []
    assert gemini_problems(history) == []
    call, answer = normalize(history[1]), normalize(history[2])
    assert call.call_ids == ("~read", "~read~2", "~grep")
    assert answer.result_ids == call.call_ids
    protocol = ToolProtocol()
    joined = protocol.replay(normalize(m) for m in history)
    assert joined == [False, False, True, False] * 3
    recs = [normalize(m) for m in history]
    assert [joins_previous(a, b) for a, b in itertools.pairwise(recs)] == joined[1:]


@pytest.mark.parametrize("budget", range(100, 1_200, 37))
def test_trimmed_sessions_keep_every_call_with_its_responses(budget: int) -> None:
    history = session(12)
    kept = trim(history, budget, counter="chars", provider="gemini")
    assert gemini_problems(kept) == []
    assert validate(kept, "gemini") == []


def test_responses_pair_by_position_among_calls_to_the_same_function() -> None:
    """Responses in another order across functions still pair by name; a missing one is seen."""
    out_of_order = [user("q"), calls("read", "grep", "read"), responses("grep", "read", "read")]
    assert validate(out_of_order, "gemini") == []
    one_short = [user("q"), calls("read", "read"), responses("read"), user("next")]
    problems = validate(one_short, "gemini")
    assert [p.rule for p in problems] == ["tool-pairing"]
    assert "~read~2" in problems[0].reason


def test_an_interrupted_parallel_turn_is_closed_by_position() -> None:
    manager = MessageContextManager(100_000, counter="chars", provider="gemini")
    manager.extend([user("q"), calls("read", "read"), user("never mind")])
    context = manager.get_context()
    assert gemini_problems(context) == []
    closure = context[2]
    assert [p.function_response.name for p in closure.parts] == ["read", "read"]
    assert [p.function_response.id for p in closure.parts] == [None, None]


def test_ids_given_by_the_api_are_used_as_they_are() -> None:
    with_ids = content(
        {
            "role": "model",
            "parts": [
                {"functionCall": {"id": "a", "name": "read", "args": {}}},
                {"functionCall": {"id": "b", "name": "read", "args": {}}},
            ],
        }
    )
    answer = content(
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "b", "name": "read", "response": {}}},
                {"functionResponse": {"id": "a", "name": "read", "response": {}}},
            ],
        }
    )
    assert normalize(with_ids).call_ids == ("a", "b")
    assert validate([user("q"), with_ids, answer], "gemini") == []
