"""Attach an offload area to a manager: the view offloads what it cuts, and the area follows
the history (a clear or a revert retires every handle; replayed messages revive theirs).

Why through public hooks only: the manager knows nothing about offloading (its view options
read ``pruning.offload``, and :func:`attach_offload` switches the pruning with
``use_pruning``); the area hears ``Cleared`` and ``MessageAdded`` as a subscriber. Revert
works without journal cooperation: ``revert_to`` rebuilds the manager with a clear and a replay,
so every handle is retired, then the kept history makes its own resolve again (a stub in a
replayed message names its handle, as the summary of a replayed compaction names those it
quotes; a result the view cuts again is stored again under the same key, hence the same
handle). A result reverted away is named by nothing and stays retired. Only what the history
names is revived, so an add costs no store round trip unless its text quotes a handle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..errors import ConfigurationError, ContextManagerError
from ..events import Cleared, Compacted, Event, MessageAdded
from ..host import ManagerHost
from ..messages import normalize
from .area import HANDLE, OffloadArea
from .memory import MemoryOffload
from .stub import Offloader, OffloadOnly

__all__ = ["attach_offload"]


class _Attached:
    """Per-manager state (``manager.extension``): the area and how to stop following."""

    def __init__(self) -> None:
        self.area: OffloadArea | None = None
        self.unsubscribe: Callable[[], None] | None = None
        self.retired = False


def _handles(event: MessageAdded | Compacted) -> set[str]:
    """The handles a message or a compaction summary names (its text and tool results)."""
    try:
        record = event.record if isinstance(event, MessageAdded) else normalize(event.summary)
    except ContextManagerError:  # a summary set by hand that no reader takes: it names nothing
        return set()
    texts = [record.text, *(result.text for result in record.tool_results)]
    return {found.group() for text in texts for found in HANDLE.finditer(text)}


def attach_offload(
    manager: ManagerHost, area: OffloadArea | None = None, *, view: bool = True
) -> OffloadArea:
    """Make ``manager`` offload to ``area`` and keep ``area`` in step with its history.

    Without ``area`` the manager gets a :class:`~context_manager.offload.MemoryOffload` of its
    own (64 MiB, oldest evicted first), freed with it.

    ``view=True`` (default): a ``ToolResultPruning`` already set gets ``offload=area`` (its
    trimmed and cleared results become stubs), and without pruning the newest-exchange cut
    offloads (:class:`OffloadOnly`); the engine starts fresh (the prompt cache misses once).
    Attaching again replaces the previous area. Returns ``area``.
    """
    if area is None:
        area = MemoryOffload()
    Offloader(area)  # checks the type
    state = manager.extension(_Attached, _Attached)
    with manager.locked():
        if state.unsubscribe is not None:
            state.unsubscribe()
        state.area, state.retired = area, False

        attached = area

        def follow(event: Event) -> None:
            if isinstance(event, Cleared):
                attached.retire()
                state.retired = True
            elif state.retired and isinstance(event, MessageAdded | Compacted):
                handles = _handles(event)  # a replayed summary still quotes its handles
                if handles:
                    attached.revive(handles)

        state.unsubscribe = manager.subscribe(follow)
        if view:
            manager.use_pruning(_with_area(getattr(manager, "pruning", None), area))
    return area


def _with_area(pruning: Any, area: OffloadArea) -> Any:
    if pruning is None or isinstance(pruning, OffloadOnly):
        return OffloadOnly(area)
    if dataclasses.is_dataclass(pruning) and hasattr(pruning, "offload"):
        return dataclasses.replace(pruning, offload=area)  # type: ignore[type-var]
    raise ConfigurationError(
        f"cannot attach an offload area to pruning {pruning!r:.60}: use ToolResultPruning"
    )
