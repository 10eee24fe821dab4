"""Summarizers: the extractive one (content, layout, budget, determinism) and the LLM adapters."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from context_manager.compaction import (
    AnthropicSummarizer,
    ExtractiveSummarizer,
    OpenAISummarizer,
    SummaryRequest,
    asummarize,
    summarize,
)
from context_manager.compaction.extractive import parse_sections
from context_manager.errors import CompactionError, ConfigurationError
from context_manager.messages import Message, ToolCall, ToolResult, normalize

CONVERSATION = [
    normalize(
        {
            "role": "user",
            "content": "Add retry logic to fetch_page() in src/http/client.py. "
            "Don't add new dependencies.",
        }
    ),
    normalize(
        {
            "role": "assistant",
            "content": "Reading the client.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"src/http/client.py"}'},
                }
            ],
        }
    ),
    normalize({"role": "tool", "tool_call_id": "c1", "content": "def fetch_page(url):\n    ..."}),
    normalize(
        {
            "role": "assistant",
            "content": "I decided to use exponential backoff instead of a fixed sleep.",
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {
                        "name": "bash",
                        "arguments": '{"command":"pytest tests/test_client.py"}',
                    },
                }
            ],
        }
    ),
    normalize(
        {
            "role": "tool",
            "tool_call_id": "c2",
            "content": "collected 3 items\nFAILED tests/test_client.py::test_retry - "
            "AssertionError: expected 3 calls",
        }
    ),
    normalize({"role": "assistant", "content": "Next I will fix the retry counter."}),
]


def request(
    messages: list[Message],
    *,
    kind: str = "summary",
    max_tokens: int = 2000,
    previous: str | None = None,
    focus: str | None = None,
) -> SummaryRequest:
    return SummaryRequest(
        "sys",
        "prompt",
        max_tokens,
        kind,  # type: ignore[arg-type]
        tuple(messages),
        previous,
        focus,
    )


def test_extractive_keeps_what_matters_in_the_documented_layout() -> None:
    text = ExtractiveSummarizer()(request(CONVERSATION, focus="the retry bug"))
    sections = parse_sections(text)
    assert list(sections)[:2] == ["Goal", "Constraints & Preferences"]
    assert [line for line in text.splitlines() if line.startswith("#")] == [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ]
    assert sections["Goal"][0].startswith("Add retry logic to fetch_page()")
    assert sections["Goal"][-1] == "Focus: the retry bug"
    assert sections["Constraints & Preferences"] == ["Don't add new dependencies."]
    assert sections["Done"] == ['read({"path":"src/http/client.py"})']
    assert sections["Blocked"] == [
        'bash({"command":"pytest tests/test_client.py"}): FAILED tests/test_client.py::'
        "test_retry - AssertionError: expected 3 calls"
    ]
    assert sections["Key Decisions"] == [
        "I decided to use exponential backoff instead of a fixed sleep."
    ]
    assert sections["Next Steps"] == ["Next I will fix the retry counter."]
    context = sections["Critical Context"]
    assert "File: src/http/client.py" in context and "File: tests/test_client.py" in context
    assert "Function: fetch_page" in context
    assert ExtractiveSummarizer()(request(CONVERSATION, focus="the retry bug")) == text


def test_extractive_update_keeps_previous_items() -> None:
    first = ExtractiveSummarizer()(request(CONVERSATION[:3]))
    later = [
        Message("user", "Also log each retry."),
        Message(
            "assistant",
            "Done: added logging.",
            tool_calls=(ToolCall("c9", "edit", '{"path":"src/http/log.py"}'),),
        ),
        Message("user", "", tool_results=(ToolResult("c9", "Error: permission denied", True),)),
    ]
    second = ExtractiveSummarizer()(
        request(later, previous=first + "\n\n<read-files>\nx.py\n</read-files>")
    )
    sections = parse_sections(second)
    assert sections["Goal"][0].startswith("Add retry logic")  # the goal carries over
    assert 'read({"path":"src/http/client.py"})' in sections["Done"]
    assert "Done: added logging." in sections["Done"]
    assert sections["Blocked"] == ['edit({"path":"src/http/log.py"}): Error: permission denied']
    assert "File: x.py" not in sections["Critical Context"]  # file blocks are not sections
    assert sections["Next Steps"] == ["Continue with the latest request: Also log each retry."]


def test_extractive_prefix_layout_and_budget() -> None:
    text = ExtractiveSummarizer()(request(CONVERSATION, kind="turn_prefix"))
    assert [line for line in text.splitlines() if line.startswith("#")] == [
        "## Original Request",
        "## Early Progress",
        "## Context for Suffix",
    ]
    long = [
        Message("user", f"Please edit module_{i}.py and keep it fast. " * 5) for i in range(200)
    ]
    short = ExtractiveSummarizer()(request(long, max_tokens=100))
    assert len(short) <= 300
    assert short.startswith("## Goal")
    for bad in ({"max_items": 0}, {"max_items": "5"}, {"chars_per_token": float("nan")}):
        with pytest.raises(ConfigurationError):
            ExtractiveSummarizer(**bad)


class _Namespace:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class FakeOpenAI:
    """Records ``chat.completions.create`` calls; replies like the SDK (objects)."""

    def __init__(self, reply: str, *, is_async: bool = False) -> None:
        self.calls: list[dict[str, Any]] = []
        response = _Namespace(choices=[_Namespace(message=_Namespace(content=reply))])

        def create(**kwargs: Any) -> Any:
            self.calls.append(kwargs)
            if is_async:

                async def later() -> Any:
                    return response

                return later()
            return response

        self.chat = _Namespace(completions=_Namespace(create=create))


class FakeAnthropic:
    def __init__(self, reply: str) -> None:
        self.calls: list[dict[str, Any]] = []

        async def create(**kwargs: Any) -> Any:
            self.calls.append(kwargs)
            return {
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": reply},
                ]
            }

        self.messages = _Namespace(create=create)


def test_openai_adapter_sync_and_async() -> None:
    req = SummaryRequest("system text", "<conversation>\nx\n</conversation>", 1234)
    client = FakeOpenAI("## Goal\nfrom openai")
    assert summarize(OpenAISummarizer(client, "gpt-4o-mini", temperature=0), req) == (
        "## Goal\nfrom openai"
    )
    assert client.calls == [
        {
            "model": "gpt-4o-mini",
            "max_tokens": 1234,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": "system text"},
                {"role": "user", "content": req.prompt},
            ],
        }
    ]
    async_client = FakeOpenAI("async reply", is_async=True)
    adapter = OpenAISummarizer(async_client, "o3", max_tokens_param="max_completion_tokens")
    assert asyncio.run(asummarize(adapter, req)) == "async reply"
    assert async_client.calls[0]["max_completion_tokens"] == 1234
    assert summarize(adapter, req) == "async reply"  # sync path runs the awaitable


def test_anthropic_adapter() -> None:
    req = SummaryRequest("system text", "prompt text", 999)
    client = FakeAnthropic("## Goal\nfrom claude")
    adapter = AnthropicSummarizer(client, "claude-sonnet-4-5")
    assert asyncio.run(asummarize(adapter, req)) == "## Goal\nfrom claude"
    assert client.calls == [
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 999,
            "system": "system text",
            "messages": [{"role": "user", "content": "prompt text"}],
        }
    ]


def test_empty_llm_reply_is_an_error() -> None:
    req = SummaryRequest("s", "p", 10)
    with pytest.raises(CompactionError, match="non-empty text"):
        summarize(OpenAISummarizer(FakeOpenAI(""), "m"), req)
