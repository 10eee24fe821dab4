"""Replay a stored session under several settings and price each request's prompt cache.

A *session* is the message list a conversation accumulated (a session log, a JSON / JSONL file
of messages, a request body). A *request* is sent before every assistant message that follows
a user message or tool results, with the history so far: that is where an agent loop calls the
model. Each setting decides what that request sends (a ``MessageContextManager`` fed as the
session grows, or LangChain's ``trim_messages``), and a
:class:`~context_manager.prompt_cache.CacheTracker` judges it against the previous one under the
provider's cache rules: tokens sent, tokens read from the cache, tokens written, cost in input
tokens at the full price.

Settings are named by short specs joined with ``+``: ``sliding_window``, ``retention=0.7``
(``retention_ratio``), ``prune=openclaw`` / ``prune=anthropic`` (tool-result pruning presets),
``cache_aware`` (with a ``prune=``: its clearing priced with the replay's cache rules, on the
replay's simulated clock), ``fifo``, and ``langchain`` (``trim_messages(strategy="last",
include_system=True, start_on="human")`` with the same per-message counts, on the library's
LangChain-identical implementation). Requests a provider would reject (tool results without
their call, say) are counted per setting with :func:`~context_manager.providers.validate`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..compaction.pruning import ToolResultPruning
from ..counting import TokenCounter, get_counter
from ..errors import ConfigurationError
from ..interop.langchain import per_message, trim_messages
from ..manager import MessageContextManager
from ..messages import message_list, normalize
from ..messages.nesting import short_repr
from ..prompt_cache import CacheRules, CacheTracker
from ..providers import validate

__all__ = [
    "DEFAULT_SETTINGS",
    "ReplayResult",
    "RequestRow",
    "recommend",
    "replay",
    "request_points",
    "table",
]

DEFAULT_SETTINGS = (
    "sliding_window",
    "retention=0.5",
    "retention=0.7",
    "retention=0.9",
    "prune=openclaw",
    "prune=openclaw+cache_aware",
    "retention=0.7+prune=openclaw",
    "retention=0.7+prune=openclaw+cache_aware",
    "langchain",
)
#: A recommendation keeps at least this share of the fullest setting's average context.
RECOMMEND_MIN_CONTEXT = 0.75
_VALIDATE = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini"}


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One request under one setting."""

    sent: int
    cached: int
    written: int
    cost: float
    reason: str
    valid: bool = True


@dataclass(slots=True)
class ReplayResult:
    """One setting over the whole session."""

    setting: str
    budget: int
    rows: list[RequestRow] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.rows)

    @property
    def sent(self) -> int:
        return sum(r.sent for r in self.rows)

    @property
    def cached_share(self) -> float:
        sent = self.sent
        return sum(r.cached for r in self.rows) / sent if sent else 0.0

    @property
    def cost(self) -> float:
        return sum(r.cost for r in self.rows)

    @property
    def invalid(self) -> int:
        return sum(not r.valid for r in self.rows)

    @property
    def avg_context(self) -> float:
        """Mean tokens sent per request, as a share of the budget."""
        return self.sent / self.requests / self.budget if self.rows and self.budget else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "setting": self.setting,
            "requests": self.requests,
            "tokens_sent": self.sent,
            "cached_share": round(self.cached_share, 4),
            "avg_context_share": round(self.avg_context, 4),
            "cost": round(self.cost, 1),
            "invalid_requests": self.invalid,
            "rows": [
                {
                    "sent": r.sent,
                    "cached": r.cached,
                    "written": r.written,
                    "cost": round(r.cost, 1),
                    "reason": r.reason,
                    "valid": r.valid,
                }
                for r in self.rows
            ],
        }


def request_points(messages: Sequence[Any]) -> list[int]:
    """Where requests are made: before each assistant message that follows another role."""
    roles = [normalize(m, i).role for i, m in enumerate(message_list(messages))]
    return [
        i
        for i in range(1, len(roles))
        if roles[i] == "assistant" and roles[i - 1] not in ("assistant", "system", "developer")
    ]


