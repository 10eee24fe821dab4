"""pydantic-ai parts for provider-run tools and generated files cost what they hold.

pydantic-ai sends a ``NativeToolCallPart`` / ``NativeToolReturnPart`` (web search, code
execution) back to the provider that ran the tool (Anthropic ``server_tool_use`` /
``web_search_tool_result`` blocks) and a ``FilePart`` (an image the model generated) back as
input, so their content is input tokens: 20 web results counted as 10 tokens let
``trim(history, 2000)`` keep 43k. They are not calls the client answers, so a native call without
a ``ToolReturnPart`` is no open call. A part kind the reader does not know costs its JSON.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import messages as pai
from pydantic_ai.messages import (
    BinaryContent,
    FilePart,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)

from context_manager import MessageContextManager, trim

# The part classes were renamed from ``BuiltinTool*`` to ``NativeTool*``; same part kinds.
CallPart: Any = getattr(pai, "NativeToolCallPart", None) or pai.BuiltinToolCallPart
ReturnPart: Any = getattr(pai, "NativeToolReturnPart", None) or pai.BuiltinToolReturnPart

RESULTS = [
    {
        "url": f"https://example.com/{i}",
        "title": f"Result {i}",
        "snippet": "lorem ipsum dolor sit amet " * 40,
    }
    for i in range(20)
]
ARGS = {"query": "context windows"}


def searched(text: str = "Here is what I found.") -> ModelResponse:
    return ModelResponse(
        parts=[
            CallPart("web_search", ARGS, "srvtoolu_1", provider_name="anthropic"),
            ReturnPart("web_search", RESULTS, "srvtoolu_1", provider_name="anthropic"),
            TextPart(text),
        ]
    )


def compact(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def png(width: int, height: int) -> bytes:
    """A PNG whose header gives its size, padded as a real image's data would be."""
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"
    return header + width.to_bytes(4, "big") + height.to_bytes(4, "big") + os.urandom(60_000)


def chars() -> MessageContextManager:
    return MessageContextManager(100_000, counter="chars")


def test_native_tool_parts_cost_their_arguments_and_results() -> None:
    m = chars()
    extra = m.count_message(searched()) - m.count_message(ModelResponse(parts=[TextPart("x")]))
    assert extra >= (compact(RESULTS) + compact(ARGS)) // 4


def test_their_stored_json_costs_the_same() -> None:
    m = chars()
    (stored,) = ModelMessagesTypeAdapter.dump_python([searched()], mode="json")
    assert m.count_message(stored) == m.count_message(searched())


def test_trim_keeps_no_more_than_the_budget() -> None:
    history: list[Any] = []
    for t in range(10):
        history += [ModelRequest(parts=[UserPromptPart(f"question {t}")]), searched()]
    history.append(ModelRequest(parts=[UserPromptPart("last question")]))
    m = chars()
    for budget in (500, 2_000, 12_000, 40_000):
        kept = trim(history, budget, counter="chars", provider="anthropic")
        assert kept and kept[-1] is history[-1]
        assert sum(m.count_message(k) for k in kept) <= budget
        returns = [p for k in kept for p in k.parts if isinstance(p, ReturnPart)]
        assert len(returns) * compact(RESULTS) // 4 <= budget  # independent of our counts


def test_a_native_call_is_no_open_tool_call() -> None:
    """No ``ToolReturnPart`` answers it (its return is in the same response), so the turn is
    kept as it is: not refused, not closed with a synthesized return, not dropped."""
    history = [
        ModelRequest(parts=[UserPromptPart("search it")]),
        ModelResponse(parts=[CallPart("web_search", ARGS, "srvtoolu_9")]),
        ModelRequest(parts=[UserPromptPart("thanks; and now?")]),
    ]
    kept = trim(history, 10_000, counter="chars", provider="anthropic")
    assert [id(k) for k in kept] == [id(h) for h in history]


@pytest.mark.parametrize("model", ["gpt-4o", None])
def test_a_generated_image_costs_what_the_same_image_costs_in_a_prompt(model: str | None) -> None:
    image = BinaryContent(png(1024, 768), media_type="image/png")
    m = MessageContextManager(100_000, model=model, counter=None if model else "chars")
    as_file = m.count_message(ModelResponse(parts=[FilePart(content=image)]))
    empty = m.count_message(ModelResponse(parts=[TextPart("")]))
    in_prompt = m.count_message(ModelRequest(parts=[UserPromptPart([image])]))
    prompt_empty = m.count_message(ModelRequest(parts=[UserPromptPart([""])]))
    assert as_file - empty == in_prompt - prompt_empty
    if model == "gpt-4o":  # OpenAI's published price: 85 + 170 per 512px tile (2 x 2 at 768)
        assert as_file - empty >= 85 + 170 * 4


def test_a_part_kind_the_reader_does_not_model_is_never_free() -> None:
    summary = "The user asked about context windows; we searched and compared three. " * 20
    part = pai.CompactionPart(content=summary, provider_name="anthropic")
    m = chars()
    extra = m.count_message(ModelResponse(parts=[part])) - m.count_message(
        ModelResponse(parts=[TextPart("")])
    )
    assert extra >= len(summary) // 4
