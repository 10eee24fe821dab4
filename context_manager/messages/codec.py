"""Lossless encoding of accepted messages for the stores: what is added is what comes back.

- A chat dict (with ``role`` and ``content``) is stored as itself; other dicts (Responses items)
  travel inside a Kimi-readable wrapper, tagged ``dict``. Either must be plain JSON (str keys;
  str, int, float, bool, None, lists and dicts; finite floats; text that is valid Unicode).
  Anything else is refused with :class:`~context_manager.errors.InvalidMessageError` naming the
  field path, before anything is written or changed: there is no lossy fallback.
- Any other accepted object is stored as JSON plus a *type tag* naming its class in
  :data:`KNOWN_TYPES`, an allowlist: decoding looks the tag up there and never imports a path
  read from a file. LangChain messages go through LangChain's own ``message_to_dict`` /
  ``messages_from_dict``; OpenAI, Anthropic and google-genai models through pydantic
  (``model_dump(mode="json")`` / ``model_validate``); pydantic-ai messages through its
  ``ModelMessagesTypeAdapter``; :class:`Message` records field by field.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

from ..errors import InvalidMessageError
from .nesting import MAX_DEPTH, describe_nesting, format_path, short_repr, too_deep
from .record import Image, Media, Message, ToolCall, ToolResult
from .sdk import family

__all__ = ["KNOWN_TYPES", "check_json", "decode", "encode"]

# tag -> (module, class name). Only these are ever rebuilt from a file.
KNOWN_TYPES: dict[str, tuple[str, str]] = {
    "openai.ChatCompletionMessage": ("openai.types.chat", "ChatCompletionMessage"),
    "openai.ResponseOutputMessage": ("openai.types.responses", "ResponseOutputMessage"),
    "openai.ResponseFunctionToolCall": ("openai.types.responses", "ResponseFunctionToolCall"),
    "openai.ResponseReasoningItem": ("openai.types.responses", "ResponseReasoningItem"),
    "openai.ResponseCustomToolCall": ("openai.types.responses", "ResponseCustomToolCall"),
    "openai.ResponseFunctionToolCallOutputItem": (
        "openai.types.responses",
        "ResponseFunctionToolCallOutputItem",
    ),
    # the input items that close an SDK conversation's interrupted calls (messages/shapes.py)
    "openai.FunctionCallOutput": (
        "openai.types.responses.response_input_item",
        "FunctionCallOutput",
    ),
    "openai.ResponseCustomToolCallOutput": (
        "openai.types.responses",
        "ResponseCustomToolCallOutput",
    ),
    "openai.ResponseFunctionWebSearch": ("openai.types.responses", "ResponseFunctionWebSearch"),
    "openai.ResponseFileSearchToolCall": ("openai.types.responses", "ResponseFileSearchToolCall"),
    # provider-native compaction: a Responses compaction item, an Anthropic beta message
    "openai.ResponseCompactionItem": ("openai.types.responses", "ResponseCompactionItem"),
    "anthropic.Message": ("anthropic.types", "Message"),
    "anthropic.BetaMessage": ("anthropic.types.beta", "BetaMessage"),
    "gemini.Content": ("google.genai.types", "Content"),
}
_SPECIAL = ("dict", "langchain", "pydantic_ai", "record", "mixed")

# What a provider SDK object found inside a dict message can be, by the SDK's own union of the
# classes that may stand there (the SDKs' idioms put them there: ``{"role": "assistant",
# "content": response.content}``). Decoding validates against the union, so the SDK picks the
# class from the JSON's discriminator and nothing is imported by a name read from a file.
_PART_UNIONS: dict[str, tuple[str, str, str]] = {
    # family -> (tag, module, union name)
    "anthropic": ("anthropic.ContentBlock", "anthropic.types", "ContentBlock"),
    "openai": ("openai.ToolCall", "openai.types.chat", "ChatCompletionMessageToolCallUnion"),
    "gemini": ("gemini.Part", "google.genai.types", "Part"),
}
#: Beta content blocks (an Anthropic server-compaction block is one) validate against the beta
#: union: the stable one has no ``compaction`` member.
_BETA_PARTS = ("anthropic.BetaContentBlock", "anthropic.types.beta", "BetaContentBlock")
_PART_TAGS = {tag: (module, name) for tag, module, name in (*_PART_UNIONS.values(), _BETA_PARTS)}


def _part_tag(obj: Any) -> str:
    """The tag of the SDK union a part found inside a dict is stored under."""
    if type(obj).__module__.startswith(_BETA_PARTS[1] + "."):
        return _BETA_PARTS[0]
    return _PART_UNIONS[str(family(obj))][0]


def _int_fits(value: int) -> bool:
    """Whether Python can write ``value`` as text (its digit limit guards a quadratic step).

    Fewer than three bits per allowed digit is always fine (a digit holds 3.3 bits), so only
    integers near the limit pay for a conversion, and one over it fails before converting.
    """
    limit = sys.get_int_max_str_digits()
    if not limit or value.bit_length() <= 3 * limit:
        return True
    try:
        str(value)
    except ValueError:
        return False
    return True


def check_json(value: Any, path: tuple[Any, ...] = (), *, objects: bool = False) -> bool:
    """Raise ``InvalidMessageError`` naming the first field that has no exact JSON form.

    One iterative pass, linear in the size of ``value``: each field keeps a link to its parent
    (not a copy of its whole path), and the path is spelled out only for the error. Nesting
    deeper than :data:`~.nesting.MAX_DEPTH` is refused (so is a value that contains itself,
    which would otherwise never end), so whatever is stored can be read back and counted.

    With ``objects``, a provider SDK object standing where a message may hold one stops the
    pass and makes it return True (:func:`encode` then stores the objects apart), so a plain
    dict is walked once; otherwise the answer is False.
    """
    stack: list[tuple[Any, int, Any]] = [(value, 1, None)]
    while stack:
        item, depth, link = stack.pop()
        if isinstance(item, str):
            if item.isascii():
                continue
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidMessageError(
                    f"{_where(path, link)} holds a lone surrogate at position {exc.start}",
                    hint="text must be valid Unicode to be stored; fix or drop that character",
                ) from None
        elif item is None or isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not _int_fits(item):
                raise InvalidMessageError(
                    f"{_where(path, link)} is an integer of more than "
                    f"{sys.get_int_max_str_digits()} digits, which Python cannot write as text",
                    hint="store it as a string",
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidMessageError(
                    f"{_where(path, link)} is {item!r}, which JSON cannot hold",
                    hint="store a finite number or a string",
                )
        elif isinstance(item, dict | list | tuple):
            if depth > MAX_DEPTH:
                raise InvalidMessageError(
                    too_deep(value) or f"{_where(path, link)} is nested too deeply",
                    hint=f"a stored message nests at most {MAX_DEPTH} levels of lists and objects",
                )
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        raise InvalidMessageError(
                            f"{_where(path, link)} has a non-string key {short_repr(key, 60)}",
                            hint="JSON object keys are strings; a stored dict must round-trip",
                        )
                    if type(child) is str and child.isascii():
                        continue  # what the str branch passes at once, without a push and pop
                    stack.append((child, depth + 1, (link, key)))
            else:  # a tuple stores as the same JSON as a list
                stack.extend((child, depth + 1, (link, i)) for i, child in enumerate(item))
        elif objects and _is_part_object(item):
            return True
        else:
            raise InvalidMessageError(
                f"{_where(path, link)} is a {type(item).__name__}, which has no exact JSON form",
                hint="convert it (e.g. a datetime to an ISO string) before adding the message",
            )
    return False


def _is_part_object(item: Any) -> bool:
    """A provider SDK model of a family whose parts a dict message may hold (as it is found
    by :func:`_split_objects`)."""
    return family(item) in _PART_UNIONS and hasattr(item, "model_dump")


def _where(prefix: tuple[Any, ...], link: Any) -> str:
    """The path of a field from its parent links (built only when reporting an error)."""
    keys: list[Any] = []
    while link is not None:
        link, key = link
        keys.append(key)
    keys.reverse()
    return format_path([*prefix, *keys])


def _known_class(tag: str) -> type[Any]:
    module, name = KNOWN_TYPES[tag]
    cls: type[Any] = getattr(importlib.import_module(module), name)
    return cls


def _tag_of(message: Any) -> str | None:
    sdk = family(message)
    if sdk in ("langchain", "pydantic_ai"):
        return sdk
    cls = type(message)
    for tag, (module, name) in KNOWN_TYPES.items():
        same_sdk = cls.__module__.startswith(module.split(".")[0] + ".")
        if cls.__name__ == name and same_sdk and _known_class(tag) is cls:
            return tag
    return None


def _dump(message: Any, tag: str) -> Any:
    """The JSON form of an SDK object, by the SDK's own serializer."""
    if tag == "langchain":
        from langchain_core.messages import message_to_dict

        return message_to_dict(message)
    if tag == "pydantic_ai":
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        return ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    return message.model_dump(mode="json", by_alias=True, exclude_unset=True)


