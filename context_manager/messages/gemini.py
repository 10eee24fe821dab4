"""Gemini ``contents`` (google-genai ``Content`` or its dict), read as records.

A content has ``role`` ``user`` or ``model`` and ``parts``: ``text`` (``thought: true`` marks a
thought summary), ``function_call`` ``{name, args, id?}``, ``function_response``
``{name, response, id?, parts?}`` (its ``parts`` are media a tool returned), ``inline_data`` /
``file_data`` (media), ``executable_code`` / ``code_execution_result`` (code the model ran with
its built-in tool, and what it printed) and an opaque ``thought_signature`` that Gemini 3
requires back (it is kept in the caller's object, and its size is counted). The REST API and
the SDK's own JSON spell every key in camelCase (``functionCall``, ``inlineData``,
``mimeType``...): both spellings read the same. A part field not modelled here is counted by
its JSON, never as free.

Gemini pairs a response with its call by ``id`` when the API gave one, else by position: the
API returns parallel calls without ids (the same function may be called twice in one turn) and
takes their responses, in one content, in the same order. Such a call gets the id
``~name`` (the second call of that function in its turn ``~name~2``, and so on), and so does the
response in the same place of the next content: the k-th response to ``name`` answers the k-th
call to it, as Gemini reads them. Those ids may repeat from turn to turn (the protocol allows
ids that start with ``~`` to), so every rule pairs them like any other id.
"""

from __future__ import annotations

import base64
import re
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


#: An upper-case letter inside a camelCase key (REST JSON, the SDK's ``by_alias`` dumps).
_HUMP = re.compile(r"([A-Z])")
_MEDIA_KEYS = ("inline_data", "file_data")


def _snake(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj`` with its camelCase keys spelled in snake_case (``functionCall`` ->
    ``function_call``, ``mimeType`` -> ``mime_type``): a part's fields and the fields of the
    objects inside it, one level at a time (payloads such as ``args`` and ``response`` are
    never entered). A key given in both spellings, both set, keeps the camelCase one as it is:
    no field reads it, so it is counted by its JSON, not dropped; a twin left unset (None, as a
    plain ``model_dump()`` has every field) gives way."""
    humps = [key for key in obj if isinstance(key, str) and _HUMP.search(key)]
    if not humps:
        return obj
    out = {key: value for key, value in obj.items() if key not in humps}
    for key in humps:
        name = _HUMP.sub(r"_\1", key).lower()
        out[key if out.get(name) is not None else name] = obj[key]
    return out


def _json(key: str, value: Any) -> str:
    """A field no rule reads, as its JSON under its snake_case name, its own fields spelled so
    too (both spellings then cost the same; what is sent is the caller's object, unchanged)."""
    if isinstance(value, Mapping):  # fields left unset (None, as a plain model_dump() has them)
        value = {k: v for k, v in _snake(value).items() if v is not None}
    return to_json_text({key: value})


class _Reading:
    """What one content's parts hold, gathered part by part."""

    __slots__ = ("calls", "images", "media", "other", "results", "signed", "texts", "thoughts")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.thoughts: list[str] = []
        self.other: list[str] = []
        self.calls: list[tuple[str, Any, str]] = []  # (name, id given, arguments)
        self.results: list[tuple[str, Any, str]] = []  # (name, id given, response)
        self.images: list[Image] = []
        self.media: list[Media] = []
        self.signed = False


def from_content(message: Mapping[str, Any], index: int | None) -> Message:
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise InvalidMessageError("Gemini content needs a list of 'parts'", index=index)
    role = "assistant" if message.get("role") == "model" else "user"
    read = _Reading()
    for part in map(as_part, parts, [index] * len(parts)):
        if not isinstance(part, Mapping):
            raise InvalidMessageError("Gemini parts must be objects", index=index)
        _part(_snake(part), index, read)
    call_ids = positional_ids([(name, given) for name, given, _ in read.calls])
    result_ids = positional_ids([(name, given) for name, given, _ in read.results])
    return Message(
        role,
        text="\n".join(read.texts),
        tool_calls=tuple(
            ToolCall(i, c[0], c[2]) for i, c in zip(call_ids, read.calls, strict=True)
        ),
        tool_results=tuple(
            ToolResult(i, r[2]) for i, r in zip(result_ids, read.results, strict=True)
        ),
        images=tuple(read.images),
        thinking="\n".join(read.thoughts),
        other="\n".join(read.other),
        media=tuple(read.media),
        signed=read.signed,
    )


def _part(part: Mapping[str, Any], index: int | None, read: _Reading) -> None:
    """One part (keys in snake_case), field by field: every field it holds is charged."""
    for key, raw in part.items():
        if raw is None or key == "thought":  # unset; a flag on the text beside it
            continue
        value = as_part(raw, index)  # an SDK object inside a dict part: its JSON
        if key == "text" and isinstance(value, str):
            (read.thoughts if part.get("thought") else read.texts).append(value)
        elif key == "function_call" and value and isinstance(value, Mapping):
            call = _snake(value)
            name = call.get("name")
            if not isinstance(name, str):
                raise InvalidMessageError("function_call needs a string 'name'", index=index)
            read.calls.append((name, call.get("id"), to_json_text(call.get("args") or {})))
        elif key == "function_response" and value and isinstance(value, Mapping):
            _response(_snake(value), index, read)
        elif key in _MEDIA_KEYS and value:
            _media(value, read.images, read.media)
        elif key == "thought_signature" and isinstance(value, str | bytes):
            read.other.append(value if isinstance(value, str) else base64.b64encode(value).decode())
            read.signed = True
        elif key == "executable_code" and isinstance(_field(value, "code"), str):
            read.other.append(value["code"])  # what the model wrote, read as code is
        elif key == "code_execution_result" and isinstance(_field(value, "output"), str):
            read.other.append(value["output"])  # what it printed
        else:  # a field not modelled (or a modelled one of an odd shape): its JSON
            read.other.append(_json(key, value))


def _field(value: Any, key: str) -> Any:
    """``value[key]`` of an object, else None (a code-execution part without its text, or of
    an odd shape, is counted by its JSON instead)."""
    return value.get(key) if isinstance(value, Mapping) else None


def _response(response: Mapping[str, Any], index: int | None, read: _Reading) -> None:
    """A ``function_response``: its ``response`` is the result's text; the media in its
    ``parts`` (an image a tool returned) are priced as the same media in a part would be."""
    text = to_json_text(response.get("response") or {})
    read.results.append((str(response.get("name", "")), response.get("id"), text))
    inner = response.get("parts")
    if inner is None:
        return
    if not isinstance(inner, list):
        read.other.append(_json("parts", inner))
        return
    for item in map(as_part, inner, [index] * len(inner)):
        if isinstance(item, Mapping):
            _part(_snake(item), index, read)  # media as a part's, anything else its JSON
        else:
            read.other.append(to_json_text(item))


def _media(blob: Any, images: list[Image], media: list[Media]) -> None:
    """An ``inline_data`` / ``file_data`` blob: an image by its mime type, else a document
    (PDF), audio or video (``media.add_blob``)."""
    if not isinstance(blob, Mapping):
        images.append(Image())
        return
    blob = _snake(blob)
    add_blob(images, media, blob.get("mime_type"), blob.get("data"))
