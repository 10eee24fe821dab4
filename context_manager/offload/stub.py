"""Stubs: what the context keeps of an offloaded result (head, tail, and how to get the rest).

:class:`Offloader` is the one place that turns a result's text into a stub: it stores the text
once (keyed by its SHA-256, so the same result offloaded by every request, by a reopened
manager or after a revert gets the same handle and the stub stays byte-identical for prompt
caches) and renders the note naming the handle, then head + tail. The note comes first so
the real handle is the first one in the stub: a result whose head quotes a handle (a forged
``handle="cm-off:..."``) cannot stand in front of it; :func:`stub_handle` reads the note itself.
When the area fails (a store is down), it answers None and the caller keeps its plain cut: a
request is never refused because the area is unreachable (a warning is logged).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .._config import check_int
from .._js import utf16_len
from ..errors import ConfigurationError, ContextManagerError, OffloadError
from ..messages.truncate import head_tail, rewrite_results
from .area import HANDLE, BaseArea, OffloadArea, sample_handle
from .slicing import line_count

__all__ = [
    "CLEARED_NOTE",
    "OFFLOAD_MARKER",
    "OffloadOnly",
    "Offloader",
    "clear_rule",
    "offload_results",
    "stub_handle",
    "trim_rule",
]

logger = logging.getLogger("context_manager.offload")

#: Put before a stub's head+tail; fields: head, tail, total (UTF-16 units), bytes, lines, handle.
OFFLOAD_MARKER = (
    "[Tool result offloaded: showing the first {head} and last {tail} of {total} chars "
    "({bytes} bytes, {lines} lines). The full result is stored as {handle}: call the recall "
    'tool with handle="{handle}" to read more (lines=[first, last], bytes=[start, end] or '
    'pattern="text").]\n\n'
)
#: Appended to a cleared result's placeholder; field: handle.
CLEARED_NOTE = ' [Stored as {handle}: call the recall tool with handle="{handle}" to read it.]'

#: Texts whose handle the view remembers (the newest exchange's results; a small bound, as the
#: cache holds the texts themselves).
_CACHE = 8


class Offloader:
    """An area as the view uses it: each distinct text stored once, stubs rendered."""

    def __init__(self, area: OffloadArea) -> None:
        if not isinstance(area, OffloadArea):
            raise ConfigurationError(
                f"offload must be an offload area (put/get/delete_entries), got {area!r:.60}"
            )
        self.area = area
        # id(text) -> (text, handle, bytes, lines): the text is held so its id is not reused.
        self._known: OrderedDict[int, tuple[str, str, int, int]] = OrderedDict()
        self._guard = threading.Lock()

    def _put(self, text: str) -> tuple[str, int, int]:
        data = text.encode("utf-8", "surrogatepass")
        handle = self.area.put(data, key=_key(data))
        return handle, len(data), line_count(data)

    def _sample(self, text: str) -> tuple[str, int, int]:
        """What :meth:`_put` answers, nothing stored: to size a stub before deciding to store
        it. The library's areas derive a keyed handle, so this is the handle the put will give;
        another area's handle is stood for by one of the library's form."""
        data = text.encode("utf-8", "surrogatepass")
        area = self.area
        handle = area.handle_for(_key(data)) if isinstance(area, BaseArea) else None
        return handle or sample_handle(area.session), len(data), line_count(data)

    def store(self, text: str) -> tuple[str, int, int] | None:
        """``text``'s handle, byte size and line count (stored on first sight); None when the
        area failed."""
        with self._guard:
            hit = self._known.get(id(text))
            if hit is not None and hit[0] is text:
                self._known.move_to_end(id(text))
                return hit[1], hit[2], hit[3]
        try:
            stored = self._put(text)
        except ContextManagerError as exc:
            logger.warning("offload failed, keeping a plain cut: %s", exc)
            return None
        with self._guard:
            self._known[id(text)] = (text, *stored)
            while len(self._known) > _CACHE:
                self._known.popitem(last=False)
        return stored

    def stub(self, text: str, head: int, tail: int, *, store: bool = True) -> str | None:
        """Head + tail of ``text`` and the marker naming its handle (None: the area failed).
        ``store=False``: rendered with a sample handle, nothing stored (to size it)."""
        stored = self.store(text) if store else self._sample(text)
        return None if stored is None else _stub(text, head, tail, stored)

    def cleared(self, text: str, placeholder: str, *, store: bool = True) -> str | None:
        """``placeholder`` plus the note naming ``text``'s handle (None: the area failed).
        ``store=False``: rendered with a sample handle, nothing stored (to size it)."""
        stored = self.store(text) if store else self._sample(text)
        return None if stored is None else placeholder + CLEARED_NOTE.format(handle=stored[0])

    def forget(self) -> None:
        """Drop the cache (the area was retired; the next store revives by key)."""
        with self._guard:
            self._known.clear()


def _key(data: bytes) -> str:
    """The key a result is stored under: its SHA-256 (the same text, the same entry)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _stub(text: str, head: int, tail: int, stored: tuple[str, int, int]) -> str:
    handle, size, lines = stored
    marker = OFFLOAD_MARKER.format(
        head=head, tail=tail, total=utf16_len(text), bytes=size, lines=lines, handle=handle
    )
    return marker + head_tail(text, head, tail, marker="")


def _note(template: str) -> re.Pattern[str]:
    """``template`` as a pattern: numbers for its fields, the handle captured once."""
    parts = re.split(r"\{(\w+)\}", template)
    out, seen = [], False
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(re.escape(part))
        elif part != "handle":
            out.append(r"\d+")
        else:
            out.append("(?P=handle)" if seen else f"(?P<handle>{HANDLE.pattern})")
            seen = True
    return re.compile("".join(out))


