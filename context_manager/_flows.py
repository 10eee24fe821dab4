"""One control flow, two drivers: the loop that runs a generator *flow* to its return value.

A flow yields a step whenever it needs the outside world and receives the step's result, or
its failure thrown in at the ``yield``, so ``try`` / ``except`` / ``finally`` in a flow behave
the same whether the steps are performed by blocking (:func:`drive`) or awaited
(:func:`adrive`). Compaction (``compaction/_flow.py``: summarizer calls, parallel sub-flows) and
the stores (``store/_drive.py``: SQL statements, Redis scripts, record operations) each bring
their own performer; the loop exists once, here. Imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeAlias, TypeVar

__all__ = ["Flow", "adrive", "drive"]

T = TypeVar("T")

Flow: TypeAlias = Generator[Any, Any, T]


def drive(flow: Flow[T], perform: Callable[[Any], Any]) -> T:
    """Run ``flow`` to its return value, performing each step with ``perform`` (blocking)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = flow.send(value) if error is None else flow.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        value, error = None, None
        try:
            value = perform(step)
        except BaseException as exc:  # thrown into the flow: its except / finally decide
            error = exc


async def adrive(flow: Flow[T], perform: Callable[[Any], Awaitable[Any]]) -> T:
    """Run ``flow`` to its return value, awaiting ``perform(step)`` for each step."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = flow.send(value) if error is None else flow.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        value, error = None, None
        try:
            value = await perform(step)
        except BaseException as exc:
            error = exc