@functools.cache
def _part_adapter(tag: str) -> Any:
    """The validator of one SDK part type, built once per tag: a constant of the SDK's schema,
    like the SDK's own module-level adapters (the keys are the fixed :data:`_PART_TAGS`, no
    caller data is kept). Building one costs tens of milliseconds of schema generation, and
    built per part it made opening a 200-turn Anthropic session of SDK blocks take minutes."""
    from pydantic import TypeAdapter

    module, name = _PART_TAGS[tag]
    return TypeAdapter(getattr(importlib.import_module(module), name))


def _split_objects(message: dict[str, Any]) -> tuple[dict[str, Any], list[Any]] | None:
    """The dict with each provider SDK object in it set to None, and ``[path, tag, json]`` for
    each; None when it holds none. Only dicts and lists are walked (what a message nests)."""
    found: list[Any] = []
    seen: set[int] = set()
    stack: list[tuple[Any, list[Any]]] = [(message, [])]
    while stack:
        item, path = stack.pop()
        if id(item) in seen or len(path) > MAX_DEPTH:
            continue  # a cycle or a nesting past the cap: check_json reports it, typed
        seen.add(id(item))
        children = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in children:
            if isinstance(child, dict | list):
                stack.append((child, [*path, key]))
            elif _is_part_object(child):
                found.append([[*path, key], child])
    if not found:
        return None
    objects = []
    for path, obj in found:
        tag = _part_tag(obj)
        data = obj.model_dump(mode="json", by_alias=True, exclude_unset=True)
        try:
            same = _part_adapter(tag).validate_python(data) == obj
        except Exception:  # the SDK's validation error: not a member of the union
            same = False
        if not same:
            raise InvalidMessageError(
                f"{format_path(path)} is a {type(obj).__name__}, which cannot be stored and "
                "read back as itself",
                hint="store its dict form (.model_dump(mode='json'))",
            )
        objects.append([path, tag, data])
    copy = _copy_without(message, [path for path, _ in found])
    return copy, objects


