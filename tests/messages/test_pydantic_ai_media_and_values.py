"""pydantic-ai messages cost what the same content costs in any other format, as objects and as
their stored JSON: an image is priced as an image (not as the text of its bytes), and a value
without a JSON type (a date, a model) reads as pydantic-ai's own JSON writes it, so a session
reopened from a store holds the counts its messages cost."""

from __future__ import annotations

import base64
import datetime
import os
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from pydantic import BaseModel
from pydantic_ai.messages import (
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from context_manager import MessageContextManager


def png(width: int, height: int) -> bytes:
    """A PNG whose header gives its size, padded as a real image's data would be."""
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"
    return header + width.to_bytes(4, "big") + height.to_bytes(4, "big") + os.urandom(60_000)


def cost(message: object, counter: str | None, model: str | None = None) -> int:
    manager = MessageContextManager(100_000, counter=counter, model=model, reserve_tokens=0)
    manager.add(message)
    return manager.token_count


IMAGE = png(1024, 768)
OPENAI = {
    "role": "user",
    "content": [
        {"type": "text", "text": "what is this?"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(IMAGE).decode()},
        },
    ],
}
PYDANTIC_AI = ModelRequest(
    parts=[UserPromptPart(content=["what is this?", BinaryContent(IMAGE, media_type="image/png")])]
)


@pytest.mark.parametrize(("counter", "model"), [("chars", None), (None, None), (None, "gpt-4o")])
def test_an_image_costs_what_the_same_image_costs_in_an_openai_message(
    counter: str | None, model: str | None
) -> None:
    expected = cost(OPENAI, counter, model)
    assert expected < 2_000  # an image, not 60 KB of text
    assert cost(PYDANTIC_AI, counter, model) == expected
    stored = ModelMessagesTypeAdapter.dump_python([PYDANTIC_AI], mode="json")[0]
    assert cost(stored, counter, model) == expected


def test_image_and_document_urls_are_priced_as_media_not_as_text() -> None:
    url = "https://example.com/" + "x" * 4_000  # a long URL must not be what is counted
    as_image = ModelRequest(parts=[UserPromptPart(content=["see", ImageUrl(url + ".png")])])
    openai_image = {
        "role": "user",
        "content": [
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }
    assert cost(as_image, "chars") == cost(openai_image, "chars")
    as_document = ModelRequest(parts=[UserPromptPart(content=["see", DocumentUrl(url + ".pdf")])])
    assert cost(as_document, "chars") < 1_000


class Forecast(BaseModel):
    day: datetime.date
    high: float


def session() -> list[object]:
    day = datetime.date(2024, 5, 6)
    return [
        ModelRequest(parts=[UserPromptPart(content="weather on the 6th?")]),
        ModelResponse(parts=[ToolCallPart("forecast", {"day": day}, tool_call_id="c1")]),
        ModelRequest(
            parts=[ToolReturnPart("forecast", Forecast(day=day, high=21.5), tool_call_id="c1")]
        ),
        ModelResponse(parts=[ToolCallPart("holiday", {"on": day}, tool_call_id="c2")]),
        ModelRequest(parts=[ToolReturnPart("holiday", day, tool_call_id="c2")]),
        PYDANTIC_AI,
    ]


@pytest.mark.parametrize("counter", ["chars", None, "tiktoken"])
def test_a_reopened_session_holds_what_its_messages_cost(
    tmp_path: Path, counter: str | None
) -> None:
    target = f"sqlite:///{tmp_path}/chat.db"
    writer = MessageContextManager.open(target, session="s", max_tokens=100_000, counter=counter)
    for message in session():
        writer.add(message)
    written = writer.token_count
    writer.store.close()
    reopened = MessageContextManager.open(target, session="s", max_tokens=100_000, counter=counter)
    fresh = MessageContextManager(100_000, counter=counter)
    for message in reopened.messages:  # the objects pydantic-ai rebuilds from the stored JSON
        fresh.add(message)
    assert reopened.token_count == fresh.token_count == written
    reopened.store.close()
