"""Hypothesis strategies for random, protocol-valid conversations (OpenAI and Anthropic shapes)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

TEXTS = st.lists(
    st.sampled_from([*list("abcdef xyz.,\n"), "é", "中", "文", "😀", "🧪", "é"]),
    max_size=60,
).map("".join)


@st.composite
def turn(draw: st.DrawFn, n: int, anthropic: bool) -> list[dict[str, Any]]:
    """One step of a chat: a user message, an assistant text, or a (parallel) tool-call group."""
    kind = draw(st.sampled_from(["user", "assistant", "tools", "tools", "system"]))
    if kind == "user":
        return [{"role": "user", "content": draw(TEXTS)}]
    if kind == "assistant":
        return [{"role": "assistant", "content": draw(TEXTS)}]
    if kind == "system":
        return [{"role": "system", "content": draw(TEXTS)}]
    k = draw(st.integers(1, 3))
    ids = [f"t{n}_{j}" for j in range(k)]
    args = [draw(TEXTS) for _ in ids]
    results = [draw(TEXTS) for _ in ids]
    if anthropic:
        call = {
            "role": "assistant",
            "content": [{"type": "text", "text": draw(TEXTS)}]
            + [
                {"type": "tool_use", "id": i, "name": "fn", "input": {"q": a}}
                for i, a in zip(ids, args, strict=True)
            ],
        }
        if draw(st.booleans()):
            blocks: list[Any] = [
                {"type": "tool_result", "tool_use_id": i, "content": r}
                for i, r in zip(ids, results, strict=True)
            ]
            if draw(st.booleans()):
                blocks.append({"type": "text", "text": draw(TEXTS)})
            return [call, {"role": "user", "content": blocks}]
        return [call] + [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": r}]}
            for i, r in zip(ids, results, strict=True)
        ]
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "fn", "arguments": f'{{"q":"{a}"}}'}}
            for i, a in zip(ids, args, strict=True)
        ],
    }
    return [call] + [
        {"role": "tool", "tool_call_id": i, "content": r} for i, r in zip(ids, results, strict=True)
    ]


@st.composite
def conversation(draw: st.DrawFn, max_turns: int = 30, min_turns: int = 0) -> list[dict[str, Any]]:
    anthropic = draw(st.booleans())
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(TEXTS)})
    for n in range(draw(st.integers(min_turns, max_turns))):
        messages.extend(draw(turn(n, anthropic)))
    return messages
