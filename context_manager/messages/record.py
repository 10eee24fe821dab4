"""The normalized record every accepted message becomes: :class:`Message` and its parts.

Counting, grouping, compaction and persistence read this one shape, never the caller's format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from .._js import js_stringify
from ..errors import InvalidMessageError
from .nesting import describe_nesting

ROLES = ("system", "developer", "user", "assistant", "tool")
_ROLE_SET = frozenset(ROLES)


class ToolCall(NamedTuple):
    """One function call requested by the assistant; ``arguments`` is the JSON text sent."""

    id: str
    name: str
    arguments: str


class ToolResult(NamedTuple):
    """A result carried inside a message (Anthropic ``tool_result`` block)."""

    call_id: str
    text: str
    is_error: bool = False


class Image(NamedTuple):
    """An image part; size and detail are optional and only refine real-tokenizer counts."""

    detail: str | None = None
    width: int | None = None
    height: int | None = None


class Media(NamedTuple):
    """A document, audio or video part, described by what providers bill: pages or seconds.

    ``kind`` is ``"document"``, ``"audio"`` or ``"video"``; ``size`` the bytes of inline data
    (0 for a URL or file id); ``pages`` / ``seconds`` are read from those bytes when possible.
    ``chars`` is what the part added to the old ``other`` text (its compact JSON plus the
    newline joining it), which Pi's chars/4 arithmetic still charges, as the TS reference does.
    ``transcript`` is an audio part's transcript when it carries one (OpenAI audio replies,
    Realtime items): with no readable duration, the audio is priced by how long it takes to say.
    """

    kind: str
    mime: str | None = None
    pages: int | None = None
    seconds: float | None = None
    size: int = 0
    chars: int = 0
    transcript: str = ""


@dataclass(slots=True)
class Message:
    """The normalized record every module reads; also accepted as input in its own right.

    ``text`` joins text parts with a newline. A tool result message (OpenAI shape) has role
    ``"tool"`` and ``tool_call_id``; results embedded in a user turn (Anthropic shape) live in
    ``tool_results``. ``other`` holds the compact JSON of content parts we do not model, so they
    still cost tokens rather than silently counting as free.

    Treat records as immutable: they are shared, not copied. (Not ``frozen=True`` because a
    frozen dataclass costs about 1 µs more per message to build, a third of an add.) The role
    is checked at the door, not here: the readers only build records with one of
    :data:`ROLES`, and ``normalize`` refuses a record a caller built with another (a check on
    every construction cost ``trim()`` a tenth of its time).
    """

    role: str
    text: str = ""
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    tool_results: tuple[ToolResult, ...] = ()
    images: tuple[Image, ...] = ()
    thinking: str = ""
    other: str = ""
    #: True for an OpenAI Responses item (a call, an output, a reasoning item each arrive alone;
    #: consecutive call items and a reasoning item before calls form one group).
    item: bool = False
    #: Documents, audio and video (counted by pages / seconds, not by their base64 length).
    media: tuple[Media, ...] = ()
    #: True when the turn carries reasoning its provider checks byte for byte: a signed or
    #: redacted Anthropic / Bedrock thinking block, a Gemini thought signature, a pydantic-ai
    #: thinking part with a signature, an OpenAI Responses reasoning item. Such a turn is sent
    #: as given or not at all, and a reasoning item stays glued to the calls that follow it.
    signed: bool = False
    #: The provider whose native compaction this message carries (``"openai"`` for a Responses
    #: ``compaction`` item, ``"anthropic"`` for a turn holding a ``compaction`` block), else
    #: ``""``. Only that provider can read it, it is sent byte for byte or not at all, and what
    #: precedes the latest one is not sent (see ``budget/compacted.py``).
    compaction: str = ""

    def checked(self, index: int | None = None) -> Message:
        """This record, if its role is one of :data:`ROLES` (a caller's own record, or one read
        back from a store); else ``InvalidMessageError``."""
        if self.role not in _ROLE_SET:
            raise InvalidMessageError(
                f"unknown role {self.role!r}", index=index, hint=f"use one of {', '.join(ROLES)}"
            )
        return self

    @property
    def result_ids(self) -> tuple[str, ...]:
        """Ids of the tool calls this message answers (empty for ordinary messages)."""
        if self.tool_call_id is not None:
            return (self.tool_call_id,)
        return tuple(r.call_id for r in self.tool_results)

    @property
    def results(self) -> tuple[ToolResult, ...]:
        """The tool results this message carries, one shape for both: a tool message's own
        text (never an error: that shape has no flag), or the results embedded in a user turn."""
        if self.tool_call_id is not None:
            return (ToolResult(self.tool_call_id, self.text),)
        return self.tool_results

    @property
    def is_user_turn(self) -> bool:
        """A message the person wrote: role user, unless it only carries tool results.

        Anthropic returns tool results inside user messages; those are not the user's request,
        and protecting them instead would let a long agent loop trim the actual question.
        """
        return self.role == "user" and (bool(self.text) or not self.tool_results)

    @property
    def call_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.tool_calls)

    def to_openai(self) -> dict[str, Any]:
        """Render as an OpenAI chat dict (used by the CLI, persistence and summaries)."""
        out: dict[str, Any] = {"role": self.role}
        content: Any = self.text
        if self.images:
            parts: list[dict[str, Any]] = []
            if self.text:
                parts.append({"type": "text", "text": self.text})
            for img in self.images:
                url: dict[str, Any] = {"url": ""}
                if img.detail:
                    url["detail"] = img.detail
                parts.append({"type": "image_url", "image_url": url})
            content = parts
        out["content"] = content if (content or not self.tool_calls) else None
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


def to_json_text(value: Any) -> str:
    """The exact text JS ``JSON.stringify`` produces (numbers, key order, lone surrogates).

    Python's ``json.dumps`` differs on floats (``1.0`` vs ``1``, ``1e-05`` vs ``0.00001``),
    integer-like keys and lone surrogates, and token counts must match the TypeScript side.

    A value that contains itself or nests deeper than the stack allows, an integer over
    Python's digit limit and a key with no text form raise ``InvalidMessageError`` naming the
    field (the serializer recurses, and Python stops it after a bounded number of frames, so
    this is linear too); ``normalize`` adds the message's index.
    """
    try:
        return js_stringify(value)
    except InvalidMessageError:
        raise
    except RecursionError:
        # Chained to a bare RecursionError (not the one caught, which holds a thousand frames)
        # so that ``normalize`` can tell and name the field from the message's own root.
        raise InvalidMessageError(describe_nesting(value, "the value")) from RecursionError()
    except ValueError as exc:  # an int past sys.get_int_max_str_digits(), or a key like 1.5
        raise InvalidMessageError(
            f"a value has no JSON text: {exc}",
            hint="send long integers as strings, and give objects string keys",
        ) from None
