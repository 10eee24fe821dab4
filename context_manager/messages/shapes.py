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

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import InvalidMessageError
from .gemini import is_gemini_content
from .record import Message, ToolCall, to_json_text
from .responses import ITEM_TYPES
from .sdk import answers_a_call, family, field, is_pydantic_ai_dict, sdk_dict

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
    "joined_plain_turns",
    "joined_responses",
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


def _data(message: Any) -> Any:
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
    data = _data(message)
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
            part = _data(part)
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
    data = _data(message)
    if (isinstance(data, Mapping) and is_pydantic_ai_dict(data)) or family(data) == "pydantic_ai":
        parts = field(data, "parts")
        kinds = (_PYDANTIC_AI_KINDS.get(str(field(p, "part_kind"))) for p in parts or ())
        return [k for k in kinds if k is not None]
    content = field(data, "content") if data is not None else None
    if not isinstance(content, list | tuple):
        return []
    out: list[str] = []
    for part in content:
        part = _data(part)
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if isinstance(kind, str):
            out.append(kind)
        elif len(part) == 1 and next(iter(part)) in _BEDROCK_KINDS:
            out.append(_BEDROCK_KINDS[next(iter(part))])
    return out


# -- joining the responses to one call turn ------------------------------------------------

_RESPONSE_KEYS = frozenset(("function_response", "functionResponse"))


def joined_responses(a: Any, b: Any) -> Any | None:
    """Two Gemini user contents answering one call turn, as one content in ``a``'s form: a
    ``types.Content`` when ``a`` is one, else a dict of ``role`` and ``parts``; None for
    anything else (a content with no response, another key, ...).

    Gemini wants the content after a function-call turn to hold a response for each of its
    calls, and the responses to one turn can arrive apart (a parallel call answered, the rest
    closed by the library when the person interrupted), in either form the SDK accepts (the
    call turn a ``Content`` as the SDK returned it, the responses the caller's dicts). One of
    the two may carry more after its responses (the person's text, in the turn that answered
    some calls and interrupted the rest, which the closure follows: :func:`~.groups.
    closes_after`): the joined content holds every response in the order given, then that
    text. The parts are the caller's own objects, so a response's place (how an id-less one
    pairs) is as Gemini reads it; only a part joining the other form is rewritten in that form
    (a dict part read into a ``types.Part``, a ``Part`` dumped to its dict, bytes kept).
    pydantic-ai requests (provider-neutral: the closure is stored before the person's turn, as
    Anthropic wants) are joined as one request when sent to Gemini
    (:func:`pydantic_ai_joined`), which its ``GoogleModel`` sends as one content of responses.
    """
    if shape_of(a) == PYDANTIC_AI:  # pydantic-ai requests: joined as requests of the same form
        return pydantic_ai_joined(a, b)
    parts = _joined_parts(_responses_then_rest(a), _responses_then_rest(b))
    if parts is None:
        return None
    if isinstance(a, Mapping):
        dumped = [p if isinstance(p, Mapping) else p.model_dump(exclude_none=True) for p in parts]
        return {"role": "user", "parts": dumped}
    from google.genai import types

    try:
        return types.Content(
            role="user",
            parts=[types.Part.model_validate(p) if isinstance(p, Mapping) else p for p in parts],
        )
    except ValueError:  # a dict part the SDK's model refuses (pydantic's error is a ValueError)
        dumped = [p if isinstance(p, Mapping) else p.model_dump(exclude_none=True) for p in parts]
        return {"role": "user", "parts": dumped}  # joined in the form that holds it as given


def _responses_then_rest(message: Any) -> tuple[list[Any], list[Any]] | None:
    """A Gemini user content's function responses and the parts after them, or None when it is
    no such content (no response first, a response after other parts, another key)."""
    if isinstance(message, Mapping):
        if message.get("role") != "user" or not message.keys() <= {"role", "parts"}:
            return None
        parts = message.get("parts")
    elif family(message) == "gemini" and type(message).__name__ == "Content":
        if field(message, "role") != "user":
            return None
        parts = list(field(message, "parts") or ())
    else:
        return None
    if not isinstance(parts, list):
        return None

    def responds(part: Any) -> bool:
        data = _data(part)
        return isinstance(data, Mapping) and bool(data) and data.keys() <= _RESPONSE_KEYS

    def names_one(part: Any) -> bool:  # a response key among others still moves a response
        data = _data(part)
        return isinstance(data, Mapping) and not _RESPONSE_KEYS.isdisjoint(data)

    return _answers_then_rest(parts, responds, names_one)


