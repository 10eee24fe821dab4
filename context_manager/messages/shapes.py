"""The shape of a conversation, and the results we make rendered in it (the door going out).

The library makes a few messages itself: the error results that close calls a new user turn
interrupted (or that ``repair`` fills in). Each is built from the records of the calls it
answers and rendered here, once, in the shape of the message that made the calls:

- OpenAI chat (a dict or ``ChatCompletionMessage``): one ``{"role": "tool"}`` message per call
  (``{"role": "function"}`` for a legacy ``function_call``);
- Anthropic (a dict, ``anthropic.types.Message`` or its blocks): ONE user turn of ``tool_result``
  blocks for all the turn's calls, as Anthropic requires; Bedrock Converse (``toolUse`` blocks):
  one user turn of ``toolResult`` blocks;
- a Responses / Agents SDK item: one ``<type>_output`` item per call (the SDK's model when the
  call is one, e.g. ``FunctionCallOutput``);
- a Gemini content (a dict, snake or camelCase, or ``types.Content``): one user content of
  ``function_response`` parts in call order;
- pydantic-ai ``ModelResponse`` (or its JSON): one ``ModelRequest`` of ``ToolReturnPart``s;
- LangChain ``AIMessage``: one ``ToolMessage`` per call; a :class:`~.record.Message`: one
  ``Message("tool")`` per call.

:func:`shape_of` is the one reading of a message's shape: ``validate()`` asks it (and
:func:`same_shape`) whether a result has the shape of its call, and :func:`part_kinds` gives the
order of a turn's parts for the rules that depend on it, SDK objects read exactly as the same
content written as dicts. Cuts and placeholders of existing results are copies of the caller's
own objects (:mod:`.results`), so they keep their shape by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidMessageError
from .gemini import is_gemini_content
from .record import Message, ToolCall, to_json_text
from .responses import ITEM_TYPES
from .sdk import family, field, is_pydantic_ai_dict, sdk_dict

__all__ = [
    "ANTHROPIC",
    "BEDROCK",
    "GEMINI",
    "LANGCHAIN",
    "OPENAI",
    "PYDANTIC_AI",
    "RECORD",
    "RESPONSES",
    "THINKING_KINDS",
    "part_kinds",
    "render_results",
    "same_shape",
    "shape_of",
    "turn_blocks",
]

OPENAI, ANTHROPIC, BEDROCK, RESPONSES = "openai", "anthropic", "bedrock", "openai-responses"
GEMINI, PYDANTIC_AI, LANGCHAIN, RECORD = "gemini", "pydantic-ai", "langchain", "record"

_ANTHROPIC_TOOL_BLOCKS = frozenset({"tool_use", "tool_result", "server_tool_use"})
_BEDROCK_TOOL_BLOCKS = frozenset({"toolUse", "toolResult"})


def data_of(message: Any) -> Any:
    """``message`` as a dict when it is an OpenAI / Anthropic / google-genai model, else itself."""
    if isinstance(message, Mapping) or family(message) not in ("openai", "anthropic", "gemini"):
        return message
    try:
        return sdk_dict(message, None)
    except InvalidMessageError:
        return None


def shape_of(message: Any) -> str | None:
    """The format of a message that calls tools or carries results; None for a plain message
    (``{"role": "user", "content": "hi"}`` fits every chat format) or one we cannot read."""
    if isinstance(message, Message):
        return RECORD
    sdk = family(message)
    if sdk in ("anthropic", "gemini"):
        return ANTHROPIC if sdk == "anthropic" else GEMINI
    if sdk == "pydantic_ai":
        return PYDANTIC_AI
    if sdk == "langchain" or (
        sdk is None
        and not isinstance(message, Mapping | tuple)
        and hasattr(message, "type")
        and hasattr(message, "content")
    ):
        return LANGCHAIN
    data = data_of(message)
    return _dict_shape(data) if isinstance(data, Mapping) else None


def _dict_shape(msg: Mapping[str, Any]) -> str | None:
    kind = msg.get("type")
    if isinstance(kind, str) and kind in ITEM_TYPES and kind != "message":
        return RESPONSES
    if is_pydantic_ai_dict(msg):
        return PYDANTIC_AI
    if is_gemini_content(msg):
        return GEMINI
    if msg.get("role") in ("tool", "function") or "tool_calls" in msg or "function_call" in msg:
        return OPENAI
    content = msg.get("content")
    if isinstance(content, list | tuple):
        for part in content:
            part = data_of(part)
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if isinstance(kind, str) and kind in _ANTHROPIC_TOOL_BLOCKS:
                return ANTHROPIC
            if len(part) == 1 and next(iter(part)) in _BEDROCK_TOOL_BLOCKS:
                return BEDROCK
    return None


def same_shape(a: str | None, b: str | None) -> bool:
    """Whether messages of shapes ``a`` and ``b`` may answer each other: the same shape, or one
    that fits any (a plain message, a record), or LangChain and OpenAI chat (LangChain reads an
    OpenAI chat dict in a list of its messages as the message it stands for)."""
    return a == b or not a or not b or RECORD in (a, b) or {a, b} == {LANGCHAIN, OPENAI}


# -- part order (for the rules that read it) ----------------------------------------------

_PYDANTIC_AI_KINDS = {
    "system-prompt": "text",
    "user-prompt": "text",
    "text": "text",
    "thinking": "thinking",
    "tool-call": "tool_use",
    "tool-return": "tool_result",
    "retry-prompt": "tool_result",
}
_BEDROCK_KINDS = {
    "text": "text",
    "toolUse": "tool_use",
    "toolResult": "tool_result",
    "reasoningContent": "thinking",
}


def part_kinds(message: Any) -> list[str]:
    """The kinds of a turn's content parts, in order, in Anthropic's words (``text``,
    ``tool_result``, ``thinking``, ...): a part's ``type``, a Bedrock block's key, a pydantic-ai
    part's kind. SDK objects give what the same content written as dicts gives; a record (which
    keeps no order) and a text content give none."""
    if isinstance(message, Message):
        return []
    data = data_of(message)
    if (isinstance(data, Mapping) and is_pydantic_ai_dict(data)) or family(data) == "pydantic_ai":
        parts = field(data, "parts")
        kinds = (_PYDANTIC_AI_KINDS.get(str(field(p, "part_kind"))) for p in parts or ())
        return [k for k in kinds if k is not None]
    content = field(data, "content") if data is not None else None
    if not isinstance(content, list | tuple):
        return []
    out: list[str] = []
    for part in content:
        part = data_of(part)
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if isinstance(kind, str):
            out.append(kind)
        elif len(part) == 1 and next(iter(part)) in _BEDROCK_KINDS:
            out.append(_BEDROCK_KINDS[next(iter(part))])
    return out


# -- rendering results ----------------------------------------------------------------------


def render_results(caller: Any, calls: Sequence[ToolCall], text: str) -> list[Any]:
    """Error results answering ``calls`` (all made by ``caller``), in ``caller``'s shape."""
    if not calls:
        return []
    shape = shape_of(caller)
    if shape == ANTHROPIC:
        blocks = [
            {"type": "tool_result", "tool_use_id": c.id, "content": text, "is_error": True}
            for c in calls
        ]
        return [{"role": "user", "content": blocks}]
    if shape == BEDROCK:
        results = [
            {"toolResult": {"toolUseId": c.id, "content": [{"text": text}], "status": "error"}}
            for c in calls
        ]
        return [{"role": "user", "content": results}]
    if shape == RESPONSES:
        return [_responses_output(caller, c, text) for c in calls]
    if shape == GEMINI:
        return [_gemini_results(caller, calls, text)]
    if shape == PYDANTIC_AI:
        return [_pydantic_ai_results(caller, calls, text)]
    if shape == LANGCHAIN:
        from langchain_core.messages import ToolMessage

        return [ToolMessage(text, tool_call_id=c.id, name=c.name, status="error") for c in calls]
    if shape == RECORD:
        return [Message("tool", text, tool_call_id=c.id) for c in calls]
    return [
        {"role": "function", "name": c.name, "content": text}  # the legacy function_call
        if c.id == f"~{c.name}" and c.name
        else {"role": "tool", "tool_call_id": c.id, "content": text}
        for c in calls
    ]


