"""The manager's side of view pruning: a protocol, a ledger view with pruned sums, and a fallback.

The manager must not import ``compaction/`` (layers point down), so it talks to a pruning engine
through :class:`ViewPruner` only; ``ToolResultPruning.bind()`` (in ``compaction/pruning``) returns
one. The engine answers with a :class:`PrunePlan`: replacement objects by stable message position
(``seq``) and prefix sums of the *pruned* trimmable tokens, so the unchanged strategies bisect on
what will actually be sent.

:func:`fit_newest_group` is the default safety net with or without pruning: when the newest
complete tool exchange cannot fit, its results are cut head+tail to fit instead of vanishing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._js import utf16_len
from ..counting import TokenCounter
from ..errors import ConfigurationError
from ..events import Event, ToolResultsPruned, ToolResultTruncated
from ..messages import Message, normalize
from ..messages.truncate import head_tail, rewrite_results
from ..offload.stub import Offloader
from ..providers import ProviderRules
from ._ledger import Ledger
from .plan import Shortfall, lead_group, plan_context
from .scattered import Scattered, count, gather
from .strategies import Strategy, destructive


@dataclass(slots=True)
class PrunePlan:
    """What a pruning engine decided for one request (``report`` is engine-defined).

    ``since``: the first group whose pruned sum may differ from the engine's previous plan (0:
    any), so the priority levels filed on the previous sums are kept below it.
    """

    replacements: dict[int, Any]
    cum: list[int]
    saved_tokens: int
    report: Any = None
    since: int = 0


class ViewPruner(Protocol):
    """An engine bound to one manager; state lets it stay prefix-stable and incremental."""

    def plan(
        self, ledger: Ledger, counter: TokenCounter, window: int, fixed: int, budget: int = 0
    ) -> PrunePlan:
        """Replacements and pruned prefix sums for the current ledger (``budget``: what the
        context may send, 0 when unknown)."""
        ...

    def reset(self) -> None:
        """Forget everything (the history was cleared)."""
        ...


class Pruning(Protocol):
    """What ``pruning=`` takes: a configuration that binds one engine per manager
    (``compaction.pruning.ToolResultPruning`` is the library's)."""

    def bind(self) -> ViewPruner | None:
        """A fresh engine for one manager (its state follows that manager's history); None
        for a configuration that only carries an offload area (``offload.OffloadOnly``)."""
        ...


def with_group_tokens(ledger: Ledger, g: int, tokens: int) -> Ledger:
    """A view in which group ``g`` counts ``tokens`` (the newest exchange cut to fit).

    Copies the sums once (O(groups)); only used on the rare request where the newest exchange
    alone does not fit.
    """
    cum = list(ledger.cum)
    delta = tokens - (cum[g + 1] - cum[g])
    for k in range(g + 1, len(cum)):
        cum[k] += delta
    return ledger.with_sums(cum)


def materialize(
    ledger: Ledger, starts: list[int], stops: list[int], replacements: dict[int, Any]
) -> list[Any]:
    """``ledger.messages_in`` with pruned copies swapped in (work proportional to the output)."""
    if not replacements:
        return ledger.messages_in(starts, stops)
    originals, seq, swap = ledger.originals, ledger.seq, replacements.get
    out: list[Any] = []
    for a, b in zip(starts, stops, strict=True):
        lo, hi = ledger.group_start[a], ledger.group_end(b - 1)
        out += map(swap, seq[lo:hi], originals[lo:hi])  # dict.get(seq, original), in C
    return out


@dataclass(slots=True)
class Truncation:
    """The newest exchange, cut to fit: new objects and what it cost."""

    messages: list[Any]
    tokens: int
    original_tokens: int
    results_truncated: int
    chars_cut: int = 0
    call_ids: list[str] = field(default_factory=list)


def _both(older: Truncation, newer: Truncation) -> Truncation:
    """Two groups cut in one request, reported as one cut (the event, the cache tracker)."""
    return Truncation(
        [*older.messages, *newer.messages],
        older.tokens + newer.tokens,
        older.original_tokens + newer.original_tokens,
        older.results_truncated + newer.results_truncated,
        older.chars_cut + newer.chars_cut,
        [*older.call_ids, *newer.call_ids],
    )


def fit_newest_group(
    originals: Sequence[Any],
    records: Sequence[Message],
    room: int,
    counter: TokenCounter,
    offload: Offloader | None = None,
) -> Truncation | None:
    """Cut the tool results of one group head+tail so the group fits ``room`` tokens.

    Binary search on the per-result character cap (each step counts only this group). A result
    (and a message) is only replaced by a cut that costs fewer tokens than it: small parallel
    results cut alongside a big one are sent as they are. None when the group has no result we
    can rewrite or cannot fit even with empty results. With ``offload`` the full result is
    stored there and the cut names its handle (a plain cut when the area fails). Images in the
    results stay when the group fits with them (a screenshot is often what the tool was for);
    else they are cleared too, each leaving a marker in the text.
    """
    if room <= 0:
        return None
    has_images = any(rec.images or rec.media for rec in records if rec.result_ids)
    for images in ("keep", "clear") if has_images else ("clear",):
        cuts = _Cuts(originals, records, counter, offload, images)
        lo, hi, best = 0, cuts.longest - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            got = cuts.build(mid)
            if got is not None and got[1] <= room:
                best, lo = (mid, got), mid + 1
            else:
                hi = mid - 1
        if best is not None:
            break
    if best is None:
        return None
    cap, (msgs, tokens, changed) = best
    ids = [i for rec in records for i in rec.result_ids]
    cut = sum(max(n - cap, 0) for n in cuts.lengths)
    return Truncation(msgs, tokens, cuts.original_tokens, changed, cut, ids)


def least_group_tokens(
    originals: Sequence[Any], records: Sequence[Message], counter: TokenCounter
) -> int | None:
    """What the group costs with its results cut to nothing (None: no result to cut): the
    least :func:`fit_newest_group` can send, so what an overflow says the group needs."""
    got = _Cuts(originals, records, counter, None, "clear").build(0)
    return None if got is None else got[1]


class _Cuts:
    """One group's results cut head+tail at a character cap, each result text counted once."""

    def __init__(
        self,
        originals: Sequence[Any],
        records: Sequence[Message],
        counter: TokenCounter,
        offload: Offloader | None,
        images: str,
    ) -> None:
        self.originals, self.records = originals, records
        self.counter, self.offload, self.images = counter, offload, images
        self.lengths = [max((utf16_len(r.text) for r in rec.results), default=0) for rec in records]
        self.longest = max(self.lengths, default=0)
        self.costs = [counter.count_message(r) for r in records]
        self.original_tokens = sum(self.costs)
        self.text_tokens: dict[str, int] = {}  # each result text counted once across a search

    def build(self, cap: int) -> tuple[list[Any], int, int] | None:
        """The group with results longer than ``cap`` cut, its tokens and how many messages
        changed; None when nothing got smaller."""
        if self.longest == 0:
            return None
        counter, offload, text_tokens = self.counter, self.offload, self.text_tokens
        head = cap - cap // 2

        def rule(text: str, _images: int) -> str | None:
            # A cut adds "\n...\n" and a marker: a result only a little over the cap would come
            # back longer, so it is cut only when that sends fewer tokens.
            if utf16_len(text) <= cap:
                return None
            cut = offload.stub(text, head, cap // 2) if offload is not None else None
            cut = cut if cut is not None else head_tail(text, head, cap // 2)
            before = text_tokens.get(text)
            if before is None:
                before = text_tokens[text] = counter.count_text(text)
            return cut if counter.count_text(cut) < before else None

        out, tokens, changed = [], 0, 0
        for original, rec, cost in zip(self.originals, self.records, self.costs, strict=True):
            new = rewrite_results(original, rule, self.images) if rec.result_ids else None
            new_cost = counter.count_message(normalize(new)) if new is not None else cost
            if new is not None and new_cost < cost:  # never a message that grew
                changed += 1
                out.append(new)
                tokens += new_cost
            else:
                out.append(original)
                tokens += cost
        return (out, tokens, changed) if changed else None


@dataclass(slots=True)
class ViewPlan:
    """One request's context: group runs, their trimmable tokens as sent, and the copies to
    send instead of some originals (pruned results, the newest exchange cut to fit).

    A scattered priority cut is held as its rule (``scattered``, runs left empty): read the
    context through :meth:`messages` and :meth:`message_count`, never the runs directly."""

    starts: list[int]
    stops: list[int]
    tokens: int
    replacements: dict[int, Any]
    report: Any = None
    truncation: Truncation | None = None
    scattered: Scattered | None = None

    def messages(self, ledger: Ledger) -> list[Any]:
        if self.scattered is not None:
            return gather(ledger, self.scattered, self.replacements)
        return materialize(ledger, self.starts, self.stops, self.replacements)

    def message_count(self, ledger: Ledger) -> int:
        if self.scattered is not None:
            return count(ledger, self.scattered)
        return ledger.message_count_in(self.starts, self.stops)


@dataclass(slots=True)
class ViewOptions:
    """A host's fixed view settings: its counter, pruning engine, window and fallback switch."""

    counter: TokenCounter
    pruner: ViewPruner | None = None
    window: int = 0
    budget: int = 0
    truncate_newest: bool = True
    #: Where the newest-exchange cut stores what it cuts (``pruning.offload``; None: nowhere).
    offload: Offloader | None = None
    #: Tokens of the host's tool definitions (checked against ``pruning.caps``).
    tools: int = 0

    reported: tuple[int, ...] = ()
    #: The last pruned view (with the ledger it was made from) and the first group whose pruned
    #: sum changed since: its priority levels are carried over below that group.
    last: tuple[Ledger, Ledger] | None = None
    since: int = 0

    def reset(self) -> None:
        """The history was cleared: the pruning engine starts over."""
        self.last, self.since = None, 0
        if self.pruner is not None:
            self.pruner.reset()
        if self.offload is not None:
            self.offload.forget()  # the area retires its handles; the next cut stores again
        self.reported = ()

    def evict(self, ledger: Ledger, strategy: Strategy, room: int) -> Sequence[Any]:
        """After an add: drop for good what ``strategy`` evicts; returns the caller's messages.

        A destructive strategy evicts on the pruned sums, so FIFO drops only what does not fit
        once old results are pruned (``room`` counts everything held). A strategy that keeps the
        base ``Strategy.evict`` is asked too: it answers its floor, and nothing is pruned for it.
        The latest user turn stays, and so does the turn a context opens with when its group
        cannot (``lead_group`` under the ledger's first-user ``rules``): a provider rejects a
        context that starts with the assistant.
        """
        pruner = self.pruner
        view = ledger
        if pruner is not None and destructive(strategy):
            fixed = self.budget - room - ledger.pinned_total
            view = self.pruned(
                ledger, pruner.plan(ledger, self.counter, self.window, fixed, self.budget)
            )
        floor = strategy.evict(view, room)
        if floor <= ledger.floor:
            return ()
        rules = ledger.rules
        lead = lead_group(ledger, ledger.protected_group(), rules) if rules is not None else -1
        return ledger.evict_before(floor, lead)

    def pruned(self, ledger: Ledger, plan: PrunePlan) -> Ledger:
        """``ledger`` as a strategy sees it under ``plan``: with its pruned sums (every plan of
        the engine passes here, so ``since`` is tracked across them).

        The priority levels of the previous pruned view are taken over below the first group
        whose sum changed since it, so a request files only what changed (O(changed groups),
        not O(history)); the previous view is not read again.
        """
        self.since = min(self.since, plan.since)
        if not plan.saved_tokens:
            return ledger
        last = self.last[1] if self.last is not None and self.last[0] is ledger else None
        view = ledger.with_sums(plan.cum, last, self.since)
        self.last, self.since = (ledger, view), len(plan.cum) - 1
        return view

    def events(self, plan: ViewPlan) -> list[Event]:
        """What changed in the view since the last events, as typed events."""
        out: list[Event] = []
        report, cut = plan.report, plan.truncation
        if report is not None:
            counts = (report.results_trimmed, report.results_cleared, report.thinking_cleared)
            if counts != self.reported and any(counts):
                out.append(ToolResultsPruned(report))
            self.reported = counts
        if cut is not None:
            ids = tuple(cut.call_ids)
            out.append(
                ToolResultTruncated(ids, cut.results_truncated, cut.tokens, cut.original_tokens)
            )
        return out


def view_options(
    pruning: Pruning | None,
    truncate_newest: bool,
    counter: TokenCounter,
    window: int,
    budget: int,
    tools: int = 0,
) -> ViewOptions:
    """Check ``pruning`` (anything with ``bind()``, i.e. a ``ToolResultPruning``) and bind it;
    ``tools``: tokens of the tool definitions, checked against its ``caps`` if it has some."""
    if pruning is not None and not callable(getattr(pruning, "bind", None)):
        raise ConfigurationError(f"pruning must be a ToolResultPruning, got {pruning!r:.60}")
    if not isinstance(truncate_newest, bool):
        raise ConfigurationError(f"truncate_newest must be a bool, got {truncate_newest!r:.60}")
    caps = getattr(pruning, "caps", None)
    if caps is not None:  # tool definitions are read-only: checked once, when bound
        caps.check_tools(tools)
    pruner = pruning.bind() if pruning is not None else None
    area = getattr(pruning, "offload", None)
    offload = Offloader(area) if area is not None else None
    return ViewOptions(counter, pruner, window, budget, truncate_newest, offload, tools)


def plan_view(
    ledger: Ledger,
    strategy: Strategy,
    room: int,
    provider: ProviderRules | None,
    options: ViewOptions,
) -> ViewPlan:
    """Pruning, then the newest-exchange fallback, then :func:`plan_context` on what is left.

    The strategy decides on the pruned sums (``Ledger.with_sums``), so it keeps what will
    actually fit once old results are trimmed. Raises :class:`Shortfall` like ``plan_context``.
    Pruning ratios are of ``options.window``; usage counts every held message (pinned ones
    included) plus what is sent besides them (system prompt, summary, priming, tools), which is
    ``options.budget`` minus ``room`` minus the pinned tokens.
    """
    counter, pruner = options.counter, options.pruner
    view, repl, report = ledger, {}, None
    if pruner is not None:
        fixed = options.budget - room - ledger.pinned_complete_tokens()
        plan = pruner.plan(ledger, counter, options.window, fixed, options.budget)
        report = plan.report
        view = options.pruned(ledger, plan)
        if plan.saved_tokens:
            repl = plan.replacements
    fit, uncut = None, None  # uncut: the newest group that could not be cut to fit
    g = ledger.complete - 1
    if options.truncate_newest and g >= ledger.floor:
        p = ledger.protected_group()  # with the turn a context opens with (plan.lead_group)
        lead = lead_group(ledger, p, provider) if p >= 0 else -1
        newest = not ledger.group_pinned[g]
        # Every request sends these groups. The results of the newest exchange and of the
        # latest user turn's group are cut to fit: that turn's first (an older result the
        # person spoke with; cut while it was the newest, it would otherwise overflow every
        # later request of the loop), leaving the newest exchange at least half of their room.
        sent = {x for x in (lead, p, g) if x >= 0}
        for x in [y for y, cuttable in ((p, 0 <= p < g), (g, newest)) if cuttable]:
            left = room - sum(view.trimmable(y, y + 1) for y in sent if y != x)
            if x != g and newest:  # the older group: half of what both may use, at least
                left = max(left, (left + view.trimmable(g, g + 1)) // 2)
            if view.trimmable(x, x + 1) <= left or not ledger.has_results(x):
                continue
            a, b = ledger.group_start[x], ledger.group_end(x)
            group = ledger.originals[a:b], ledger.records[a:b]
            cut = fit_newest_group(*group, left, counter, options.offload)
            if cut is not None:
                view = with_group_tokens(view, x, cut.tokens)
                repl = {**repl, **dict(zip(ledger.seq[a:b], cut.messages, strict=True))}
                fit = cut if fit is None else _both(fit, cut)
            elif x == g:
                uncut = group
    try:
        kept = plan_context(view, strategy, room, provider)
    except Shortfall:  # say what is short with the newest results cut to nothing
        least = None if uncut is None else least_group_tokens(*uncut, counter)  # nothing stored
        if least is not None:
            plan_context(with_group_tokens(view, g, least), strategy, room, provider)
        raise
    if kept.scattered is not None:
        return ViewPlan([], [], kept.trimmable_tokens, repl, report, fit, kept.scattered)
    return ViewPlan(kept.starts, kept.stops, kept.trimmable_tokens, repl, report, fit)
