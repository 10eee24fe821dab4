"""Agent conversations built with the real SDK types, per provider, and a long agent session.

A :class:`Shape` builds one provider's messages the way an agent holds them (SDK objects where
the SDK returns objects, its documented dict params where the SDK sends dicts) and checks a
request with that provider's independent checker (:mod:`.provider_checkers`). Used by the long
session tests, the shape tests and the mixed-shape property test.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .provider_checkers import (
    anthropic_problems,
    bedrock_problems,
    gemini_problems,
    langchain_problems,
    openai_problems,
    pydantic_ai_problems,
    responses_problems,
)

Call = tuple[str, str, dict[str, Any]]  # (id, name, args)
Result = tuple[str, str, str]  # (id, name, text)


# -- builders --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """One provider's conversation: how its agent writes each kind of message, how it is
    checked, which ``provider=`` rules the manager is given, and whether results of one call
    turn may arrive in pieces (one message per result) before an interrupt."""

    name: str
    provider: str | None
    user: Callable[[str], Any]
    reply: Callable[[str], list[Any]]
    calls: Callable[[int, list[Call]], list[Any]]
    results: Callable[[list[Result]], list[Any]]
    check: Callable[[Sequence[Any]], list[str]]
    #: Gemini's API returns calls without ids (paired by position).
    ids: bool = True
    partial: bool = True


def _openai_shape() -> Shape:
    from openai.types.chat import ChatCompletionMessage

    def calls(_t: int, cs: list[Call]) -> list[Any]:
        import json

        tool_calls = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in cs
        ]
        data = {"role": "assistant", "content": None, "tool_calls": tool_calls}
        return [ChatCompletionMessage.model_validate(data)]

    return Shape(
        "openai",
        "openai",
        user=lambda text: {"role": "user", "content": text},
        reply=lambda text: [
            ChatCompletionMessage.model_validate({"role": "assistant", "content": text})
        ],
        calls=calls,
        results=lambda rs: [{"role": "tool", "tool_call_id": i, "content": x} for i, _n, x in rs],
        check=openai_problems,
    )


def _anthropic_message(blocks: list[dict[str, Any]], n: int) -> Any:
    from anthropic.types import Message

    return Message.model_validate(
        {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": blocks,
            "stop_reason": "tool_use"
            if any(b["type"] == "tool_use" for b in blocks)
            else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def _anthropic_shape() -> Shape:
    def calls(t: int, cs: list[Call]) -> list[Any]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": f"calling {len(cs)} tools"}]
        blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in cs]
        return [_anthropic_message(blocks, t)]

    return Shape(
        "anthropic",
        "anthropic",
        user=lambda text: {"role": "user", "content": text},
        reply=lambda text: [_anthropic_message([{"type": "text", "text": text}], 0)],
        calls=calls,
        results=lambda rs: (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": i, "content": x} for i, _n, x in rs
                    ],
                }
            ]
            if rs
            else []
        ),
        check=anthropic_problems,
    )


def _responses_shape() -> Shape:
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseReasoningItem,
    )
    from openai.types.responses.response_reasoning_item import Summary

    def calls(t: int, cs: list[Call]) -> list[Any]:
        import json

        out: list[Any] = []
        if t % 2:
            out.append(
                ResponseReasoningItem(
                    id=f"rs_{t}",
                    type="reasoning",
                    summary=[Summary(text=f"plan {t}", type="summary_text")],
                )
            )
        out += [
            ResponseFunctionToolCall(
                arguments=json.dumps(a), call_id=i, name=n, type="function_call", id=f"fc_{i}"
            )
            for i, n, a in cs
        ]
        return out

    def reply(text: str) -> list[Any]:
        part = ResponseOutputText(annotations=[], text=text, type="output_text")
        return [
            ResponseOutputMessage(
                id="msg_x", content=[part], role="assistant", status="completed", type="message"
            )
        ]

    return Shape(
        "openai-responses",
        "openai-responses",
        user=lambda text: {"role": "user", "content": text},
        reply=reply,
        calls=calls,
        results=lambda rs: [
            {"type": "function_call_output", "call_id": i, "output": x} for i, _n, x in rs
        ],
        check=responses_problems,
    )


def _gemini_shape() -> Shape:
    from google.genai import types

    def calls(_t: int, cs: list[Call]) -> list[Any]:
        parts = [types.Part(function_call=types.FunctionCall(name=n, args=a)) for _i, n, a in cs]
        return [types.Content(role="model", parts=parts)]

    def results(rs: list[Result]) -> list[Any]:
        if not rs:
            return []
        parts = [
            types.Part.from_function_response(name=n, response={"output": x}) for _i, n, x in rs
        ]
        return [types.Content(role="user", parts=parts)]

    return Shape(
        "gemini",
        "gemini",
        user=lambda text: types.Content(role="user", parts=[types.Part(text=text)]),
        reply=lambda text: [types.Content(role="model", parts=[types.Part(text=text)])],
        calls=calls,
        results=results,
        check=gemini_problems,
        ids=False,
        partial=False,
    )


def _bedrock_shape() -> Shape:
    def calls(_t: int, cs: list[Call]) -> list[Any]:
        uses = [{"toolUse": {"toolUseId": i, "name": n, "input": a}} for i, n, a in cs]
        return [{"role": "assistant", "content": [{"text": "calling tools"}, *uses]}]

    def results(rs: list[Result]) -> list[Any]:
        blocks = [
            {"toolResult": {"toolUseId": i, "content": [{"text": x}], "status": "success"}}
            for i, _n, x in rs
        ]
        return [{"role": "user", "content": blocks}] if rs else []

    return Shape(
        "bedrock",
        "bedrock",
        user=lambda text: {"role": "user", "content": [{"text": text}]},
        reply=lambda text: [{"role": "assistant", "content": [{"text": text}]}],
        calls=calls,
        results=results,
        check=bedrock_problems,
    )


def _pydantic_ai_shape() -> Shape:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    return Shape(
        "pydantic-ai",
        "openai",
        user=lambda text: ModelRequest(parts=[UserPromptPart(text)]),
        reply=lambda text: [ModelResponse(parts=[TextPart(text)])],
        calls=lambda _t, cs: [ModelResponse(parts=[ToolCallPart(n, a, i) for i, n, a in cs])],
        results=lambda rs: (
            [ModelRequest(parts=[ToolReturnPart(n, x, i) for i, n, x in rs])] if rs else []
        ),
        check=pydantic_ai_problems,
    )


def _langchain_shape() -> Shape:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    return Shape(
        "langchain",
        "openai",
        user=lambda text: HumanMessage(text),
        reply=lambda text: [AIMessage(text)],
        calls=lambda _t, cs: [
            AIMessage("", tool_calls=[{"name": n, "args": a, "id": i} for i, n, a in cs])
        ],
        results=lambda rs: [ToolMessage(x, tool_call_id=i, name=n) for i, n, x in rs],
        check=langchain_problems,
    )


SHAPES: dict[str, Callable[[], Shape]] = {
    "openai": _openai_shape,
    "anthropic": _anthropic_shape,
    "openai-responses": _responses_shape,
    "gemini": _gemini_shape,
    "bedrock": _bedrock_shape,
    "pydantic-ai": _pydantic_ai_shape,
    "langchain": _langchain_shape,
}


# -- a long agent session ---------------------------------------------------------------------
@dataclass
class SessionReport:
    """What a session's requests looked like to the provider's checker."""

    requests: int = 0
    invalid: int = 0
    refused: int = 0  # adds the library refused (a valid conversation must never be refused)
    overflows: int = 0
    first_problem: str = ""

    def __str__(self) -> str:
        return (
            f"{self.requests} requests, {self.invalid} invalid, {self.refused} refused adds, "
            f"{self.overflows} overflows{': ' + self.first_problem if self.first_problem else ''}"
        )


def run_session(
    shape: Shape, seed: int, turns: int = 220, max_tokens: int = 1_500, pruning: Any = None
) -> SessionReport:
    """An agent loop of ``turns`` user turns under a tight budget: parallel calls (the same
    function twice, as models do), big results, interrupts (a new user turn while calls are
    open, some results in), and a request (``get_context()``) before every model call, each
    checked by ``shape.check``."""
    import random

    from context_manager import MessageContextManager
    from context_manager.errors import ContextOverflowError, InvalidMessageError

    rng = random.Random(seed)
    manager = MessageContextManager(
        max_tokens,
        counter="chars",
        reserve_tokens=max_tokens // 5,
        provider=shape.provider,
        pruning=pruning,
    )
    report = SessionReport()

    def add(message: Any) -> None:
        try:
            manager.add(message)
        except InvalidMessageError as exc:
            report.refused += 1
            report.first_problem = report.first_problem or f"refused: {exc}"

    def request() -> None:
        try:
            context = manager.get_context()
        except ContextOverflowError:
            report.overflows += 1
            return
        report.requests += 1
        problems = shape.check(context)
        if problems:
            report.invalid += 1
            report.first_problem = (
                report.first_problem or f"request {report.requests}: {problems[0]}"
            )

    serial = itertools.count()
    for t in range(turns):
        add(shape.user(f"turn {t}: please look at item {rng.randint(0, 99)}"))
        request()
        interrupted = False
        for _round in range(rng.randint(1, 3)):
            if rng.random() < 0.3:
                break  # the model answers in text
            names = rng.choice([["read"], ["read", "read"], ["read", "grep", "read"], ["grep"]])
            calls: list[Call] = [
                (f"call_{next(serial)}" if shape.ids else "", name, {"path": f"f{t}.{k}"})
                for k, name in enumerate(names)
            ]
            for message in shape.calls(t, calls):
                add(message)
            results = [
                (i, n, f"{n} output {t} " + "x" * rng.choice([20, 200, 900, 3_000]))
                for i, n, _a in calls
            ]
            if rng.random() < 0.25:  # interrupted: the user speaks while calls are open
                if shape.partial and len(results) > 1:
                    for message in shape.results(results[: rng.randint(0, len(results) - 1)]):
                        add(message)
                interrupted = True
                break
            for message in shape.results(results):
                add(message)
            request()
        else:
            for message in shape.reply(f"done with turn {t}"):
                add(message)
            continue
        if not interrupted:
            for message in shape.reply(f"answer {t}"):
                add(message)
    return report


def as_json(message: Any, camel: bool = False) -> Any:
    """The same message as the dicts its SDK sends or stores (Anthropic ``Message`` as a
    ``{"role", "content"}`` param, pydantic-ai through its type adapter, google-genai in
    camelCase when ``camel``); dicts and LangChain objects stay as they are."""
    module = type(message).__module__
    if module.startswith("pydantic_ai."):
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        return ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    if module.startswith("anthropic."):
        data = message.model_dump(mode="json", exclude_none=True)
        return {"role": data["role"], "content": data["content"]}
    if module.startswith(("openai.", "google.genai.")):
        return message.model_dump(mode="json", exclude_none=True, by_alias=camel)
    return message
