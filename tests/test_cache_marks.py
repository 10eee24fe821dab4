"""mark_cache_breakpoints with the caller's own cache_control marks: Anthropic's request rules.

Anthropic accepts at most 4 ``cache_control`` marks per request (tools, system and messages
together) and, with mixed TTLs, every 1-hour entry before every 5-minute one. The checks below
walk the marked request independently of the library and hold it to those two rules; the SDK's
own types validate the shape.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager.cache import mark_cache_breakpoints
from context_manager.errors import ConfigurationError

anthropic_types = pytest.importorskip("anthropic.types")
pydantic = pytest.importorskip("pydantic")

MESSAGES = pydantic.TypeAdapter(list[anthropic_types.MessageParam])
SYSTEM = pydantic.TypeAdapter(list[anthropic_types.TextBlockParam])
BIG = "word " * 2000
HOUR = {"type": "ephemeral", "ttl": "1h"}
FIVE = {"type": "ephemeral"}


def ttls(request: list[dict[str, Any]]) -> list[str]:
    """Every cache_control mark of the request, in request order, as its TTL."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("cache_control"):
                found.append(node["cache_control"].get("ttl", "5m"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(request)
    return found


def valid_for_anthropic(request: list[dict[str, Any]], limit: int = 4) -> None:
    marks = ttls(request)
    assert len(marks) <= limit, marks
    assert marks == sorted(marks, key=lambda t: t != "1h"), f"1h after 5m: {marks}"
    SYSTEM.validate_python(request[0]["content"])
    MESSAGES.validate_python(request[1:])


def text(body: str, control: dict[str, str] | None = None) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "text", "text": body}
    if control is not None:
        block["cache_control"] = control
    return [block]


def conversation(turns: int = 3) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": text(BIG)}]
    for t in range(turns):
        out.append({"role": "user", "content": text(f"u{t} " + BIG)})
        out.append({"role": "assistant", "content": f"a{t}"})
    out.append({"role": "user", "content": f"u{turns} " + BIG})
    return out


def test_the_callers_marks_count_against_the_limit() -> None:
    request = conversation()
    request[0]["content"] = text(BIG, HOUR)
    request[1]["content"] = text("u0 " + BIG, FIVE)
    request[3]["content"] = text("u1 " + BIG, FIVE)
    marked = mark_cache_breakpoints(request, "anthropic")
    valid_for_anthropic(marked)
    assert ttls(marked) == ["1h", "5m", "5m", "5m"]
    assert "cache_control" in marked[-1]["content"][-1]  # the one left goes on the last message
    assert marked[0] is request[0]  # the caller's 1h system mark is kept, not overwritten
    assert len(ttls(mark_cache_breakpoints(request, "anthropic", max_breakpoints=3))) == 3


def test_marks_nested_in_a_tool_result_count_too() -> None:
    request = conversation()
    request[3]["content"] = [
        {"type": "tool_result", "tool_use_id": "t1", "content": text("out " + BIG, FIVE)}
    ]
    request[2]["content"] = [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]
    marked = mark_cache_breakpoints(request, "anthropic", max_breakpoints=2)
    valid_for_anthropic(marked, limit=2)
    assert len(ttls(marked)) == 2


def test_a_1h_request_after_the_callers_5m_mark_stays_in_order() -> None:
    request = conversation()
    request[1]["content"] = text("u0 " + BIG, FIVE)
    marked = mark_cache_breakpoints(request, "anthropic", ttl="1h")
    valid_for_anthropic(marked)
    # before the caller's 5m mark the system prompt gets the 1h asked for; after it, 5m
    assert marked[0]["content"][-1]["cache_control"] == HOUR
    assert marked[-1]["content"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}


def test_a_5m_request_before_the_callers_1h_mark_becomes_1h() -> None:
    request = conversation()
    request[3]["content"] = text("u1 " + BIG, HOUR)
    marked = mark_cache_breakpoints(request, "anthropic")
    valid_for_anthropic(marked)
    assert marked[0]["content"][-1]["cache_control"] == HOUR  # the system prompt: before it
    assert marked[-1]["content"][-1]["cache_control"] == FIVE  # the last message: after it


def test_without_marks_of_the_caller_the_ttl_is_the_one_asked_for() -> None:
    marked = mark_cache_breakpoints(conversation(), "anthropic", ttl="1h")
    valid_for_anthropic(marked)
    assert ttls(marked) == ["1h", "1h", "1h"]


@pytest.mark.parametrize(
    ("marks", "limit", "message"),
    [
        ({1: FIVE, 3: HOUR}, 4, "1h cache_control mark after a 5m one"),
        ({0: FIVE, 1: FIVE, 3: FIVE, 5: FIVE, 6: FIVE}, 4, "already carry 5"),
        ({1: FIVE, 3: FIVE}, 1, "already carry 2"),
    ],
)
def test_the_callers_own_invalid_marks_are_a_configuration_error(
    marks: dict[int, dict[str, str]], limit: int, message: str
) -> None:
    request = conversation()
    for i, control in marks.items():
        request[i] = {**request[i], "content": text(f"m{i} " + BIG, control)}
    with pytest.raises(ConfigurationError, match=message):
        mark_cache_breakpoints(request, "anthropic", max_breakpoints=limit)


def test_a_tool_result_that_contains_itself_is_a_typed_error() -> None:
    """Looking for the caller's marks must not loop on a block nested in itself."""
    from context_manager.errors import ContextManagerError

    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": "t1", "content": []}
    block["content"].append(block)
    call = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    messages = [
        {"role": "user", "content": BIG},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [block]},
    ]
    with pytest.raises(ContextManagerError, match="contains itself"):
        mark_cache_breakpoints(messages, "anthropic")


def test_no_breakpoint_is_spent_on_a_prefix_the_model_would_not_cache() -> None:
    """Anthropic's minimum cacheable prompt is 4,096 tokens on Haiku 4.5 and 1,024 on Sonnet 4:
    a 2,000-token prefix is marked for Sonnet 4.5, not for Haiku 4.5."""
    messages = [
        {"role": "user", "content": "word " * 1_600},  # 2,000 tokens by chars/4
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "next"},
    ]
    assert ttls(mark_cache_breakpoints(messages, "anthropic", model="claude-haiku-4-5")) == []
    sonnet = mark_cache_breakpoints(messages, "anthropic", model="claude-sonnet-4-5")
    assert len(ttls(sonnet)) >= 1
    with pytest.raises(ConfigurationError, match="model must be a model name"):
        mark_cache_breakpoints(messages, "anthropic", model=4)  # type: ignore[arg-type]


def test_a_mark_inside_a_tool_result_comes_before_the_result_s_own_mark() -> None:
    """A tool result marked 1h whose text is marked 5m: the 5m entry ends first, so this is a
    1h entry after a 5m one, which Anthropic refuses."""
    inner = {"type": "text", "text": "result", "cache_control": FIVE}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [inner], "cache_control": HOUR}
    call = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    messages = [
        {"role": "user", "content": BIG},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    with pytest.raises(ConfigurationError, match="1h cache_control mark after a 5m one"):
        mark_cache_breakpoints(messages, "anthropic")
