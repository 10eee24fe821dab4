"""Messages in, records out: every accepted shape is normalized once, at the door.

:func:`normalize` turns a caller's message (OpenAI / Anthropic / LangChain / :class:`Message`) into
the :class:`Message` record the rest of the library reads; :mod:`.groups` holds the tool-call
protocol (which messages travel together) and ``repair``.
"""

from __future__ import annotations

from .listing import message_list
from .normalize import normalize
from .record import ROLES, Image, Media, Message, ToolCall, ToolResult, to_json_text

__all__ = [
    "ROLES",
    "Image",
    "Media",
    "Message",
    "ToolCall",
    "ToolResult",
    "message_list",
    "normalize",
    "to_json_text",
]
