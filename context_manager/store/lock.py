"""Advisory locking for one log: a thread lock plus an ``fcntl.flock`` on a sidecar file.

``flock`` excludes other *processes* (and other open file descriptions), but threads of one process
share a descriptor, so a ``threading.RLock`` is taken first. The lock lives on a sidecar
``<log>.lock`` file rather than the log itself because the log's inode changes when it is rotated
(revert / clear): a lock on the old inode would stop excluding writers of the new file.
A lock file removed while a process waits on it (``JsonlLog.delete`` removes the session's
directory) is noticed once ``flock`` returns, and the lock at the path is taken instead.
The lock is advisory: it only protects against writers that take it too (our store does; Kimi
CLI does not lock, so do not run both on one file at the same time).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._files import ensure_directory, open_file, stat_or_none

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: thread lock only, documented
    fcntl = None  # type: ignore[assignment]


class LogLock:
    """Exclusive lock guarding appends, rotations and tail repair of one log file."""

    def __init__(self, log_path: Path, root: Path | None = None) -> None:
        self.path = log_path.with_name(log_path.name + ".lock")
        self._root = root  # no link below it (a session directory): see _files.check_below
        self._thread_lock = threading.RLock()
        self._fd: int | None = None
        self._depth = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the ``with`` body; re-entrant within one thread."""
        with self._thread_lock:
            if self._depth == 0:
                self._acquire_file_lock()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release_file_lock()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """:meth:`held` for a read, unless the log's directory does not exist: then there is
        nothing to read or guard, and taking the lock would create it (a listing, a copy or a
        mistyped session id must not leave an empty session behind)."""
        if stat_or_none(self.path.parent, "read the log") is None:
            yield
            return
        with self.held():
            yield

    def _acquire_file_lock(self) -> None:
        if fcntl is None:  # pragma: no cover
            return
        while True:
            if self._fd is None:
                ensure_directory(self.path.parent, self._root)
                self._fd = open_file(self.path, os.O_RDWR | os.O_CREAT, self._root)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            if self._still_the_lock(self._fd):
                return
            # The lock file was removed while we waited (its session was deleted): a lock on
            # the removed file no longer excludes anyone, so take the one at the path now.
            os.close(self._fd)
            self._fd = None

    def _still_the_lock(self, fd: int) -> bool:
        try:
            now = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)

    def _release_file_lock(self) -> None:
        if fcntl is None or self._fd is None:  # pragma: no cover
            return
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with self._thread_lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
