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


PNG = "iVBORw0KGgo" + "A" * 300  # a small PNG's base64, as an SDK would carry it


def screenshot_session(log_lines: int) -> list[Any]:
    """A computer-use step: the newest result is a screenshot plus a long log."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    log = {"type": "text", "text": "log line\n" * log_lines}
    return [
        {"role": "user", "content": "screenshot and logs"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "shot", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [image, log]}],
        },
    ]


def result_blocks(context: list[Any]) -> list[str]:
    return [block["type"] for block in context[-1]["content"][0]["content"]]


def test_a_cut_result_keeps_its_image_when_there_is_room_for_it() -> None:
    """The image used to be cleared whenever the result was cut, with room to spare: a
    screenshot tool's result lost its screenshot and kept 9,000 tokens of log."""
    history = screenshot_session(5_000)
    counter = get_counter("tiktoken", model="gpt-4o")
    for budget in (4_000, 12_000):
        context = trim(history, budget, provider="anthropic", model="gpt-4o")
        assert result_blocks(context) == ["text", "image"]  # the cut text, then the image
        assert "log line" in context[-1]["content"][0]["content"][0]["text"]
        assert sum(counter.count_message(normalize(m)) for m in context) <= budget


def test_the_image_goes_when_the_result_fits_only_without_it() -> None:
    history = screenshot_session(5_000)
    image_alone = trim(screenshot_session(0), 100_000, provider="anthropic", model="gpt-4o")
    counter = get_counter("tiktoken", model="gpt-4o")
    least_with_image = sum(counter.count_message(normalize(m)) for m in image_alone)
    context = trim(history, least_with_image - 20, provider="anthropic", model="gpt-4o")
    assert "image" not in result_blocks(context)
    assert "[image removed" in str(context[-1]["content"])
