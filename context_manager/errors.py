"""One exception hierarchy, so callers can catch everything from this library with one clause.

Every message says what was wrong, where (message index, line number) and how to fix it.
"""

from __future__ import annotations


class ContextManagerError(Exception):
    """Root of every error this library raises on purpose."""


class InvalidMessageError(ContextManagerError, ValueError):
    """A message cannot be understood or breaks the tool-call protocol."""

    def __init__(self, reason: str, *, index: int | None = None, hint: str | None = None) -> None:
        self.index = index
        self.reason = reason
        where = f"message {index}: " if index is not None else ""
        text = f"{where}{reason}"
        if hint:
            text += f" ({hint})"
        super().__init__(text)


class ContextOverflowError(ContextManagerError):
    """What must be sent cannot fit the budget; ``shortfall`` says by how many tokens."""

    def __init__(self, message: str, *, required: int, budget: int) -> None:
        self.required = required
        self.budget = budget
        self.shortfall = required - budget
        super().__init__(message)


class ConfigurationError(ContextManagerError, ValueError):
    """An option is missing, unknown or out of range."""


class SectionCapError(ConfigurationError):
    """A section that cannot be cut (the tool definitions) is over its ``SectionCaps`` cap.
    ``section``, ``tokens`` and ``cap`` say which, how large and the limit."""

    def __init__(self, message: str, section: str, tokens: int, cap: int) -> None:
        super().__init__(message)
        self.section, self.tokens, self.cap = section, tokens, cap


class TokenizerUnavailableError(ContextManagerError, RuntimeError):
    """A real tokenizer was asked for but cannot be loaded (we never fall back silently)."""


class StoreError(ContextManagerError):
    """A store could not read or write (disk full, permissions, a value it cannot encode).

    Raised before memory changes (write-ahead), so the manager is as it was.
    """


class StoreCorruptionError(StoreError):
    """A persisted log has a line that cannot be read (raised in strict mode)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        super().__init__(message)


class StoreConflictError(StoreError):
    """Another worker changed the session since this writer last read it; nothing was written.

    Raised before anything is written (and before memory changes), so nothing is lost. Catch up
    (``manager.store.reload(manager)``) and redo the change: :func:`context_manager.store.
    retrying` does both, with a jittered backoff.
    """


class StoreOutcomeUnknownError(StoreError):
    """The connection broke while a write was in flight: it **may have been applied**.

    Every record carries a client-made id (``record_ids``) and every backend refuses to store an
    id twice, so redoing the same write is safe. :func:`context_manager.store.retrying` does the
    whole dance (reload, check whether ``record_ids`` landed, redo only if they did not).
    """

    def __init__(self, message: str, *, record_ids: tuple[str, ...] = ()) -> None:
        self.record_ids = record_ids
        super().__init__(message)


class SessionNotFoundError(StoreError, KeyError):
    """A session index has no entry for the key (call ``resolve(key)`` first)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class CheckpointNotFoundError(ContextManagerError, ValueError):
    """``revert_to`` was given a checkpoint id that the session log does not contain."""


class CompactionError(ContextManagerError):
    """Compaction could not produce a summary (summarizer failed, cancelled, nothing to do)."""


class CompactionInProgressError(CompactionError):
    """A compaction is already running on this manager (we refuse rather than wait)."""


class NothingToCompactError(CompactionError):
    """The history is too short to summarize (the kept recent part already holds all of it).

    ``compact()`` and overflow recovery fall back to clearing old tool results in the view
    instead (see ``docs/guide/pruning.md``); this is raised when even that cannot help.
    """


class CompactionTooLargeError(CompactionError):
    """A compaction's result would not fit the budget, so it was not applied.

    ``required`` is what the history would use after it (summary included), ``budget`` the
    input budget; nothing changed (no entry, no log record).
    """

    def __init__(self, message: str, *, required: int, budget: int) -> None:
        super().__init__(message)
        self.required = required
        self.budget = budget


class OffloadError(ContextManagerError):
    """An offload area (``context_manager.offload``) could not store or return a result."""


class OffloadHandleError(OffloadError, ValueError):
    """A handle that this area never issued for this session: malformed, forged, a path, or
    issued for another session. Nothing was read; the message never echoes more of the value
    than its first characters."""


class OffloadNotFoundError(OffloadError, KeyError):
    """A well-formed handle of this session whose data is gone: evicted from a bounded memory
    area, expired (Redis TTL), deleted with its session, or its result was reverted away."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""
