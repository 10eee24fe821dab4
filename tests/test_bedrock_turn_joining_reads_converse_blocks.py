"""Bedrock turn joining reads Converse block kinds as it reads Anthropic ones.

Converse blocks name their kind by their key (``text``, ``toolUse``, ``toolResult``,
``reasoningContent``). Claude on Bedrock wants reasoning to open the assistant turn, nothing
after a ``toolUse`` in its turn, and tool results before other user content; a join that
breaks one of these makes a request Bedrock rejects.
"""

from __future__ import annotations

from typing import Any

from context_manager import MessageContextManager
from context_manager.providers import fuse_turns

_KIND = {"text": "text", "toolUse": "call", "toolResult": "result", "reasoningContent": "reasoning"}


def _broken(messages: list[dict[str, Any]]) -> list[str]:
    """Converse rules, checked on each turn's block keys."""
    out = []
    for i, m in enumerate(messages):
        kinds = [_KIND[next(iter(b))] for b in m["content"]]
        if "reasoning" in kinds and kinds[0] != "reasoning":
            out.append(f"{i}: reasoning not first")
        if "call" in kinds and kinds[-1] != "call":
            out.append(f"{i}: content after a toolUse")
        if "result" in kinds and kinds.index("text" if "text" in kinds else "result") < kinds.index(
            "result"
        ):
            out.append(f"{i}: text before tool results")
    return out


def _assistant_pair() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"text": "Fix the bug."}]},
        {"role": "assistant", "content": [{"text": "Let me look first."}]},
        {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "Need it.", "signature": "c2ln"}}},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "read", "input": {"p": "a.py"}}},
            ],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "x = 1"}]}}],
        },
    ]


def test_reasoning_is_not_joined_after_text() -> None:
    m = MessageContextManager(8_000, provider="bedrock")
    m.extend(_assistant_pair())
    ctx = m.get_context()
    assert _broken(ctx) == []
    assert [b for t in ctx for b in t["content"]] == [
        b for t in _assistant_pair() for b in t["content"]
    ]


def test_nothing_is_joined_after_a_tool_use() -> None:
    turns = [
        {"role": "user", "content": [{"text": "Go."}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}],
        },
        {"role": "assistant", "content": [{"text": "Done."}]},
    ]
    assert _broken(fuse_turns(turns, "bedrock")) == []


def test_tool_results_are_not_joined_after_text() -> None:
    turns = [
        {"role": "user", "content": [{"text": "Go."}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "1"}]}}],
        },
    ]
    assert _broken(fuse_turns(turns, "bedrock")) == []


def test_safe_converse_joins_still_happen() -> None:
    turns = [
        {"role": "user", "content": [{"text": "a"}]},
        {"role": "user", "content": [{"text": "b"}]},
    ]
    assert fuse_turns(turns, "bedrock") == [
        {"role": "user", "content": [{"text": "a"}, {"text": "b"}]}
    ]


def test_converse_is_judged_as_anthropic_shape() -> None:
    anthropic = [
        {"role": "user", "content": [{"type": "text", "text": "Fix the bug."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look first."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Need it.", "signature": "c2ln"},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}},
            ],
        },
    ]
    converse = _assistant_pair()[:3]
    assert len(fuse_turns(converse, "bedrock")) == len(fuse_turns(anthropic, "bedrock")) == 3


def test_a_long_run_of_turns_to_join_costs_what_it_holds() -> None:
    """n same-role turns (Bedrock) or n contents answering one call turn (Gemini) are joined in
    O(n) calls: each join used to read and copy the growing turn again (4,000 same-role user
    turns: 9 s in ``trim()``, and in every ``get_context()``)."""
    from context_manager import trim

    from .linear_time import python_calls

    def same_role(n: int) -> list[dict[str, Any]]:
        return [{"role": "user", "content": f"m{i}"} for i in range(n)]

    def answers(n: int) -> list[dict[str, Any]]:
        call = {
            "role": "model",
            "parts": [
                {"function_call": {"name": "f", "args": {}, "id": f"c{i}"}} for i in range(n)
            ],
        }
        results = [
            {
                "role": "user",
                "parts": [{"function_response": {"name": "f", "response": {}, "id": f"c{i}"}}],
            }
            for i in range(n)
        ]
        return [{"role": "user", "parts": [{"text": "go"}]}, call, *results]

    def cost(messages: list[dict[str, Any]], provider: str) -> int:
        return python_calls(lambda: trim(messages, 10**7, counter="chars", provider=provider))

    for build, provider in ((same_role, "bedrock"), (answers, "gemini")):
        joined = trim(build(800), 10**7, counter="chars", provider=provider)
        assert len(joined) == (1 if provider == "bedrock" else 3)  # each run sent as one turn
        assert cost(build(800), provider) < 6 * cost(build(200), provider), provider  # not 16x
