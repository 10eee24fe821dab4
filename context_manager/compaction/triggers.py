"""When to compact: threshold rules, the pre-compaction flush hook, overflow detection and the
compact-once-and-retry helper.

Threshold rules: Pi's ``tokens > window - reserve`` (strict, via ``pi_rules.should_compact``)
with OpenClaw's reserve floor (the reserve is at least ``reserve_floor``; 0 disables the floor),
and optionally Kimi CLI's ``tokens >= window * ratio``. The soft-threshold hook fires once per
compaction cycle when tokens reach ``window - reserve - soft_threshold_tokens`` (with OpenClaw's
defaults the reserve is the 20000 floor), so an app can save notes before history is summarized.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .._config import check_int
from ..counting.usage import read_usage
from ..errors import (
    CompactionError,
    CompactionInProgressError,
    ConfigurationError,
    ContextOverflowError,
    NothingToCompactError,
)
from ..host import ManagerHost
from ..messages.sdk import field
from . import pi_rules as pi
from ._flow import Call, Flow, run_async, run_sync
from .entry import CompactionEntry
from .policies import CompactionPolicy
from .runner import CompactionState, compaction_flow, state_of

logger = logging.getLogger("context_manager.compaction")

T = TypeVar("T")

# --- Overflow detection ----------------------------------------------------------------------


def _error_texts(error: Any) -> tuple[list[str], list[Any]]:
    """Texts and error codes an SDK exception (or error body) carries, duck-typed."""
    texts: list[str] = []
    codes: list[Any] = [field(error, "code"), field(error, "type")]
    if isinstance(error, BaseException):
        texts.append(str(error))
    message = field(error, "message")
    if isinstance(message, str):
        texts.append(message)
    body = error if isinstance(error, Mapping) else getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error")
        for source in (body, inner) if isinstance(inner, Mapping) else (body,):
            codes += [source.get("code"), source.get("type")]
            if isinstance(source.get("message"), str):
                texts.append(source["message"])
        if isinstance(inner, str):
            texts.append(inner)
    elif isinstance(body, str):
        texts.append(body)
    texts += [c for c in codes if isinstance(c, str)]
    return texts, codes


def _status(error: Any) -> Any:
    status = field(error, "status_code")
    return status if status is not None else field(error, "status")


def _pi_error(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": text}


def _response_as_pi(response: Any) -> dict[str, Any] | None:
    """An OpenAI chat completion or Anthropic message reply as the Pi message Pi would record."""
    raw = field(response, "usage")
    if raw is None:
        return None
    choices = field(response, "choices")
    if choices:
        stop = "length" if field(choices[0], "finish_reason") == "length" else "stop"
    elif field(response, "stop_reason") is not None:  # Anthropic
        stop = "length" if field(response, "stop_reason") == "max_tokens" else "stop"
    else:
        return None
    try:
        usage = read_usage(raw)
    except ConfigurationError:
        return None
    # Pi compares input + cacheRead with the window; cache writes are not in its reading.
    used = {"input": usage.input, "cacheRead": usage.cache_read, "output": usage.output}
    return {"role": "assistant", "content": [], "stopReason": stop, "usage": used}


def _is_reply(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(key in value for key in ("stopReason", "choices", "stop_reason")) or (
            value.get("role") == "assistant"
        )
    return field(value, "choices") is not None or field(value, "stop_reason") is not None


def is_context_overflow(error_or_message: Any, context_window: int | None = None) -> bool:
    """True when a provider said the prompt did not fit the model's context window.

    Accepts a Pi-shaped assistant message (Pi's rule, exactly), an OpenAI / Anthropic SDK
    exception or error body (duck-typed: ``code == "context_length_exceeded"``, HTTP 413, or
    ``str(error)`` / ``.message`` / ``.body`` matching Pi's provider patterns; HTTP 429 and
    rate-limit texts never count), a plain error string, or, given ``context_window``, an
    OpenAI / Anthropic reply whose usage shows a silent overflow (Pi's usage checks).
    """
    value = error_or_message
    if isinstance(value, str):
        return pi.is_context_overflow(_pi_error(value))
    if isinstance(value, Mapping) and ("stopReason" in value or value.get("role") == "assistant"):
        return pi.is_context_overflow(value, context_window)
    if not isinstance(value, BaseException) and _is_reply(value):
        as_pi = _response_as_pi(value)
        return (
            bool(context_window)
            and as_pi is not None
            and pi.is_context_overflow(as_pi, context_window)
        )
    status = _status(value)
    if status == 429:
        return False
    texts, codes = _error_texts(value)
    if "context_length_exceeded" in codes or status == 413:
        return True
    return bool(texts) and pi.is_context_overflow(_pi_error("\n".join(texts)))


# --- Threshold triggers ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FlushInfo:
    """Passed to the soft-threshold hook: where the tokens stand and which cycle this is."""

    tokens: int
    threshold: int
    context_window: int
    cycle: int


@dataclass(frozen=True, slots=True)
class CompactionTriggers:
    """Automatic compaction rules; call :meth:`before_request` before each model call.

    ``reserve_tokens`` (Pi, default 16384) is raised to ``reserve_floor`` (OpenClaw, default
    20000; 0 disables the floor). ``ratio`` adds Kimi CLI's ``tokens >= window * ratio`` rule
    (Kimi uses 0.85). ``on_flush`` is called once per compaction cycle when tokens reach
    ``window - reserve - soft_threshold_tokens``.

    A circuit breaker stops a compaction loop: after ``breaker_after`` automatic compactions in a
    row that failed or freed less than ``min_freed_ratio`` of the window (each one a summarizer
    call, and a rewritten prompt prefix), :meth:`before_request` stops compacting, with one
    warning, until the history has grown by ``min_freed_ratio`` of the window since the last try;
    a compaction that frees enough closes it. ``breaker_after=0`` turns it off.
    """

    reserve_tokens: int = int(pi.DEFAULT_COMPACTION_SETTINGS["reserveTokens"])
    reserve_floor: int = 20_000
    ratio: float | None = None
    soft_threshold_tokens: int = 4000
    on_flush: Callable[[FlushInfo], Any] | None = None
    enabled: bool = True
    breaker_after: int = 3
    min_freed_ratio: float = 0.05

    def __post_init__(self) -> None:
        for name in ("reserve_tokens", "reserve_floor", "soft_threshold_tokens", "breaker_after"):
            check_int(name, getattr(self, name))
        if self.ratio is not None and not 0 < self.ratio <= 1:
            raise ConfigurationError(f"ratio must be in (0, 1], got {self.ratio}")
        if not 0 <= self.min_freed_ratio < 1:
            raise ConfigurationError(
                f"min_freed_ratio must be in [0, 1), got {self.min_freed_ratio}"
            )

    @property
    def effective_reserve(self) -> int:
        return max(self.reserve_tokens, self.reserve_floor)

    def should_compact(self, tokens: int, context_window: int) -> bool:
        """Pi's strict rule on the floored reserve, or the ratio rule when configured."""
        settings = {"enabled": self.enabled, "reserveTokens": self.effective_reserve}
        if pi.should_compact(tokens, context_window, settings):
            return True
        return self.enabled and self.ratio is not None and tokens >= context_window * self.ratio

    def flush_threshold(self, context_window: int) -> int:
        return context_window - self.effective_reserve - self.soft_threshold_tokens

    def should_flush(self, tokens: int, context_window: int) -> bool:
        return self.enabled and tokens >= self.flush_threshold(context_window)

    def request_flow(
        self,
        manager: ManagerHost,
        summarizer: Any = None,
        *,
        policy: CompactionPolicy | None = None,
        tokens: int | None = None,
        context_window: int | None = None,
    ) -> Flow[CompactionEntry | None]:
        """Fire the flush hook if due (once per cycle), then compact if due."""
        window = context_window or manager.max_tokens
        current = manager.used_tokens if tokens is None else tokens
        state = state_of(manager)
        due = self.on_flush is not None and self.should_flush(current, window)
        if due and state.flushed_cycle != state.cycle:
            state.flushed_cycle = state.cycle
            info = FlushInfo(current, self.flush_threshold(window), window, state.cycle)
            yield Call(
                self.on_flush,  # type: ignore[arg-type]
                (info,),
                awaitable="refuse",
                refusal="on_flush returned an awaitable; use abefore_request",
            )
        if tokens is None:
            current = manager.used_tokens  # the hook may have changed the history
        if not self.should_compact(current, window):
            return None
        if state.retry_at is not None and current < state.retry_at:
            return None  # the breaker is open: compacting again would free as little
        enough = self.min_freed_ratio * window
        try:
            entry = yield from compaction_flow(
                manager, summarizer, policy=policy, reason="threshold", fallback=False
            )
        except CompactionInProgressError:
            raise  # another compaction is running: not this one's failure
        except NothingToCompactError as exc:
            # The newest turns alone crossed the threshold: summarizing cannot help, and the
            # request still fits by the view's own means (truncating the newest result).
            self._strike(state, current, enough, "found nothing to compact")
            logger.info("no compaction before this request: %s", exc)
            return None
        except Exception as exc:  # the summarizer's own errors too (an API down, a bad reply)
            self._strike(state, current, enough, f"failed: {type(exc).__name__}")
            raise
        if not isinstance(entry, CompactionEntry):
            return None  # no fallback was asked
        freed = current - manager.used_tokens
        if freed < enough:
            self._strike(state, current, enough, f"freed {freed} tokens")
        else:
            state.strikes, state.retry_at = 0, None
        return entry

    def _strike(self, state: CompactionState, tokens: int, enough: float, what: str) -> None:
        state.strikes += 1
        if not self.breaker_after or state.strikes < self.breaker_after:
            return
        if state.retry_at is None:
            logger.warning(
                "automatic compaction stopped after %d in a row that failed or freed too little "
                "(the last %s); it resumes when the history has grown by %d tokens",
                state.strikes,
                what,
                int(enough),
            )
        state.retry_at = tokens + int(enough)

    def before_request(
        self, manager: ManagerHost, summarizer: Any = None, **options: Any
    ) -> CompactionEntry | None:
        """Fire the flush hook if due, then compact (reason ``threshold``) if due.

        Options: ``policy``; ``tokens`` (default ``manager.used_tokens``, usage-anchored when
        recorded); ``context_window`` (default ``manager.max_tokens``). Returns the entry when it
        compacted.
        """
        return run_sync(self.request_flow(manager, summarizer, **options))

    async def abefore_request(
        self, manager: ManagerHost, summarizer: Any = None, **options: Any
    ) -> CompactionEntry | None:
        """Async :meth:`before_request` (the flush hook may be async too)."""
        return await run_async(self.request_flow(manager, summarizer, **options))


# --- Overflow recovery -------------------------------------------------------------------------


def _unrecoverable(
    manager: ManagerHost, cause: Any, context_window: int | None, why: str
) -> ContextOverflowError:
    budget = context_window or manager.max_tokens
    return ContextOverflowError(
        f"the provider reported a context overflow {why} (our count: {manager.used_tokens} "
        f"tokens of {budget}); compact with a smaller keep_recent_tokens / "
        f"max_preserved_messages, or use a model with a larger window. Provider said: {cause}",
        required=int(manager.used_tokens),
        budget=int(budget),
    )


def _attempt(
    manager: ManagerHost, send: Callable[[list[Any]], Any], context_window: int | None
) -> Flow[tuple[bool, Any]]:
    """Send the context: (whether it overflowed, the reply or the overflow error)."""
    try:
        reply = yield Call(send, (manager.get_context(),), awaitable="pass")
    except Exception as exc:
        if not is_context_overflow(exc, context_window):
            raise
        return True, exc
    return _is_reply(reply) and is_context_overflow(reply, context_window), reply


def recovery_flow(
    manager: ManagerHost,
    send: Callable[[list[Any]], Any],
    *,
    summarizer: Any = None,
    policy: CompactionPolicy | None = None,
    focus: str | None = None,
    context_window: int | None = None,
    triggers: CompactionTriggers | None = None,
) -> Flow[Any]:
    """Send; on a context overflow compact once and resend once (see :func:`send_with_recovery`)."""
    if triggers is not None:
        yield from triggers.request_flow(manager, summarizer, policy=policy)
    overflowed, first = yield from _attempt(manager, send, context_window)
    if not overflowed:
        return first
    try:
        yield from compaction_flow(
            manager, summarizer, focus=focus, policy=policy, reason="overflow", will_retry=True
        )
    except CompactionError as exc:
        raise _unrecoverable(
            manager, first, context_window, f"and compaction could not help: {exc}"
        ) from exc
    overflowed, reply = yield from _attempt(manager, send, context_window)
    if overflowed:
        error = _unrecoverable(manager, reply, context_window, "again after compacting")
        raise error from (reply if isinstance(reply, BaseException) else None)
    return reply


def send_with_recovery(manager: ManagerHost, send: Callable[[list[Any]], T], **options: Any) -> T:
    """``send(manager.get_context())``; on a context overflow compact once and resend once.

    An overflow is an exception or a returned reply that :func:`is_context_overflow` accepts.
    A history too short to summarize makes the view clear every tool result but the newest
    (see ``compact()``) before the resend. A second overflow, or a compaction that can help in
    neither way, raises ``ContextOverflowError`` (chained to the provider's error). Options:
    ``summarizer``, ``policy``, ``focus``, ``context_window``, ``triggers`` (run first).
    """
    return run_sync(recovery_flow(manager, send, **options))  # type: ignore[no-any-return]


async def asend_with_recovery(
    manager: ManagerHost, send: Callable[[list[Any]], Awaitable[T]], **options: Any
) -> T:
    """Async :func:`send_with_recovery` (``send`` returns an awaitable)."""
    return await run_async(recovery_flow(manager, send, **options))