def pydantic_ai_joined(a: Any, b: Any) -> Any | None:
    """Two pydantic-ai requests answering one call turn as one request (the form
    :func:`joined_responses` gives Gemini): the call answers of both in the order given, then
    the other parts (a user prompt) of the one that has them. Its other fields (instructions,
    timestamp, ...) are that one's, else ``a``'s. None when either is no request that starts
    with answers, both say more, an answer follows other parts, or the two are in different
    forms (an object and its JSON)."""
    split_a, split_b = _requests_answers(a), _requests_answers(b)
    parts = _joined_parts(split_a, split_b)
    if parts is None or isinstance(a, Mapping) != isinstance(b, Mapping):
        return None
    base, other = (b, a) if split_b is not None and split_b[1] else (a, b)
    if isinstance(base, Mapping):
        joined = {**base, "parts": parts}
        if not joined.get("instructions") and other.get("instructions"):
            joined["instructions"] = other["instructions"]
        return joined
    instructions = field(base, "instructions") or field(other, "instructions")
    changes: dict[str, Any] = {"parts": parts}
    if instructions is not None:
        changes["instructions"] = instructions
    return dataclasses.replace(base, **changes)


def _requests_answers(message: Any) -> tuple[list[Any], list[Any]] | None:
    """A pydantic-ai request's call answers and the parts after them, or None when it is no
    request, does not start with an answer, or has an answer after another part."""
    if isinstance(message, Mapping):
        if not is_pydantic_ai_dict(message):
            return None
    elif family(message) != "pydantic_ai":
        return None
    parts = field(message, "parts")
    if field(message, "kind") != "request" or not isinstance(parts, list | tuple):
        return None

    def answers(part: Any) -> bool:
        return answers_a_call(part, field(part, "part_kind"))

    return _answers_then_rest(parts, answers, answers)


def _answers_then_rest(
    parts: Sequence[Any], answers: Callable[[Any], bool], names_one: Callable[[Any], bool]
) -> tuple[list[Any], list[Any]] | None:
    """The leading ``parts`` that ``answer`` a call and the parts after them; None when none
    leads, or when a later part ``names_one`` (joined, its place would move)."""
    lead = 0
    for part in parts:
        if not answers(part):
            break
        lead += 1
    rest = list(parts[lead:])
    if not lead or any(names_one(part) for part in rest):
        return None
    return list(parts[:lead]), rest


def _joined_parts(
    split_a: tuple[list[Any], list[Any]] | None, split_b: tuple[list[Any], list[Any]] | None
) -> list[Any] | None:
    """Two answer turns as one turn's parts: every answer in the order given, then what the one
    that says more says (None: either is no answer turn, or both say more)."""
    if split_a is None or split_b is None or (split_a[1] and split_b[1]):
        return None
    return [*split_a[0], *split_b[0], *split_a[1], *split_b[1]]


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
    kind = str(field(_data(caller), "type"))
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
_PLAIN_KEYS = frozenset(("role", "content"))


def turn_blocks(message: dict[str, Any]) -> list[Any] | None:
    """The content as a block list, or None when it is not plain Anthropic-shaped content."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list) and all(isinstance(b, dict) for b in content):
        return content
    return None


def joined_plain_turns(a: Any, b: Any) -> dict[str, Any] | None:
    """Two plain same-role turns (dicts of ``role`` and ``content``) as one, as Anthropic joins
    them server-side and Bedrock's strict alternation needs; None when joining them would break
    another rule (results after text, a call not ending its turn, thinking not first)."""
    if not (isinstance(a, dict) and isinstance(b, dict)) or a.get("role") != b.get("role"):
        return None
    role = a.get("role")
    if role not in ("user", "assistant") or not (a.keys() <= _PLAIN_KEYS >= b.keys()):
        return None
    first, second = turn_blocks(a), turn_blocks(b)
    if first is None or second is None:
        return None
    # one reading of block kinds (Anthropic ``type``, a Converse block's key) for both shapes
    kinds_a = set(part_kinds({"role": role, "content": first}))
    kinds_b = set(part_kinds({"role": role, "content": second}))
    if role == "user" and "tool_result" in kinds_b and kinds_a - {"tool_result"}:
        return None  # results would come after text
    if role == "assistant" and ("tool_use" in kinds_a or kinds_b & set(THINKING_KINDS)):
        return None  # a call must end its turn; thinking must open it
    return {"role": role, "content": [*first, *second]}
