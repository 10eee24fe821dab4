"""A pydantic-ai ``RetryPromptPart`` without ``tool_name`` answers no tool call: pydantic-ai sends
it to the model as user feedback (``model_response()``), so it is user text, not a tool result
(it gets an automatic ``tool_call_id`` that matches no call)."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("pydantic_ai")
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    UserPromptPart,
)

from context_manager import MessageContextManager, normalize


def _feedback() -> RetryPromptPart:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in pydantic-ai 1.x, still in old histories
        return RetryPromptPart("say good")


def test_retry_feedback_without_a_tool_is_user_text() -> None:
    part = _feedback()
    assert part.tool_name is None and part.tool_call_id  # pydantic-ai's own defaults
    request = ModelRequest(parts=[part])
    rec = normalize(request)
    assert rec.role == "user" and rec.tool_results == ()
    assert "say good" in rec.text and "say good" in part.model_response()
    manager = MessageContextManager(max_tokens=4_000)
    history = [ModelRequest(parts=[UserPromptPart("hi")]), ModelResponse(parts=[TextPart("bad")])]
    manager.extend([*history, request])
    assert manager.get_context() == [*history, request]


def test_retry_feedback_part_is_counted_as_user_text() -> None:
    """pydantic-ai's ``RetryFeedbackPart`` (its newer tool-less feedback) reaches the model as
    text: it must cost tokens, not read as an empty message."""
    from pydantic_ai.messages import RetryFeedbackPart, RetryInfo

    part = RetryFeedbackPart("the answer must be a number", retry=RetryInfo("model_retry"))
    rec = normalize(ModelRequest(parts=[part]))
    assert rec.role == "user" and "the answer must be a number" in rec.text
