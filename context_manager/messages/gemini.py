"""Gemini ``contents`` (google-genai ``Content`` or its dict), read as records.

A content has ``role`` ``user`` or ``model`` and ``parts``: ``text`` (``thought: true`` marks a
thought summary), ``function_call`` ``{name, args, id?}``, ``function_response``
``{name, response, id?}``, ``inline_data`` / ``file_data`` (media) and an opaque
``thought_signature`` that Gemini 3 requires back (it is kept in the caller's object, and its
size is counted). Gemini pairs a response with its call by ``id`` when the API gave one, else by
position: the API returns parallel calls without ids (the same function may be called twice in
one turn) and takes their responses, in one content, in the same order. Such a call gets the id
``~name`` (the second call of that function in its turn ``~name~2``, and so on), and so does the
response in the same place of the next content: the k-th response to ``name`` answers the k-th
call to it, as Gemini reads them. Those ids may repeat from turn to turn (the protocol allows
ids that start with ``~`` to), so every rule pairs them like any other id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidMessageError
from .media import add_blob
from .record import Image, Media, Message, ToolCall, ToolResult, to_json_text
from .sdk import as_part

__all__ = ["answered_calls", "from_content", "is_gemini_content", "positional_ids"]


def is_gemini_content(message: Mapping[str, Any]) -> bool:
    return "parts" in message and message.get("role") in ("user", "model", None)


def positional_ids(entries: list[tuple[str, Any]]) -> list[str]:
    """The ids of one content's calls (or responses), given as ``(name, id)`` in order: the id
    given, else ``~name`` for the first id-less one of that name, ``~name~k`` for the k-th."""
    seen: dict[str, int] = {}
    out = []
    for name, given in entries:
        if isinstance(given, str) and given:
            out.append(given)
            continue
        k = seen[name] = seen.get(name, 0) + 1
        out.append(f"~{name}" if k == 1 else f"~{name}~{k}")
    return out


def _place(call_id: str) -> tuple[str, int]:
    """``~name~k`` as ``(name, k)`` (``~name``: k = 1); Gemini function names hold no ``~``."""
    name, _, k = call_id[1:].rpartition("~")
    # ASCII digits only ("²" is a digit to str.isdigit, not to int), and few of them
    ordinal = name and k.isascii() and k.isdigit() and len(k) <= 9
    return (name, int(k)) if ordinal else (call_id[1:], 1)


def answered_calls(result_ids: tuple[str, ...], pending: Iterable[str]) -> tuple[str, ...]:
    """The open calls (ids in ``pending``, in call order) that one message's results answer:
    an id-less response ``~name~k`` answers the k-th still-open id-less call to ``name`` (what
    it answers when Gemini reads the contents joined); any other id stands for itself. One with
    no such open call answers nothing: it becomes an id no call has (the protocol then names
    the problem, and a repair drops that response alone)."""
    if not any(rid[:1] == "~" for rid in result_ids):
        return result_ids  # every provider but Gemini without ids: nothing to read
    wanted: dict[str, int] = {}  # function name -> the most open calls to it needed
    for rid in result_ids:
        if rid[:1] == "~":
            name, k = _place(rid)
            wanted[name] = max(wanted.get(name, 0), k)
    # the open calls in call order, read only as far as needed (responses usually answer the
    # oldest open calls, so a message costs its own responses, not every call still open)
    open_by_name: dict[str, list[str]] = {name: [] for name in wanted}
    short = len(wanted)
    for call_id in pending:
        if call_id[:1] == "~":
            name = _place(call_id)[0]
            calls = open_by_name.get(name)
            if calls is not None and len(calls) < wanted[name]:
                calls.append(call_id)
                if len(calls) == wanted[name]:
                    short -= 1
                    if not short:
                        break
    out = []
    for rid in result_ids:
        if rid[:1] == "~":
            name, k = _place(rid)
            found = open_by_name[name]
            # no k-th open call: an id no call has (a name holds no "~"), so an extra response
            # cannot pass for the call another one of this message answers
            rid = found[k - 1] if k <= len(found) else rid + "~"
        out.append(rid)
    return tuple(out)


def from_content(message: Mapping[str, Any], index: int | None) -> Message:
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise InvalidMessageError("Gemini content needs a list of 'parts'", index=index)
    role = "assistant" if message.get("role") == "model" else "user"
    texts: list[str] = []
    thoughts: list[str] = []
    other: list[str] = []
    calls: list[tuple[str, Any, str]] = []  # (name, id given, arguments)
    results: list[tuple[str, Any, str]] = []  # (name, id given, response)
    images: list[Image] = []
    media: list[Media] = []
    signed = False
    for part in map(as_part, parts, [index] * len(parts)):
        if not isinstance(part, Mapping):
            raise InvalidMessageError("Gemini parts must be objects", index=index)
        if isinstance(part.get("text"), str):
            (thoughts if part.get("thought") else texts).append(part["text"])
        call = part.get("function_call") or part.get("functionCall")
        if isinstance(call, Mapping):
            name = call.get("name")
            if not isinstance(name, str):
                raise InvalidMessageError("function_call needs a string 'name'", index=index)
            calls.append((name, call.get("id"), to_json_text(call.get("args") or {})))
        response = part.get("function_response") or part.get("functionResponse")
        if isinstance(response, Mapping):
            text = to_json_text(response.get("response") or {})
            results.append((str(response.get("name", "")), response.get("id"), text))
        blob = part.get("inline_data") or part.get("inlineData") or part.get("file_data")
        if blob:
            _media(blob, images, media)
        signature = part.get("thought_signature") or part.get("thoughtSignature")
        if isinstance(signature, str):
            other.append(signature)
            signed = True
    call_ids = positional_ids([(name, given) for name, given, _ in calls])
    result_ids = positional_ids([(name, given) for name, given, _ in results])
    return Message(
        role,
        text="\n".join(texts),
        tool_calls=tuple(ToolCall(i, c[0], c[2]) for i, c in zip(call_ids, calls, strict=True)),
        tool_results=tuple(ToolResult(i, r[2]) for i, r in zip(result_ids, results, strict=True)),
        images=tuple(images),
        thinking="\n".join(thoughts),
        other="\n".join(other),
        media=tuple(media),
        signed=signed,
    )


def _media(blob: Any, images: list[Image], media: list[Media]) -> None:
    """An ``inline_data`` / ``file_data`` blob: an image by its mime type, else a document
    (PDF), audio or video (``media.add_blob``)."""
    if not isinstance(blob, Mapping):
        images.append(Image())
        return
    add_blob(images, media, blob.get("mime_type", blob.get("mimeType")), blob.get("data"))
