"""Provider-native compaction items built with the real SDK classes, and an independent check
of the providers' rule on a returned context.

OpenAI Responses: ``ResponseCompactionItem`` (``responses.compact`` output, encrypted). Anthropic:
a ``BetaMessage`` whose content starts with a ``BetaCompactionBlock`` (server compaction,
``compact_20260112``). The check reads each message as the JSON it is sent as (the SDK's own
``model_dump``) and shares no code with the library.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Collection, Sequence
from typing import Any


def blob(k: int, size: int = 120) -> str:
    """An opaque, base64-looking payload (what an encrypted compaction carries)."""
    raw = f"compacted-state-{k}-".encode() * (size // 16 + 1)
    return base64.b64encode(raw).decode()[:size]


def openai_item(k: int, size: int = 120) -> Any:
    """A Responses ``compaction`` output item, as ``responses.compact(...).output`` holds it."""
    from openai.types.responses import ResponseCompactionItem

    return ResponseCompactionItem.model_validate(
        {"id": f"cmp_{k:04d}", "type": "compaction", "encrypted_content": blob(k, size)}
    )


def openai_compacted(k: int, size: int = 120) -> Any:
    """A whole ``CompactedResponse`` (what ``client.responses.compact`` returns)."""
    from openai.types.responses import CompactedResponse

    return CompactedResponse.model_validate(
        {
            "id": f"resp_{k}",
            "created_at": 1_760_000_000 + k,
            "object": "response.compaction",
            "output": [openai_item(k, size).model_dump(mode="json")],
            "usage": {
                "input_tokens": 900,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": 80,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 980,
            },
        }
    )


def anthropic_block(k: int) -> Any:
    from anthropic.types.beta import BetaCompactionBlock

    return BetaCompactionBlock.model_validate(
        {
            "type": "compaction",
            "content": f"Summary {k}: the user is refactoring module m{k}; tests pass.",
            "signature": blob(k, 64),
        }
    )


def anthropic_turn(k: int) -> Any:
    """The assistant turn Anthropic returns when it compacts (``pause_after_compaction``)."""
    from anthropic.types.beta import BetaMessage

    return BetaMessage.model_validate(
        {
            "id": f"msg_cmp_{k}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [anthropic_block(k).model_dump(mode="json", exclude_none=True)],
            "stop_reason": "compaction",
            "stop_sequence": None,
            "usage": {"input_tokens": 1200, "output_tokens": 90},
        }
    )


def as_json(message: Any) -> Any:
    """The JSON a message is sent as (SDK objects through their own serializer)."""
    if hasattr(message, "model_dump"):
        return message.model_dump(mode="json", exclude_none=True)
    if isinstance(message, dict):
        return {key: as_json(value) for key, value in message.items()}
    if isinstance(message, list | tuple):
        return [as_json(value) for value in message]
    return message


def holds_compaction(message: Any) -> bool:
    data = as_json(message)
    if not isinstance(data, dict):
        return False
    if data.get("type") == "compaction":
        return True
    content = data.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "compaction" for b in content
    )


def check_rule(
    given: Sequence[Any], context: Sequence[Any], pinned: Collection[int] = ()
) -> list[str]:
    """What breaks the providers' rule in ``context`` (made from ``given``): a compaction item
    that is not byte-identical to one given, or a message from before the latest compaction
    item that is neither the system prompt (message 0) nor pinned."""
    problems = []
    where = {id(m): i for i, m in enumerate(given)}
    latest = max((i for i, m in enumerate(given) if holds_compaction(m)), default=-1)
    for k, message in enumerate(context):
        i = where.get(id(message))
        if holds_compaction(message):
            same = i is not None and json.dumps(as_json(given[i])) == json.dumps(as_json(message))
            if not same:
                problems.append(f"context[{k}] is a compaction item not sent as given")
        if i is None:
            continue
        system = i == 0 and isinstance(message, dict) and message.get("role") == "system"
        if i < latest and not system and i not in pinned:
            problems.append(f"context[{k}] (message {i}) precedes the latest compaction {latest}")
    return problems
