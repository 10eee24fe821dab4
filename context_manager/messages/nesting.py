"""How deep a message may nest, and where a too-deep or self-containing value goes wrong.

Every reader of a message that descends into it (``JSON.stringify``'s port, the stores'
``json.dumps`` / ``json.loads``, the content-cache key) recurses once or more per level, and
Python's recursion limit (1,000 frames by default, shared with the caller's own frames) stops
them with a bare ``RecursionError``; a value that contains itself never ends at all. So the
library reads nesting in one place: the readers that recurse catch ``RecursionError`` (it is
raised after a bounded number of frames, so this costs time linear in the input) and ask
:func:`too_deep`, an iterative walk, where the value went wrong, to raise a typed error that
names the field. :data:`MAX_DEPTH` is the documented cap: the stores refuse anything deeper
(before writing), and tool definitions are checked against it when they are given.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any

__all__ = ["MAX_DEPTH", "describe_nesting", "format_path", "short_repr", "too_deep"]

#: Deepest nesting of lists and objects a stored message or a tool definition may have (the
#: message itself is level 1). The port of ``JSON.stringify`` spends three frames a level, so
#: a value this deep uses 384 of Python's 1,000 default frames and leaves the rest to whoever
#: calls us (a web framework, an agent loop) when a stored session is read back and counted.
#: Real messages and JSON Schemas stay far below it (128 is also serde_json's default limit).
MAX_DEPTH = 128

#: Path components shown before the rest of a long path is elided.
_SHOWN = 8

# A path as a linked list, ``(parent, key, container)``: extending it is O(1), so a walk that
# keeps one per container stays linear however deep the value goes (a tuple per path would
# copy the whole path at every level: quadratic).
_Link = tuple[Any, Any, Any] | None


def short_repr(value: Any, width: int = 40) -> str:
    """``repr`` cut to ``width`` characters, for an error message about ``value``.

    It never raises, so it can describe any bad input: an integer too long to print (Python's
    digit limit) is described by its size, and a value whose ``repr`` fails (one nested past
    the recursion limit, a class whose ``__repr__`` raises) by its type. A long text is cut
    before ``repr`` reads it, so describing a huge string costs no copy of it.
    """
    try:
        if isinstance(value, str | bytes) and len(value) > width:
            value = value[:width]
        text = repr(value)
    except Exception:  # RecursionError, the int digit limit's ValueError, a failing __repr__
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return f"<an integer of {value.bit_length()} bits>"
            except Exception:  # an int subclass of user code
                pass
        return f"<a {_type_name(type(value))}>"
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def _type_name(kind: type) -> str:
    """A type's name, cut to 60 characters (a class may be named anything)."""
    name = getattr(kind, "__name__", "object")
    name = name if isinstance(name, str) else "object"
    return name if len(name) <= 60 else name[:57] + "..."


class _Attr(str):
    """An attribute name in a path (shown as ``.name``, not ``['name']``)."""

    __slots__ = ()


def format_path(keys: list[Any], root: str = "the message") -> str:
    """``['content'][0]['x']``; a long path shows its first components and how many follow."""
    if not keys:
        return root
    shown = "".join(
        f".{k}" if isinstance(k, _Attr) else f"[{short_repr(k)}]" for k in keys[:_SHOWN]
    )
    if len(keys) > _SHOWN:
        shown += f"...({len(keys) - _SHOWN} more levels)"
    return shown


_OPAQUE = (str, bytes, int, float, type, ModuleType, FunctionType, BuiltinFunctionType, MethodType)


def _children(item: Any, objects: bool) -> Any:
    """``(key, child)`` pairs of a list / tuple / mapping, or None for anything else.

    With ``objects``, also an object's attributes (its ``__dict__``: pydantic models and
    dataclasses, as SDK messages are), to find where an SDK message nests too deeply.
    """
    kind = type(item)
    if kind is dict:
        return item.items()
    if kind is list or kind is tuple or isinstance(item, list | tuple):
        return enumerate(item)
    if isinstance(item, Mapping):
        return item.items()
    if objects and not isinstance(item, _OPAQUE):
        attrs = getattr(item, "__dict__", None)
        if type(attrs) is dict:
            return ((_Attr(k), v) for k, v in attrs.items() if isinstance(k, str))
    return None


def too_deep(
    value: Any, limit: int = MAX_DEPTH, *, root: str = "the message", objects: bool = False
) -> str | None:
    """Where ``value`` nests more than ``limit`` levels or contains itself, else None.

    Iterative and linear in the size of ``value``: it stops at the first problem, so a value
    that contains itself costs at most ``limit`` levels of it. Lists, tuples and mappings are
    descended into, as every JSON reader does (and objects' attributes with ``objects``).
    ``root`` names ``value`` in the answer.
    """
    stack: list[tuple[Any, int, _Link]] = [(value, 1, None)]
    while stack:
        item, depth, link = stack.pop()
        children = _children(item, objects)
        if children is None:
            continue
        if depth > limit:
            return _describe(value, link, limit, root)
        for key, child in children:
            if not isinstance(child, str | int | float | None):
                stack.append((child, depth + 1, (link, key, child)))
    return None


def _describe(value: Any, link: _Link, limit: int, root: str) -> str:
    """The path that went too deep, or where it first returns to one of its own containers."""
    keys: list[Any] = []
    items: list[Any] = []
    while link is not None:
        link, key, item = link
        keys.append(key)
        items.append(item)
    keys.reverse()
    items.reverse()
    first: dict[int, int] = {id(value): 0}  # id -> depth of its first visit on the path
    for depth, item in enumerate(items, 1):
        before = first.setdefault(id(item), depth)
        if before != depth:
            return (
                f"{format_path(keys[:depth], root)} is {format_path(keys[:before], root)} "
                "again (a value that contains itself)"
            )
    return f"{format_path(keys, root)} is nested more than {limit} levels deep"


def describe_nesting(value: Any, root: str = "the message") -> str:
    """Why reading ``value`` ran out of stack: the path of the problem, as :func:`too_deep`.

    Called after a ``RecursionError``. When no list or mapping in ``value`` is too deep (an SDK
    object, or a caller whose own stack was already deep), the answer says what was reached.
    """
    where = too_deep(value, root=root)
    if where is None and not isinstance(value, Mapping | list | tuple):  # an SDK object
        where = too_deep(value, root=root, objects=True)
    if where is not None:
        return where
    return (
        "it is nested too deeply or contains itself (Python's recursion limit was reached "
        f"reading it; a message may nest at most {MAX_DEPTH} levels)"
    )
