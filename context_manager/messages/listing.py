"""The one check every public entry point taking a list of messages makes of it.

``trim()``, ``count_tokens()``, ``validate()`` and the manager's ``extend()`` accept any
iterable of messages; a value that is not one (None, a string, a single message dict) would
otherwise fail deep inside with a bare ``TypeError``, or be read character by character.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigurationError

__all__ = ["message_list"]


def message_list(messages: object) -> list[Any]:
    """``messages`` as a list (a list or tuple as given); ``ConfigurationError`` for a value that
    is not an iterable of messages."""
    if isinstance(messages, list):
        return messages
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise ConfigurationError(
            f"messages must be a list of messages, got {type(messages).__name__}"
        )
    return list(messages)
