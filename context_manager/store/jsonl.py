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
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ..errors import CheckpointNotFoundError, ConfigurationError
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
        self, path: str | os.PathLike[str], *, fsync: FsyncMode = "checkpoint", strict: bool = False
    ) -> None:
        if fsync not in FSYNC_MODES:
            raise ConfigurationError(
                f"fsync={fsync!r} is not a mode; use one of {', '.join(FSYNC_MODES)}"
            )
        self.path = Path(path)
        self.fsync: FsyncMode = fsync
        self.strict = strict
        self._next_checkpoint_id: int | None = None  # read from the file when first needed
        self._lock = LogLock(self.path)
        self._fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)

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
            data = self._read_all()
            replayer = self._replayer(data)
            self._next_checkpoint_id = replayer.state.next_checkpoint_id
        return replayer.state, replayer.sequence

    def _read_all(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return b""

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
        line = encode_message(message, pinned=pinned, priority=priority, extra=extra)
        self._append(line, durable=False)

    def append_usage(self, token_count: int) -> None:
        self._append(encode_meta({"role": USAGE, "token_count": int(token_count)}), durable=False)

    def write_system_prompt(self, text: str, original: Mapping[str, Any] | None = None) -> None:
        """Append a ``_system_prompt`` record; on restore the last one wins (as in Kimi CLI).

        ``original`` (the encoded message and its type tag) is kept in ``_cm`` when the prompt
        was more than plain text (a developer role, a name, content parts, an SDK object).
        """
        record: dict[str, Any] = {"role": SYSTEM_PROMPT, "content": text}
        if original is not None:
            record["_cm"] = dict(original)
        self._append(encode_meta(record), durable=True)

    def append_compaction(self, entry: Mapping[str, Any]) -> None:
        self._append(encode_compaction(entry), durable=True)

    def checkpoint(self) -> int:
        """Append the next checkpoint marker and return its id (0, 1, 2, ...)."""
        with self._lock.held():
            checkpoint_id = self.next_checkpoint_id
            self._append(encode_meta({"role": CHECKPOINT, "id": checkpoint_id}), durable=True)
            self._next_checkpoint_id = checkpoint_id + 1
            return checkpoint_id

    def _append(self, line: bytes, *, durable: bool) -> None:
        with self._lock.held():
            fd = self._descriptor()
            self._repair_tail(fd)
            _write_all(fd, line)
            if self.fsync == "always" or (durable and self.fsync == "checkpoint"):
                os.fsync(fd)

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
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
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
            replayer = self._replayer(b"".join(kept))
            self._next_checkpoint_id = replayer.state.next_checkpoint_id
            return replayer.state

    def clear(self) -> None:
        """Rotate the file and start an empty log (checkpoint ids restart at 0)."""
        with self._lock.held():
            self._rotate_and_replace(b"")
            self._next_checkpoint_id = 0

    def _rotate_and_replace(self, content: bytes) -> Path | None:
        rotated = self._rotate() if self.path.exists() else None
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, content)
            if self.fsync != "never":
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        if self.fsync != "never":
            _fsync_directory(self.path.parent)
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _copy_exclusive(source: Path, target: Path) -> bool:
    """Copy for filesystems without hard links; O_EXCL keeps it from overwriting."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        _write_all(fd, source.read_bytes())
        os.fsync(fd)
    finally:
        os.close(fd)
    return True
