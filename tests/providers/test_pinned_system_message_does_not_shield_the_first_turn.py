"""Anthropic, Bedrock and Gemini read system messages apart from the conversation, whose first
turn must be the user's (Anthropic: "the first message must use the user role"). A system
message kept in the history (pinned, as the framework integrations pin a leading system message
next to the framework's own prompt) does not exempt the turn after it: when the window starts on
an assistant turn, that turn is left out, by the manager and by ``trim()`` alike.

The check is written here from the documented rule (roles only), not with ``validate()``.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import MessageContextManager, trim


def history() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are careful."},
        {"role": "system", "content": "Project rules: be terse."},
    ]
    for n in range(6):
        out.append({"role": "user", "content": f"Question {n} " + "x " * 30})
        out.append({"role": "assistant", "content": "Answer " * 60})
    out.append({"role": "user", "content": "last"})
    return out


def first_turn(context: list[dict[str, Any]]) -> str:
    return next(m["role"] for m in context if m["role"] not in ("system", "developer"))


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
@pytest.mark.parametrize("budget", [300, 400, 500, 700, 900])
def test_the_first_turn_after_pinned_system_messages_is_the_users(
    provider: str, budget: int
) -> None:
    messages = history()
    manager = MessageContextManager(budget, counter="chars", provider=provider, reserve_tokens=0)
    manager.add(messages[0])  # the system prompt
    manager.add(messages[1], pinned=True)
    manager.extend(messages[2:])
    context = manager.get_context()
    assert context[:2] == messages[:2]  # both system messages are sent
    assert first_turn(context) == "user"
    assert context[-1] == messages[-1]
    trimmed = trim(messages, budget, counter="chars", provider=provider, pinned={1})
    assert trimmed == context
