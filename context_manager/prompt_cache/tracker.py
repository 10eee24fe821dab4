"""Requests from message lists, and the per-manager tracker behind ``stats().cache``.

A message's cache key is its normalized record's content (two objects with the same content are
the same bytes to the provider), its tokens are the counter's, and its blocks are what the
Anthropic API would see: a text, each tool call, each tool result, each image or document,
a thinking block.

:class:`CacheTracker` keeps the previous request: its message objects (held, so their
identities stay valid), their segments and running sums. A request whose leading messages are the
very objects sent last time reuses all of that: it costs an identity check per held message (in
C) plus the reading of its new messages, so a growing session stays linear overall. A message
met last time at another position (a moved cut) keeps its segment too. :func:`track_cache`
turns it on for a manager: every ``get_context`` then yields a
:class:`~context_manager.prompt_cache.report.CacheReport` in ``stats().cache`` and, to
subscribers, a :class:`~context_manager.events.CacheReported` event.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from itertools import compress, count
from operator import is_not
from typing import TYPE_CHECKING, Any

from .._config import checked_tools
from ..counting import TokenCounter, get_counter
from ..errors import ConfigurationError
from ..messages import Message, message_list, normalize, to_json_text
from ..messages.nesting import short_repr
from .report import CacheReport, Layout, Request, Section, Segment, compare, judge
from .rules import CacheRules, cache_rules

if TYPE_CHECKING:  # for the annotation only: the hub lazily loads compaction, which uses this
    from .._hub import ExtensionHub

__all__ = [
    "CacheTracker",
    "cache_report",
    "last_report",
    "observe_request",
    "request_of",
    "track_cache",
]


def content_key(rec: Message) -> Hashable:
    """What the provider caches of a message: all of its content, nothing of its identity."""
    return (
        rec.role,
        rec.text,
        rec.name,
        rec.tool_calls,
        rec.tool_call_id,
        rec.tool_results,
        rec.images,
        rec.thinking,
        rec.other,
        rec.media,
    )


def block_count(rec: Message) -> int:
    """Content blocks the message holds in an Anthropic request (at least one)."""
    n = (1 if rec.text else 0) + (1 if rec.thinking else 0)
    n += len(rec.tool_calls) + len(rec.result_ids) + len(rec.images) + len(rec.media)
    return max(n, 1)


def _segment(rec: Message, tokens: int, section: Section, origin: str = "") -> Segment:
    return Segment(content_key(rec), tokens, block_count(rec), section, rec.is_user_turn, origin)


def _tools_segment(tools: Sequence[Any], counter: TokenCounter) -> Segment:
    return Segment(
        ("tools", to_json_text(list(tools))), counter.count_tools(list(tools)), len(tools), "tools"
    )


def _check_request_options(
    cache_key: object, at: object, breakpoints: object
) -> tuple[int, ...] | None:
    """The options a :class:`Request` carries, checked where a caller gives them; returns
    ``breakpoints`` as a tuple (a list is taken too)."""
    if cache_key is not None and not isinstance(cache_key, str):
        raise ConfigurationError(
            f"cache_key must be a str or None, got {short_repr(cache_key, 60)}"
        )
    if at is not None and (
        isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at)
    ):
        raise ConfigurationError(f"at must be a finite number or None, got {short_repr(at, 60)}")
    if breakpoints is None:
        return None
    if not isinstance(breakpoints, tuple | list) or not all(
        type(b) is int and b >= 0 for b in breakpoints
    ):
        raise ConfigurationError(
            "breakpoints must be a tuple of segment counts (ints >= 0) or None, got "
            f"{short_repr(breakpoints, 60)}"
        )
    return tuple(breakpoints)


def request_of(
    messages: Sequence[Any],
    *,
    counter: str | TokenCounter = "chars",
    tools: Sequence[Any] | None = None,
    cache_key: str | None = None,
    at: float | None = None,
    breakpoints: tuple[int, ...] | None = None,
) -> Request:
    """A :class:`Request` for ``messages`` (any accepted shape): a leading system or developer
    message is the system prompt; ``tools`` come first, as every provider caches them."""
    messages = message_list(messages)
    tools = checked_tools(tools)
    breakpoints = _check_request_options(cache_key, at, breakpoints)
    count = get_counter(counter)
    segments = [_tools_segment(tools, count)] if tools else []
    for i, message in enumerate(messages):
        rec = normalize(message, i)
        section: Section = (
            "system" if i == 0 and rec.role in ("system", "developer") else "messages"
        )
        segments.append(_segment(rec, count.count_message(rec), section))
    return Request(tuple(segments), count.prompt_overhead, cache_key, at, breakpoints)


def cache_report(
    previous: Sequence[Any] | None,
    current: Sequence[Any],
    provider: str,
    model: str | None = None,
    *,
    counter: str | TokenCounter = "chars",
    tools: Sequence[Any] | None = None,
    previous_tools: Sequence[Any] | None = None,
    ttl: str | None = None,
) -> CacheReport:
    """What ``provider`` caches of ``current`` after ``previous`` (two contexts as sent).

    ``tools`` are this request's tool definitions; ``previous_tools`` the last one's (default:
    the same). Stateless: every message is read and counted; a long replay should use
    :class:`CacheTracker`, which reads each message once.
    """
    rules = cache_rules(provider, model, ttl=ttl)
    before = None
    if previous is not None:
        old_tools = tools if previous_tools is None else previous_tools
        before = request_of(previous, counter=counter, tools=old_tools)
    return compare(before, request_of(current, counter=counter, tools=tools), rules)


class CacheTracker:
    """Judges each request a caller sends against the one before (one conversation)."""

    def __init__(
        self,
        rules: CacheRules,
        counter: str | TokenCounter = "chars",
        tools: Sequence[Any] | None = None,
        *,
        clock: Callable[[], float] | None = time.monotonic,
        cache_key: str | None = None,
    ) -> None:
        self.rules = rules
        self.counter = get_counter(counter)
        self.clock = clock
        self.cache_key = cache_key
        defs = checked_tools(tools)
        self._tools = _tools_segment(defs, self.counter) if defs else None
        # The previous request: its messages (held, so their ids stay valid), their segments,
        # its head and its running sums. Bounded by one context; nothing outlives the tracker.
        self._messages: list[Any] = []
        self._segments: list[Segment] = []
        self._head: tuple[Section, ...] = ()
        self._previous: Request | None = None
        self._layout: Layout | None = None
        #: The report of the latest request (None before the first).
        self.last: CacheReport | None = None

    def observe(
        self,
        messages: Sequence[Any],
        *,
        system: bool = False,
        summary: bool = False,
        pruned: frozenset[int] = frozenset(),
        truncated: frozenset[int] = frozenset(),
        at: float | None = None,
    ) -> CacheReport:
        """Judge ``messages`` (the context sent now) and remember it for the next request.

        ``system`` / ``summary``: the context starts with the system prompt / the compaction
        summary (after the system prompt). ``pruned`` / ``truncated``: ids of the messages that
        are the manager's pruned or cut copies (they explain a break there).

        The leading messages that are the very objects of the previous request keep their
        segments and running sums: a request that extends the last one costs an identity check
        per held message (in C) plus the reading of its new messages. A message met in the
        previous request at another position (a moved cut) is not read again either.
        """
        current = list(messages)  # held until the next request: the caller may reuse its list
        head: tuple[Section, ...] = ()
        if system:
            head += ("system",)
        if summary:
            head += ("summary",)
        old = self._messages
        keep = 0
        if self._previous is not None and head == self._head:
            end = min(len(old), len(current))
            keep = next(compress(count(), map(is_not, old, current)), end)
        segments = self._segments[:keep]
        rest = old[keep:]
        seen = {id(m): (m, seg) for m, seg in zip(rest, self._segments[keep:], strict=True)}
        for i in range(keep, len(current)):
            message = current[i]
            entry = seen.get(id(message))
            if entry is not None and entry[0] is message:
                segment = entry[1]
            else:
                rec = normalize(message, i)
                segment = _segment(rec, self.counter.count_message(rec), "messages")
            section: Section = head[i] if i < len(head) else "messages"
            key = id(message)
            origin = "pruned" if key in pruned else "truncated" if key in truncated else ""
            if segment.section != section or segment.origin != origin:
                segment = replace(segment, section=section, origin=origin)
            segments.append(segment)
        if at is None and self.clock is not None:
            at = self.clock()
        tools = [self._tools] if self._tools is not None else []
        request = Request(tuple(tools + segments), self.counter.prompt_overhead, self.cache_key, at)
        before = None
        if self._previous is not None and self._layout is not None:
            before = (self._previous, self._layout)
            layout = Layout.of(request.segments, self._layout, keep + len(tools))
        else:
            layout = Layout.of(request.segments)
        report = judge(before, request, layout, self.rules, keep + len(tools) if before else 0)
        self._messages, self._segments, self._head = current, segments, head
        self._previous, self._layout, self.last = request, layout, report
        return report

    def reset(self) -> None:
        """Forget the previous request (the next one is judged as a first request)."""
        self._messages, self._segments, self._head = [], [], ()
        self._previous, self._layout, self.last = None, None, None


def track_cache(
    manager: ExtensionHub,
    provider: str,
    model: str | None = None,
    *,
    ttl: str | None = None,
    cache_key: str | None = None,
    rules: CacheRules | None = None,
    clock: Callable[[], float] | None = time.monotonic,
) -> CacheTracker:
    """Report the prompt cache of every ``get_context`` of ``manager`` under ``provider``'s
    rules (``stats().cache``, and a ``CacheReported`` event to subscribers); returns the
    tracker. ``model`` defaults to the manager's; its counter and tools are the manager's."""
    chosen = rules or cache_rules(provider, model or getattr(manager, "model", None), ttl=ttl)
    counter = getattr(manager, "counter", "chars")
    tools = getattr(manager, "tools", None)

    def make() -> CacheTracker:
        return CacheTracker(chosen, counter, tools, clock=clock, cache_key=cache_key)

    tracker = manager.extension(CacheTracker, make)
    if tracker.rules != chosen or tracker.cache_key != cache_key:  # a second call re-targets
        tracker.rules, tracker.cache_key, tracker.clock = chosen, cache_key, clock
        tracker.reset()
    return tracker


def observe_request(
    extensions: dict[type[Any], Any],
    messages: Sequence[Any],
    plan: Any,
    system: bool,
    summary: bool,
) -> CacheReport | None:
    """The manager's hook: judge a context when :func:`track_cache` is on (else None).

    ``plan`` is the request's ``ViewPlan``: its pruned copies and cut results explain breaks.
    """
    tracker = extensions.get(CacheTracker) if extensions else None
    if tracker is None:
        return None
    pruned: frozenset[int] = frozenset()
    truncated: frozenset[int] = frozenset()
    if plan.truncation is not None:
        truncated = frozenset(map(id, plan.truncation.messages))
    if plan.replacements:
        pruned = frozenset(map(id, plan.replacements.values())) - truncated
    report: CacheReport = tracker.observe(
        messages, system=system, summary=summary, pruned=pruned, truncated=truncated
    )
    return report


def last_report(extensions: dict[type[Any], Any]) -> CacheReport | None:
    """The latest report of the manager's tracker (None: off, or no context built yet)."""
    tracker = extensions.get(CacheTracker) if extensions else None
    report: CacheReport | None = None if tracker is None else tracker.last
    return report
