"""Summarizers: anything callable that turns a :class:`SummaryRequest` into summary text.

No LLM SDK is a dependency. :class:`~.extractive.ExtractiveSummarizer` works offline and
deterministically; :class:`OpenAISummarizer` and :class:`AnthropicSummarizer` are thin duck-typed
adapters over a client object the caller already has (sync or async clients both work). A
summarizer may be sync or async; :func:`summarize` and :func:`asummarize` run either kind from
either world.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import CompactionError
from ..messages import Message
from ..messages.sdk import field
from ._flow import Call, Flow, run_async, run_sync

RequestKind = Literal["summary", "turn_prefix"]


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What a summarizer gets: the prompt pair and the output budget, plus structured context.

    LLM adapters send ``system_prompt`` + ``prompt`` with ``max_tokens``; the extractive
    summarizer reads ``messages`` / ``previous_summary`` / ``focus`` instead of the prompt text.
    """

    system_prompt: str
    prompt: str
    max_tokens: int
    kind: RequestKind = "summary"
    messages: tuple[Message, ...] = ()
    previous_summary: str | None = None
    focus: str | None = None


@runtime_checkable
class Summarizer(Protocol):
    """``summarizer(request) -> str`` or an awaitable of it."""

    def __call__(self, request: SummaryRequest) -> str | Awaitable[str]: ...


# --- Running summarizers -------------------------------------------------------------------------


def _checked(text: Any, kind: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise CompactionError(
            f"the summarizer returned {text!r} for the {kind} request; it must return non-empty "
            "text (check the model's reply or the adapter's output extraction)"
        )
    return text


def summary_flow(summarizer: Any, request: SummaryRequest) -> Flow[str]:
    """Ask ``summarizer`` for one summary; failures become ``CompactionError`` (cancellation and
    interrupts pass through unwrapped). Sync summarizers run in a worker thread under asyncio."""
    try:
        result = yield Call(summarizer, (request,), thread=True)
    except CompactionError:
        raise
    except Exception as exc:
        raise CompactionError(
            f"the summarizer failed on the {request.kind} request: {type(exc).__name__}: {exc}"
        ) from exc
    return _checked(result, request.kind)


def summarize(summarizer: Any, request: SummaryRequest) -> str:
    """Call a sync or async summarizer from sync code; failures become ``CompactionError``."""
    return run_sync(summary_flow(summarizer, request))


async def asummarize(summarizer: Any, request: SummaryRequest) -> str:
    """Await an async summarizer, or run a sync one in a worker thread (the loop stays free)."""
    return await run_async(summary_flow(summarizer, request))


# --- LLM adapters -------------------------------------------------------------------------------


def openai_reply_text(response: Any) -> str:
    """``response.choices[0].message.content`` from an OpenAI-compatible reply (object or dict)."""
    choices = field(response, "choices")
    if not choices:
        raise CompactionError(f"the OpenAI-compatible reply has no choices: {response!r}")
    content = field(field(choices[0], "message"), "content")
    if isinstance(content, list):  # some compatible servers return content parts
        content = "".join(str(field(p, "text") or "") for p in content)
    return content if isinstance(content, str) else ""


def anthropic_reply_text(response: Any) -> str:
    """The joined ``text`` blocks of an Anthropic Messages reply (object or dict)."""
    blocks = field(response, "content") or []
    return "\n".join(str(field(b, "text")) for b in blocks if field(b, "type") == "text")


class OpenAISummarizer:
    """Summarize with ``client.chat.completions.create`` (OpenAI, or any compatible server).

    ``max_tokens_param`` names the budget argument (``"max_completion_tokens"`` for OpenAI
    reasoning models); ``options`` go to every call (e.g. ``temperature``).
    """

    def __init__(
        self, client: Any, model: str, *, max_tokens_param: str = "max_tokens", **options: Any
    ) -> None:
        self.client, self.model = client, model
        self.max_tokens_param, self.options = max_tokens_param, options

    def __call__(self, request: SummaryRequest) -> str | Awaitable[str]:
        result = self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": request.prompt},
            ],
            **{self.max_tokens_param: request.max_tokens},
            **self.options,
        )
        return _reply_text(result, openai_reply_text)


class AnthropicSummarizer:
    """Summarize with ``client.messages.create`` (Anthropic's Messages API, sync or async)."""

    def __init__(self, client: Any, model: str, **options: Any) -> None:
        self.client, self.model, self.options = client, model, options

    def __call__(self, request: SummaryRequest) -> str | Awaitable[str]:
        result = self.client.messages.create(
            model=self.model,
            max_tokens=request.max_tokens,
            system=request.system_prompt,
            messages=[{"role": "user", "content": request.prompt}],
            **self.options,
        )
        return _reply_text(result, anthropic_reply_text)


def _reply_text(result: Any, extract: Callable[[Any], str]) -> str | Awaitable[str]:
    """The reply's text; from an async client, an awaitable of it."""
    return _after(result, extract) if inspect.isawaitable(result) else extract(result)


async def _after(awaitable: Awaitable[Any], extract: Callable[[Any], str]) -> str:
    return str(extract(await awaitable))
