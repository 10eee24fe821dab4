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
- It is the JSONL backend of the record-level :class:`~.protocol.Store` contract: the head is
  (file inode, line count, byte length, a CRC-32 of the file's last 4 KiB: length alone can
  repeat, when a torn line is replaced by one of the same length). With
  ``detect_conflicts=True`` (how ``MessageContextManager.open`` uses it) a write raises
  ``StoreConflictError`` when the file is not the one this object last read or wrote.
- Exactly once: an append whose first record carries an id (``_cm.id``) that the lines written
  since this object's view already hold writes nothing and returns their positions. A batch is
  one ``os.write``; a writer killed inside it can leave a torn last line (never acknowledged, cut
  by the next writer), and the kernel may stop a multi-page write at a page boundary: each line
  of a batch carries its place (``_cm.batch``), so readers ignore an unfinished batch (``_tail``).
- With ``session=`` the log lives at ``<root>/<session>/context.jsonl`` (Kimi CLI's layout).
- Files are created 0600 in 0700 directories, temporary names are unpredictable and opened with
  ``O_EXCL``, a symlinked log is refused with a typed :class:`~context_manager.errors.StoreError`
  (all through :mod:`._files`; docs/security.md). A write that fails half-way (full disk, file size
  limit) takes its partial line back, so the file holds exactly the acknowledged records.
- ``integrity=True`` adds a CRC-32 of each line to its ``_cm`` object (Kimi ignores it); a line
  whose CRC does not match is reported like any corrupt line. Off by default: Kimi writes no
  ``_cm`` on plain lines and our default files stay byte-identical to Kimi's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from .._config import check_flag
from ..errors import (
    CheckpointNotFoundError,
    ConfigurationError,
    StoreConflictError,
    StoreError,
    StoreOutcomeUnknownError,
)
from . import _files, _remove
from ._checkpoint_ids import next_checkpoint_id, next_checkpoint_id_before
from ._tail import (
    SEARCH_BACK,
    TAIL_BYTES,
    View,
    batched,
    closed,
    find_batch,
    mark,
    mark_at,
    opens_batch,
    repair_tail,
    stored,
    view_of,
)
from .lock import LogLock
from .protocol import Batch, Head, check_session_id
from .records import (
    CHECKPOINT,
    RecordWriter,
    dump_record,
    encode_meta,
    logger,
    record_id,
    split_lines,
)
from .replayer import Records, Replayer, RestoredLog, Resume


@contextlib.contextmanager
def _io(path: Path, doing: str) -> Iterator[None]:
    """``OSError`` (a full disk, a file size limit, EIO) as a typed ``StoreError``."""
    try:
        yield
    except OSError as exc:
        raise StoreError(
            f"{path}: cannot {doing}: {exc.strerror or exc}; nothing was written"
        ) from None


FsyncMode = Literal["always", "checkpoint", "never"]
#: ``always``: fsync after every record — an acknowledged record survives power loss / OS crash.
#: ``checkpoint``: fsync on checkpoint, system prompt, compaction, revert, clear and close; plain
#: message / usage records survive a process crash (SIGKILL) but the last few may be lost on power
#: loss. ``never``: no fsync at all — survives process crashes only.
FSYNC_MODES: tuple[FsyncMode, ...] = ("always", "checkpoint", "never")


#: The log file's name inside a session directory (Kimi CLI's name).
SESSION_FILE = "context.jsonl"


class JsonlLog(RecordWriter):
    """One conversation's log file. Thread-safe; safe against other processes using this class."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncMode = "checkpoint",
        strict: bool = False,
        session: str | None = None,
        detect_conflicts: bool = False,
        integrity: bool = False,
    ) -> None:
        if not isinstance(path, str | os.PathLike):
            raise ConfigurationError(f"path must be a str or os.PathLike, got {path!r:.60}")
        if fsync not in FSYNC_MODES:
            raise ConfigurationError(
                f"fsync={fsync!r} is not a mode; use one of {', '.join(FSYNC_MODES)}"
            )
        flags = {"strict": strict, "integrity": integrity, "detect_conflicts": detect_conflicts}
        for name, flag in flags.items():
            check_flag(name, flag)
        #: With ``session``: the directory holding one sub-directory per session.
        self.root: Path | None = None
        if session is not None:
            self.root = _files.sessions_root(Path(path), SESSION_FILE)
            path = self.root / check_session_id(session) / SESSION_FILE
        self.path = Path(path)
        self._session = session if session is not None else self.path.stem
        self.detect_conflicts = detect_conflicts
        self._view: View | None = None  # what this object last read or wrote of the file
        self.fsync: FsyncMode = fsync
        self.strict, self.integrity = strict, integrity
        self._swept = False
        self._next_checkpoint_id: int | None = None  # read from the file when first needed
        self._lock = LogLock(self.path, self.root)
        self._fd: int | None = None
        self._inode: tuple[int, int] | None = None
        # (first record id, position) of this object's last write: a resend of it is found
        # without reading the file when nothing was written since.
        self._last_batch: tuple[str, int] | None = None
        _files.check_below(self.root, _files.check_path(self.path.parent))  # made on 1st write
        # A conversation or database in its place (named, or left in a session directory) is
        # refused before anything reads, locks or repairs it.
        _files.check_log_kind(self.path)

    @property
    def next_checkpoint_id(self) -> int:
        """The id :meth:`checkpoint` hands out next: the last marker the view covers + 1, read
        back from the view's end when not learned yet (a full read would move the view)."""
        while self._next_checkpoint_id is None:
            if self._view is None:
                self.read()
                continue
            self._next_checkpoint_id = next_checkpoint_id_before(self._descriptor(), self._view.end)
        return self._next_checkpoint_id

    # ------------------------------------------------------------------ reading
    def restore(self) -> RestoredLog:
        """Replay the whole file (missing file = empty log) and remember the next checkpoint id;
        every message line is checked (a bad one is skipped and listed in ``skipped_lines``)."""
        return self._read(defer_messages=False)[0]

    def read(self, resume: Resume | None = None) -> tuple[RestoredLog, Records]:
        """Every record in file order (metadata ones carry their line number as ``"_line"``),
        for a replay: the manager reads each message line and reports a bad one by number
        (``resume``: from the latest compaction on, see ``Replayer.of_lines``)."""
        return self._read(defer_messages=True, resume=resume)

    def _read(self, defer_messages: bool, resume: Resume | None = None) -> tuple[RestoredLog, Any]:
        with self._lock.reading():
            if not self._swept:  # temp files of a crashed rotation (we hold every writer's lock)
                for stale in _files.remove_stale_temps(self.path):
                    logger.warning("%s: removed stale temporary file %s", self.path, stale.name)
                self._swept = True
            kept, unfinished = self._read_all()
            replayer = self._replayer(kept, unfinished, defer_messages, resume)
        return replayer.state, replayer.sequence

    def _read_all(self) -> tuple[bytes, bool]:
        """The file's stored bytes (:func:`~._tail.stored`) and whether a batch left unfinished
        was cut from them; also sets this object's view and next checkpoint id (under the lock)."""
        data = _files.read_bytes(self.path, self.root)
        inode = self._now()[0] if data is not None else None
        kept, unfinished = stored(data := data or b"")
        self._view = view_of(inode, data, kept)
        self._next_checkpoint_id = next_checkpoint_id(kept, 0)
        return kept, unfinished

    # ------------------------------------------------------------------ Store protocol
    @property
    def session(self) -> str:
        return self._session

    @property
    def target(self) -> str:
        return str(self.path)

    @property
    def store(self) -> JsonlLog:
        """The record-level store behind this session log: the log itself."""
        return self

    @property
    def head(self) -> Head | None:
        if self._view is None:
            return None
        view = self._view
        return Head(view.inode or 0, view.lines, view.end, view.end_mark)

    def load(self, start: int = 0) -> Batch:
        with self._lock.reading():
            data, unfinished = self._read_all()
            head = self.head
        assert head is not None
        batch = Batch(head, torn_tail=unfinished)
        for number, raw, complete in split_lines(data):
            if not complete:
                batch.torn_tail = True
            elif number > start:
                batch.lines.append((number - 1, raw))
        return batch

    def load_after(self, head: Head) -> Batch | None:
        """The lines after ``head`` if the file (inode) and the end of its first ``head.offset``
        bytes (tail CRC) are the same, else None; reads only from there: costs what was added."""
        start = max(0, head.offset - TAIL_BYTES)
        with self._lock.held():
            found = _files.read_from(self.path, start, self.root)
            if found is None or found[0] != head.generation or found[1] < head.offset:
                return None
            inode, _, data = found
            if mark(data[: head.offset - start]) != head.epoch:
                return None
            base = head.offset - start
            new, unfinished = stored(data[base:])
            self._view = view_of(inode, data, new, base=base, at=head.offset, lines=head.position)
            self._learn(new)
            now = self.head
        assert now is not None
        batch = Batch(now, torn_tail=unfinished)
        for number, raw, complete in split_lines(new):
            if not complete:
                batch.torn_tail = True
            else:
                batch.lines.append((head.position + number - 1, raw))
        return batch

    def append(self, records: Sequence[Mapping[str, Any]], *, durable: bool = False) -> list[int]:
        batch = batched(records)  # each line knows its place: an unfinished batch is not read
        data = b"".join(dump_record(record, integrity=self.integrity) for record in batch)
        rid = record_id(records[0]) if records else None
        first = self._append(data, durable=durable, rid=rid)
        return list(range(first, first + len(records)))

    def sessions(self) -> list[str]:
        if self.root is None:
            return [self._session] if _files.openable(None, self.path) else []
        try:  # not what opening refuses: a session directory or log that is a link
            names = [
                d.name for d in self.root.iterdir() if _files.openable(self.root, d / SESSION_FILE)
            ]
        except FileNotFoundError:
            return []
        return sorted(n for n in names if not n.startswith("."))  # not a delete's leftover

    def _replayer(
        self, kept: bytes, cut: bool = False, defer: bool = False, resume: Resume | None = None
    ) -> Replayer:
        """Replay the stored bytes ``kept``; ``cut``: an unfinished batch was cut after them."""
        lines, strict = list(split_lines(kept)), self.strict
        of = Replayer.of_lines
        replayer = of(str(self.path), lines, strict=strict, defer_messages=defer, resume=resume)
        if cut:  # never acknowledged: as if never written
            first = kept.count(b"\n") + 1
            reason = "a batch an interrupted writer left unfinished"
            logger.warning("%s: ignoring lines from %d on: %s", self.path, first, reason)
            replayer.state.torn_tail = True
        return replayer

    # ------------------------------------------------------------------ writing
    def _put(self, record: dict[str, Any], durable: bool) -> None:
        self.append([record], durable=durable)

    def checkpoint(self) -> int:
        """Append the next checkpoint marker and return its id (0, 1, 2, ...)."""
        with self._lock.held(), _io(self.path, "write a checkpoint"):
            if self.detect_conflicts and self._view is not None:
                self._check_view()  # the cached id describes this view: no one wrote since
            elif self._view is None or self._moved():
                self._read_all()  # first use, or a blind writer: the id as the file has it now
            checkpoint_id = self.next_checkpoint_id
            record = {"role": CHECKPOINT, "id": checkpoint_id}
            self._append(encode_meta(record, integrity=self.integrity), durable=True)
            return checkpoint_id  # _append learned the next id from the marker it wrote

    def _append(self, line: bytes, *, durable: bool, rid: str | None = None) -> int:
        """Write ``line`` (one or more records); returns the position of the first one."""
        with self._lock.held(), _io(self.path, "append"):
            if rid is not None and self._view is not None:
                stored = self._stored_at(rid, line.count(b"\n"))
                if stored is not None:
                    return stored
            if self.detect_conflicts and self._view is not None:
                self._check_view()
            elif self._view is None or self._moved():
                self._read_all()  # blind writer: learn the line count (positions), no check
            fd = self._descriptor()
            assert self._view is not None
            lines = repair_tail(fd, self._view.lines, self.path)  # cut what a killed writer left
            start = os.fstat(fd).st_size
            try:
                _files.write_all(fd, line)
                if self.fsync == "always" or (durable and self.fsync == "checkpoint"):
                    os.fsync(fd)
            except OSError as exc:
                # Disk full / file too large after part of the line: take the part back, so
                # the file holds exactly the acknowledged lines (a crash right here leaves a
                # torn tail, which readers ignore and the next writer cuts).
                try:
                    os.ftruncate(fd, start)
                except OSError:
                    if os.fstat(fd).st_size > start and rid is not None:
                        # the line may be whole (fsync failed after it was written) and the cut
                        # failed too: say so; its id makes sending it again safe
                        raise StoreOutcomeUnknownError(
                            f"{self.path}: a write failed ({exc.strerror or exc}) and could "
                            "not be taken back; it may have been applied",
                            record_ids=(rid,),
                        ) from None
                raise
            st = os.fstat(fd)
            end_mark, after = mark_at(fd, st.st_size), lines + line.count(b"\n")
            self._view = View(st.st_ino, st.st_size, end_mark, after, st.st_size, end_mark)
            self._learn(line)
            self._last_batch = (rid, lines) if rid is not None else None
            return lines

    def _stored_at(self, rid: str, count: int) -> int | None:
        """The position of a batch of ``count`` lines starting with record id ``rid`` in the
        lines since this object's view or the :data:`~._tail.SEARCH_BACK` bytes before it (a
        retry of a write that did land), or None. When the batch ends past the view, the view
        moves to the end of the batch, not of the file: lines written after it are unseen."""
        assert self._view is not None
        inode, size, _, lines, stored_end, _ = self._view
        now_inode, now_size = self._now()
        if now_inode != inode or now_size < stored_end:
            return None
        if now_size == size:  # nothing written since the view: only our last write can match
            last = self._last_batch
            return last[1] if last is not None and last[0] == rid else None
        start = max(0, stored_end - SEARCH_BACK)
        fd = self._descriptor()
        region = os.pread(fd, now_size - start, start)
        found = find_batch(region, rid, count)
        if found is None:
            return None
        first, end = found
        position = lines - region[: stored_end - start].count(b"\n")
        position += region[:first].count(b"\n")
        if start + end > stored_end:  # the view moves over lines it had not seen: learn them
            end_mark = mark_at(fd, start + end)
            self._view = View(inode, start + end, end_mark, position + count, start + end, end_mark)
            self._learn(region[stored_end - start : end])
        return position

    def _learn(self, lines: bytes) -> None:
        """The view moved over ``lines`` (complete ones): a marker among them sets the next id."""
        self._next_checkpoint_id = next_checkpoint_id(lines, self._next_checkpoint_id)

    def _now(self) -> tuple[int | None, int]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return (None, 0)
        return (st.st_ino, st.st_size)

    def _moved(self) -> bool:
        assert self._view is not None
        return self._now() != (self._view.inode, self._view.size)

    def _check_view(self) -> None:
        assert self._view is not None
        inode, size, epoch = self._view.inode, self._view.size, self._view.mark
        now = self._now()
        changed = now != (inode, size) and not (inode is None and now[1] == 0)
        if not changed and size:  # same length: is it the same content at the end?
            changed = mark_at(self._descriptor(), size) != epoch
        if changed:
            raise StoreConflictError(
                f"{self.path}: another writer changed the log since this one read it "
                f"({size} -> {now[1]} bytes{', file replaced' if now[0] != inode else ''}); "
                "nothing was written: reload the session and retry"
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
        fd = _files.open_file(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, self.root)
        st = os.fstat(fd)
        self._fd, self._inode = fd, (st.st_dev, st.st_ino)
        return fd

    # ------------------------------------------------------------------ rotation
    def revert_to(self, checkpoint_id: int) -> RestoredLog:
        """Rotate the file, then rewrite it with every line before checkpoint ``checkpoint_id``.

        Corrupt lines are dropped from the rewritten file (with the warning restore gives).
        Returns the state of the rewritten log; checkpoint ids from ``checkpoint_id`` on are reused.
        """
        with self._lock.held(), _io(self.path, "revert"):
            # not _read_all: a refused revert must leave this log's view where its writer is
            data = stored(_files.read_bytes(self.path, self.root) or b"")[0]
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
                    f"{replayer.state.next_checkpoint_id} checkpoints from 0); pick one of them"
                )
            if kept and opens_batch(kept[-1]):  # the checkpoint was written inside a batch
                kept[-1] = closed(kept[-1], integrity=self.integrity)
            self._rotate_and_replace(b"".join(kept))
            replayer = self._replayer(b"".join(kept))
            self._next_checkpoint_id = replayer.state.next_checkpoint_id
            return replayer.state

    def clear(self) -> None:
        """Rotate the file and start an empty log (checkpoint ids restart at 0)."""
        with self._lock.held(), _io(self.path, "clear"):
            self._rotate_and_replace(b"")
            self._next_checkpoint_id = 0

    def _rotate_and_replace(self, content: bytes) -> Path | None:
        if os.path.islink(self.path):
            raise _files.symlink_error(self.path)  # before rotating: never link to a link
        rotated = self._rotate() if self.path.exists() else None
        _files.atomic_write(self.path, content, durable=self.fsync != "never")
        self._close_fd()
        self._view = view_of(os.stat(self.path).st_ino, content, content)  # whole lines only
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
                if _files.copy_exclusive(self.path, target):
                    return target
                number += 1

    def delete(self) -> bool:
        """Delete the session for good, under the lock, in one rename (``_remove.py``)."""
        with self._lock.held():
            found = _remove.remove_session(self.path, self.root is not None, self._lock.path.name)
            self._close_fd()
            self._view, self._last_batch = view_of(None, b"", b""), None
            self._next_checkpoint_id = 0
        self._lock.close()  # it locked the removed file; the next operation locks the new one
        return found

    def close(self) -> None:
        try:  # nothing written: no lock (which would remake a deleted session's directory)
            if self._fd is not None and self.fsync != "never":
                with self._lock.held(), _io(self.path, "flush on close"):
                    if self._fd is not None:  # another thread may have closed it meanwhile
                        os.fsync(self._fd)
        finally:
            with contextlib.suppress(OSError):
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
