"""An independent rule checker per provider, written from each provider's API docs; it shares
no code with the library. Each takes a request's messages (SDK objects are read as the JSON they
are sent as) and lists what that provider would reject: a call not answered by a result of the
right shape in the right place, a result without its call, a foreign message or block, broken
alternation where the provider demands it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any


def dump(obj: Any) -> Any:
    """The JSON a pydantic SDK object is sent as (dicts and lists walked, objects dumped)."""
    if isinstance(obj, dict):
        return {k: dump(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [dump(v) for v in obj]
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json", exclude_none=True)
    return obj


# -- OpenAI Chat Completions ------------------------------------------------------------------
def openai_problems(messages: Sequence[Any]) -> list[str]:
    """A ``tool`` message follows the assistant message holding its call id, only tool messages
    in between; every call is answered before the next non-tool message; parts are chat parts."""
    problems: list[str] = []
    waiting: set[str] = set()
    for i, raw in enumerate(messages):
        m = dump(raw)
        if not isinstance(m, dict):
            problems.append(f"{i}: not a chat message: {type(raw).__name__}")
            continue
        role = m.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"{i}: role {role!r} is no chat role")
            continue
        content = m.get("content")
        if isinstance(content, list):
            for part in content:
                if not isinstance(part, dict) or part.get("type") not in (
                    "text",
                    "image_url",
                    "input_audio",
                    "file",
                    "refusal",
                ):
                    problems.append(f"{i}: content part {part!r:.60} is no chat part")
        if role == "tool":
            call_id = m.get("tool_call_id")
            if call_id not in waiting:
                problems.append(f"{i}: tool result {call_id!r} answers no call just before it")
            waiting.discard(call_id)
            if not isinstance(content, str | list):
                problems.append(f"{i}: tool message without content")
            continue
        if waiting:
            problems.append(f"{i}: calls {sorted(waiting)} are not answered")
        waiting = set()
        for call in m.get("tool_calls") or () if role == "assistant" else ():
            fn = call.get("function") or {}
            if call.get("type") != "function" or not isinstance(fn.get("arguments"), str):
                problems.append(f"{i}: malformed tool call {call!r:.60}")
            waiting.add(call.get("id"))
    if waiting:
        problems.append(f"end: calls {sorted(waiting)} are not answered")
    return problems


# -- Anthropic Messages -----------------------------------------------------------------------
_ANTHROPIC_BLOCKS = {
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "search_result",
}


def _anthropic_wire(raw: Any) -> Any:
    data = dump(raw)
    if isinstance(data, dict) and data.get("type") == "message" and "id" in data:
        return {"role": data.get("role"), "content": data.get("content")}  # a response Message
    return data


def anthropic_problems(messages: Sequence[Any]) -> list[str]:
    """User and assistant turns only (same-role neighbours are merged, as the API does); the first
    is a user turn; each ``tool_use`` is answered by a ``tool_result`` in the very next user turn,
    results before anything else; no result without its call; blocks are Anthropic blocks."""
    problems: list[str] = []
    turns: list[tuple[str, list[Any]]] = []
    start = 0
    if (
        messages
        and isinstance(dump(messages[0]), dict)
        and dump(messages[0]).get("role") == "system"
    ):
        start = 1  # the system prompt travels in ``system=``
    for i, raw in enumerate(messages[start:], start):
        m = _anthropic_wire(raw)
        if not isinstance(m, dict) or set(m) - {"role", "content"}:
            problems.append(f"{i}: not an Anthropic message: {m!r:.80}")
            continue
        role, content = m.get("role"), m.get("content")
        if role not in ("user", "assistant"):
            problems.append(f"{i}: role {role!r} is no Anthropic role")
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            problems.append(f"{i}: content is neither text nor blocks")
            continue
        for block in blocks:
            if not isinstance(block, dict) or block.get("type") not in _ANTHROPIC_BLOCKS:
                problems.append(f"{i}: block {block!r:.60} is no Anthropic block")
            elif block["type"] == "tool_result" and (
                set(block) - {"type", "tool_use_id", "content", "is_error", "cache_control"}
                or not isinstance(block.get("content", ""), str | list)
            ):
                problems.append(f"{i}: malformed tool_result {block!r:.60}")
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, list(blocks)))
    if turns and turns[0][0] != "user":
        problems.append("the first turn is not a user turn")
    asked: list[str] = []
    for k, (role, blocks) in enumerate(turns):
        kinds = [b.get("type") for b in blocks if isinstance(b, dict)]
        answered = [
            b.get("tool_use_id") for b in blocks if isinstance(b, dict) and "tool_use_id" in b
        ]
        if role == "user":
            if sorted(answered) != sorted(asked):
                problems.append(f"turn {k}: results {answered} do not answer calls {asked}")
            if "tool_result" in kinds and kinds[: len(answered)] != ["tool_result"] * len(answered):
                problems.append(f"turn {k}: a tool_result comes after other content")
            asked = []
        else:
            if asked:
                problems.append(f"turn {k}: calls {asked} are not answered")
            asked = [
                b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
    if asked:
        problems.append(f"end: calls {asked} are not answered")
    return problems


# -- OpenAI Responses / Agents SDK ------------------------------------------------------------
def responses_problems(items: Sequence[Any]) -> list[str]:
    """Items pair ``function_call`` and ``function_call_output`` by ``call_id`` (an output after its
    call, each call answered once); a reasoning item is followed by the item it produced."""
    problems: list[str] = []
    wire = [dump(item) for item in items]
    issued: set[str] = set()
    answered: set[str] = set()
    for i, item in enumerate(wire):
        if not isinstance(item, dict):
            problems.append(f"{i}: not an item")
            continue
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            if item.get("role") not in ("user", "assistant", "system", "developer"):
                problems.append(f"{i}: role {item.get('role')!r} is no Responses role")
            content = item.get("content")
            for part in content if isinstance(content, list) else ():
                if part.get("type") not in ("input_text", "output_text", "refusal", "input_image"):
                    problems.append(f"{i}: part {part!r:.60} is no Responses part")
        elif kind == "function_call":
            if not isinstance(item.get("arguments"), str) or item.get("call_id") in issued:
                problems.append(f"{i}: malformed or repeated function_call")
            issued.add(item.get("call_id"))
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in issued or call_id in answered:
                problems.append(f"{i}: output {call_id!r} answers no earlier open call")
            answered.add(call_id)
            if not isinstance(item.get("output"), str | list):
                problems.append(f"{i}: output without text")
        elif kind == "reasoning":
            after = wire[i + 1] if i + 1 < len(wire) else None
            produced = isinstance(after, dict) and (
                after.get("type") == "function_call"
                or (after.get("type", "message") == "message" and after.get("role") == "assistant")
            )
            if not produced:
                problems.append(f"{i}: reasoning item without its following item")
        else:
            problems.append(f"{i}: item type {kind!r} is not expected here")
    if issued - answered:
        problems.append(f"end: calls {sorted(issued - answered)} have no output")
    return problems


# -- Gemini ------------------------------------------------------------------------------------
def _gemini_part(part: dict[str, Any], snake: str, camel: str) -> Any:
    return part.get(snake) or part.get(camel)


def gemini_problems(contents: Sequence[Any]) -> list[str]:
    """Contents are ``user`` / ``model``, the first a user turn; a function-call turn follows a
    user turn or a function-response turn, and the very next content answers it with exactly as
    many ``function_response`` parts, paired by id when given, else by position (same name)."""
    problems: list[str] = []
    wire = [dump(c) for c in contents]
    calls: list[dict[str, Any]] = []
    prev_role: str | None = None
    for i, c in enumerate(wire):
        if (
            not isinstance(c, dict)
            or set(c) - {"role", "parts"}
            or not isinstance(c.get("parts"), list)
        ):
            problems.append(f"{i}: not a Gemini content: {c!r:.80}")
            calls = []
            continue
        role, parts = c.get("role"), c["parts"]
        if role not in ("user", "model"):
            problems.append(f"{i}: role {role!r} is no Gemini role")
        if i == 0 and role != "user":
            problems.append("the first content is not a user turn")
        responses = [
            r for p in parts if (r := _gemini_part(p, "function_response", "functionResponse"))
        ]
        if calls:
            if role != "user" or len(responses) != len(calls):
                problems.append(f"{i}: {len(responses)} responses for {len(calls)} calls")
            else:
                for call, response in zip(calls, responses, strict=True):
                    if call.get("id") or response.get("id"):
                        if call.get("id") != response.get("id"):
                            problems.append(f"{i}: response id {response.get('id')!r} mismatched")
                    elif call.get("name") != response.get("name"):
                        problems.append(f"{i}: response {response.get('name')!r} out of place")
            if role == "user" and not isinstance(
                responses[0].get("response") if responses else {}, dict
            ):
                problems.append(f"{i}: a function response is not an object")
        elif responses:
            problems.append(f"{i}: function responses answer no call")
        calls = [f for p in parts if (f := _gemini_part(p, "function_call", "functionCall"))]
        if calls and (role != "model" or prev_role != "user"):
            problems.append(f"{i}: a function call turn does not follow a user turn")
        prev_role = role
    if calls:
        problems.append("end: function calls are not answered")
    return problems


# -- Bedrock Converse ----------------------------------------------------------------------------
def bedrock_problems(messages: Sequence[Any]) -> list[str]:
    """Converse: the first message is a user turn, roles strictly alternate, each ``toolResult``
    answers a ``toolUse`` of the turn before and every ``toolUse`` is answered in the next."""
    problems: list[str] = []
    body = list(messages)
    if body and isinstance(body[0], dict) and body[0].get("role") == "system":
        body = body[1:]  # the system prompt travels in ``system=``
    if not body or not isinstance(body[0], dict) or body[0].get("role") != "user":
        problems.append("the first message is not a user turn")
    for i, m in enumerate(body):
        if (
            not isinstance(m, dict)
            or set(m) != {"role", "content"}
            or not isinstance(m["content"], list)
        ):
            problems.append(f"{i}: not a Converse message: {m!r:.80}")
            return problems
        for block in m["content"]:
            if (
                not isinstance(block, dict)
                or len(block) != 1
                or next(iter(block))
                not in (
                    "text",
                    "toolUse",
                    "toolResult",
                    "image",
                    "document",
                    "reasoningContent",
                )
            ):
                problems.append(f"{i}: block {block!r:.60} is no Converse block")
    for a, b in itertools.pairwise(body):
        if a["role"] == b["role"]:
            problems.append(f"two {b['role']} turns in a row")
    for i, m in enumerate(body):
        uses = [b["toolUse"]["toolUseId"] for b in m["content"] if "toolUse" in b]
        results = [b["toolResult"]["toolUseId"] for b in m["content"] if "toolResult" in b]
        asked = [
            b["toolUse"]["toolUseId"]
            for b in (body[i - 1]["content"] if i else [])
            if "toolUse" in b
        ]
        if results and sorted(results) != sorted(asked):
            problems.append(f"{i}: results {results} do not answer {asked}")
        if uses:
            after = body[i + 1]["content"] if i + 1 < len(body) else []
            answered = [b["toolResult"]["toolUseId"] for b in after if "toolResult" in b]
            if sorted(answered) != sorted(uses):
                problems.append(f"{i}: calls {uses} are not all answered")
    return problems


# -- pydantic-ai -----------------------------------------------------------------------------
def pydantic_ai_problems(messages: Sequence[Any]) -> list[str]:
    """``ModelRequest`` / ``ModelResponse`` only; the ``ToolCallPart``s of a response are answered
    by ``ToolReturnPart`` / ``RetryPromptPart``s (same id and tool name) in the requests right
    after it, before the next user prompt or response; no return without its call."""
    from pydantic_ai.messages import (
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    problems: list[str] = []
    pending: dict[str, str] = {}
    for i, m in enumerate(messages):
        if isinstance(m, dict):  # the JSON form: read back through pydantic-ai's own adapter
            try:
                (m,) = ModelMessagesTypeAdapter.validate_python([m])
            except ValueError as exc:
                problems.append(f"{i}: not a pydantic-ai message: {exc}")
                continue
        if isinstance(m, ModelResponse):
            if pending:
                problems.append(f"{i}: calls {sorted(pending)} are not answered")
            pending = {p.tool_call_id: p.tool_name for p in m.parts if isinstance(p, ToolCallPart)}
            continue
        if not isinstance(m, ModelRequest):
            problems.append(f"{i}: {type(m).__name__} is no pydantic-ai message")
            continue
        for part in m.parts:
            if isinstance(part, ToolReturnPart | RetryPromptPart) and part.tool_call_id:
                if pending.get(part.tool_call_id) != part.tool_name:
                    problems.append(f"{i}: return {part.tool_call_id!r} answers no open call")
                pending.pop(part.tool_call_id, None)
            elif isinstance(part, UserPromptPart) and pending:
                problems.append(f"{i}: calls {sorted(pending)} are not answered")
                pending = {}
    if pending:
        problems.append(f"end: calls {sorted(pending)} are not answered")
    return problems


# -- LangChain -------------------------------------------------------------------------------
def langchain_problems(messages: Sequence[Any]) -> list[str]:
    """LangChain message objects; an ``AIMessage``'s tool calls are answered by ``ToolMessage``s
    right after it, each once; no ``ToolMessage`` without its call."""
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

    problems: list[str] = []
    waiting: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, BaseMessage):
            problems.append(f"{i}: {type(m).__name__} is no LangChain message")
            continue
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in waiting:
                problems.append(f"{i}: ToolMessage {m.tool_call_id!r} answers no open call")
            waiting.discard(m.tool_call_id)
            continue
        if waiting:
            problems.append(f"{i}: calls {sorted(waiting)} are not answered")
        waiting = {c["id"] for c in m.tool_calls} if isinstance(m, AIMessage) else set()
    if waiting:
        problems.append(f"end: calls {sorted(waiting)} are not answered")
    return problems
