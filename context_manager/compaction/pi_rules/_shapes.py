"""Pi's JSON shapes, its default settings and the helpers every rule module shares.

Inputs are Pi's own JSON shapes, camelCase as Pi writes them: agent messages (``role`` user,
assistant, toolResult, bashExecution, custom, branchSummary, compactionSummary) and session
entries (``{"type": "message", "id", "parentId", "timestamp", "message"}`` and the other entry
types). Lengths are UTF-16 code units, JSON is JS ``JSON.stringify`` and truthiness is JS
truthiness (see ``_js.py``).

A key that is absent stands for JS ``undefined`` and a ``None`` value for ``null``; where Pi would
throw on malformed input (e.g. a ``null`` content block) we raise ``InvalidMessageError``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ..._js import js_len
from ...errors import ConfigurationError, InvalidMessageError

PiMessage = Mapping[str, Any]
"""An agent message in Pi's JSON shape (``role`` plus role-specific fields)."""
PiEntry = Mapping[str, Any]
"""A session entry in Pi's JSON shape (``type``, ``id``, ``parentId``, ``timestamp``, ...)."""
Usage = Mapping[str, Any]
"""Pi's usage record: ``input``, ``output``, ``cacheRead``, ``cacheWrite``, ``totalTokens``."""

DEFAULT_COMPACTION_SETTINGS: Mapping[str, Any] = MappingProxyType(
    {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000}
)

IMAGE_CHARS = 4800
"""Characters Pi charges per image block in tool results and custom messages (1200 tokens)."""
TOOL_RESULT_MAX_CHARS = 2000
"""Tool results longer than this (UTF-16 units) are cut when serialized for summarization."""

_ABSENT: Any = object()  # JS ``undefined``: distinct from ``None`` (JS ``null``)


def _blocks(
    content: Any, where: str, *, strings_iterate: bool = True
) -> Iterator[Mapping[str, Any]]:
    """Content blocks as Pi walks them: objects are used, other scalars have no ``type``.

    ``for (const b of content)`` accepts a string (its characters are no blocks), while
    ``content.filter(...)`` throws on one: ``strings_iterate`` picks which of the two Pi uses.
    """
    if isinstance(content, str):
        if strings_iterate:
            return
        raise InvalidMessageError(
            f"{where}: content must be a list of blocks here, not a string",
            hint="Pi calls content.filter(), which strings lack",
        )
    if not isinstance(content, Sequence):
        raise InvalidMessageError(
            f"{where}: content must be a string or a list of blocks",
            hint=f"got {type(content).__name__}",
        )
    for block in content:
        if block is None:
            raise InvalidMessageError(
                f"{where}: content holds a null block", hint="Pi throws on null blocks; drop them"
            )
        if isinstance(block, Mapping):
            yield block


def _pi_object(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` if it is an object (Pi reads its fields); ``InvalidMessageError`` otherwise,
    where Pi would throw reading a field of ``null`` or of a non-object."""
    if not isinstance(value, Mapping):
        raise InvalidMessageError(f"{where} must be an object, got {type(value).__name__}")
    return value


def _setting_number(settings: Mapping[str, Any], key: str) -> float:
    """A numeric setting as JS arithmetic sees it: absent is NaN (all comparisons false),
    ``null`` is 0."""
    value = settings.get(key, math.nan)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(f"compaction setting {key!r} must be a number, got {value!r}")
    return value


def _text_len(value: Any, where: str) -> int:
    if not isinstance(value, str):
        raise InvalidMessageError(f"{where} must be a string, got {type(value).__name__}")
    return js_len(value)
