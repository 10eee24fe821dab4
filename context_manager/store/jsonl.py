"""An append-only JSONL log for one conversation, compatible with Kimi CLI's ``context.jsonl``.

Why it is built this way:

- Every record is one ``os.write`` of one complete line on an ``O_APPEND`` descriptor, so there is
  no user-space buffer to lose: once ``append`` returns, the line is in the kernel and survives the
  process being killed. ``fsync`` decides what survives a power loss (see :data:`FSYNC_MODES`).
- Appends, tail repair and rotation run under :class:`~.lock.LogLock` (threads and processes), so
  concurrent writers never interleave or tear lines.
- A writer killed mid-``write`` can leave an unterminated last line. Readers ignore it with a
  warning; the next writer first cuts it off (or terminates it, if it is a complete record), so it
  never becomes a corrupt line in the middle.
- ``revert_to`` and ``clear`` never edit the file in place: the current file is hard-linked to
  ``<stem>_<N><suffix>`` (N = highest existing + 1; a link never replaces an existing name, so
  rotated files are never overwritten), the new content is written to a temporary file and renamed
  over the log. At every instant the log path holds either the old or the new complete file.
- Files are created 0600, temporary names are unpredictable, a symlinked log is refused with a
  typed :class:`~context_manager.errors.StoreError` (all through :mod:`._files`; SECURITY.md).
- Several writers: every line is appended under the lock, so the file never loses one. A
  manager's *view* can still go stale when another manager writes the same log; with
  ``guard_tail=True`` (what ``MessageContextManager.open`` uses) an append first checks, under
  the lock, that the file still ends where this log last read or wrote it, and otherwise raises
  :class:`~context_manager.errors.StoreConflictError` without writing: the caller reopens (which
  reads the other writer's lines) and retries, so no acknowledged line is ever left out of a
  view that later compacts or reverts over it.
- ``integrity=True`` adds a CRC-32 of each line to its ``_cm`` object (Kimi ignores it); a line
  whose CRC does not match is reported like any corrupt line. Off by default: Kimi writes no
  ``_cm`` on plain lines and our default files stay byte-identical to Kimi's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ..errors import CheckpointNotFoundError, ConfigurationError, StoreConflictError
from . import _files
from .lock import LogLock
from .records import (
    CHECKPOINT,
    SYSTEM_PROMPT,
    USAGE,
    Replayer,
    RestoredLog,
    StoredMessage,
    encode_compaction,
    encode_message,
    encode_meta,
    logger,
    parse_record,
    split_lines,
)

FsyncMode = Literal["always", "checkpoint", "never"]
#: ``always``: fsync after every record — an acknowledged record survives power loss / OS crash.
#: ``checkpoint``: fsync on checkpoint, system prompt, compaction, revert, clear and close; plain
#: message / usage records survive a process crash (SIGKILL) but the last few may be lost on power
#: loss. ``never``: no fsync at all — survives process crashes only.
FSYNC_MODES: tuple[FsyncMode, ...] = ("always", "checkpoint", "never")


class JsonlLog:
    """One conversation's log file. Thread-safe; safe against other processes using this class."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncMode = "checkpoint",
        strict: bool = False,
        integrity: bool = False,
        guard_tail: bool = False,
    ) -> None:
        if not isinstance(path, str | os.PathLike):
            raise ConfigurationError(f"path must be a str or os.PathLike, got {path!r:.60}")
        if fsync not in FSYNC_MODES:
            raise ConfigurationError(
                f"fsync={fsync!r} is not a mode; use one of {', '.join(FSYNC_MODES)}"
            )
        for name, flag in (
            ("strict", strict),
            ("integrity", integrity),
            ("guard_tail", guard_tail),
        ):
            if not isinstance(flag, bool):
                raise ConfigurationError(f"{name} must be True or False, got {flag!r:.60}")
        self.path = Path(path)
        self.fsync: FsyncMode = fsync
        self.strict = strict
        self.integrity = integrity
        self.guard_tail = guard_tail
        self._next_checkpoint_id: int | None = None  # read from the file when first needed
        self._lock = LogLock(self.path)
        self._fd: int | None = None
        self._inode: tuple[int, int] | None = None
        # (device, inode, size) of the file as this log last read or wrote it (guard_tail).
        self._seen: tuple[int, int, int] | None = None
        self._swept = False
        _files.ensure_directory(self.path.parent)

    @property
    def next_checkpoint_id(self) -> int:
        """The id :meth:`checkpoint` hands out next (last marker in the file + 1)."""
        if self._next_checkpoint_id is None:
            self.read()
        assert self._next_checkpoint_id is not None
        return self._next_checkpoint_id

    # ------------------------------------------------------------------ reading
    def restore(self) -> RestoredLog:
        """Replay the whole file (missing file = empty log) and remember the next checkpoint id."""
        return self.read()[0]

    def read(self) -> tuple[RestoredLog, list[StoredMessage | dict[str, Any]]]:
        """Like :meth:`restore`, plus every valid record in file order (metadata records carry
        their 1-based line number under ``"_line"``)."""
        with self._lock.held():
            if not self._swept:  # temp files of a crashed rotation (we hold every writer's lock)
                for stale in _files.remove_stale_temps(self.path):
                    logger.warning("%s: removed stale temporary file %s", self.path, stale.name)
                self._swept = True
            data = self._read_all()
            self._seen = self._identity(len(data))
            replayer = self._replayer(data)
            self._next_checkpoint_id = replayer.state.next_checkpoint_id
        return replayer.state, replayer.sequence

    def _read_all(self) -> bytes:
        return _files.read_bytes(self.path) or b""

    def _identity(self, size: int) -> tuple[int, int, int] | None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_dev, st.st_ino, size)

    def _replayer(self, data: bytes) -> Replayer:
        replayer = Replayer(str(self.path), strict=self.strict)
        for number, raw, complete in split_lines(data):
            replayer.feed(number, raw, complete)
        return replayer

    # ------------------------------------------------------------------ writing
    def append_message(
        self,
        message: Mapping[str, Any],
        *,
        pinned: bool = False,
        priority: int = 0,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        line = encode_message(
            message, pinned=pinned, priority=priority, extra=extra, integrity=self.integrity
        )
        self._append(line, durable=False)

    def append_usage(self, token_count: int) -> None:
        record = {"role": USAGE, "token_count": int(token_count)}
        self._append(encode_meta(record, integrity=self.integrity), durable=False)

    def write_system_prompt(self, text: str, original: Mapping[str, Any] | None = None) -> None:
        """Append a ``_system_prompt`` record; on restore the last one wins (as in Kimi CLI).

        ``original`` (the encoded message and its type tag) is kept in ``_cm`` when the prompt
        was more than plain text (a developer role, a name, content parts, an SDK object).
        """
        record: dict[str, Any] = {"role": SYSTEM_PROMPT, "content": text}
        if original is not None:
            record["_cm"] = dict(original)
        self._append(encode_meta(record, integrity=self.integrity), durable=True)

    def append_compaction(self, entry: Mapping[str, Any]) -> None:
        self._append(encode_compaction(entry, integrity=self.integrity), durable=True)

    def checkpoint(self) -> int:
        """Append the next checkpoint marker and return its id (0, 1, 2, ...)."""
        with self._lock.held():
            checkpoint_id = self.next_checkpoint_id
            record = {"role": CHECKPOINT, "id": checkpoint_id}
            self._append(encode_meta(record, integrity=self.integrity), durable=True)
            self._next_checkpoint_id = checkpoint_id + 1
            return checkpoint_id

    def _append(self, line: bytes, *, durable: bool) -> None:
        with self._lock.held():
            if self.guard_tail:
                self._check_tail()
            fd = self._descriptor()
            self._repair_tail(fd)
            start = os.fstat(fd).st_size
            try:
                _write_all(fd, line)
                if self.fsync == "always" or (durable and self.fsync == "checkpoint"):
                    os.fsync(fd)
            except OSError:
                # Disk full / file too large after part of the line: take the part back, so
                # the file holds exactly the acknowledged lines (best effort: a crash right
                # here leaves a torn tail, which readers ignore and the next writer cuts).
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
                raise
            if self.guard_tail:
                st = os.fstat(fd)
                self._seen = (st.st_dev, st.st_ino, st.st_size)

    def _check_tail(self) -> None:
        """Refuse to append when another writer changed the file since we last saw it."""
        if self._seen is None and self._next_checkpoint_id is None:
            self.read()  # first use without a read: adopt the file as it is
            return
        try:
            st = os.lstat(self.path)
            now: tuple[int, int, int] | None = (st.st_dev, st.st_ino, st.st_size)
        except FileNotFoundError:
            now = None
        if now != self._seen:
            raise StoreConflictError(
                f"{self.path}: another writer changed this log since it was read here "
                f"({_describe(self._seen)} -> {_describe(now)}); nothing was written. Reopen the "
                "session (MessageContextManager.open) to see its lines, then retry."
            )

    def _descriptor(self) -> int:
        """The append descriptor, reopened if another writer rotated the file under us."""
        try:
            st = os.stat(self.path)
            current: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            current = None
        if self._fd is not None and current == self._inode:
            return self._fd
        self._close_fd()
        fd = _files.open_file(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        st = os.fstat(fd)
        self._fd, self._inode = fd, (st.st_dev, st.st_ino)
        return fd

    def _repair_tail(self, fd: int) -> None:
        """Make sure the file ends with a newline before we append (a killed writer may not)."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        window = 4096
        while True:  # find the start of the unterminated last line
            start = max(0, size - window)
            chunk = os.pread(fd, size - start, start)
            cut = chunk.rfind(b"\n")
            if cut >= 0 or start == 0:
                break
            window *= 4
        fragment = chunk[cut + 1 :]
        try:
            parse_record(fragment)
        except Exception:
            logger.warning(
                "%s: cutting off %d bytes of a torn last line left by an interrupted writer",
                self.path,
                len(fragment),
            )
            os.ftruncate(fd, start + cut + 1)
        else:  # a complete record that only lacks its newline: keep it
            _write_all(fd, b"\n")

    # ------------------------------------------------------------------ rotation
    def revert_to(self, checkpoint_id: int) -> RestoredLog:
        """Rotate the file, then rewrite it with every line before checkpoint ``checkpoint_id``.

        Corrupt lines are dropped from the rewritten file (with the warning restore gives).
        Returns the state of the rewritten log; checkpoint ids from ``checkpoint_id`` on are reused.
        """
        with self._lock.held():
            data = self._read_all()
            replayer = Replayer(str(self.path), strict=self.strict)
            kept: list[bytes] = []
            found = False
            for number, raw, complete in split_lines(data):
                record = replayer.feed(number, raw, complete) if raw.strip() else None
                if record is None:
                    continue
                if record["role"] == CHECKPOINT and record["id"] == checkpoint_id:
                    found = True
                    break
                kept.append(raw if raw.endswith(b"\n") else raw + b"\n")
            if not found:
                raise CheckpointNotFoundError(
                    f"{self.path}: checkpoint {checkpoint_id} does not exist (the log has "
                    f"{self.next_checkpoint_id} checkpoints, ids from 0); pick an existing id"
                )
            self._rotate_and_replace(b"".join(kept))
            self._seen = self._identity(len(b"".join(kept)))
            replayer = self._replayer(b"".join(kept))
            self._next_checkpoint_id = replayer.state.next_checkpoint_id
            return replayer.state

    def clear(self) -> None:
        """Rotate the file and start an empty log (checkpoint ids restart at 0)."""
        with self._lock.held():
            self._rotate_and_replace(b"")
            self._seen = self._identity(0)
            self._next_checkpoint_id = 0

    def _rotate_and_replace(self, content: bytes) -> Path | None:
        if os.path.islink(self.path):
            raise _files.symlink_error(self.path)  # before rotating: never link to a link
        rotated = self._rotate() if self.path.exists() else None
        _files.atomic_write(self.path, content, durable=self.fsync != "never")
        self._close_fd()
        return rotated

    def _rotate(self) -> Path:
        pattern = re.compile(rf"^{re.escape(self.path.stem)}_(\d+){re.escape(self.path.suffix)}$")
        highest = 0
        for name in os.listdir(self.path.parent):
            match = pattern.match(name)
            if match:
                highest = max(highest, int(match.group(1)))
        number = highest + 1
        while True:
            target = self.path.with_name(f"{self.path.stem}_{number}{self.path.suffix}")
            try:
                os.link(self.path, target)  # fails instead of replacing an existing file
                return target
            except FileExistsError:
                number += 1
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                    raise
                if _copy_exclusive(self.path, target):
                    return target
                number += 1

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        with self._lock.held():
            if self._fd is not None and self.fsync != "never":
                os.fsync(self._fd)
            self._close_fd()
        self._lock.close()

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd, self._inode = None, None

    def __enter__(self) -> JsonlLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_write_all = _files.write_all
_copy_exclusive = _files.copy_exclusive


def _describe(seen: tuple[int, int, int] | None) -> str:
    return "no file" if seen is None else f"inode {seen[1]}, {seen[2]} bytes"
