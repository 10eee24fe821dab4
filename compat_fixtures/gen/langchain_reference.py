"""LangChain PYTHON's answers for the cases gen/langchain.mjs builds (stdin JSON -> stdout JSON).

The generator uses them only to split cases: those where LangChain.js and LangChain Python agree
become the fixture suite; the others are listed as divergences. This file runs the real
``langchain_core.messages.trim_messages`` and implements the fixtures' "chars4" counter on
LangChain message objects (a third, independent copy of that counter).
"""

from __future__ import annotations

import json
import math
import sys
from importlib.metadata import version
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_messages
from langchain_core.messages.utils import trim_messages

TYPE_NAMES = {"user": "human", "assistant": "ai"}


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def chars4(message: BaseMessage) -> int:
    units = images = 0
    if isinstance(message.content, str):
        units += utf16(message.content)
    else:
        for block in message.content:
            if isinstance(block, dict) and block.get("type") == "text":
                units += utf16(block.get("text") or "")
            elif isinstance(block, dict) and block.get("type") in ("image_url", "image"):
                images += 1
    if isinstance(message.name, str):
        units += utf16(message.name)
    if isinstance(message, ToolMessage):
        units += utf16(message.tool_call_id)
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            arguments = json.dumps(call["args"], ensure_ascii=False, separators=(",", ":"))
            units += utf16(call["id"] or "") + utf16(call["name"]) + utf16(arguments)
    return math.ceil(units / 4) + 3 + 85 * images


def chars4_list(messages: list[BaseMessage]) -> int:
    return sum(chars4(m) for m in messages)


def split_after_spaces(text: str) -> list[str]:
    pieces = text.split(" ")
    return [p + " " for p in pieces[:-1]] + pieces[-1:]


def types(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [TYPE_NAMES.get(v, v) for v in value]
    return TYPE_NAMES.get(value, value)


def run(case: dict[str, Any]) -> Any:
    dicts = [{**m, "id": f"m{i}"} for i, m in enumerate(case["messages"])]
    messages = convert_to_messages(dicts)
    originals = convert_to_messages(dicts)
    try:
        kept = trim_messages(
            messages,
            max_tokens=case["max_tokens"],
            token_counter=chars4_list,
            strategy=case["strategy"],
            allow_partial=case["allow_partial"],
            include_system=case["include_system"],
            start_on=types(case["start_on"]),
            end_on=types(case["end_on"]),
            text_splitter=split_after_spaces if case["splitter"] == "space" else None,
        )
    except ValueError:
        return {"error": "invalid_options"}
    out = []
    for message in kept:
        index = int(str(message.id)[1:])
        entry: dict[str, Any] = {"index": index}
        if message.content != originals[index].content:
            entry["content"] = message.content
        out.append(entry)
    return out


def main() -> None:
    cases = json.load(sys.stdin)
    results = [run(case) for case in cases]
    json.dump(
        {"package": f"langchain-core@{version('langchain-core')}", "results": results},
        sys.stdout,
        ensure_ascii=False,
    )


if __name__ == "__main__":
    main()