def _responses_output(caller: Any, call: ToolCall, text: str) -> Any:
    """The output item of one call item (``caller``), an SDK model when the call is one."""
    kind = str(field(data_of(caller), "type"))
    item: dict[str, Any] = {"type": f"{kind}_output", "call_id": call.id, "output": text}
    if kind == "mcp_approval_request":  # an approval nobody gave is a denial
        item = {"type": "mcp_approval_response", "approval_request_id": call.id, "approve": False}
        item["reason"] = text
    elif kind == "apply_patch_call":
        item["status"] = "failed"
    elif kind == "shell_call":
        outcome = {"type": "exit", "exit_code": 1}
        item["output"] = [{"stdout": "", "stderr": text, "outcome": outcome}]
    elif kind == "local_shell_call":  # named by ``id`` (the call's call_id), output a JSON text
        output = to_json_text({"error": text})
        item = {"type": "local_shell_call_output", "id": call.id, "output": output}
    elif kind == "computer_call":  # its output is a screenshot: no text can stand for one
        raise InvalidMessageError(
            f"computer_call {call.id!r} has no output, and only a screenshot can answer it",
            hint="add its computer_call_output (a computer_screenshot) before the next message",
        )
    if isinstance(caller, Mapping):
        return item
    from openai.types.responses import ResponseCustomToolCallOutput
    from openai.types.responses.response_input_item import FunctionCallOutput

    if kind == "function_call":
        return FunctionCallOutput.model_validate(item)
    if kind == "custom_tool_call":
        return ResponseCustomToolCallOutput.model_validate(item)
    return item