def _copy_without(message: dict[str, Any], paths: list[list[Any]]) -> dict[str, Any]:
    """A copy of the containers on ``paths`` with the objects at their ends set to None."""
    root: dict[str, Any] = dict(message)
    for path in paths:
        node: Any = root
        for key in path[:-1]:
            child = node[key]
            child = dict(child) if isinstance(child, dict) else list(child)
            node[key] = child
            node = child
        node[path[-1]] = None
    return root


def encode(message: Any) -> tuple[Any, str | None]:
    """``(payload, tag)``: the JSON to store and the type tag (None for a plain dict)."""
    if isinstance(message, dict):
        # One walk for a plain dict; one holding SDK objects (or a field with no JSON form,
        # which may sit beside objects that are reported first) is then split and checked.
        try:
            plain = not check_json(message, objects=True)
        except InvalidMessageError:
            plain = False
        split = None if plain else _split_objects(message)
        if split is not None:  # SDK objects inside: the dict, and each object by its union
            bare, objects = split
            check_json(bare)
            check_json(objects)
            return {"message": bare, "objects": objects}, "mixed"
        if not plain:
            check_json(message)  # the error the walk found, raised as it was
        if isinstance(message.get("role"), str) and "content" in message:
            return message, None  # a chat dict: stored as itself (Kimi CLI reads these)
        return message, "dict"  # a Responses item or a dict without content: keep it exact
    if isinstance(message, Message):
        data = asdict(message)
        check_json(data)
        return data, "record"
    tag = _tag_of(message)
    if tag is None:
        raise InvalidMessageError(
            f"{type(message).__module__}.{type(message).__qualname__} cannot be stored losslessly",
            hint="store its dict form (e.g. .model_dump(mode='json')) or one of the SDK types "
            "in context_manager.messages.codec.KNOWN_TYPES",
        )
    try:
        payload = _dump(message, tag)
    except InvalidMessageError:
        raise
    except RecursionError:  # the SDK's serializer recursed through a self-containing value
        raise InvalidMessageError(
            f"a {tag} message cannot be stored: {describe_nesting(message)}"
        ) from None
    except (ValueError, TypeError) as exc:  # e.g. pydantic's "Circular reference detected"
        raise InvalidMessageError(f"a {tag} message cannot be stored: {exc}") from None
    check_json(payload)
    return payload, tag


