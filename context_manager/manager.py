"""MessageContextManager: add messages (counted once), ask for the context that fits.

The manager owns the budget arithmetic, the system prompt and its parts: the ledger (storage and
prefix sums), the strategy, the tool-call policy (``_tool_calls.ToolCalls``), the view options
and, from ``ExtensionHub``, journal and subscribers. ``get_context`` costs O(log n) to decide plus
the size of what it returns. Extensions (stores, compaction) never touch private state: a
*journal* receives each change before memory changes (write-ahead), subscribers after.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

from ._config import (
    budget_options,
    check_count,
    check_message_options,
    checked_hook,
    checked_tools,
    options_from_config,
)
from ._hub import ExtensionHub, ReadOnly
from ._tool_calls import ToolCalls
from .budget._ledger import Ledger
from .budget.allowance import Allowance
from .budget.calibration import Calibration
from .budget.compacted import sent_summary
from .budget.plan import Shortfall
from .budget.pruned import Pruning, ViewPlan, plan_view, view_options
from .budget.restrict import after_head
from .budget.strategies import Strategy, get_strategy
from .counting import TokenCounter, get_counter
from .counting.usage import read_usage
from .errors import ConfigurationError, ContextOverflowError, InvalidMessageError
from .events import (
    CacheReported,
    Cleared,
    Compacted,
    Evicted,
    MessageAdded,
    SystemPromptSet,
    ToolCallsClosed,
    UsageRecorded,
)
from .host import HistoryItem, Unread
from .messages import Message, message_list, normalize
from .messages.groups import INTERRUPTED_RESULT
from .messages.normalize import with_index
from .prompt_cache.tracker import last_report, observe_request
from .providers import ProviderRules, fuse_turns, get_provider
from .stats import ContextStats, snapshot


class MessageContextManager(ExtensionHub):
    """Keeps a conversation inside a token budget.

    ``max_tokens`` is the model's context window; the input budget is that minus an output reserve
    (``reserve_tokens``, else ``reserve_ratio`` of the window, 20% by default). With a ``model`` the
    window defaults to the model's, and a larger ``max_tokens`` is an error (refused, not clamped).
    ``counter=None`` counts with the model's most precise counter (tiktoken for OpenAI models, the
    safe estimate otherwise; chars/4 only when named: ``counter="chars"``). ``strategy`` defaults
    to ``"sliding_window"`` (the history keeps every message, only what is sent is trimmed);
    ``"fifo"`` evicts on add. ``retention_ratio``: cache-friendly trims; ``calibrate``: decisions
    scaled by billed/counted usage; ``pruning``: old results cut in the view. ``truncate_newest``
    cuts the newest exchange's and latest user turn's results to fit. Settings are read-only.
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        *,
        model: str | None = None,
        counter: str | TokenCounter | None = None,
        strategy: str | Strategy = "sliding_window",
        reserve_ratio: float = 0.2,
        reserve_tokens: int | None = None,
        max_messages: int | None = None,
        retention_ratio: float | None = None,
        warn_ratio: float = 0.9,
        on_near_limit: Callable[[ContextStats], None] | None = None,
        on_evict: Callable[[list[Any]], None] | None = None,
        repair: bool = False,
        tools: Sequence[Any] | None = None,
        system_prompt: str | Any | None = None,
        summarizer: Any = None,
        provider: str | ProviderRules | None = None,
        interrupted_result: str = INTERRUPTED_RESULT,
        calibrate: bool | None = None,
        pruning: Pruning | None = None,
        truncate_newest: bool = True,
    ) -> None:
        super().__init__()
        window, reserve_tokens = budget_options(
            max_tokens, model, reserve_ratio, reserve_tokens, warn_ratio
        )
        self._model = model
        self._counter = get_counter(counter, model=model)
        self._strategy = get_strategy(
            strategy, max_messages=max_messages, retention_ratio=retention_ratio
        )
        self.warn_ratio = warn_ratio
        self.on_near_limit = checked_hook("on_near_limit", on_near_limit)
        self.on_evict = checked_hook("on_evict", on_evict)
        self._provider = get_provider(provider)
        #: Text of the synthetic result that closes a tool call a new user turn interrupted.
        self.interrupted_result = interrupted_result
        #: Close open calls when a user turn arrives (trim() turns it off: it checks as given).
        self.close_interrupted = True
        self._tools = checked_tools(tools)
        self._ledger = Ledger(self._provider)
        self._calls = ToolCalls(repair)  # protocol state, closures, repair
        self._warned, self._added = False, 0
        counter = self._counter
        calibration = Calibration(not counter.exact if calibrate is None else calibrate)
        allowance = Allowance.counted(counter, window, reserve_tokens, self._tools, calibration)
        self._allowance = allowance
        #: Used by ``compact()`` when no summarizer is passed (None: the extractive one).
        self.summarizer = checked_hook("summarizer", summarizer)
        self._compaction: Any = None
        self._unread: Unread | None = None  # the oldest messages a store's open left unread
        self._pruning = pruning
        budget, tools_tokens = allowance.budget, allowance.tools
        self._view = view_options(pruning, truncate_newest, counter, window, budget, tools_tokens)
        if system_prompt is not None:
            self.set_system_prompt(system_prompt)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> MessageContextManager:
        """Build from a dict with snake_case or TS-style camelCase keys."""
        return cls(**options_from_config(config))

    # -- configuration (read-only: cached totals depend on it) ------------------------------
    max_tokens = ReadOnly[int]("_allowance.window", "The context window.")
    model = ReadOnly["str | None"]("_model", "The model name given (None without one).")
    reserve_tokens = ReadOnly[int]("_allowance.reserve", "Tokens kept free for the reply.")
    budget_tokens = ReadOnly[int]("_allowance.budget", "What the context may use.")
    counter = ReadOnly[TokenCounter]("_counter", "The token counter every message is counted by.")
    strategy = ReadOnly[Strategy]("_strategy", "The trimming strategy.")
    pruning = ReadOnly["Pruning | None"]("_pruning", "Tool-result pruning of the view (None: off).")

    @property
    def tools(self) -> list[Any] | None:
        """Tool definitions counted in every request (a copy; set them at construction)."""
        return list(self._tools) if self._tools else None

    def use_pruning(self, pruning: Pruning | None) -> None:
        """Switch the view's tool-result pruning (``None``: off; history unchanged; compaction's
        fallback uses it). Pruned copies are rebuilt once, so the prompt cache misses once."""
        with self._lock:
            self._read_unread()  # it weighs every result held
            view = self._view
            truncate, window, budget = view.truncate_newest, view.window, view.budget
            self._view = view_options(pruning, truncate, view.counter, window, budget, view.tools)
            self._pruning = pruning

    def set_system_prompt(self, prompt: str | Any) -> None:
        """Set or replace the pinned system prompt (a text, or a system/developer message)."""
        original = {"role": "system", "content": prompt} if isinstance(prompt, str) else prompt
        rec = normalize(original)
        if rec.role not in ("system", "developer"):
            raise InvalidMessageError(f"system prompt role {rec.role!r} is not system or developer")
        with self._lock:
            self._install_system(original, rec)
            self._after_change()

    def _install_system(self, original: Any, rec: Message) -> int:
        tokens = self._counter.count_message(rec)
        change = SystemPromptSet(original, rec)
        self._write(change)
        self._allowance.system = (original, rec, tokens)
        self._allowance.recap()
        if self._listeners:
            self._emit(change)
        return tokens

    @property
    def system_prompt(self) -> str | None:
        """The system prompt's text (None when there is none)."""
        system = self._allowance.system
        return system[1].text if system else None

    @property
    def system_message(self) -> Any:
        """The system prompt as the caller gave it (a text becomes a system dict)."""
        return self._allowance.system[0] if self._allowance.system else None

    def count_message(self, message: Any) -> int:
        """Tokens ``message`` would take if added (nothing is stored)."""
        return self._counter.count_message(normalize(message))

    def can_add(self, message: Any) -> bool:
        """True when adding ``message`` keeps everything held within the budget."""
        return self._allowance.admits(self.used_tokens, self.count_message(message))

    def add(self, message: Any, *, priority: int = 0, pinned: bool = False) -> int:
        """Add one message (any accepted shape); returns the tokens it was counted at. One path:
        read it (a leading system message becomes the system prompt), close the calls a new user
        turn interrupted (or repair), then :meth:`_store`, which writes a store ahead of memory."""
        return self.add_counted(message, None, priority=priority, pinned=pinned)

    def add_counted(
        self, message: Any, tokens: int | None, *, priority: int = 0, pinned: bool = False
    ) -> int:
        """:meth:`add` with the count under ``counter.fingerprint()`` known (None: count it)."""
        tokens = None if tokens is None else check_count("tokens", tokens)
        if type(priority) is not int or type(pinned) is not bool:
            check_message_options(priority, pinned)
        with self._lock:
            index = self._added
            rec = normalize(message, index)
            first = self._allowance.system is None and not self._ledger.next_seq  # since a clear
            if rec.role in ("system", "developer") and first:
                tokens = self._install_system(message, rec)
                self._added += 1
                return tokens
            calls = self._calls
            if not calls.repair and not (self.close_interrupted and calls.protocol.pending):
                return self._store(message, rec, index, priority, pinned, tokens)  # common

            def store(item: Any, item_rec: Message) -> int:  # at the end, counted unless known
                n = tokens if item is message else None
                return self._store(item, item_rec, self._added, priority, pinned, n)

            text = self.interrupted_result
            if calls.repair:
                return calls.store_repaired(message, index, rec, text, store)
            return calls.interrupt(message, rec, store, lambda cut: self._close_pending(text, cut))

    def _store(
        self, message: Any, rec: Message, index: int, priority: int, pinned: bool, n: int | None
    ) -> int:
        """Check the tool protocol, count, write ahead, append, let the strategy evict, tell.

        Memory changes only after the checks and the journal accepted the message. The strategy
        is asked on every add, so what it evicts is reported by the add that made room for it.
        """
        protocol, ledger = self._calls.protocol, self._ledger
        outside = protocol.outside(rec)  # no tool exchange to check or record (most messages)
        try:
            joins = False if outside else protocol.check(rec, index)
        except InvalidMessageError:
            if self._unread is None:
                raise
            self._read_unread()  # the call it answers may be older: decide on every message
            return self._store(message, rec, self._added, priority, pinned, n)
        tokens = self._counter.count_message(rec) if n is None else n
        change = None
        if self._journal is not None or self._listeners:  # (an event is built only if read)
            change = MessageAdded(message, rec, index, tokens, pinned, priority)
            if self._journal is not None:
                try:
                    self._journal.write(change)
                except InvalidMessageError as exc:  # the codec names the field, not the message
                    with_index(exc, index)
                    raise
        if not outside:
            protocol.commit(rec)
            ledger.open = bool(protocol.pending)
        released = ledger.append(message, rec, tokens, priority, pinned, joins)
        self._added += 1
        if change is not None and self._listeners:
            self._emit(change)
        evicted = self._view.evict(ledger, self._strategy, self._allowance.room(ledger, True))
        if (released or evicted) and (self._listeners or self.on_evict is not None):
            gone = [*released, *evicted]
            if self._listeners:
                self._emit(Evicted(tuple(gone)))
            if self.on_evict is not None:
                self.on_evict(gone)
        self._after_change()
        return tokens

    def extend(self, messages: Iterable[Any]) -> None:
        """Add messages in order under one lock; on an invalid one, those before it stay added.

        With a store the messages are written in one atomic step (one transaction, one script,
        one file write) when the loop ends: ``Journal.batch``.
        """
        journal = self._journal
        with self._lock, journal.batch() if journal is not None else nullcontext():
            for message in message_list(messages):
                self.add(message)

    @property
    def repair(self) -> bool:
        """Repair a broken tool protocol on add instead of raising; may be switched any time."""
        return self._calls.repair

    @repair.setter
    def repair(self, value: bool) -> None:
        with self._lock:
            self._read_unread()
            self._calls.set_repair(value, self._ledger)

    def close_pending_tool_calls(self, reason: str | None = None) -> list[Any]:
        """Answer every open tool call with a synthetic error result (your own cancel path): the
        results are added like any message, in the caller's shape; emits ``ToolCallsClosed``."""
        if reason is not None and not isinstance(reason, str):
            raise ConfigurationError(f"reason must be a string, got {reason!r}")
        with self._lock:
            return self._close_pending(reason or self.interrupted_result)

    def _close_pending(self, text: str, cut: tuple[str, ...] | None = None) -> list[Any]:
        ids, results = cut or self._calls.pending, self._calls.closures(self._ledger, text, cut)
        for result in results:
            self._store(result, normalize(result), self._added, 0, False, None)
        if ids and self._listeners:
            self._emit(ToolCallsClosed(ids, text))
        return results

    def record_usage(self, usage: Any) -> None:
        """Anchor counts on reported prompt tokens (int or usage object); learn the calibration."""
        with self._lock:
            self.record_usage_counted(usage, Calibration.sent(self.context_tokens))

    def record_usage_counted(self, usage: Any, counted: int | None) -> None:
        """:meth:`record_usage` with our count of what was sent (None: none); a store replays it."""
        reported = read_usage(usage).prompt_tokens
        counted = None if counted is None else check_count("counted", counted)
        with self._lock:
            self._write(change := UsageRecorded(reported, counted))
            allowance = self._allowance
            allowance.calibration.record(reported, counted, self.token_count, allowance.fixed)
            allowance.recap()
            if self._listeners:
                self._emit(change)
            self._after_change()

    def clear(self, *, keep_system_prompt: bool = True) -> None:
        """Forget the history (and the system prompt unless ``keep_system_prompt``)."""
        with self._lock:
            change = Cleared(bool(keep_system_prompt))
            self._write(change)
            self._ledger = Ledger(self._provider)
            self._calls.reset()
            self._compaction = self._unread = None
            allowance = self._allowance
            allowance.calibration.reset()
            self._warned = False
            self._view.reset()
            allowance.summary = None
            allowance.system = allowance.system if keep_system_prompt else None
            allowance.recap()
            if self._listeners:
                self._emit(change)

    @property
    def token_count(self) -> int:
        """Tokens of every message held, system prompt included (each counted once, on add)."""
        unread = self._unread.tokens if self._unread else 0
        return self._ledger.total + unread + self._allowance.front

    @property
    def summary_room(self) -> int:
        """Counted tokens a summary may take: the budget less what every request sends."""
        with self._lock:
            return self._allowance.summary_room(self._ledger)

    @property
    def used_tokens(self) -> int:
        """What sending the whole history costs now, anchored on usage (``Calibration.record``)."""
        return self._allowance.used(self.token_count)

    @property
    def messages(self) -> list[Any]:
        """Every message held (caller's objects, in order), system prompt excluded."""
        with self._lock:
            self._read_unread()
            return self._ledger.held_originals()

    def __len__(self) -> int:
        """Messages held, system prompt included."""
        with self._lock:  # the per-role tallies catch up here
            unread = self._unread.count if self._unread else 0
            return self._ledger.held_count() + unread + (1 if self._allowance.system else 0)

    def _plan(self, emit: bool = False) -> ViewPlan:
        """What to send (:func:`plan_view`); ``emit``: send this request's pruning events."""
        allowance = self._allowance
        room, budget = allowance.room(self._ledger), allowance.calibrated
        rules = after_head(self._provider, allowance.summary[1] if allowance.summary else None)
        try:
            plan = plan_view(self._ledger, self._strategy, room, rules, self._view)
        except Shortfall as short:
            raise short.overflow(budget - room, budget) from None
        if self._unread and plan.starts[:1] == [self._ledger.floor]:
            self._read_unread()  # it may reach further: a plan over every message decides
            return self._plan(emit)
        if emit and self._listeners:
            for event in self._view.events(plan):
                self._emit(event)
        return plan

    def get_context(self) -> list[Any]:
        """The caller's messages to send now: system prompt first, then what fits, in order."""
        with self._lock:
            plan = self._plan(emit=True)
            out = plan.messages(self._ledger)  # the head goes in front: a memmove
            system = self._allowance.system
            summary = sent_summary(self._ledger, self._provider, self._allowance.summary)
            head = [system[0]] if system else []
            out[:0] = [*head, summary[0]] if summary else head
            out = fuse_turns(out, self._provider) if self._provider else out
            cache = observe_request(self._extensions, out, plan, bool(system), bool(summary))
            if cache is not None and self._listeners:
                self._emit(CacheReported(cache))
            return out

    def context_tokens(self) -> int:
        """Tokens of what ``get_context`` returns, reply priming and tool definitions included."""
        with self._lock:
            return self._allowance.sent(self._ledger, self._plan().tokens)

    def stats(self) -> ContextStats:
        with self._lock:
            self._read_unread()  # tallies by role
            try:
                plan: ViewPlan | None = self._plan()
            except ContextOverflowError:
                plan = None
            summary = sent_summary(self._ledger, self._provider, self._allowance.summary)
            return snapshot(
                self._allowance,
                self._ledger,
                plan,
                summary,
                self._counter,
                used=self.used_tokens,
                warn_ratio=self.warn_ratio,
                strategy=self._strategy.name,
                cache=last_report(self._extensions),
            )

    def _after_change(self) -> None:
        if self.on_near_limit is None:
            return
        near = self._allowance.near(self.used_tokens, self.warn_ratio)
        if near and not self._warned:
            self._warned = True
            self.on_near_limit(self.stats())
        elif not near:
            self._warned = False

    # -- compaction (see compaction/) --------------------------------------------------------
    def start_history(self, index: int) -> None:
        """Number the next message ``index`` (a group start): a store's reader skipped those
        before it, left out by the latest compaction (no call may be open)."""
        with self._lock:
            if check_count("index", index) < self._ledger.next_seq or self._calls.pending:
                raise ConfigurationError(f"start_history({index}): a call is open, or going back")
            self._ledger.next_seq = self._added = index
            self._calls.protocol.skipped()

    def hold_unread(self, unread: Unread, count: int) -> None:
        """Hold the next ``count`` messages unread (a store's open read only the newest): they
        keep their indices, tokens and place; what needs them reads them (:meth:`_read_unread`)."""
        with self._lock:
            self.start_history(self._ledger.next_seq + count)
            self._unread = unread

    def _read_unread(self) -> None:
        """Hold every message: the unread ones, read as an open reading every record would."""
        unread, self._unread = self._unread, None  # (its read reads this one's history)
        if unread is not None:
            try:
                whole = unread.read(self)
            except BaseException:
                self._unread = unread  # still held, as before
                raise
            assert isinstance(whole, MessageContextManager)  # built with this one's options
            self._ledger, self._calls, self._added = whole._ledger, whole._calls, whole._added

    def history(self) -> list[HistoryItem]:
        """Every held message with its stable index, tokens, pin and priority, in order."""
        with self._lock:
            self._read_unread()
            return [HistoryItem(*row) for row in self._ledger.held_rows()]

    @property
    def summary(self) -> Any:
        """The summary message sent after the system prompt (None before any compaction)."""
        return self._allowance.summary[0] if self._allowance.summary else None

    @property
    def compaction(self) -> Any:
        """The latest compaction entry applied (None until the first compaction)."""
        return self._compaction

    def apply_compaction(self, summary: Any, first_kept_index: int, entry: Any = None) -> None:
        """Send ``summary`` instead of every message before ``first_kept_index``.

        Pinned messages and the latest user turn stay (invariants 1 and 3); a cut inside a tool
        group moves back to its start. What is cut leaves memory (a store keeps it), and so does
        a usage anchor (it measured what was cut). Written ahead."""
        if type(first_kept_index) is not int or first_kept_index < 0:  # bool is no index
            raise ConfigurationError(f"first_kept_index must be an int >= 0: {first_kept_index!r}")
        rec = normalize(summary)
        with self._lock:
            self._read_unread()
            ledger = self._ledger
            tokens = self._counter.count_message(rec)
            floor = min(ledger.group_of_seq(first_kept_index), ledger.complete)
            change = Compacted(summary, first_kept_index, entry, ledger.held_after(floor))
            self._write(change)
            self._allowance.summary = (summary, rec, tokens)
            self._allowance.recap()
            ledger.evict_before(floor)
            self._compaction, self._allowance.calibration.anchor = entry, None
            if self._listeners:
                self._emit(change)
            self._after_change()
