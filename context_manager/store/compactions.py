"""The compactions of a stored session, read from its log (any backend), with their manifests.

Every compaction writes a ``_compaction`` record holding its
:class:`~context_manager.compaction.entry.CompactionEntry` (summary, cut, manifest of what it
dropped and which facts survived). :func:`list_compactions` reads them back without building a
manager, through a store object of its own: a manager's store keeps the view it last loaded,
which a read on its behalf must not move. FIFO evictions are not logged, so a stored session
cannot list them; ``compaction.manifest.evictions(manager)`` lists those a live manager saw.
"""

from __future__ import annotations

import inspect
import logging
import os
from typing import Any

from ..compaction.entry import CompactionEntry
from ..compaction.manifest import compactions
from ..errors import ConfigurationError, ContextManagerError
from ..host import ManagerHost
from .handle import StoreHandle
from .protocol import Store
from .records import COMPACTION

__all__ = ["list_compactions"]

logger = logging.getLogger("context_manager.store")


def list_compactions(
    source: str | os.PathLike[str] | Store | StoreHandle | ManagerHost,
    *,
    session: str | None = None,
    store_options: dict[str, Any] | None = None,
) -> list[CompactionEntry]:
    """The compactions of a session's current history, oldest first.

    ``source`` is what ``MessageContextManager.open`` takes (a JSONL path or directory, a store
    URL, a :class:`Store`, a handle; ``session`` picks the session), or a manager, whose own
    list is returned (``compaction.manifest.compactions``). A record this version cannot read
    (another tool's) is skipped with a warning. Raises the store's typed errors.
    """
    if not isinstance(source, (str, os.PathLike, Store, StoreHandle)) and hasattr(
        source, "history"
    ):
        return compactions(source)
    if inspect.iscoroutinefunction(getattr(source, "load", None)):
        raise ConfigurationError(
            "list_compactions reads a sync store; pass the async store's target (path or URL) "
            "instead, or a manager opened on it"
        )
    from .targets import open_log

    log = open_log(source, session=session, store_options=store_options)  # type: ignore[arg-type]
    try:
        _, sequence = log.read()
    finally:
        if not isinstance(source, Store):  # a caller's store stays open
            log.close()
    found = []
    for item in sequence:
        if not isinstance(item, dict) or item.get("role") != COMPACTION:
            continue
        fields = {k: v for k, v in item.items() if k not in ("role", "content", "_line")}
        try:
            found.append(CompactionEntry.from_dict(fields))
        except ContextManagerError as exc:
            logger.warning("%s: line %s: %s; not listed", log.target, item.get("_line"), exc)
    return found