def _gemini_results(caller: Any, calls: Sequence[ToolCall], text: str) -> Any:
    """One user content answering ``calls`` in order. A call without an API id is answered
    without one, by position, as Gemini reads the responses to a turn joined (the k-th
    response to a function answers its k-th call still open: :func:`.gemini.answered_calls`),
    so no id the API never gave is sent. A call whose record is gone (no name) keeps its id."""
    entries = []
    for call in calls:
        entry: dict[str, Any] = {"name": call.name, "response": {"error": text}}
        if not call.id.startswith("~") or not call.name:
            entry["id"] = call.id
        entries.append(entry)
    if isinstance(caller, Mapping):
        camel = any(isinstance(p, Mapping) and "functionCall" in p for p in caller["parts"])
        key = "functionResponse" if camel else "function_response"
        return {"role": "user", "parts": [{key: e} for e in entries]}
    from google.genai import types

    parts = [types.Part(function_response=types.FunctionResponse(**e)) for e in entries]
    return types.Content(role="user", parts=parts)


def _pydantic_ai_results(caller: Any, calls: Sequence[ToolCall], text: str) -> Any:
    if isinstance(caller, Mapping):  # its JSON form: answered in the same form
        parts = [
            {
                "part_kind": "tool-return",
                "tool_name": c.name,
                "content": text,
                "tool_call_id": c.id,
                "outcome": "failed",
            }
            for c in calls
        ]
        return {"kind": "request", "parts": parts}
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    returns = [ToolReturnPart(c.name, text, c.id, outcome="failed") for c in calls]
    return ModelRequest(parts=returns)


def user_text(conversation: Sequence[Any], text: str) -> Any:
    """A user message holding ``text`` in the shape of ``conversation`` (the first message whose
    shape tells): what we add that is not a result, such as a compaction summary. A chat dict
    where nothing tells (it fits every chat format but Bedrock's and Gemini's, which tell)."""
    shape, like = None, None
    for message in conversation:
        shape = shape_of(message) or (BEDROCK if _bedrock_text(message) else None)
        if shape not in (None, RECORD):
            like = message
            break
    if shape == BEDROCK:
        return {"role": "user", "content": [{"text": text}]}
    if shape == GEMINI:
        if isinstance(like, Mapping):
            return {"role": "user", "parts": [{"text": text}]}
        from google.genai import types

        return types.Content(role="user", parts=[types.Part(text=text)])
    if shape == PYDANTIC_AI:
        if isinstance(like, Mapping):
            return {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}
        from pydantic_ai.messages import ModelRequest, UserPromptPart

        return ModelRequest(parts=[UserPromptPart(text)])
    if shape == LANGCHAIN:
        from langchain_core.messages import HumanMessage

        return HumanMessage(text)
    return {"role": "user", "content": text}


def _bedrock_text(message: Any) -> bool:
    """A Converse message of text blocks only (``{"text": ...}``, no ``type``)."""
    if not isinstance(message, Mapping):
        return False
    content = message.get("content")
    return (
        isinstance(content, list | tuple)
        and bool(content)
        and all(isinstance(p, Mapping) and len(p) == 1 and "text" in p for p in content)
    )


#: The kinds of an assistant turn's reasoning blocks (Anthropic's thinking, signed or redacted).
THINKING_KINDS = ("thinking", "redacted_thinking")


def turn_blocks(message: dict[str, Any]) -> list[Any] | None:
    """The content as a block list, or None when it is not plain Anthropic-shaped content."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list) and all(isinstance(b, dict) for b in content):
        return content
    return None