_STUB_NOTE = _note(OFFLOAD_MARKER)
_CLEARED_NOTE = _note(CLEARED_NOTE)


def stub_handle(text: str) -> str | None:
    """The handle a stub of this library names, read from the library's own note (the start
    of a head+tail stub, the end of a cleared placeholder); None when ``text`` is not such a
    stub. Handles quoted inside the result's head or tail are never taken for it."""
    if not isinstance(text, str):
        return None
    found = _STUB_NOTE.match(text)
    if found is None:
        end = text.rfind(" [Stored as ")
        found = _CLEARED_NOTE.fullmatch(text, end) if end >= 0 else None
    return found.group("handle") if found is not None else None


def _previews(head: int, tail: int, max_chars: int) -> tuple[int, int]:
    """``head`` and ``tail`` scaled down in proportion so together they stay within
    ``max_chars``: a lower threshold must never make a larger stub."""
    if head + tail <= max_chars:
        return head, tail
    scaled = head * max_chars // (head + tail)
    return scaled, max_chars - scaled


def clear_rule(
    area: OffloadArea | None, placeholder: str, *, store: bool = True
) -> Callable[[str, int], str]:
    """Pruning's clear: ``placeholder``, plus the handle of the stored text with an area.
    ``store=False``: the same text with a sample handle, nothing stored (to size it first)."""
    off = Offloader(area) if area is not None else None

    def clear(text: str, _images: int) -> str:
        stub = off.cleared(text, placeholder, store=store) if off is not None else None
        return stub if stub is not None else placeholder

    return clear


def trim_rule(
    area: OffloadArea | None, head: int, tail: int, marker: str, *, store: bool = True
) -> Callable[[str], str]:
    """Pruning's soft trim: head + tail + ``marker``; with an area, the offload stub.
    ``store=False``: the same text with a sample handle, nothing stored (to size it first)."""
    off = Offloader(area) if area is not None else None

    def trim(text: str) -> str:
        stub = off.stub(text, head, tail, store=store) if off is not None else None
        return stub if stub is not None else head_tail(text, head, tail, marker)

    return trim


class OffloadOnly:
    """``pruning=OffloadOnly(area)``: no pruning, but the newest exchange cut to fit (the
    manager's and ``trim()``'s default fallback) offloads what it cuts to ``area``."""

    def __init__(self, area: OffloadArea) -> None:
        self.offload = Offloader(area).area

    def bind(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"OffloadOnly({self.offload!r})"


def offload_results(
    message: Any,
    area: OffloadArea | Offloader,
    *,
    max_chars: int = 20_000,
    head_chars: int = 1500,
    tail_chars: int = 1500,
) -> Any:
    """A copy of a tool-result ``message`` (any supported shape) whose results over
    ``max_chars`` (UTF-16 units) are stored in ``area`` and replaced by stubs; ``message``
    itself when nothing was over (never mutated). Apply it before ``add`` / ``trim`` so the
    history (and a store's log) holds the stub, not the megabytes.

    A stub is always shorter than the result it replaces: the head and tail previews shrink in
    proportion to fit ``max_chars`` together, and a result its stub would not shrink (the
    marker and handle alone are about 400 characters) is left whole.
    Raises what the area raises (an unreachable store is an error here: the full text would
    otherwise be lost). The results of one call are kept together: when they cannot all be
    kept (a ``MemoryOffload`` smaller than their sum), ``OffloadError`` is raised before any is
    stored, so no stub names a handle its own call evicted."""
    for name, value in (("max_chars", max_chars), ("head_chars", head_chars)):
        check_int(name, value)
    check_int("tail_chars", tail_chars)
    offloader = area if isinstance(area, Offloader) else Offloader(area)

    head, tail = _previews(head_chars, tail_chars, max_chars)

    def over(text: str) -> bool:
        """Whether ``text`` is stored: over the threshold, and its stub (rendered with the
        handle the put will give, nothing stored) is shorter."""
        total = utf16_len(text)
        if total <= max_chars:
            return False
        sized = offloader.stub(text, head, tail, store=False)
        return sized is not None and utf16_len(sized) < total

    capacity = offloader.area.capacity if isinstance(offloader.area, BaseArea) else None
    if capacity is not None:
        _check_fits(message, over, capacity)

    def rule(text: str, _images: int) -> str | None:
        if not over(text):
            return None  # nothing stored
        # errors propagate (see the docstring): no cache, no fallback
        stub = _stub(text, head, tail, offloader._put(text))
        # as sized, except with an area of another handle form (sized with one of ours)
        return stub if utf16_len(stub) < utf16_len(text) else None

    new = rewrite_results(message, rule, "keep")
    return message if new is None else new


def _check_fits(message: Any, over: Callable[[str], bool], capacity: int) -> None:
    """Raise before storing anything when the results ``offload_results`` would store in an
    area that evicts do not fit in it together: one would evict another, and its stub would
    name a handle already gone. (Together they fit: the area evicts the oldest entries first,
    and a call's own are its newest.)"""
    texts: dict[str, None] = {}

    def collect(text: str, _images: int) -> None:
        if over(text):
            texts[text] = None  # the same text twice is stored once
        return None

    rewrite_results(message, collect, "keep")
    size = sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)
    if size > capacity:
        raise OffloadError(
            f"the results of this message ({size:,} bytes together) do not fit in the offload "
            f"area's {capacity:,} bytes: nothing was stored; raise max_bytes or use a "
            "store-backed area"
        )
