"""mark_cache_breakpoints: Anthropic cache_control on copies, validated with the anthropic SDK."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from context_manager import trim
from context_manager.cache import mark_cache_breakpoints
from context_manager.errors import ConfigurationError, InvalidMessageError

anthropic_types = pytest.importorskip("anthropic.types")
pydantic = pytest.importorskip("pydantic")

MESSAGES = pydantic.TypeAdapter(list[anthropic_types.MessageParam])
SYSTEM = pydantic.TypeAdapter(list[anthropic_types.TextBlockParam])


def session(turns: int) -> list[dict[str, Any]]:
    """An Anthropic-shaped agent session: system, then user / tool_use / tool_result / text."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are terse. " * 400}]
    for t in range(turns):
        out.append({"role": "user", "content": f"question {t}: " + "why " * 300})
        out.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {
                        "type": "tool_use",
                        "id": f"tu{t}",
                        "name": "read",
                        "input": {"path": f"f{t}.py"},
                    },
                ],
            }
        )
        out.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"tu{t}", "content": "x = 1\n" * 200},
                ],
            }
        )
        out.append({"role": "assistant", "content": f"answer {t}"})
    return out


def breakpoints(messages: list[Any]) -> list[int]:
    found = []
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else []
        found += [i for b in blocks if "cache_control" in b]
    return found


def test_marks_copies_and_the_sdk_accepts_them() -> None:
    history = session(30)
    before = copy.deepcopy(history)
    context = trim(history, 20_000, retention_ratio=0.7)
    marked = mark_cache_breakpoints(context)
    assert history == before
    points = breakpoints(marked)
    assert 1 <= len(points) <= 4
    assert len(marked) - 1 in points and 0 in points
    for i, (a, b) in enumerate(zip(context, marked, strict=True)):
        assert (a is b) == (i not in points)  # marked: a copy; the rest: the caller's object
    for m in context:  # the caller's objects carry no breakpoint
        blocks = m["content"] if isinstance(m["content"], list) else []
        assert not any("cache_control" in b for b in blocks)
    system, rest = marked[0], marked[1:]
    SYSTEM.validate_python(system["content"])  # what Anthropic takes as system=
    MESSAGES.validate_python(rest)
    assert system["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_short_prefixes_are_not_marked_and_the_cap_holds() -> None:
    short = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert mark_cache_breakpoints(short) == short
    assert breakpoints(mark_cache_breakpoints(short, min_tokens=0)) == [1]
    history = session(5)
    assert len(breakpoints(mark_cache_breakpoints(history, max_breakpoints=1))) == 1
    assert breakpoints(mark_cache_breakpoints(history, max_breakpoints=0)) == []
    marked = mark_cache_breakpoints(history, ttl="1h")
    assert marked[-1]["content"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_openai_needs_no_marks() -> None:
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    out = mark_cache_breakpoints(history, "openai")
    assert (
        out == history
        and out is not history
        and all(a is b for a, b in zip(out, history, strict=False))
    )


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"provider": "gemini"}, ConfigurationError),
        ({"max_breakpoints": 5}, ConfigurationError),
        ({"max_breakpoints": True}, ConfigurationError),
        ({"min_tokens": -1}, ConfigurationError),
        ({"ttl": "2h"}, ConfigurationError),
    ],
)
def test_bad_options_raise_typed_errors(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        mark_cache_breakpoints([{"role": "user", "content": "x"}], **kwargs)


@pytest.mark.parametrize(
    "bad",
    [
        "text",
        {"content": "no role"},
        {"role": "user", "content": 3},
        {"role": "user", "content": ["not a block"]},
    ],
)
def test_wrong_shapes_raise_invalid_message(bad: Any) -> None:
    with pytest.raises(InvalidMessageError, match="message 1"):
        mark_cache_breakpoints([{"role": "user", "content": "ok"}, bad])


def test_large_and_odd_text_is_marked_without_loss() -> None:
    text = "\ud800 lone surrogate " + " " * 1_000_000 + "😀"
    marked = mark_cache_breakpoints([{"role": "user", "content": text}])
    assert marked[0]["content"] == [
        {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}
    ]
