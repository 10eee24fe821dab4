"""OpenAI Responses API / Agents SDK input items, read as records.

Items have a ``type`` instead of (or besides) a ``role``: ``message`` (role plus ``input_text`` /
``output_text`` / ``refusal`` parts), ``function_call`` / ``function_call_output`` and
``custom_tool_call`` / ``custom_tool_call_output`` paired by ``call_id``, ``reasoning`` (summary
text, encrypted content), ``compaction`` and hosted tool calls (web search, file search, ...).
Parallel calls arrive as separate items; the tool protocol joins consecutive call items into
one group, and a ``reasoning`` item into the group of the calls that follow it, so a call is never
sent without its reasoning (see :mod:`.groups`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidMessageError
from .record import Message, ToolCall, to_json_text

__all__ = ["ITEM_TYPES", "from_item"]

#: Item types read without a ``role``.
ITEM_TYPES = frozenset(
    {
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "reasoning",
        "compaction",
        "item_reference",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "program",
        "program_output",
        "tool_search_call",
        "tool_search_output",
        "additional_tools",
        "compaction_trigger",
        "configuration_update",
    }
)
# Hosted / local tool calls paired by call_id like function calls (their JSON is what is sent).
_CALLS = {"computer_call", "local_shell_call", "shell_call", "apply_patch_call", "program"}
_CALLS |= {"tool_search_call"}
_OUTPUTS = {
    "computer_call_output",
    "local_shell_call_output",
    "shell_call_output",
    "apply_patch_call_output",
    "program_output",
    "tool_search_output",
}


def _call_id(item: Mapping[str, Any], index: int | None) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidMessageError(
            f"{item.get('type')} item without a string 'call_id'",
            index=index,
            hint="Responses tool items are paired by call_id",
        )
    return call_id


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):  # a list of input_text / input_image / input_file parts
        texts = [p.get("text", "") for p in output if isinstance(p, Mapping)]
        others = [to_json_text(p) for p in output if isinstance(p, Mapping) and "text" not in p]
        return "\n".join([*texts, *others])
    return to_json_text(output)


def from_item(item: Mapping[str, Any], index: int | None) -> Message:
    """The record of one role-less Responses item (``type`` in :data:`ITEM_TYPES`)."""
    kind = item["type"]
    if kind in ("function_call", "custom_tool_call"):
        name = item.get("name")
        if not isinstance(name, str):
            raise InvalidMessageError(f"{kind} item needs a string 'name'", index=index)
        arguments = item.get("arguments") if kind == "function_call" else item.get("input")
        text = arguments if isinstance(arguments, str) else to_json_text(arguments or {})
        return Message(
            "assistant", item=True, tool_calls=(ToolCall(_call_id(item, index), name, text),)
        )
    paired = isinstance(item.get("call_id"), str)
    if kind in _CALLS and paired:
        return Message(
            "assistant",
            item=True,
            tool_calls=(ToolCall(item["call_id"], kind, to_json_text(item)),),
        )
    if kind == "mcp_approval_request" and isinstance(item.get("id"), str) and item["id"]:
        # Answered by an ``mcp_approval_response`` naming it (``approval_request_id``); the API
        # refuses a response whose request it is not sent, so the two pair like a call.
        return Message(
            "assistant", item=True, tool_calls=(ToolCall(item["id"], kind, to_json_text(item)),)
        )
    answered = item.get("approval_request_id")
    if kind == "mcp_approval_response" and isinstance(answered, str) and answered:
        return Message("tool", item=True, other=to_json_text(item), tool_call_id=answered)
    if kind in _OUTPUTS and (paired or kind == "local_shell_call_output"):
        # The SDK's LocalShellCallOutput names its call by ``id`` (the call's ``call_id``).
        answered = item["call_id"] if paired else item.get("id")
        if isinstance(answered, str) and answered:
            return Message("tool", item=True, other=to_json_text(item), tool_call_id=answered)
    if kind in ("function_call_output", "custom_tool_call_output"):
        return Message(
            "tool",
            item=True,
            text=_output_text(item.get("output")),
            tool_call_id=_call_id(item, index),
        )
    if kind == "reasoning":
        texts = []
        for key in ("summary", "content"):
            parts = item.get(key) or []
            if not isinstance(parts, list | tuple):
                raise InvalidMessageError(
                    f"a reasoning item's {key!r} must be a list of parts, got "
                    f"{type(parts).__name__}",
                    index=index,
                )
            texts += [p.get("text", "") for p in parts if isinstance(p, Mapping)]
        encrypted = item.get("encrypted_content")
        return Message(
            "assistant",
            item=True,
            thinking="\n".join(t for t in texts if isinstance(t, str)),
            other=encrypted if isinstance(encrypted, str) else "",
            signed=True,
        )
    if kind == "compaction":
        # Encrypted and opaque: billed as the blob it is, by its length (never its id or type).
        encrypted = item.get("encrypted_content")
        blob = encrypted if isinstance(encrypted, str) else to_json_text(item)
        return Message("assistant", item=True, other=blob, compaction="openai")
    # item_reference, hosted tool calls: sent back as they are; count their JSON.
    return Message("assistant", item=True, other=to_json_text(item))