def _parse(spec: str) -> dict[str, Any]:
    options: dict[str, Any] = {"strategy": "sliding_window"}
    for part in spec.split("+"):
        key, _, value = part.strip().partition("=")
        if key in ("sliding_window", "fifo") and not value:
            options["strategy"] = key
        elif key == "langchain" and not value:
            options["langchain"] = True
        elif key == "retention":
            try:
                options["retention_ratio"] = float(value)
            except ValueError:
                raise ConfigurationError(
                    f"retention needs a ratio, got {short_repr(value, 60)}"
                ) from None
        elif key == "prune" and value in ("openclaw", "anthropic"):
            preset = (
                ToolResultPruning.openclaw if value == "openclaw" else ToolResultPruning.anthropic
            )
            options["pruning"] = preset()
        elif key == "cache_aware" and not value:
            options["cache_aware"] = True
        else:
            raise ConfigurationError(
                f"unknown setting {short_repr(part, 60)} in {short_repr(spec, 60)}: use "
                "sliding_window, fifo, langchain, "
                "retention=R, prune=openclaw or prune=anthropic, cache_aware, joined with '+'"
            )
    if options.get("langchain") and len(options) > 2:
        raise ConfigurationError(f"langchain takes no other option, got {short_repr(spec, 60)}")
    if options.get("cache_aware") and "pruning" not in options:
        raise ConfigurationError(
            f"cache_aware needs prune=openclaw or prune=anthropic: {short_repr(spec, 60)}"
        )
    return options


def _contexts(
    spec: str,
    messages: Sequence[Any],
    points: Sequence[int],
    budget: int,
    counter: TokenCounter,
    tools: Sequence[Any] | None,
    rules: CacheRules,
    clock: list[float],
) -> Iterator[tuple[list[Any], bool, bool]]:
    """(context, starts with the system prompt, holds a summary) for each request point;
    ``clock[0]`` is the simulated time of the request being made."""
    options = _parse(spec)
    provider = _VALIDATE[rules.provider]
    if options.pop("cache_aware", False):
        options["pruning"] = replace(options["pruning"], cache=rules, clock=lambda: clock[0])
    system = bool(messages) and normalize(messages[0]).role in ("system", "developer")
    if options.pop("langchain", False):
        fixed = counter.count_tools(list(tools)) if tools else 0
        contexts = _langchain(messages, points, budget - fixed, counter)
        yield from ((ctx, system, False) for ctx in contexts)
        return
    manager = MessageContextManager(
        budget, reserve_tokens=0, counter=counter, tools=tools, provider=provider, **options
    )
    added = 0
    for n in points:
        manager.extend(messages[added:n])
        added = n
        yield manager.get_context(), manager.system_message is not None, False


def _langchain(
    messages: Sequence[Any], points: Sequence[int], budget: int, counter: TokenCounter
) -> Iterator[list[Any]]:
    """LangChain's chat setting with our per-message counts, on the suffix that can matter."""
    costs = {id(m): counter.count_message(normalize(m)) for m in messages}

    def count(message: Any) -> int:
        return costs[id(message)]

    limit = budget - counter.prompt_overhead
    system = bool(messages) and normalize(messages[0]).role in ("system", "developer")
    for n in points:
        start, total = n, 0
        while start > (1 if system else 0) and total <= 2 * budget:
            start -= 1
            total += costs[id(messages[start])]
        window = [*messages[:1], *messages[start:n]] if system else list(messages[start:n])
        yield trim_messages(
            window,
            max_tokens=limit,
            token_counter=per_message(count),
            strategy="last",
            include_system=system,
            start_on="human",
        )


