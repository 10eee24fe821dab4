"""What a provider's prompt cache serves of one request, given the request before it.

A request is a sequence of :class:`Segment` in the order the provider caches it (tool
definitions, system prompt, then each message), each with a *key* (equal keys: byte-identical
for the cache), its tokens and its content blocks. :func:`compare` finds the leading segments the
request shares with the previous one, says where and why the prefix broke, and applies the
provider's :class:`~context_manager.prompt_cache.rules.CacheRules`:

* OpenAI and Gemini cache any shared prefix automatically, from ``min_tokens`` on, in whole
  ``step``\\ s (OpenAI: 128 tokens).
* Anthropic reads only entries written at ``cache_control`` breakpoints. An entry the previous
  request wrote at boundary ``b`` is read by a breakpoint ``c`` of this request when the prefix
  up to ``b`` is unchanged, ``b <= c``, and at most ``lookback_blocks`` content blocks lie
  between them. Tokens from the read point to the last breakpoint are written (billed at
  ``write_price``); tokens after it are plain input. Without explicit breakpoints a request is
  marked as :func:`~context_manager.cache.mark_cache_breakpoints` marks it: the last message,
  the end of the system prompt, the end of the previous turn, each only when its prefix holds
  ``min_tokens``.

Only the previous request's entries are considered (an older entry that is still alive may
serve more): the report is about what repeats the previous request's prefix.
Segments are whole messages, so a prefix shared halfway into a message counts up to that
message only.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Literal, TypeAlias

from ..errors import ConfigurationError
from .economics import cache_expired
from .rules import CacheRules

__all__ = ["BreakReason", "CacheReport", "Request", "Segment", "compare"]

Section: TypeAlias = Literal["tools", "system", "summary", "messages"]
#: Why the prefix broke. ``"extended"``: it did not (the previous request is a prefix of this
#: one); ``"cut_moved"``: the first message after the head is another one (the trimming cut
#: moved: oldest messages dropped, or older ones back in after pruning freed room);
#: ``"pruned"`` / ``"truncated"``: a tool result sent differs from last time (pruning, the
#: newest exchange cut to fit); ``"compacted"``: a summary appeared or changed;
#: ``"shortened"``: this request is a prefix of the last one; ``"edited"``: a message changed
#: for another reason.
BreakReason: TypeAlias = Literal[
    "first_request",
    "extended",
    "tools_changed",
    "system_changed",
    "cache_key_changed",
    "compacted",
    "cut_moved",
    "pruned",
    "truncated",
    "shortened",
    "edited",
]
#: Why fewer tokens are cached than shared: an expired entry, a prefix under the minimum, no
#: breakpoint in the previous request within the shared prefix, none within reach of a
#: breakpoint of this one (Anthropic's block lookback), or a model without an automatic cache.
Limit: TypeAlias = Literal["expired", "below_minimum", "no_breakpoint", "lookback", "no_cache"]


@dataclass(frozen=True, slots=True)
class Segment:
    """One cacheable unit of a request. ``origin`` is ``"pruned"`` / ``"truncated"`` for a copy
    the manager made of a message (it explains a break there)."""

    key: Hashable
    tokens: int
    blocks: int = 1
    section: Section = "messages"
    user_turn: bool = False
    origin: str = ""


@dataclass(frozen=True, slots=True)
class Request:
    """A request as the cache sees it. ``overhead`` (reply priming) follows the messages and is
    never cached; ``at`` is when it was sent (seconds, any clock; None: unknown, never judged
    expired); ``breakpoints`` are Anthropic breakpoint boundaries (number of segments before
    each), None for the default placement."""

    segments: tuple[Segment, ...]
    overhead: int = 0
    cache_key: str | None = None
    at: float | None = None
    breakpoints: tuple[int, ...] | None = None

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.segments) + self.overhead


@dataclass(frozen=True, slots=True)
class CacheReport:
    """One request judged against the one before it (tokens in the counter's units).

    ``shared_tokens`` repeat the previous request's prefix; of those, ``cached_tokens`` are read
    from the cache under the provider's rules, and ``written_tokens`` (Anthropic) are written to
    it. ``index`` is the position, in the context's messages, of the first one that differs
    (None: no break, or the break is in the tool definitions). ``cost`` is in input tokens at
    the full price.
    """

    provider: str
    prompt_tokens: int
    shared_tokens: int
    cached_tokens: int
    written_tokens: int
    reason: BreakReason
    section: Section | None = None
    index: int | None = None
    limit: Limit | None = None
    read_price: float = 0.10
    write_price: float = 1.0

    @property
    def uncached_tokens(self) -> int:
        """Tokens billed at the plain input price."""
        return self.prompt_tokens - self.cached_tokens - self.written_tokens

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def cost(self) -> float:
        """The request's input cost, in input tokens at the full price."""
        return (
            self.cached_tokens * self.read_price
            + self.written_tokens * self.write_price
            + self.uncached_tokens
        )

    def describe(self) -> str:
        """One line for logs: what was cached, where the prefix broke and why."""
        where = "" if self.index is None else f" at message {self.index}"
        text = (
            f"{self.provider}: {self.cached_tokens:,} of {self.prompt_tokens:,} tokens cached "
            f"({self.cached_share:.0%}), {self.written_tokens:,} written; {self.reason}{where}"
        )
        return text + (f" ({self.limit})" if self.limit else "")


def compare(previous: Request | None, current: Request, rules: CacheRules) -> CacheReport:
    """What ``rules``' provider caches of ``current`` after ``previous`` (None: the first)."""
    for name, value, wanted in (
        ("previous", previous, "a Request (request_of(messages)) or None"),
        ("current", current, "a Request (request_of(messages))"),
        ("rules", rules, "CacheRules (cache_rules(provider, model))"),
    ):
        kind = CacheRules if name == "rules" else Request
        if not isinstance(value, kind) and not (name == "previous" and value is None):
            raise ConfigurationError(
                f"compare: {name} must be {wanted}, got {type(value).__name__}"
            )
    before = None if previous is None else (previous, Layout.of(previous.segments))
    return judge(before, current, Layout.of(current.segments), rules)


@dataclass(frozen=True, slots=True)
class Layout:
    """Running sums of a request's segments, so a request that extends the previous one is
    judged by reading only its new segments. ``cum[b]`` / ``blocks[b]``: tokens / content blocks
    before boundary ``b``; ``system``: the boundary after the system prompt; ``last_user``: the
    index of the last user turn (None: none)."""

    cum: list[int]
    blocks: list[int]
    system: int | None
    last_user: int | None

    @classmethod
    def of(cls, segments: Sequence[Segment], start: Layout | None = None, keep: int = 0) -> Layout:
        """The layout of ``segments``, whose first ``keep`` are those ``start`` was made of."""
        if start is None or keep == 0:
            return cls(
                list(accumulate(map(_tokens, segments), initial=0)),
                list(accumulate(map(_blocks, segments), initial=0)),
                next((i + 1 for i, s in enumerate(segments) if s.section == "system"), None),
                _last_user(segments, len(segments), 0),
            )
        tail = segments[keep:]
        cum = _extended(start.cum[: keep + 1], map(_tokens, tail))
        blocks = _extended(start.blocks[: keep + 1], map(_blocks, tail))
        system = start.system if start.system is not None and start.system <= keep else None
        if system is None:
            system = next((keep + i + 1 for i, s in enumerate(tail) if s.section == "system"), None)
        last_user = _last_user(segments, len(segments), keep)
        if last_user is None and start.last_user is not None:
            last_user = start.last_user  # in the kept part, else dropped: look further back
            if last_user >= keep:
                last_user = _last_user(segments, keep, 0)
        return cls(cum, blocks, system, last_user)


def _extended(sums: list[int], values: Iterator[int]) -> list[int]:
    """``sums`` (running sums, at least the 0) continued with ``values``."""
    more = accumulate(values, initial=sums[-1])
    next(more)  # the initial value is sums[-1] again
    sums.extend(more)
    return sums


def _tokens(segment: Segment) -> int:
    return segment.tokens


def _blocks(segment: Segment) -> int:
    return segment.blocks


def _last_user(segments: Sequence[Segment], end: int, stop: int) -> int | None:
    """The index of the last user turn in ``segments[stop:end]`` (None: none)."""
    return next((i for i in range(end - 1, stop - 1, -1) if segments[i].user_turn), None)


def judge(
    previous: tuple[Request, Layout] | None,
    current: Request,
    layout: Layout,
    rules: CacheRules,
    known: int = 0,
) -> CacheReport:
    """:func:`compare` with the layouts at hand; ``known``: leading segments already known to
    be shared (the caller sent the same objects again)."""
    segments = current.segments
    cum = layout.cum
    total = cum[-1] + current.overhead
    reason: BreakReason = "first_request"
    section: Section | None = None
    index: int | None = None
    shared_n = 0
    expired = False
    if previous is not None:
        before = previous[0]
        shared_n = _common(before.segments, segments, known)
        reason, section = _why(before.segments, segments, shared_n)
        if reason != "extended":
            tools = 1 if segments and segments[0].section == "tools" else 0
            index = shared_n - tools if section not in ("tools", None) else None
        if before.cache_key != current.cache_key:
            shared_n, reason, section, index = 0, "cache_key_changed", None, None
        then, now = before.at, current.at
        expired = then is not None and now is not None and cache_expired(rules, now - then)
    shared = cum[shared_n]
    limit: Limit | None = "expired" if expired and shared else None
    if rules.breakpoints:
        cached, written, lost = _anthropic(previous, current, layout, shared_n, expired, rules)
        limit = limit or lost
    else:
        written = 0
        cached = 0 if expired else shared // rules.step * rules.step
        if cached < rules.min_tokens or not rules.caches:
            cached = 0
            if shared and not limit:
                limit = "below_minimum" if rules.caches else "no_cache"
    return CacheReport(
        rules.provider,
        total,
        shared,
        cached,
        written,
        reason,
        section,
        index,
        limit,
        rules.read_price,
        rules.write_price,
    )


def _common(a: tuple[Segment, ...], b: tuple[Segment, ...], known: int = 0) -> int:
    """How many leading segments ``a`` and ``b`` share (the first ``known`` are)."""
    n, end = known, min(len(a), len(b))
    while n < end and a[n].key == b[n].key:
        n += 1
    return n


def _why(
    before: tuple[Segment, ...], now: tuple[Segment, ...], n: int
) -> tuple[BreakReason, Section | None]:
    """Why the prefix broke at segment ``n`` (``"extended"``: it did not)."""
    if n == len(before):
        return "extended", None
    if n == len(now):
        return "shortened", "messages"
    old, new = before[n], now[n]
    sections = (old.section, new.section)
    for kind, reason in (
        ("tools", "tools_changed"),
        ("system", "system_changed"),
        ("summary", "compacted"),
    ):
        if kind in sections:
            return reason, kind  # type: ignore[return-value]
    if any(s.key == new.key for s in before[n + 1 :]):
        return "cut_moved", "messages"  # the oldest messages were dropped
    origin = new.origin or old.origin
    if origin in ("pruned", "truncated"):
        return origin, "messages"  # type: ignore[return-value]
    if any(s.key == old.key for s in now[n + 1 :]):
        return "cut_moved", "messages"  # older messages came back before it
    return "edited", "messages"


def default_marks(count: int, system_end: int | None, last_user: int | None) -> list[int]:
    """Where breakpoints go by default, as boundaries (``b``: after the first ``b`` of ``count``
    items), most useful first, without repeats: after the last item (the whole request is
    written, the next one reads it), at the end of the system prompt (it survives a moved cut)
    and before the last user turn (the end of the previous turn: reads still hit when the latest
    turn added many blocks)."""
    order = [count]
    if system_end is not None:
        order.append(system_end)
    if last_user:
        order.append(last_user)
    return list(dict.fromkeys(order))


def breakpoints(request: Request, rules: CacheRules, layout: Layout | None = None) -> list[int]:
    """The boundaries at which ``request`` writes Anthropic cache entries, most useful first."""
    segments = request.segments
    if layout is None:
        layout = Layout.of(segments)
    cum = layout.cum
    if request.breakpoints is not None:
        marks = list(request.breakpoints)
        if len(marks) > rules.max_breakpoints or any(not 0 < b <= len(segments) for b in marks):
            raise ConfigurationError(
                f"breakpoints must be at most {rules.max_breakpoints} boundaries in "
                f"1..{len(segments)}, got {request.breakpoints!r}"
            )
        return [b for b in marks if cum[b] >= rules.min_tokens]
    marks = []
    for b in default_marks(len(segments), layout.system, layout.last_user):
        if len(marks) == rules.max_breakpoints:
            break
        if b > 0 and cum[b] >= rules.min_tokens:
            marks.append(b)
    return marks


def _anthropic(
    previous: tuple[Request, Layout] | None,
    current: Request,
    layout: Layout,
    shared_n: int,
    expired: bool,
    rules: CacheRules,
) -> tuple[int, int, Limit | None]:
    """(read, written, why fewer were read than shared) under breakpoint caching."""
    cum = layout.cum
    marks = breakpoints(current, rules, layout)
    entries = []
    if previous is not None and not expired:
        entries = [b for b in breakpoints(previous[0], rules, previous[1]) if b <= shared_n]
    blocks = layout.blocks
    read = 0
    for c in marks:
        for b in entries:
            if b <= c and blocks[c] - blocks[b] <= rules.lookback_blocks:
                read = max(read, b)
    last = max(marks, default=0)
    written = cum[last] - cum[read] if last > read else 0
    limit: Limit | None = None
    if entries and read < max(entries):
        limit = "lookback"
    elif not read and shared_n and not expired:
        limit = "below_minimum" if cum[shared_n] < rules.min_tokens else "no_breakpoint"
    return cum[read], written, limit
