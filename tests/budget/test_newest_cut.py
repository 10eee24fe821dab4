"""The newest exchange cut head+tail to fit never grows a message (issue: counting safe by
default). Small parallel results cut alongside a big one used to come back longer than they
went in: the head, the tail and the marker outweighed what was cut."""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import trim
from context_manager.budget.pruned import fit_newest_group
from context_manager.counting import get_counter
from context_manager.messages import normalize

SMALL = "The weather in Paris is sunny, 21 degrees, light wind from the west."


def exchange(big_chars: int = 20_000) -> list[dict[str, Any]]:
    calls = [
        {"id": f"c{k}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        for k in range(4)
    ]
    results = [
        {"role": "tool", "tool_call_id": f"c{k}", "content": f"{SMALL} ({k})"} for k in range(3)
    ]
    big = " ".join(f"row {k}: value {k * 7} ok" for k in range(big_chars // 20))
    results.append({"role": "tool", "tool_call_id": "c3", "content": big})
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *results]


@pytest.mark.parametrize("spec", ["estimate", "chars", "tiktoken:o200k_base"])
@pytest.mark.parametrize("slack", [0, 10, 25, 40, 80, 200])
def test_a_cut_never_yields_more_tokens_than_the_message_it_cut(spec: str, slack: int) -> None:
    if spec.startswith("tiktoken"):
        pytest.importorskip("tiktoken")
    counter = get_counter(spec)
    originals = exchange()
    records = [normalize(m) for m in originals]
    before = [counter.count_message(r) for r in records]
    room = sum(before[:4]) + slack  # the big result must shrink to almost nothing
    fit = fit_newest_group(originals, records, room, counter)
    if fit is None:
        return
    after = [counter.count_message(normalize(m)) for m in fit.messages]
    assert all(a <= b for a, b in zip(after, before, strict=True)), (before, after)
    assert fit.tokens == sum(after) <= room
    for new, old in zip(fit.messages[1:4], originals[1:4], strict=True):
        assert new is old  # results too small to gain from a cut are sent as they are


def test_trim_cuts_only_what_gets_smaller() -> None:
    messages = [{"role": "user", "content": "Look these up."}, *exchange()]
    counter = get_counter("estimate")
    budget = counter.count_prompt([normalize(m) for m in messages[:5]]) + 80
    kept = trim(messages, budget)
    assert kept[:5] == messages[:5]
    assert "[Tool result trimmed" in kept[5]["content"]
    assert counter.count_prompt([normalize(m) for m in kept]) <= budget
