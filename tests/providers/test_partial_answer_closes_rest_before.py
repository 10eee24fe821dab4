"""A user turn that answers some of the open calls and says more interrupts the others: their
closure goes right before it. Anthropic and Bedrock merge consecutive user turns, and the turn
after a call turn must begin with all its results; a closure sent after the turn would land
behind its text (the API's 400: "Messages following tool_use blocks must begin with a matching
number of tool_result blocks"). repair(), trim(repair=True) and the manager agree, and
validate() flags the bad shape.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import MessageContextManager, repair, trim
from context_manager.providers import fuse_turns, validate


def anthropic_rule(messages: list[dict[str, Any]]) -> list[str]:
    """Anthropic's rule read from its docs: consecutive user turns are merged into one; the
    turn after an assistant turn with tool_use blocks begins with exactly one tool_result per
    call (no other block before or among them) and holds no other tool_result."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for m in messages:
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if turns and turns[-1][0] == m["role"] == "user":
            turns[-1][1].extend(blocks)
        else:
            turns.append((m["role"], list(blocks)))
    problems = []
    for k, (role, blocks) in enumerate(turns):
        if role != "assistant":
            continue
        uses = sorted(b["id"] for b in blocks if b["type"] == "tool_use")
        if not uses:
            continue
        after = turns[k + 1][1] if k + 1 < len(turns) else []
        lead = []
        for b in after:
            if b["type"] != "tool_result":
                break
            lead.append(b["tool_use_id"])
        every = [b["tool_use_id"] for b in after if b["type"] == "tool_result"]
        if sorted(lead) != uses or len(every) != len(lead):
            problems.append(f"turn {k}: calls {uses}, next turn's results {every}, leading {lead}")
    return problems


U = {"role": "user", "content": "hi"}
A = {"role": "assistant", "content": "ok"}
CALLS = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "t"},
        {"type": "tool_use", "id": "a", "name": "f", "input": {}},
        {"type": "tool_use", "id": "b", "name": "f", "input": {}},
    ],
}


def answer_a(*extra_ids: str) -> dict[str, Any]:
    ids = ("a", *extra_ids)
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": x, "content": f"r{x}"} for x in ids
    ]
    return {"role": "user", "content": [*blocks, {"type": "text", "text": "also"}]}


CASES = {
    "text": [U, CALLS, answer_a(), A],
    "text + stale id": [U, CALLS, answer_a("zz"), A],
    "text, then a user turn": [U, CALLS, answer_a(), U],
}


def outputs(messages: list[dict[str, Any]]) -> dict[str, list[Any]]:
    manager = MessageContextManager(100_000, repair=True, provider="anthropic", counter="chars")
    manager.extend(messages)
    return {
        "repair": repair(messages),
        "trim": trim(messages, 100_000, repair=True, provider="anthropic", counter="chars"),
        "manager": manager.get_context(),
    }


@pytest.mark.parametrize("name", CASES)
def test_every_repair_path_answers_all_calls_first(name: str) -> None:
    got = outputs(CASES[name])
    assert got["repair"] == got["trim"] == got["manager"]
    out = got["repair"]
    assert anthropic_rule(out) == []
    assert validate(out, "anthropic") == []
    # the given turn kept its result and text; b's closure comes right before it
    assert out[3] == answer_a()
    assert [b["tool_use_id"] for b in out[2]["content"]] == ["b"]


def test_the_closure_after_the_turn_is_flagged() -> None:
    closure = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "b", "content": "x", "is_error": True}],
    }
    bad = [U, CALLS, answer_a(), closure, A]
    assert anthropic_rule(bad) != []
    assert [(p.index, p.rule) for p in validate(bad, "anthropic")] == [(3, "results-first")]
    good = [U, CALLS, closure, answer_a(), A]
    assert anthropic_rule(good) == []
    assert validate(good, "anthropic") == []


def test_bedrock_closes_before_and_fuses_into_one_valid_turn() -> None:
    def result(x: str) -> dict[str, Any]:
        return {"toolResult": {"toolUseId": x, "content": [{"text": f"r{x}"}]}}

    calls = {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": x, "name": "f", "input": {}}} for x in "ab"],
    }
    turn = {"role": "user", "content": [result("a"), {"text": "also"}]}
    user = {"role": "user", "content": [{"text": "hi"}]}
    out = repair([user, calls, turn, {"role": "assistant", "content": [{"text": "ok"}]}])
    assert out[3] == turn
    assert [b["toolResult"]["toolUseId"] for b in out[2]["content"]] == ["b"]
    assert validate(out, "bedrock") == []
    fused = fuse_turns(out, "bedrock")
    kinds = [next(iter(b)) for b in fused[2]["content"]]
    assert kinds == ["toolResult", "toolResult", "text"]
    bad = [user, calls, turn, out[2]]
    assert [(p.index, p.rule) for p in validate(bad, "bedrock")] == [(3, "results-first")]


def test_the_default_manager_closes_the_rest_before_the_turn_too() -> None:
    """Without repair: the manager's interruption rule, the same as the repairer's."""
    manager = MessageContextManager(100_000, provider="anthropic", counter="chars")
    manager.extend([U, CALLS, answer_a(), {"role": "user", "content": "next"}])
    out = manager.get_context()
    assert anthropic_rule(out) == [] and validate(out, "anthropic") == []
    assert out[3] == answer_a()
    assert [b["tool_use_id"] for b in out[2]["content"]] == ["b"]
