"""Agent turns carrying signed reasoning, per provider, and an independent check that a returned
context keeps each signed block byte-identical, in its turn, in its place.

Signed reasoning: Anthropic ``thinking`` (its ``signature``) and ``redacted_thinking``, Gemini
parts with a ``thought_signature`` (and thought parts), OpenAI Responses ``reasoning`` items
with ``encrypted_content``, pydantic-ai ``ThinkingPart`` with a ``signature``, LangChain content
blocks of type ``thinking`` / ``reasoning``. The check reads each message as the JSON it is sent
as and shares no code with the library.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .agent_shapes import SHAPES, Call, Shape


# -- builders --------------------------------------------------------------------------------
def _sig(t: int, cs: list[Call], k: int = 0) -> str:
    return base64.b64encode(f"signature-{t}-{cs[0][0]}-{k}-".encode() * 6).decode()


def _anthropic_calls(t: int, cs: list[Call]) -> list[Any]:
    from anthropic.types import Message

    blocks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": f"I should call {len(cs)} tools", "signature": _sig(t, cs)}
    ]
    if t % 3 == 0:
        blocks.append({"type": "redacted_thinking", "data": _sig(t, cs, 1)})
    blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in cs]
    return [
        Message.model_validate(
            {
                "id": f"msg_{t}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": blocks,
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        )
    ]


def _gemini_calls(t: int, cs: list[Call]) -> list[Any]:
    from google.genai import types

    parts = [types.Part(text=f"thinking about {t} {cs[0][1:]}", thought=True)] if t % 2 else []
    parts += [
        types.Part(
            function_call=types.FunctionCall(name=n, args=a),
            thought_signature=_sig(t, cs, k).encode() if k == 0 else None,
        )
        for k, (_i, n, a) in enumerate(cs)
    ]
    return [types.Content(role="model", parts=parts)]


def _responses_calls(t: int, cs: list[Call]) -> list[Any]:
    from openai.types.responses import ResponseFunctionToolCall, ResponseReasoningItem
    from openai.types.responses.response_reasoning_item import Summary

    reasoning = ResponseReasoningItem(
        id=f"rs_{t}_{cs[0][0]}",
        type="reasoning",
        summary=[Summary(text=f"plan {t}", type="summary_text")] if t % 2 else [],
        encrypted_content="gAAAA" + _sig(t, cs),
    )
    return [
        reasoning,
        *(
            ResponseFunctionToolCall(
                arguments=json.dumps(a), call_id=i, name=n, type="function_call", id=f"fc_{i}"
            )
            for i, n, a in cs
        ),
    ]


def _pydantic_ai_calls(t: int, cs: list[Call]) -> list[Any]:
    from pydantic_ai.messages import ModelResponse, ThinkingPart, ToolCallPart

    thinking = ThinkingPart(f"plan {t}", signature=_sig(t, cs), provider_name="anthropic")
    return [ModelResponse(parts=[thinking, *(ToolCallPart(n, a, i) for i, n, a in cs)])]


def _langchain_calls(t: int, cs: list[Call]) -> list[Any]:
    from langchain_core.messages import AIMessage

    block: dict[str, Any] = (
        {"type": "thinking", "thinking": f"plan {t}", "signature": _sig(t, cs)}
        if t % 2
        else {"type": "reasoning", "reasoning": f"plan {t}", "extras": {"signature": _sig(t, cs)}}
    )
    content: list[Any] = [block, {"type": "text", "text": "calling tools"}]
    return [AIMessage(content, tool_calls=[{"name": n, "args": a, "id": i} for i, n, a in cs])]


_CALLS = {
    "anthropic": _anthropic_calls,
    "gemini": _gemini_calls,
    "openai-responses": _responses_calls,
    "pydantic-ai": _pydantic_ai_calls,
    "langchain": _langchain_calls,
}


def _as_dicts(shape: Shape) -> Shape:
    from .agent_shapes import as_json

    def each(build: Any) -> Any:
        return lambda *args: [as_json(m) for m in build(*args)]

    return replace(
        shape,
        name=shape.name + "-dicts",
        user=lambda text: as_json(shape.user(text)),
        reply=each(shape.reply),
        calls=each(shape.calls),
        results=each(shape.results),
    )


def signed_shape(name: str) -> Shape:
    """A shape whose tool-calling turns carry signed reasoning (``…-dicts``: as dicts)."""
    base_name = name.removesuffix("-dicts")
    shape = replace(SHAPES[base_name](), calls=_CALLS[base_name])
    return _as_dicts(shape) if name.endswith("-dicts") else shape


SIGNED_SHAPES = [
    "anthropic",
    "anthropic-dicts",
    "gemini",
    "gemini-dicts",
    "openai-responses",
    "openai-responses-dicts",
    "pydantic-ai",
    "langchain",
]


# -- the independent check ---------------------------------------------------------------------
def wire(message: Any) -> Any:
    """The JSON a message is sent as (SDK objects dumped; bytes base64)."""
    module = type(message).__module__
    if module.startswith("pydantic_ai."):
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        return ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    if module.startswith("langchain_core."):
        return {"content": message.content, "tool_calls": getattr(message, "tool_calls", [])}
    if hasattr(message, "model_dump"):
        return message.model_dump(mode="json", exclude_none=True)
    return message


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _signed(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    if block.get("type") in ("thinking", "redacted_thinking", "reasoning"):
        return True
    if block.get("part_kind") == "thinking":
        return True
    return bool(block.get("thought") or block.get("thought_signature"))


def _call_id(block: Any, k: int) -> str | None:
    if not isinstance(block, dict):
        return None
    if block.get("type") == "tool_use":
        return str(block.get("id"))
    if block.get("part_kind") == "tool-call":
        return str(block.get("tool_call_id"))
    fc = block.get("function_call")
    if isinstance(fc, dict):
        return f"{fc.get('name')}:{_text(fc.get('args'))}:{k}"
    return None


@dataclass
class Turn:
    """One turn's signed blocks (JSON text, in order, with their index in the turn) and the
    ids of the calls it makes."""

    signed: list[tuple[int, str]]
    calls: tuple[str, ...]


def turns(messages: Sequence[Any]) -> list[Turn]:
    """Each turn that holds signed reasoning or calls, read from the wire form."""
    out: list[Turn] = []
    data = [wire(m) for m in messages]
    k = 0
    while k < len(data):
        m = data[k]
        if isinstance(m, dict) and m.get("type") == "reasoning":  # Responses: item run
            run = [m]
            k += 1
            while k < len(data) and isinstance(data[k], dict):
                kind = data[k].get("type")
                if kind not in ("reasoning", "function_call"):
                    break
                if kind == "reasoning" and run[-1].get("type") == "function_call":
                    break
                run.append(data[k])
                k += 1
            out.append(
                Turn(
                    [(j, _text(x)) for j, x in enumerate(run) if x.get("type") == "reasoning"],
                    tuple(str(x.get("call_id")) for x in run if x.get("type") == "function_call"),
                )
            )
            continue
        k += 1
        if isinstance(m, dict) and m.get("type") == "function_call":
            out.append(Turn([], (str(m.get("call_id")),)))
            continue
        blocks: Any = None
        extra: tuple[str, ...] = ()
        if isinstance(m, dict):
            blocks = m.get("parts") if "parts" in m else m.get("content")
            extra = tuple(str(c.get("id")) for c in m.get("tool_calls") or () if c.get("id"))
        if not isinstance(blocks, list):
            continue
        signed = [(j, _text(b)) for j, b in enumerate(blocks) if _signed(b)]
        calls = tuple(c for j, b in enumerate(blocks) if (c := _call_id(b, j)) is not None)
        if signed or calls or extra:
            out.append(Turn(signed, calls or extra))
    return out


def signed_problems(given: Sequence[Any], context: Sequence[Any], *, cleared: bool) -> list[str]:
    """How ``context`` breaks a signed block of ``given``: not byte-identical to the input, in
    another turn, reordered or moved away from the start of its calls, or (unless ``cleared``
    allows whole-block clearing of older turns) dropped while its turn was kept. The last
    tool-calling turn of a context keeps its signed blocks always."""
    problems: list[str] = []
    source: dict[str, Turn] = {}
    by_calls: dict[tuple[str, ...], Turn] = {}
    for turn in turns(given):
        for _j, text in turn.signed:
            source[text] = turn
        if turn.calls:
            by_calls[turn.calls] = turn
    out_turns = turns(context)
    last_calling = max((k for k, t in enumerate(out_turns) if t.calls), default=-1)
    for k, turn in enumerate(out_turns):
        for _j, text in turn.signed:
            if text not in source:
                problems.append(
                    f"turn {k}: signed block not byte-identical to the input: {text:.80}"
                )
            elif source[text].calls != turn.calls:
                problems.append(f"turn {k}: signed block moved from turn {source[text].calls}")
        original = by_calls.get(turn.calls)
        if original is None or not original.signed:
            continue
        if turn.signed == original.signed:
            continue
        if turn.signed or not cleared or k == last_calling:
            problems.append(
                f"turn {k} (calls {turn.calls}): signed blocks {[j for j, _ in turn.signed]} "
                f"differ from the input's {[j for j, _ in original.signed]}"
            )
    return problems
