"""A provider rule met in the field, with the real SDK shapes.

- Gemini: the responses to one call turn reach the API as one ``Content`` holding a
  ``function_response`` for each ``function_call`` (the API rejects a request where the content
  after a call turn holds fewer), also when the library closed part of a parallel call itself.
"""

from __future__ import annotations

from google.genai import types

from context_manager import MessageContextManager, trim
from context_manager.providers import validate

from .helpers import manager_context

# -- B: Gemini's responses to one call turn, in one content --------------------------------------


def _interrupted_parallel_call() -> MessageContextManager:
    manager = MessageContextManager(8000, provider="gemini")
    manager.add(types.Content(role="user", parts=[types.Part(text="go")]))
    calls = [
        types.Part(function_call=types.FunctionCall(id="c1", name="f", args={})),
        types.Part(function_call=types.FunctionCall(id="c2", name="g", args={})),
    ]
    manager.add(types.Content(role="model", parts=calls))
    response = types.FunctionResponse(id="c1", name="f", response={"r": 1})
    manager.add(types.Content(role="user", parts=[types.Part(function_response=response)]))
    manager.add(types.Content(role="user", parts=[types.Part(text="stop")]))  # closes c2
    return manager


def _answered(content: types.Content) -> list[str | None]:
    return [p.function_response.id for p in content.parts or [] if p.function_response]


def test_gemini_closure_joins_the_responses_of_its_turn() -> None:
    manager = _interrupted_parallel_call()
    held = manager.messages
    sent = manager.get_context()
    assert len(sent) == 4 and validate(sent, "gemini") == []
    assert sent[0] is held[0] and sent[1] is held[1] and sent[3] is held[-1]  # the caller's
    joined = sent[2]
    assert isinstance(joined, types.Content) and joined.role == "user"
    assert _answered(joined) == ["c1", "c2"]  # one response per call of the turn before
    assert joined.parts[0] is held[2].parts[0]  # the caller's response part, unchanged
    assert held[3].parts[0].function_response.response["error"]  # the closure, kept apart
    assert len(held) == 5  # the history itself is as it was added
    assert sent == trim(held, 8000, provider="gemini")


def test_gemini_dicts_join_into_a_dict() -> None:
    held = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"function_call": {"id": "c1", "name": "f", "args": {}}},
                {"function_call": {"id": "c2", "name": "g", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [{"function_response": {"id": "c1", "name": "f", "response": {}}}],
        },
        {
            "role": "user",
            "parts": [{"function_response": {"id": "c2", "name": "g", "response": {}}}],
        },
        {"role": "user", "parts": [{"text": "stop"}]},
    ]
    for sent in (trim(held, 8000, provider="gemini"), manager_context(held, 8000, "gemini")):
        assert sent[:2] == held[:2] and sent[0] is held[0] and sent[-1] is held[-1]
        assert sent[2] == {"role": "user", "parts": [*held[2]["parts"], *held[3]["parts"]]}
        assert len(sent) == 4
        types.Content.model_validate(sent[2])  # the SDK reads the joined dict
    assert trim(held, 8000, provider="openai") == held  # only Gemini's rule joins them


def test_validate_counts_the_responses_after_a_call_turn() -> None:
    calls = [
        types.Part(function_call=types.FunctionCall(id=f"c{k}", name="read", args={}))
        for k in range(2)
    ]

    def response(k: int) -> types.Part:
        answer = types.FunctionResponse(id=f"c{k}", name="read", response={"text": "r"})
        return types.Part(function_response=answer)

    start = [
        types.Content(role="user", parts=[types.Part(text="go")]),
        types.Content(role="model", parts=calls),
    ]
    split = [
        *start,
        types.Content(role="user", parts=[response(0)]),
        types.Content(role="user", parts=[response(1)]),
    ]
    whole = [*start, types.Content(role="user", parts=[response(0), response(1)])]
    assert [(p.index, p.rule) for p in validate(split, "gemini")] == [(2, "one-response-turn")]
    assert validate(whole, "gemini") == []
    assert validate(split, "anthropic") == []  # its API merges consecutive user turns itself
