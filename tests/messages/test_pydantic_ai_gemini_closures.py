"""pydantic-ai messages sent to Gemini: a request that answers some of a turn's parallel calls
and says more interrupts the others; the closure of those calls and the turn's own returns are
sent to Gemini as one content (one function response per call, in the content after the call
turn), while Anthropic still gets every result before the person's text."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from context_manager import MessageContextManager, trim
from context_manager.providers import validate

CALLS = ModelResponse(parts=[ToolCallPart("read", {"p": p}, f"c{k}") for k, p in enumerate("abc")])
ASK = ModelRequest(parts=[UserPromptPart("Read a, b and c.")])
#: Variant A: one request answers c0 and says more (c1, c2 are interrupted).
MIXED = [
    ASK,
    CALLS,
    ModelRequest(parts=[ToolReturnPart("read", "A = 1", "c0"), UserPromptPart("Skip.")]),
]
#: Variant B: c0 answered in its own request, then the person speaks.
APART = [
    ASK,
    CALLS,
    ModelRequest(parts=[ToolReturnPart("read", "A = 1", "c0")]),
    ModelRequest(parts=[UserPromptPart("Stop.")]),
]


def _parts(message: Any) -> list[Any]:
    return list(message["parts"] if isinstance(message, dict) else message.parts)


def _kind(part: Any) -> str:
    return str(part["part_kind"] if isinstance(part, dict) else part.part_kind)


def _call_id(part: Any) -> str:
    return str(part["tool_call_id"] if isinstance(part, dict) else part.tool_call_id)


def gemini_problems(messages: list[Any]) -> list[str]:
    """Gemini's documented rule, read from pydantic-ai messages (each request is sent as its
    own content(s), function responses first): the content after a call turn holds one
    function response per call, and no later content answers any of them."""
    out = []
    for k, message in enumerate(messages[:-1]):
        calls = [_call_id(p) for p in _parts(message) if _kind(p) == "tool-call"]
        if not calls:
            continue
        nxt = _parts(messages[k + 1])
        leading = []
        for part in nxt:
            if _kind(part) != "tool-return":
                break
            leading.append(_call_id(part))
        if sorted(leading) != sorted(calls):
            out.append(f"after message {k}: responses {leading}, calls {calls}")
        for later in messages[k + 2 :]:
            late = [_call_id(p) for p in _parts(later) if _kind(p) == "tool-return"]
            if set(late) & set(calls):
                out.append(f"calls {sorted(set(late) & set(calls))} answered in a later content")
    return out


def google_contents(messages: list[Any]) -> list[dict[str, Any]]:
    """The contents pydantic-ai's own GoogleModel sends for ``messages`` (offline mapping)."""
    google = pytest.importorskip("pydantic_ai.models.google")
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.providers.google import GoogleProvider

    model = google.GoogleModel("gemini-2.5-flash", provider=GoogleProvider(api_key="offline"))
    _, contents = asyncio.run(model._map_messages(messages, ModelRequestParameters()))
    return list(contents)


def response_ids_after_call(contents: list[dict[str, Any]]) -> list[list[str]]:
    """For each model content with function calls: the ids of the function responses in the
    content right after it (Gemini counts those against the calls)."""
    out = []
    for k, content in enumerate(contents):
        if any("function_call" in p for p in content["parts"]):
            nxt = contents[k + 1]["parts"] if k + 1 < len(contents) else []
            out.append(
                sorted(p["function_response"]["id"] for p in nxt if "function_response" in p)
            )
    return out


def _context(history: list[Any], provider: str) -> list[Any]:
    manager = MessageContextManager(8_000, provider=provider)
    for message in history:
        manager.add(message)
    return manager.get_context()


@pytest.mark.parametrize("history", [MIXED, APART], ids=["answers-and-says-more", "apart"])
def test_manager_sends_gemini_one_response_content(history: list[Any]) -> None:
    context = _context(history, "gemini")
    assert gemini_problems(context) == []
    assert validate(context, "gemini") == []
    assert response_ids_after_call(google_contents(context)) == [["c0", "c1", "c2"]]
    # the person's words are still sent, after the responses
    texts = [p.content for m in context for p in m.parts if isinstance(p, UserPromptPart)]
    assert texts[-1] in ("Skip.", "Stop.")


@pytest.mark.parametrize("history", [MIXED, APART], ids=["answers-and-says-more", "apart"])
def test_trim_with_repair_sends_gemini_one_response_content(history: list[Any]) -> None:
    kept = trim(history, 6_000, provider="gemini", repair=True)
    assert gemini_problems(kept) == []
    assert validate(kept, "gemini") == []
    assert response_ids_after_call(google_contents(kept)) == [["c0", "c1", "c2"]]


def test_json_form_is_joined_too() -> None:
    history = ModelMessagesTypeAdapter.dump_python(MIXED, mode="json")
    context = _context(history, "gemini")
    assert gemini_problems(context) == []
    assert validate(context, "gemini") == []
    assert all(isinstance(m, dict) for m in context)


def test_anthropic_still_gets_results_before_the_text() -> None:
    context = _context(MIXED, "anthropic")
    assert validate(context, "anthropic") == []
    kinds = [_kind(p) for m in context[2:] for p in _parts(m)]
    assert kinds == ["tool-return", "tool-return", "tool-return", "user-prompt"]


def test_instructions_of_the_person_turn_are_kept() -> None:
    turn = ModelRequest(
        parts=[ToolReturnPart("read", "A = 1", "c0"), UserPromptPart("Skip.")],
        instructions="Be brief.",
    )
    context = _context([ASK, CALLS, turn], "gemini")
    assert gemini_problems(context) == []
    assert context[-1].instructions == "Be brief."
