"""What the provider tests share."""

from __future__ import annotations

from typing import Any

from context_manager import MessageContextManager


def manager_context(messages: list[Any], budget: int, provider: str) -> list[Any]:
    """The context a manager under ``provider`` sends for ``messages`` (chars/4, no reserve)."""
    manager = MessageContextManager(budget, reserve_tokens=0, counter="chars", provider=provider)
    for message in messages:
        manager.add(message)
    return manager.get_context()
