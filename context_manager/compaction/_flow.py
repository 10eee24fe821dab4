"""One control flow, two drivers: how compaction writes each sync/async pair once.

A *flow* is a generator that decides everything (plan, events, retries, error wrapping) and
yields a :class:`Call` or :class:`Parallel` step whenever it needs the outside world: a
summarizer, the caller's ``send`` or a hook. :func:`run_sync` performs those steps by blocking;
:func:`run_async` awaits them (running concurrent steps together and sync callables in a worker
thread when asked). Results go back with ``send``, failures with ``throw``, so ``try`` /
``except`` / ``finally`` inside the flow behave the same under both drivers (the loop is
``_flows.py``'s, shared with the stores).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

from .._flows import adrive, drive
from ..errors import ConfigurationError
from ..messages.nesting import short_repr

T = TypeVar("T")

__all__ = ["Call", "Flow", "Parallel", "run_async", "run_sync"]


@dataclass(frozen=True, slots=True)
class Call:
    """Call ``fn(*args)``. Under the sync driver an awaitable result is run to completion
    (``"block"``), returned as is (``"pass"``) or refused with ``refusal`` (``"refuse"``).
    Under the async driver it is awaited; ``thread`` runs a sync ``fn`` in a worker thread."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    awaitable: Literal["block", "pass", "refuse"] = "block"
    thread: bool = False
    refusal: str = ""

    def __post_init__(self) -> None:
        # Checked where the step is made, so a ``send`` or summarizer that is not a function
        # fails as a typed error under both drivers, not as a TypeError from the call.
        if not callable(self.fn):
            raise ConfigurationError(
                f"{short_repr(self.fn, 60)} is not callable: send, a summarizer, a compactor "
                "and hooks must be functions"
            )


@dataclass(frozen=True, slots=True)
class Parallel:
    """Run sub-flows and send back their results as a list (concurrently when async)."""

    flows: tuple[Flow[Any], ...]


Step: TypeAlias = Call | Parallel
Flow: TypeAlias = Generator[Step, Any, T]


async def _await(awaitable: Any) -> Any:
    return await awaitable


def run_blocking(awaitable: Any) -> Any:
    """Run an awaitable to completion from sync code, even inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    # A loop runs in this thread: blocking it on itself would deadlock, so use a fresh thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _await(awaitable)).result()


def _call_sync(step: Call) -> Any:
    result = step.fn(*step.args)
    if step.awaitable == "pass" or not inspect.isawaitable(result):
        return result
    if step.awaitable == "refuse":
        if inspect.iscoroutine(result):
            result.close()  # never awaited here: close it rather than leak a warning
        raise ConfigurationError(step.refusal)
    return run_blocking(result)


def _perform_sync(step: Step) -> Any:
    if isinstance(step, Parallel):
        return [run_sync(sub) for sub in step.flows]
    return _call_sync(step)


def run_sync(flow: Flow[T]) -> T:
    """Drive ``flow`` to its return value, performing each step by blocking."""
    return drive(flow, _perform_sync)


def _is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 (the bound __call__, not callable())
    )


async def _call_async(step: Call) -> Any:
    if step.thread and not _is_async_callable(step.fn):
        result = await asyncio.to_thread(step.fn, *step.args)
    else:
        result = step.fn(*step.args)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _parallel(step: Parallel) -> list[Any]:
    tasks = [asyncio.ensure_future(run_async(sub)) for sub in step.flows]
    try:
        return list(await asyncio.gather(*tasks))
    finally:  # one failed: do not leave its siblings running
        for task in tasks:
            task.cancel()


async def _perform_async(step: Step) -> Any:
    if isinstance(step, Parallel):
        return await _parallel(step)
    return await _call_async(step)


async def run_async(flow: Flow[T]) -> T:
    """Drive ``flow`` to its return value, awaiting each step."""
    return await adrive(flow, _perform_async)