def _record(data: Mapping[str, Any]) -> Message:
    return Message(
        role=data["role"],
        text=data.get("text", ""),
        name=data.get("name"),
        tool_calls=tuple(ToolCall(*c) for c in data.get("tool_calls", ())),
        tool_call_id=data.get("tool_call_id"),
        tool_results=tuple(ToolResult(*r) for r in data.get("tool_results", ())),
        images=tuple(Image(*i) for i in data.get("images", ())),
        thinking=data.get("thinking", ""),
        other=data.get("other", ""),
        item=bool(data.get("item", False)),
        media=tuple(Media(*m) for m in data.get("media", ())),
        signed=bool(data.get("signed", False)),
        compaction=str(data.get("compaction", "")),
    )


def _langchain(payload: Any) -> Any:
    from langchain_core.messages import messages_from_dict

    return messages_from_dict([payload])[0]


def _pydantic_ai(payload: Any) -> Any:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.validate_python([payload])[0]


def _mixed(payload: Any) -> Any:
    if not isinstance(payload, dict) or not isinstance(payload.get("message"), dict):
        raise InvalidMessageError("a stored mixed message is not an object")
    message = payload["message"]
    for path, tag, data in payload.get("objects", []):
        if tag not in _PART_TAGS or not isinstance(path, list) or not path:
            raise InvalidMessageError(f"unknown stored part type {tag!r}")
        node: Any = message
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = _part_adapter(tag).validate_python(data)
    return message


def _dict(payload: Any) -> Any:
    if not isinstance(payload, dict):
        raise InvalidMessageError("a stored dict message is not an object")
    return payload


#: Each special tag's decoder, with the packages it imports (None for ``mixed``: its parts'
#: own, which the tag does not tell).
_DECODERS: dict[str, tuple[Callable[[Any], Any], tuple[str, ...] | None]] = {
    "dict": (_dict, ()),
    "mixed": (_mixed, None),
    "langchain": (_langchain, ("langchain_core",)),
    "pydantic_ai": (_pydantic_ai, ("pydantic_ai",)),
    "record": (_record, ()),
}


def readable(tag: str) -> bool:
    """Whether :func:`decode` can rebuild objects stored under ``tag`` in this process (its
    class is known and its SDK installed), without reading a payload; False when that cannot
    be told from the tag (a dict holding SDK parts)."""
    try:
        if tag in _DECODERS:
            needs = _DECODERS[tag][1]
            return needs is not None and all(importlib.util.find_spec(n) for n in needs)
        return tag in KNOWN_TYPES and _known_class(tag) is not None
    except ImportError:
        return False


def decode(payload: Any, tag: str | None) -> Any:
    """The object :func:`encode` was given (same class, equal value).

    Raises ``InvalidMessageError`` for an unknown tag or a payload its class rejects (a
    tampered or foreign file), and ``ImportError`` is reported the same way when the SDK that
    wrote it is not installed.
    """
    if tag is None:
        return payload
    try:
        if tag in _DECODERS:
            return _DECODERS[tag][0](payload)
        if tag not in KNOWN_TYPES:
            raise InvalidMessageError(
                f"unknown stored message type {tag!r}",
                hint=f"known: {', '.join([*_SPECIAL, *KNOWN_TYPES])}",
            )
        return _known_class(tag).model_validate(payload)
    except InvalidMessageError:
        raise
    except ImportError as exc:
        raise InvalidMessageError(
            f"a stored {tag} message needs {exc.name or 'its SDK'} installed to be read back"
        ) from exc
    except Exception as exc:  # the SDK's own validation error: a damaged or foreign payload
        raise InvalidMessageError(f"stored {tag} message does not validate: {exc}") from exc
