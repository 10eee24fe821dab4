"""MessageContextManager: add messages (counted once), ask for the context that fits.

The manager owns the budget arithmetic and the pinned system prompt; storage and prefix sums live
in :class:`~context_manager.budget._ledger.Ledger`, the choice of what goes first in a
:class:`~context_manager.budget.strategies.Strategy`. ``get_context`` costs O(log n) to decide plus
the size of what it returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .budget._ledger import Ledger
from .budget.strategies import Selection, Strategy, get_strategy
from .counting import TokenCounter, get_counter
from .errors import ConfigurationError, ContextOverflowError, InvalidMessageError
from .messages import Message, normalize
from .messages.groups import Repairer, ToolProtocol
from .models import get_model

if TYPE_CHECKING:
    from os import PathLike

#: Context window used when neither ``max_tokens`` nor ``model`` is given.
DEFAULT_MAX_TOKENS = 128_000

Listener = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class HistoryItem:
    """One held message as compaction and persistence see it (``index`` is stable)."""

    index: int
    message: Any
    record: Message
    tokens: int
    pinned: bool
    priority: int


@dataclass(frozen=True, slots=True)
class ContextStats:
    """A snapshot of the budget. ``used_tokens`` is what sending the whole history would cost."""

    max_tokens: int
    reserve_tokens: int
    budget_tokens: int
    used_tokens: int
    remaining_tokens: int
    message_count: int
    counts_by_role: dict[str, int]
    tokens_by_role: dict[str, int]
    context_tokens: int
    context_message_count: int
    near_limit: bool
    strategy: str
    counter: str
    calibrated: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def usage_ratio(self) -> float:
        return self.used_tokens / self.budget_tokens if self.budget_tokens else 1.0


_CONFIG_KEYS = {
    "max_tokens": "max_tokens",
    "maxTokens": "max_tokens",
    "contextLength": "max_tokens",
    "context_length": "max_tokens",
    "contextWindow": "max_tokens",
    "context_window": "max_tokens",
    "model": "model",
    "counter": "counter",
    "tokenCounter": "counter",
    "strategy": "strategy",
    "reserveRatio": "reserve_ratio",
    "reserve_ratio": "reserve_ratio",
    "reserveTokens": "reserve_tokens",
    "reserve_tokens": "reserve_tokens",
    "maxMessages": "max_messages",
    "max_messages": "max_messages",
    "retentionRatio": "retention_ratio",
    "retention_ratio": "retention_ratio",
    "warnRatio": "warn_ratio",
    "warn_ratio": "warn_ratio",
    "warningThreshold": "warn_ratio",
    "repair": "repair",
    "systemPrompt": "system_prompt",
    "system_prompt": "system_prompt",
    "tools": "tools",
}


def _usage_input_tokens(usage: Any) -> int:
    """Prompt tokens from an int, an OpenAI/Anthropic usage object or dict."""
    if isinstance(usage, int):
        return usage

    def get(name: str) -> int:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        return value if isinstance(value, int) else 0

    if get("prompt_tokens"):
        return get("prompt_tokens")
    total = (
        get("input_tokens") + get("cache_read_input_tokens") + get("cache_creation_input_tokens")
    )
    if total:
        return total
    raise ConfigurationError(
        "record_usage needs an int or a usage object with prompt_tokens (OpenAI) or "
        f"input_tokens (Anthropic); got {usage!r}"
    )


class MessageContextManager:
    """Keeps a conversation inside a token budget.

    ``max_tokens`` is the model's context window; the input budget is that minus an output
    reserve (``reserve_tokens``, else ``reserve_ratio`` of the window, 20% by default). With a
    ``model`` the window defaults to the model's, and a larger ``max_tokens`` is an error (we
    refuse rather than clamp, so a typo cannot silently shrink or grow a budget).
    ``retention_ratio`` makes trimming prompt-cache friendly (see ``SlidingWindow``).
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        *,
        model: str | None = None,
        counter: str | TokenCounter = "chars",
        strategy: str | Strategy = "fifo",
        reserve_ratio: float = 0.2,
        reserve_tokens: int | None = None,
        max_messages: int | None = None,
        retention_ratio: float | None = None,
        warn_ratio: float = 0.9,
        on_near_limit: Callable[[ContextStats], None] | None = None,
        on_evict: Callable[[list[Any]], None] | None = None,
        repair: bool = False,
        tools: Sequence[Any] | None = None,
        system_prompt: str | None = None,
        summarizer: Any = None,
    ) -> None:
        window = self._window(max_tokens, model)
        if reserve_tokens is None:
            if not 0 <= reserve_ratio < 1:
                raise ConfigurationError(f"reserve_ratio must be in [0, 1), got {reserve_ratio}")
            reserve_tokens = int(window * reserve_ratio)
        if not 0 <= reserve_tokens < window:
            raise ConfigurationError(
                f"reserve_tokens must be in [0, max_tokens={window}), got {reserve_tokens}"
            )
        if not 0 < warn_ratio <= 1:
            raise ConfigurationError(f"warn_ratio must be in (0, 1], got {warn_ratio}")
        self.max_tokens = window
        self.model = model
        self.reserve_tokens = reserve_tokens
        self.budget_tokens = window - reserve_tokens
        self.counter = get_counter(counter, model=model)
        self.strategy = get_strategy(
            strategy, max_messages=max_messages, retention_ratio=retention_ratio
        )
        self.warn_ratio = warn_ratio
        self.on_near_limit = on_near_limit
        self.on_evict = on_evict
        self.repair = repair
        self.tools = list(tools) if tools else None
        self._tools_tokens = self.counter.count_tools(self.tools) if self.tools else 0
        self._fixed = self.counter.prompt_overhead + self._tools_tokens
        self._ledger = Ledger()
        self._protocol = ToolProtocol()
        self._repairer: Repairer | None = None
        self._system: tuple[Any, Message, int] | None = None
        self._listeners: list[Listener] = []
        self._warned = False
        self._usage_anchor: tuple[int, int] | None = None
        self._lock = threading.RLock()
        self._added = 0
        self.store: Any = None
        #: Used by ``compact()`` when no summarizer is passed (None: the extractive one).
        self.summarizer = summarizer
        #: The latest compaction entry applied (None until the first compaction).
        self.compaction: Any = None
        self._summary: tuple[Any, Message, int] | None = None
        if system_prompt is not None:
            self.set_system_prompt(system_prompt)

    @staticmethod
    def _window(max_tokens: int | None, model: str | None) -> int:
        limit = get_model(model).context_window if model else None
        if max_tokens is None:
            return limit or DEFAULT_MAX_TOKENS
        if not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ConfigurationError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if limit is not None and max_tokens > limit:
            raise ConfigurationError(
                f"max_tokens={max_tokens} exceeds {model}'s context window of {limit} tokens; "
                "pass a smaller max_tokens or omit it to use the model's window"
            )
        return max_tokens

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> MessageContextManager:
        """Build from a dict with snake_case or TS-style camelCase keys."""
        options: dict[str, Any] = {}
        for key, value in config.items():
            target = _CONFIG_KEYS.get(key)
            if target is None:
                raise ConfigurationError(
                    f"unknown config key {key!r}; known keys: {', '.join(sorted(_CONFIG_KEYS))}"
                )
            options[target] = value
        return cls(**options)

    @classmethod
    def open(cls, path: str | PathLike[str], **options: Any) -> MessageContextManager:
        """Open (or create) a persistent session log; every later change is appended to it."""
        from .store.session import open_session

        return open_session(cls, path, **options)

    # -- listeners --------------------------------------------------------------------------
    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(event, data)`` on add / system_prompt / clear / usage / compaction."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    def _emit(self, event: str, data: dict[str, Any]) -> None:
        for listener in self._listeners:
            listener(event, data)

    # -- adding -----------------------------------------------------------------------------
    def set_system_prompt(self, prompt: str | Any) -> None:
        """Set or replace the pinned system prompt (a text, or a system/developer message)."""
        original = {"role": "system", "content": prompt} if isinstance(prompt, str) else prompt
        rec = normalize(original)
        if rec.role not in ("system", "developer"):
            raise InvalidMessageError(
                f"the system prompt must have role system or developer, not {rec.role!r}"
            )
        with self._lock:
            self._install_system(original, rec)
            self._after_change()

    def _install_system(self, original: Any, rec: Message) -> int:
        tokens = self.counter.count_message(rec)
        self._system = (original, rec, tokens)
        if self._listeners:
            self._emit("system_prompt", {"text": rec.text, "message": original})
        return tokens

    @property
    def system_prompt(self) -> str | None:
        return self._system[1].text if self._system else None

    def count_message(self, message: Any) -> int:
        """Tokens ``message`` would take if added (nothing is stored)."""
        return self.counter.count_message(normalize(message))

    def can_add(self, message: Any) -> bool:
        """True when adding ``message`` keeps everything held within the budget."""
        return self.used_tokens + self.count_message(message) <= self.budget_tokens

    def add(self, message: Any, *, priority: int = 0, pinned: bool = False) -> int:
        """Add one message (any accepted shape); returns the tokens it was counted at."""
        with self._lock:
            index = self._added
            rec = normalize(message, index)
            if (
                self._system is None
                and rec.role in ("system", "developer")
                and not self._ledger.originals
            ):
                self._added += 1
                return self._install_system(message, rec)
            if self.repair:
                return self._add_repaired(message, rec, index, priority, pinned)
            return self._store(message, rec, index, priority, pinned)

    def _store(self, message: Any, rec: Message, index: int, priority: int, pinned: bool) -> int:
        joins = self._protocol.accept(rec, index)
        tokens = self.counter.count_message(rec)
        ledger = self._ledger
        released = ledger.append(message, rec, tokens, priority, pinned, joins)
        ledger.open = bool(self._protocol.pending)
        self._added += 1
        if self._listeners:
            self._emit(
                "add", {"message": message, "record": rec, "pinned": pinned, "priority": priority}
            )
        evicted = self.strategy.after_add(ledger, self._room(held=True))
        if (released or evicted) and self.on_evict is not None:
            self.on_evict(released + evicted)
        self._after_change()
        return tokens

    def _add_repaired(
        self, message: Any, rec: Message, index: int, priority: int, pinned: bool
    ) -> int:
        if self._repairer is None:
            self._repairer = Repairer()  # sees the same stream, so its state mirrors ours
        tokens = 0
        for item, item_rec in self._repairer.feed(message, index, rec):
            tokens = self._store(item, item_rec, self._added, priority, pinned)
        return tokens

    def extend(self, messages: Iterable[Any]) -> None:
        """Add messages in order; on an invalid one, those before it stay added."""
        for message in messages:
            self.add(message)

    def record_usage(self, usage: Any) -> None:
        """Anchor counts on the provider's reported prompt tokens (int or usage object)."""
        reported = _usage_input_tokens(usage)
        with self._lock:
            self._usage_anchor = (reported, self.token_count)
            self._emit("usage", {"input_tokens": reported})
            self._after_change()

    def clear(self, *, keep_system_prompt: bool = True) -> None:
        """Forget the history (and the system prompt unless ``keep_system_prompt``)."""
        with self._lock:
            self._ledger = Ledger()
            self._protocol.reset()
            self._repairer = None
            self._usage_anchor = None
            self._warned = False
            self._summary = None
            self.compaction = None
            if not keep_system_prompt:
                self._system = None
            self._emit("clear", {"keep_system_prompt": keep_system_prompt})

    # -- reading ----------------------------------------------------------------------------
    @property
    def token_count(self) -> int:
        """Tokens of every message held, system prompt included (each counted once, on add)."""
        fixed = (self._system[2] if self._system else 0) + (
            self._summary[2] if self._summary else 0
        )
        return self._ledger.total + fixed

    @property
    def used_tokens(self) -> int:
        """What sending the whole history costs now, anchored on provider usage if recorded."""
        if self._usage_anchor is not None:
            reported, at = self._usage_anchor
            return reported + self.token_count - at
        return self.token_count + self._fixed

    @property
    def messages(self) -> list[Any]:
        """Every message held (caller's objects, in order), system prompt excluded."""
        ledger = self._ledger
        return [ledger.originals[i] for i in ledger.held_indices()]

    def __len__(self) -> int:
        """Messages held, system prompt included."""
        return sum(self._ledger.role_counts.values()) + (1 if self._system else 0)

    def _room(self, *, held: bool = False) -> int:
        """Tokens left for trimmable groups after the fixed, system and pinned parts.

        ``held`` counts a pinned group still awaiting results (it is held, though not sent yet).
        """
        system = self._system[2] if self._system else 0
        if self._summary is not None:
            system += self._summary[2]
        ledger = self._ledger
        pinned = ledger.pinned_total if held else ledger.pinned_complete_tokens()
        return self.budget_tokens - self._fixed - system - pinned

    def _select(self) -> Selection:
        ledger = self._ledger
        room = self._room()
        protected = ledger.protected_group()
        needed = ledger.cum[protected + 1] - ledger.cum[protected] if protected >= 0 else 0
        if needed > room:
            fixed = self.budget_tokens - room
            what = (
                "the pinned messages and the latest user turn"
                if protected >= 0
                else ("the pinned messages")
            )
            raise ContextOverflowError(
                f"{what} need {fixed + needed} tokens but the budget is {self.budget_tokens} "
                f"(short by {fixed + needed - self.budget_tokens}); raise max_tokens, lower the "
                "reserve, unpin messages or compact",
                required=fixed + needed,
                budget=self.budget_tokens,
            )
        return self.strategy.select(ledger, room, protected)

    def _runs(self, selection: Selection) -> tuple[list[int], list[int]]:
        """The strategy's runs with the pinned groups merged in, in order."""
        ledger = self._ledger
        complete = ledger.complete
        pins = [g for g in ledger.pinned_groups if g < complete]
        if not pins:
            return selection.starts, selection.stops
        starts: list[int] = []
        stops: list[int] = []
        runs = sorted(
            [*zip(selection.starts, selection.stops, strict=True), *((g, g + 1) for g in pins)]
        )
        for a, b in runs:
            if stops and a <= stops[-1]:
                stops[-1] = max(stops[-1], b)
            else:
                starts.append(a)
                stops.append(b)
        return starts, stops

    def get_context(self) -> list[Any]:
        """The caller's messages to send now: system prompt first, then what fits, in order."""
        with self._lock:
            selection = self._select()
            ledger = self._ledger
            out: list[Any] = [self._system[0]] if self._system else []
            if self._summary is not None:
                out.append(self._summary[0])
            out.extend(ledger.messages_in(*self._runs(selection)))
            return out

    def context_tokens(self) -> int:
        """Tokens of what ``get_context`` returns, reply priming and tool definitions included."""
        with self._lock:
            selection = self._select()
            return self.budget_tokens - self._room() + selection.trimmable_tokens

    def stats(self) -> ContextStats:
        with self._lock:
            ledger = self._ledger
            counts = {"system": 0, "user": 0, "assistant": 0, "tool": 0}
            tokens = dict.fromkeys(counts, 0)
            for role, n in ledger.role_counts.items():
                key = "system" if role == "developer" else role
                counts[key] = counts.get(key, 0) + n
                tokens[key] = tokens.get(key, 0) + ledger.role_tokens[role]
            if self._system:
                counts["system"] += 1
                tokens["system"] += self._system[2]
            try:
                selection = self._select()
                context_count = (
                    (1 if self._system else 0)
                    + (1 if self._summary else 0)
                    + ledger.message_count_in(*self._runs(selection))
                )
                context_tokens = self.budget_tokens - self._room() + selection.trimmable_tokens
            except ContextOverflowError:
                context_count, context_tokens = 0, 0
            used = self.used_tokens
            return ContextStats(
                max_tokens=self.max_tokens,
                reserve_tokens=self.reserve_tokens,
                budget_tokens=self.budget_tokens,
                used_tokens=used,
                remaining_tokens=max(0, self.budget_tokens - used),
                message_count=sum(counts.values()),
                counts_by_role=counts,
                tokens_by_role=tokens,
                context_tokens=context_tokens,
                context_message_count=context_count,
                near_limit=used >= self.warn_ratio * self.budget_tokens,
                strategy=self.strategy.name,
                counter=self.counter.name,
                calibrated=self._usage_anchor is not None,
            )

    def _after_change(self) -> None:
        if self.on_near_limit is None:
            return
        near = self.used_tokens >= self.warn_ratio * self.budget_tokens
        if near and not self._warned:
            self._warned = True
            self.on_near_limit(self.stats())
        elif not near:
            self._warned = False

    # -- compaction (see compaction/) --------------------------------------------------------
    def history(self) -> list[HistoryItem]:
        """Every held message with its stable index, tokens, pin and priority, in order."""
        with self._lock:
            ledger = self._ledger
            items = []
            for g in ledger.held_groups():
                pinned, priority = ledger.group_pinned[g], ledger.group_priority[g]
                for i in range(ledger.group_start[g], ledger.group_end(g)):
                    items.append(
                        HistoryItem(
                            ledger.seq[i],
                            ledger.originals[i],
                            ledger.records[i],
                            ledger.tokens[i],
                            pinned,
                            priority,
                        )
                    )
            return items

    @property
    def summary(self) -> Any:
        """The summary message sent after the system prompt (None before any compaction)."""
        return self._summary[0] if self._summary else None

    def apply_compaction(self, summary: Any, first_kept_index: int, entry: Any = None) -> None:
        """Send ``summary`` instead of every message before ``first_kept_index``.

        Pinned messages and the latest user turn stay (invariants 1 and 3); a cut inside a tool
        group moves back to the group's start. History before the cut leaves memory; a store
        keeps it on disk (append-only).
        """
        rec = normalize(summary)
        with self._lock:
            ledger = self._ledger
            self._summary = (summary, rec, self.counter.count_message(rec))
            ledger.evict_before(min(ledger.group_of_seq(first_kept_index), ledger.complete))
            self.compaction = entry
            self._emit(
                "compaction",
                {"entry": entry, "summary": summary, "first_kept_index": first_kept_index},
            )
            self._after_change()

    def compact(
        self, summarizer: Any = None, *, focus: str | None = None, policy: Any = None
    ) -> Any:
        """Summarize old messages now; returns the ``CompactionEntry`` applied."""
        from .compaction import compact_manager

        return compact_manager(self, summarizer, focus=focus, policy=policy)

    async def acompact(
        self, summarizer: Any = None, *, focus: str | None = None, policy: Any = None
    ) -> Any:
        """Async ``compact``; cancelling it leaves history and log untouched."""
        from .compaction import acompact_manager

        return await acompact_manager(self, summarizer, focus=focus, policy=policy)

    # -- persistence shortcuts (see store/) -------------------------------------------------
    def _require_store(self) -> Any:
        if self.store is None:
            raise ConfigurationError(
                "this manager has no store; create it with MessageContextManager.open(path)"
            )
        return self.store

    def checkpoint(self) -> int:
        """Mark the current point of a persistent session; returns the checkpoint id."""
        return int(self._require_store().checkpoint())

    def revert_to(self, checkpoint_id: int) -> None:
        """Rewind a persistent session to just before checkpoint ``checkpoint_id``."""
        with self._lock:  # no add may slip between the file rewrite and the rebuild
            self._require_store().revert_to(checkpoint_id, self)
