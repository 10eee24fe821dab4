"""The recall tool's behaviour: read a page of an offloaded result by its handle.

:func:`recall` is the typed call (raises typed errors); :func:`run_recall` is what a tool
runtime calls with the model's arguments (a JSON text or a dict, as every SDK delivers them):
it answers text in every case, an error included, so the model can correct its call (a wrong
handle, a bad range) instead of the agent loop crashing.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping
from typing import Any

from ..counting import TokenCounter
from ..errors import ConfigurationError, OffloadError
from .area import OffloadArea
from .slicing import Slice

__all__ = ["DEFAULT_RECALL_TOKENS", "recall", "recall_text", "run_recall"]

#: The default token cap of one page.
DEFAULT_RECALL_TOKENS = 2000


def recall(
    area: OffloadArea,
    handle: str,
    *,
    lines: tuple[int, int | None] | list[int] | None = None,
    bytes: tuple[int, int | None] | list[int] | None = None,  # the tool's argument name
    pattern: str | None = None,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    counter: str | TokenCounter | None = None,
) -> Slice:
    """A page of the result stored under ``handle``: ``lines=[first, last]`` (1-based,
    inclusive; ``last`` may be omitted), ``bytes=[start, end]`` (0-based, end exclusive) or
    ``pattern`` (lines containing that text, case-insensitive; narrowed by ``lines``), at most
    ``max_tokens`` by ``counter`` (the safe estimate by default). ``Slice.next`` holds the
    arguments of the next page; ``total_bytes`` / ``total_lines`` the whole result's size."""
    if not isinstance(area, OffloadArea):
        raise ConfigurationError(f"area must be an offload area, got {area!r:.60}")
    return area.get(
        handle,
        lines=_pair(lines),
        byte_range=_pair(bytes),
        pattern=pattern,
        max_tokens=max_tokens,
        counter=counter,
    )


def _pair(value: object) -> Any:
    if isinstance(value, list):
        return tuple(value)
    return value


def recall_text(area: OffloadArea, handle: str, **options: Any) -> str:
    """:func:`recall`'s page rendered for the model (a header with sizes and the next call)."""
    return recall(area, handle, **options).render()


_ARGS = frozenset({"handle", "lines", "bytes", "pattern", "max_tokens"})


def run_recall(
    area: OffloadArea,
    arguments: str | builtins.bytes | Mapping[str, Any],
    *,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    counter: str | TokenCounter | None = None,
) -> str:
    """Run one ``recall`` tool call from a model: the page, or the error as text.

    ``max_tokens`` caps what the model may ask for (its own ``max_tokens`` can only lower it).
    The arguments are the model's, so nothing they hold escapes as an exception: JSON nested
    past Python's recursion limit, keys of mixed types and values nested too deeply to describe
    are answered as text too.
    """
    try:
        args = json.loads(arguments) if isinstance(arguments, str | builtins.bytes) else arguments
    except ValueError:
        return "recall error: the arguments are not valid JSON"
    except RecursionError:  # arrays or objects nested thousands deep
        return "recall error: the arguments nest too deeply; pass a handle, lines=[first, last]"
    if not isinstance(args, Mapping):
        return "recall error: the arguments must be an object with a handle"
    unknown = sorted(str(key)[:40] for key in args if key not in _ARGS)
    if unknown:
        return f"recall error: unknown argument(s) {unknown}; use {sorted(_ARGS)}"
    asked = args.get("max_tokens")
    cap = max_tokens
    if isinstance(asked, int) and not isinstance(asked, bool) and 0 < asked < max_tokens:
        cap = asked
    try:
        return recall_text(
            area,
            args.get("handle"),  # type: ignore[arg-type]  # checked by the area
            lines=args.get("lines"),
            bytes=args.get("bytes"),
            pattern=args.get("pattern"),
            max_tokens=cap,
            counter=counter,
        )
    except (OffloadError, ConfigurationError) as exc:
        return f"recall error: {exc}"
    except RecursionError:  # describing a value nested thousands deep (a dict's, not JSON's)
        return "recall error: an argument nests too deeply; pass a handle, lines=[first, last]"
