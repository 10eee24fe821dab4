"""Manager options: the keys ``from_config`` accepts and the checks every option passes.

Kept apart from the manager so its constructor reads as what it builds, not how it validates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ConfigurationError
from .messages.nesting import MAX_DEPTH, short_repr, too_deep
from .models import SAFE_INT, get_model

__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_MAX_TOKENS",
    "SAFE_INT",
    "budget_options",
    "check_count",
    "check_int",
    "check_tool_nesting",
    "checked_hook",
    "checked_tools",
    "window_for",
]

#: Context window used when neither ``max_tokens`` nor ``model`` is given.
DEFAULT_MAX_TOKENS = 128_000

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
    "retentionRatio": "retention_ratio",
    "retention_ratio": "retention_ratio",
    "warnRatio": "warn_ratio",
    "warn_ratio": "warn_ratio",
    "warningThreshold": "warn_ratio",
    "repair": "repair",
    "calibrate": "calibrate",
    "systemPrompt": "system_prompt",
    "system_prompt": "system_prompt",
    "tools": "tools",
}


def check_int(name: str, value: Any, minimum: int | None = 0, maximum: int | None = None) -> int:
    """``value`` if it is an int in ``[minimum, maximum]`` (None: unbounded), else a
    :class:`ConfigurationError` naming ``name``. ``bool``, though an int subclass, is refused:
    ``True`` as a count is a mistake, not a 1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        if maximum is not None:
            wanted = f"an int from {minimum} to {maximum}"
        elif minimum is None:
            wanted = "an int"
        else:
            wanted = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ConfigurationError(f"{name} must be {wanted}, got {short_repr(value, 60)}")
    return int(value)


def check_flag(name: str, value: Any) -> bool:
    """``value`` if it is a bool; else a ``ConfigurationError`` (``"no"`` or ``0`` read as a
    truth value would switch an option on or off against the caller's intent)."""
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False, got {value!r:.60}")
    return value


def check_count(name: str, value: Any) -> int:
    """A token count given by the caller (a stored count, a usage report): an int from 0 to
    2**53, the range every count we hold stays in (a larger one would overflow the float
    ratios calibration takes, and no window comes near it)."""
    return check_int(name, value, 0, SAFE_INT)


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


def window_for(max_tokens: Any, model: Any) -> int:
    """The context window: ``max_tokens``, else the model's, else :data:`DEFAULT_MAX_TOKENS`.

    A ``max_tokens`` above the model's window is refused rather than clamped, so a typo cannot
    silently shrink or grow a budget.
    """
    if model is not None and not isinstance(model, str):
        raise ConfigurationError(f"model must be a model name, got {short_repr(model, 60)}")
    limit = get_model(model).context_window if model else None
    if max_tokens is None:
        return limit or DEFAULT_MAX_TOKENS
    window = check_int("max_tokens", max_tokens, 1)
    if window > SAFE_INT:
        raise ConfigurationError(f"max_tokens must be at most 2**53, got {short_repr(window, 60)}")
    if limit is not None and window > limit:
        raise ConfigurationError(
            f"max_tokens={window} exceeds {model}'s context window of {limit} tokens; "
            "pass a smaller max_tokens or omit it to use the model's window"
        )
    return window


def budget_options(
    max_tokens: Any, model: Any, reserve_ratio: Any, reserve_tokens: Any, warn_ratio: Any
) -> tuple[int, int]:
    """Checked ``(window, reserve_tokens)``; a :class:`ConfigurationError` names a bad option."""
    window = window_for(max_tokens, model)
    if reserve_tokens is None:
        if not _number(reserve_ratio) or not 0 <= reserve_ratio < 1:
            raise ConfigurationError(
                f"reserve_ratio must be in [0, 1), got {short_repr(reserve_ratio, 60)}"
            )
        reserve_tokens = int(window * reserve_ratio)
    reserve_tokens = check_int("reserve_tokens", reserve_tokens, 0, window - 1)
    if not _number(warn_ratio) or not 0 < warn_ratio <= 1:
        raise ConfigurationError(f"warn_ratio must be in (0, 1], got {short_repr(warn_ratio, 60)}")
    return window, reserve_tokens


def checked_tools(tools: Any) -> tuple[Any, ...] | None:
    """Tool definitions as a tuple (None for none), refused when they nest too deeply.

    Every counter serializes or walks the schemas, recursively; a schema that contains itself
    or nests past :data:`~context_manager.messages.nesting.MAX_DEPTH` is refused here, once,
    with the path, instead of as a ``RecursionError`` from whichever counter reads it first.
    """
    if tools is None:
        return None
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise ConfigurationError(
            f"tools must be a list of tool definitions, got {short_repr(tools, 200)}"
        )
    defs = tuple(tools)
    for i, tool in enumerate(defs):  # a dict or an SDK's tool object; never a bare value
        if tool is None or isinstance(tool, str | bytes | int | float | list | tuple):
            raise ConfigurationError(
                f"tool definition {i} must be an object (a dict or an SDK tool), got "
                f"{short_repr(tool, 80)}"
            )
    check_tool_nesting(defs)
    return defs or None


def check_tool_nesting(tools: Sequence[Any]) -> None:
    """Raise ``ConfigurationError`` naming the tool and field that nest too deeply."""
    where = too_deep(tools, root="tools")
    if where is not None:
        raise ConfigurationError(
            f"tools: {where}; a tool definition may nest at most {MAX_DEPTH} levels of lists "
            "and objects"
        )


def checked_hook(name: str, hook: Any) -> Any:
    if hook is not None and not callable(hook):
        raise ConfigurationError(f"{name} must be callable, got {short_repr(hook, 60)}")
    return hook


def options_from_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Constructor options from a dict with snake_case or TS-style camelCase keys."""
    if not isinstance(config, Mapping):
        raise ConfigurationError(f"config must be a mapping, got {type(config).__name__}")
    options: dict[str, Any] = {}
    for key, value in config.items():
        target = CONFIG_KEYS.get(key) if isinstance(key, str) else None
        if target is None:
            raise ConfigurationError(
                f"unknown config key {short_repr(key, 60)}; known keys: "
                f"{', '.join(sorted(CONFIG_KEYS))}"
            )
        options[target] = value
    return options


def check_message_options(priority: Any, pinned: Any) -> None:
    """``add()``'s options: a priority (:func:`check_priority`) and a pin flag that is a bool.
    The manager calls this only when either is not of its type, so an add pays no call."""
    check_priority(priority)
    check_flag("pinned", pinned)


def check_priority(priority: Any) -> int:
    """A message priority: exactly an int (bool and other int subclasses are refused). Any int
    ranks; a store keeps only those within +-2**53 (``store.records.message_record``)."""
    if type(priority) is not int:
        raise ConfigurationError(f"priority must be an int, got {short_repr(priority, 60)}")
    return priority
