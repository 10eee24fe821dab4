"""A stored line a reader cannot use, reported one way whichever reader found it.

Two readers judge a message line: the log's :class:`~.replayer.Replayer` (a restore without a
manager, ``copy_session``, a strict open) and the manager a session is replayed into
(``_replay.replay``, for readers that defer it so each message is normalized once). Both say
why with :func:`message_problem` and report the line with :func:`corrupt_line`.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import InvalidMessageError, StoreCorruptionError
from ..messages import normalize

logger = logging.getLogger("context_manager.store")


def message_problem(message: Any) -> str | None:
    """Why :func:`normalize` cannot read ``message`` (a line's reason to be skipped), or None."""
    try:
        normalize(message)
    except InvalidMessageError as exc:
        return f"invalid message: {exc}"
    except RecursionError:
        return "message nested too deeply"
    return None


def corrupt_line(path: str, number: int, reason: str, *, strict: bool) -> None:
    """Report complete line ``number`` as unreadable: a typed error when ``strict``, else a
    warning (the caller skips the line)."""
    if strict:
        raise StoreCorruptionError(
            f"{path}: line {number} is corrupt: {reason}. Open without strict=True to "
            "skip it with a warning, or repair the line by hand.",
            path=path,
            line=number,
        )
    logger.warning("%s: skipping corrupt line %d: %s", path, number, reason)
