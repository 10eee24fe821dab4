"""Configuration keys ``MessageContextManager.from_config`` accepts: snake_case and the TS port's
camelCase, each mapped to the constructor argument it sets."""

from __future__ import annotations

__all__ = ["CONFIG_KEYS"]

CONFIG_KEYS = {
    "max_tokens": "max_tokens",
    "maxTokens": "max_tokens",
    "contextLength": "max_tokens",
    "context_length": "max_tokens",
    "contextWindow": "max_tokens",
    "context_window": "max_tokens",
    "model": "model",
    "counter": "counter",
    "tokenCounter": "counter",
    "strategy": "strategy",
    "reserveRatio": "reserve_ratio",
    "reserve_ratio": "reserve_ratio",
    "reserveTokens": "reserve_tokens",
    "reserve_tokens": "reserve_tokens",
    "maxMessages": "max_messages",
    "max_messages": "max_messages",
    "warnRatio": "warn_ratio",
    "warn_ratio": "warn_ratio",
    "warningThreshold": "warn_ratio",
    "repair": "repair",
    "systemPrompt": "system_prompt",
    "system_prompt": "system_prompt",
    "tools": "tools",
}
