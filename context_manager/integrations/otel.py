"""OpenTelemetry spans for a manager's requests (the ``otel`` extra).

``instrument(manager, "anthropic", model)`` turns on the manager's cache report
(``prompt_cache.track_cache``) and subscribes to its events: every ``get_context`` then ends a
span ``context_manager.context`` whose attributes follow the OpenTelemetry GenAI semantic
conventions where they have a name (``gen_ai.provider.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.cache_read.input_tokens``,
``gen_ai.usage.cache_creation.input_tokens``: the *estimates* the cache report makes, in the
manager's counter's units) and sit under ``context_manager.*`` otherwise (context tokens and
messages, messages dropped by trimming, the cached share, where and why the prefix broke,
results pruned or cut, a compaction). Pruning, truncation, eviction and compaction are also
span events.

``opentelemetry-api`` is imported by :func:`instrument` only, never by the rest of the library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..events import (
    CacheReported,
    Compacted,
    Event,
    Evicted,
    ToolResultsPruned,
    ToolResultTruncated,
)
from ..prompt_cache import track_cache

__all__ = ["SPAN_NAME", "instrument"]

SPAN_NAME = "context_manager.context"


def instrument(
    manager: Any,
    provider: str,
    model: str | None = None,
    *,
    tracer_provider: Any = None,
    ttl: str | None = None,
) -> Callable[[], None]:
    """Emit a span per ``get_context`` of ``manager``; returns a function that stops it.

    ``tracer_provider``: an OpenTelemetry ``TracerProvider`` (default: the global one).
    """
    try:
        from opentelemetry import trace
    except ImportError:
        from ..errors import ConfigurationError

        raise ConfigurationError(
            "OpenTelemetry spans need opentelemetry-api: pip install 'context-manager[otel]'"
        ) from None
    from .. import __version__
    from ..errors import ConfigurationError
    from ..manager import MessageContextManager

    if not isinstance(manager, MessageContextManager):
        raise ConfigurationError(f"instrument() needs a manager, got {type(manager).__name__}")
    if model is not None and not isinstance(model, str):
        raise ConfigurationError(f"model must be a name (a string), got {type(model).__name__}")
    tracer = trace.get_tracer("context_manager", __version__, tracer_provider=tracer_provider)
    track_cache(manager, provider, model, ttl=ttl)
    model = model or getattr(manager, "model", None)
    pending: list[tuple[str, dict[str, Any]]] = []
    tally = {"pruned": 0, "truncated": 0, "compacted": 0}

    def listener(event: Event) -> None:
        if isinstance(event, ToolResultsPruned):
            r = event.report
            tally["pruned"] += r.new_trimmed + r.new_cleared
            attrs = {"trimmed": r.new_trimmed, "cleared": r.new_cleared}
            pending.append(("context_manager.tool_results_pruned", attrs))
        elif isinstance(event, ToolResultTruncated):
            tally["truncated"] += event.results
            pending.append(
                (
                    "context_manager.tool_result_truncated",
                    {"tokens": event.tokens, "original_tokens": event.original_tokens},
                )
            )
        elif isinstance(event, Compacted):
            tally["compacted"] += 1
            pending.append(
                ("context_manager.compacted", {"first_kept_index": event.first_kept_index})
            )
        elif isinstance(event, Evicted):
            pending.append(("context_manager.evicted", {"messages": len(event.messages)}))
        elif isinstance(event, CacheReported):
            _span(tracer, manager, event.report, provider, model, pending, tally)
            pending.clear()
            tally.update(pruned=0, truncated=0, compacted=0)

    unsubscribe: Callable[[], None] = manager.subscribe(listener)
    return unsubscribe


def _span(
    tracer: Any,
    manager: Any,
    report: Any,
    provider: str,
    model: str | None,
    pending: list[tuple[str, dict[str, Any]]],
    tally: dict[str, int],
) -> None:
    stats = manager.stats()
    attributes: dict[str, Any] = {
        "gen_ai.provider.name": provider,
        "gen_ai.usage.input_tokens": report.prompt_tokens,
        "gen_ai.usage.cache_read.input_tokens": report.cached_tokens,
        "gen_ai.usage.cache_creation.input_tokens": report.written_tokens,
        "context_manager.context.tokens": stats.context_tokens,
        "context_manager.context.messages": stats.context_message_count,
        "context_manager.budget.tokens": stats.budget_tokens,
        "context_manager.dropped.messages": stats.message_count - stats.context_message_count,
        "context_manager.cache.shared_tokens": report.shared_tokens,
        "context_manager.cache.cached_share": report.cached_share,
        "context_manager.cache.break_reason": report.reason,
        "context_manager.cache.cost": report.cost,
        "context_manager.pruned.results": tally["pruned"],
        "context_manager.truncated.results": tally["truncated"],
        "context_manager.compacted": tally["compacted"] > 0,
    }
    if model:
        attributes["gen_ai.request.model"] = model
    if report.index is not None:
        attributes["context_manager.cache.break_index"] = report.index
    if report.limit:
        attributes["context_manager.cache.limit"] = report.limit
    with tracer.start_as_current_span(SPAN_NAME, attributes=attributes) as span:
        for name, attrs in pending:
            span.add_event(name, attrs)