def replay(
    messages: Sequence[Any],
    rules: CacheRules,
    *,
    budget: int,
    counter: str | TokenCounter | None = None,
    settings: Sequence[str] = DEFAULT_SETTINGS,
    tools: Sequence[Any] | None = None,
    seconds_between: float | None = None,
) -> list[ReplayResult]:
    """Each setting's requests over ``messages``, judged under ``rules``.

    ``counter`` means what it means for ``trim()`` (a name, a counter, None: the safe
    estimate). ``seconds_between``: simulated time between requests (entries older than the
    provider's lifetime expire); None never expires them.
    """
    messages = message_list(messages)
    if not isinstance(rules, CacheRules):
        raise ConfigurationError(
            f"rules must be CacheRules (cache_rules(provider, model)), got {type(rules).__name__}"
        )
    counter = get_counter(counter)
    if (
        not isinstance(settings, Sequence)
        or isinstance(settings, str)
        or not all(isinstance(spec, str) for spec in settings)
    ):
        raise ConfigurationError(
            f"settings must be a list of setting strings, got {short_repr(settings, 60)}"
        )
    _non_negative("seconds_between", seconds_between)
    points = request_points(messages)
    if not points:
        raise ConfigurationError(
            "the session has no request to replay: no assistant message follows a user or tool "
            "message"
        )
    provider = _VALIDATE[rules.provider]
    results = []
    for spec in settings:
        _parse(spec)  # fail before any work on a bad spec
    for spec in settings:
        tracker = CacheTracker(rules, counter, tools, clock=None)
        result = ReplayResult(spec, budget)
        clock = [0.0]
        contexts = _contexts(spec, messages, points, budget, counter, tools, rules, clock)
        for k, (context, system, summary) in enumerate(contexts):
            at = None if seconds_between is None else k * seconds_between
            clock[0] = (k + 1) * (seconds_between or 0.0)  # the next request's time
            report = tracker.observe(context, system=system, summary=summary, at=at)
            valid = not validate(context, provider)
            result.rows.append(
                RequestRow(
                    report.prompt_tokens,
                    report.cached_tokens,
                    report.written_tokens,
                    report.cost,
                    report.reason,
                    valid,
                )
            )
        results.append(result)
    return results


def recommend(results: Sequence[ReplayResult]) -> ReplayResult | None:
    """The cheapest setting with no rejected request that keeps at least
    :data:`RECOMMEND_MIN_CONTEXT` of the fullest setting's average context."""
    results = _results("recommend", results)
    if not results:
        return None
    fullest = max(r.avg_context for r in results)
    fit = [r for r in results if not r.invalid and r.avg_context >= RECOMMEND_MIN_CONTEXT * fullest]
    return min(fit, key=lambda r: r.cost / max(r.requests, 1), default=None)


def _results(where: str, results: object) -> list[ReplayResult]:
    """``results`` as a list of :class:`ReplayResult` (what :func:`replay` returns)."""
    if not isinstance(results, list | tuple) or not all(
        isinstance(r, ReplayResult) for r in results
    ):
        raise ConfigurationError(
            f"{where} takes the list replay() returns, got {short_repr(results, 60)}"
        )
    return list(results)


def _non_negative(name: str, value: float | None) -> None:
    """A time or a price: a finite number >= 0 (inf, NaN and negatives give costs that mean
    nothing: infinite time reads as none, NaN as every entry cached)."""
    if value is not None and (
        isinstance(value, bool) or not (isinstance(value, int | float) and 0 <= value < math.inf)
    ):
        raise ConfigurationError(
            f"{name} must be a finite number >= 0, got {short_repr(value, 40)}"
        )


def table(results: Sequence[ReplayResult], price: float | None = None) -> str:
    """A text table: per request averages, and cost against the first setting."""
    results = _results("table", results)
    _non_negative("price", price)
    base = results[0].cost / max(results[0].requests, 1) if results else 1.0
    unit = "$ / request" if price is not None else "cost / request"
    width = max([30, *(len(r.setting) for r in results)])
    head = (
        f"{'setting':<{width}} {'requests':>8} {'sent/req':>9} {'of budget':>9} {'cached':>7} "
        f"{unit:>15} {'vs first':>8} {'rejected':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        per = r.cost / max(r.requests, 1)
        shown = f"{per * price / 1e6:,.4f}" if price is not None else f"{per:,.0f}"
        lines.append(
            f"{r.setting:<{width}} {r.requests:>8} {r.sent / max(r.requests, 1):>9,.0f} "
            f"{r.avg_context:>9.1%} {r.cached_share:>7.1%} {shown:>15} "
            f"{per / base if base else 0:>7.2f}x {r.invalid:>8}"
        )
    return "\n".join(lines)
