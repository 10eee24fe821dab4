"""LangChain's ``trim_messages`` on OpenAI-style dicts, with LangChain Python's exact results.

Parity targets: ``langchain-core`` 1.7.x ``trim_messages`` (followed wherever the two disagree) and
``@langchain/core`` 1.4.0 ``trimMessages`` (proven by ``compat_fixtures/fixtures/langchain.*``).
README.md ("LangChain trim_messages parity") lists every place where JS and Python LangChain differ.

The trimmer is an independent re-implementation of LangChain's observable behaviour: keep the
longest prefix ("first") or suffix ("last") that fits, optionally cut the boundary message
(``allow_partial``), keep a leading system message (``include_system``) and cut the result back
to a message type (``start_on`` / ``end_on``). Like LangChain it does not keep tool calls with
their results: a trimmed list may hold orphans. Use ``MessageContextManager`` when you need
tool-safe trimming; use this when you need LangChain's answer.

Results are the caller's own dicts (never mutated); a partially kept message is a shallow copy
with a new ``content``. Per-message counters are counted once per message and summed by prefix,
so trimming is O(n) counting; a list counter is called wherever LangChain would call it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from ..errors import ConfigurationError
from .langchain_counting import (
    Msg,
    PerMessage,
    ResolvedCounter,
    checked_type,
    content_of,
    count_tokens_approximately,
    per_message,
    resolve_counter,
)

__all__ = [
    "PerMessage",
    "count_tokens_approximately",
    "default_text_splitter",
    "per_message",
    "trim_messages",
]

Strategy = Literal["first", "last"]
TypeNames = str | Sequence[str] | None
Splitter = Callable[[str], list[str]]
# One kept message: its index in the caller's list and the dict to return.
_Item = tuple[int, Msg]

# LangChain type names and OpenAI role names accepted by start_on / end_on.
_TYPE_ALIASES = {
    "human": "human",
    "user": "human",
    "ai": "ai",
    "assistant": "ai",
    "system": "system",
    "tool": "tool",
}


def default_text_splitter(text: str) -> list[str]:
    """Split after every newline, keeping it: joining the pieces gives ``text`` back."""
    pieces = text.split("\n")
    return [piece + "\n" for piece in pieces[:-1]] + pieces[-1:]


def trim_messages(
    messages: Iterable[Msg],
    *,
    max_tokens: int,
    token_counter: Any,
    strategy: Strategy = "last",
    allow_partial: bool = False,
    include_system: bool = False,
    start_on: TypeNames = None,
    end_on: TypeNames = None,
    text_splitter: Splitter | None = None,
) -> list[Msg]:
    """Keep the messages LangChain's ``trim_messages`` keeps, as the caller's own dicts.

    ``token_counter``: ``"approximate"``, a callable taking a list of dicts, ``per_message(fn)``
    or a ``TokenCounter``. ``start_on`` / ``end_on`` take LangChain type names ("human", "ai",
    "system", "tool") or OpenAI roles ("user", "assistant"). ``include_system`` and ``start_on``
    need ``strategy="last"``.
    """
    return [
        message
        for _, message in _trim(
            messages,
            max_tokens=max_tokens,
            token_counter=token_counter,
            strategy=strategy,
            allow_partial=allow_partial,
            include_system=include_system,
            start_on=start_on,
            end_on=end_on,
            text_splitter=text_splitter,
        )
    ]


def _trim(
    messages: Iterable[Msg],
    *,
    max_tokens: int,
    token_counter: Any,
    strategy: Strategy,
    allow_partial: bool,
    include_system: bool,
    start_on: TypeNames,
    end_on: TypeNames,
    text_splitter: Splitter | None,
) -> list[_Item]:
    """``trim_messages`` returning (original index, message) pairs."""
    if strategy not in ("first", "last"):
        raise ConfigurationError(f"strategy must be 'first' or 'last', got {strategy!r}")
    if strategy == "first" and start_on:
        raise ConfigurationError("start_on only works with strategy='last'")
    if strategy == "first" and include_system:
        raise ConfigurationError("include_system only works with strategy='last'")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int | float):
        raise ConfigurationError(f"max_tokens must be a number, got {max_tokens!r}")
    start_types = _type_set(start_on, "start_on")
    end_types = _type_set(end_on, "end_on")
    counter = resolve_counter(token_counter)
    items = list(enumerate(messages))
    kinds = [checked_type(message, index) for index, message in items]
    trimmer = _Trimmer(counter, text_splitter or default_text_splitter, items, kinds, allow_partial)
    if strategy == "first":
        return trimmer.keep_head(items, max_tokens, "first", end_types)
    return trimmer.keep_tail(items, max_tokens, include_system, start_types, end_types)


def _type_set(value: TypeNames, option: str) -> frozenset[str] | None:
    """LangChain type names for ``start_on``/``end_on``; empty means unset, as in LangChain."""
    if not value:
        return None
    names = [value] if isinstance(value, str) else list(value)
    unknown = [name for name in names if name not in _TYPE_ALIASES]
    if unknown:
        raise ConfigurationError(
            f"{option}: unknown message type(s) {unknown}; use {sorted(_TYPE_ALIASES)}"
        )
    return frozenset(_TYPE_ALIASES[name] for name in names)


class _Trimmer:
    """One trimming run: the counter, the splitter and each message's LangChain type."""

    def __init__(
        self,
        counter: ResolvedCounter,
        splitter: Splitter,
        items: list[_Item],
        kinds: list[str],
        allow_partial: bool,
    ) -> None:
        self.counter = counter
        self.splitter = splitter
        self.kinds = kinds
        self.allow_partial = allow_partial
        each = counter.each
        # Additive counters: count every caller message once, up front.
        self.costs = [each(message) for _, message in items] if each is not None else []
        self.originals = [message for _, message in items]

    def keep_tail(
        self,
        items: list[_Item],
        budget: float,
        include_system: bool,
        start_types: frozenset[str] | None,
        end_types: frozenset[str] | None,
    ) -> list[_Item]:
        """Newest messages within ``budget``: cut the tail back to ``end_types``, set a leading
        system message aside (it is kept whole, even over budget), then keep the longest prefix
        of the reversed rest, which must end (i.e. start, once reversed back) on ``start_types``.
        """
        if not items:
            return []
        if end_types:
            items = items[: self._end_index(items, len(items), end_types)]
        system: _Item | None = None
        if include_system and items and self.kinds[items[0][0]] == "system":
            system, items = items[0], items[1:]
        if system is not None:
            budget = max(0, budget - self._count([system]))
        kept = self.keep_head(items[::-1], budget, "last", start_types)
        kept.reverse()
        return kept if system is None else [system, *kept]

    def keep_head(
        self,
        items: list[_Item],
        budget: float,
        partial_side: Strategy,
        end_types: frozenset[str] | None,
    ) -> list[_Item]:
        """Longest prefix within ``budget``; ``partial_side`` says which end of a cut to keep."""
        if not items:
            return []
        count = len(items)
        prefix_count = self._prefix_counter(items)
        if prefix_count(count) <= budget:
            kept_count = count
        else:
            kept_count = _longest_prefix(count, lambda k: prefix_count(k) <= budget)
        if self.allow_partial and kept_count < count:
            partial = self._partial(items, kept_count, budget, partial_side, prefix_count)
            if partial is not None:
                items = [*items[:kept_count], partial]
                kept_count += 1
        if end_types:
            kept_count = self._end_index(items, kept_count, end_types)
        return items[:kept_count]

    def _end_index(self, items: list[_Item], stop: int, types: frozenset[str]) -> int:
        """Shrink ``stop`` until ``items[stop - 1]`` has one of ``types`` (0 if none does)."""
        while stop > 0 and self.kinds[items[stop - 1][0]] not in types:
            stop -= 1
        return stop

    def _partial(
        self,
        items: list[_Item],
        kept_count: int,
        budget: float,
        side: Strategy,
        prefix_count: Callable[[int], int],
    ) -> _Item | None:
        """The cut-down boundary message LangChain would add after the kept prefix, if any."""
        index, boundary = items[kept_count]
        head = items[:kept_count]
        content = content_of(boundary)
        if isinstance(content, list):
            blocks = content[::-1] if side == "last" else list(content)
            for size in range(len(blocks) - 1, 0, -1):
                trial: _Item = (index, {**boundary, "content": blocks[:size]})
                if self._count([*head, trial]) <= budget:
                    kept = blocks[:size]
                    return index, {**boundary, "content": kept[::-1] if side == "last" else kept}
            # LangChain looks for text in what is left after those attempts: one block.
            content = blocks[:1]
        text = _first_text(content)
        if not text:
            return None
        pieces = list(self.splitter(text))
        if side == "last":
            pieces.reverse()
        base = prefix_count(kept_count)

        def fits(size: int) -> bool:
            trial: _Item = (index, {**boundary, "content": "".join(pieces[:size])})
            return base + self._count([trial]) <= budget

        size = _longest_prefix(len(pieces), fits)
        if size == 0:
            return None
        kept_pieces = pieces[:size][::-1] if side == "last" else pieces[:size]
        return index, {**boundary, "content": "".join(kept_pieces)}

    def _prefix_counter(self, items: list[_Item]) -> Callable[[int], int]:
        """``k -> count(items[:k])``: prefix sums when additive, else LangChain's list calls."""
        if self.counter.each is None:
            return lambda k: self._count(items[:k])
        sums = [0]
        for index, _ in items:
            sums.append(sums[-1] + self.costs[index])
        return sums.__getitem__

    def _count(self, items: Sequence[_Item]) -> int:
        each = self.counter.each
        if each is None:
            return self.counter.list_count([message for _, message in items])
        return sum(
            self.costs[index] if message is self.originals[index] else each(message)
            for index, message in items
        )


def _longest_prefix(count: int, fits: Callable[[int], bool]) -> int:
    """LangChain Python's bisection over prefix lengths, probe for probe (same counter calls)."""
    low, high = 0, count
    for _ in range(count.bit_length()):
        if low >= high:
            break
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _first_text(content: str | list[Any]) -> str | None:
    """LangChain's text to split: the string, or the first string / text part of a list."""
    if isinstance(content, str):
        return content
    for block in content:
        if isinstance(block, str):
            return block
        if isinstance(block, Mapping) and block.get("type") == "text":
            text = block.get("text")
            return text if isinstance(text, str) else None
    return None


def split_after_spaces(text: str) -> list[str]:
    """The fixtures' second splitter (also in ``gen/langchain.mjs``): cut after every space."""
    pieces = text.split(" ")
    return [piece + " " for piece in pieces[:-1]] + pieces[-1:]
