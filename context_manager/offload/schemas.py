"""The recall tool's definition for each API, as plain dicts (no SDK imported).

One JSON Schema (:data:`PARAMETERS`) wrapped in each API's envelope: OpenAI Chat Completions
``tools``, the Responses API ``tools``, Anthropic ``tools`` and Gemini ``function_declarations``
(Gemini's schema dialect: upper-case types, no ``additionalProperties``). Run the model's call
with :func:`~context_manager.offload.run_recall`. Framework tool objects (Agents SDK,
LangChain, pydantic-ai) are in ``context_manager.integrations.recall_tools``.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = [
    "DESCRIPTION",
    "PARAMETERS",
    "TOOL_NAME",
    "anthropic_tool",
    "gemini_function",
    "openai_tool",
    "responses_tool",
]

TOOL_NAME = "recall"

DESCRIPTION = (
    "Read more of a tool result that was too large to keep in the conversation. Its stub "
    "shows the head and tail, the total size and a handle (cm-off:...). Call this tool with "
    "that handle and either lines=[first, last] (1-based), bytes=[start, end] or "
    "pattern='text' (the lines containing it) to read one page. Each page states the total "
    "size and the exact arguments of the next page."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "handle": {
            "type": "string",
            "description": "The handle the stub names, e.g. cm-off:1a2b3c4d-<32 hex digits>.",
        },
        "lines": {
            "type": "array",
            "items": {"type": "integer"},
            "minItems": 1,
            "maxItems": 2,
            "description": "[first, last] line numbers, 1-based and inclusive; omit last to "
            "read to the end.",
        },
        "bytes": {
            "type": "array",
            "items": {"type": "integer"},
            "minItems": 1,
            "maxItems": 2,
            "description": "[start, end] byte offsets, end exclusive (for very long lines).",
        },
        "pattern": {
            "type": "string",
            "description": "Show only the lines containing this text (case-insensitive); "
            "add lines to search part of the result.",
        },
        "max_tokens": {
            "type": "integer",
            "description": "At most this many tokens in the page (the tool may cap it lower).",
        },
    },
    "required": ["handle"],
    "additionalProperties": False,
}


def openai_tool(name: str = TOOL_NAME) -> dict[str, Any]:
    """For Chat Completions ``tools=[...]``."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": DESCRIPTION,
            "parameters": copy.deepcopy(PARAMETERS),
        },
    }


def responses_tool(name: str = TOOL_NAME) -> dict[str, Any]:
    """For the Responses API ``tools=[...]`` (a flat function tool)."""
    return {
        "type": "function",
        "name": name,
        "description": DESCRIPTION,
        "parameters": copy.deepcopy(PARAMETERS),
        "strict": False,
    }


def anthropic_tool(name: str = TOOL_NAME) -> dict[str, Any]:
    """For Anthropic ``tools=[...]``."""
    return {"name": name, "description": DESCRIPTION, "input_schema": copy.deepcopy(PARAMETERS)}


def _gemini(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "additionalProperties":
            continue
        if key == "type":
            out[key] = str(value).upper()
        elif key == "properties":
            out[key] = {k: _gemini(v) for k, v in value.items()}
        elif key == "items":
            out[key] = _gemini(value)
        elif key in ("minItems", "maxItems"):
            out["min_items" if key == "minItems" else "max_items"] = value
        else:
            out[key] = copy.deepcopy(value)
    return out


def gemini_function(name: str = TOOL_NAME) -> dict[str, Any]:
    """A Gemini ``FunctionDeclaration`` (put it in ``Tool(function_declarations=[...])``)."""
    return {"name": name, "description": DESCRIPTION, "parameters": _gemini(PARAMETERS)}
