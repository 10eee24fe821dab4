"""Every file the stores create goes through here: private modes, no symlinks, atomic replaces.

Why one module: the guarantees below only hold if every open uses them, so no other module in
``store/`` calls ``os.open`` / ``open`` / ``os.replace`` on a log, a lock or an index directly.

- Files are created ``0600`` and directories ``0700`` (conversations are private; the umask can
  only narrow this). Existing files keep their mode.
- Symlink policy: **refused**. The last path component of a log, lock, index or temporary file
  is opened with ``O_NOFOLLOW``; a symlink there raises :class:`~context_manager.errors.
  StoreError` naming the path. A symlink in a *parent* directory is followed: that is the
  caller's choice of where the data lives. Except below a store root: a session directory
  (``<root>/<session>``) that is a link is refused too (:func:`check_below`), else a planted
  link would send a session's data outside the root.
- Only regular files are read or written: a FIFO, socket, device or directory at a log's or a
  lock's path is a :class:`~context_manager.errors.StoreError` naming it (opened with
  ``O_NONBLOCK`` and checked with ``fstat``, so a planted FIFO cannot make an open wait forever).
- Atomic replace: content goes to ``.<name>.<random>.tmp`` in the same directory (128 random
  bits from :mod:`secrets`, created ``O_EXCL | O_NOFOLLOW``, so a planted file or link is never
  written through), is fsynced, renamed over the target and the directory is fsynced. At every
  instant the target holds the old or the new complete content.
- Temporary files left by a crash are removed by :func:`remove_stale_temps`, which callers run
  under the same lock every writer holds (so no live temp file of another writer is removed).
- A path with a NUL character raises :class:`~context_manager.errors.ConfigurationError` (it
  can only come from the caller's target; ``os`` would raise a bare ``ValueError``).
- A SQLite database file is only ever *created* here (:func:`create_private`), never opened:
  POSIX record locks belong to the process, so closing any descriptor of the database would drop
  the locks of every live SQLite connection of this process to it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from pathlib import Path

from ..errors import ConfigurationError, StoreError

FILE_MODE = 0o600
DIR_MODE = 0o700
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: ``link`` errors meaning "this file system has no hard links" (FAT, some FUSE mounts).
_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}


def check_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`Path`; a NUL character is refused with a typed error.

    No file system allows a NUL in a name, so it can only come from the caller's target (or a
    value passed along unchecked); ``os`` would raise a bare ``ValueError`` much later.
    """
    text = os.fspath(path)
    if not text:  # Path("") is ".", whose empty name pathlib refuses with a bare ValueError
        raise ConfigurationError("the store path is empty; give a directory or a .jsonl file")
    if "\x00" in text:
        raise ConfigurationError(
            f"the store path {text!r:.200} contains a NUL character (\\x00); no file can have it"
        )
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:  # a lone surrogate no file system encoding can write
        raise ConfigurationError(
            f"the store path {text!r:.200} holds a character the file system cannot encode "
            f"({exc.reason}, position {exc.start})"
        ) from None
    return Path(text)


def symlink_error(path: Path) -> StoreError:
    return StoreError(
        f"{path} is a symbolic link; the store refuses to read or write through links (see "
        "docs/security.md). Point the store at the real file instead."
    )


def _typed(exc: OSError, path: Path, doing: str) -> StoreError:
    if exc.errno == errno.ELOOP or (exc.errno == errno.EMLINK and is_link(path)):
        return symlink_error(path)
    return StoreError(f"{path}: cannot {doing}: {exc.strerror or exc}")


def is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def identity(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file at ``path`` (None when missing); a link is refused.

    What a store compares to learn whether the file it holds open is still the one at the path
    (removed, or replaced by a restore or another process, it is not).
    """
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _typed(exc, path, "inspect") from exc
    if stat.S_ISLNK(st.st_mode):
        raise symlink_error(path)
    return st.st_dev, st.st_ino


def check_below(root: Path | None, directory: Path) -> None:
    """Refuse a link in ``directory`` or its parents below ``root`` (``<root>/<session>``).

    The root is the caller's choice (it may be a link); a session directory is not: a link
    planted there would send the session's data outside the root. Both paths as the store
    builds them (``path`` = ``root / ...``), so comparing their parts needs no resolving.
    """
    if root is None:
        return
    below = directory.parts[len(root.parts) :]
    current = root
    for name in below:
        current = current / name
        if is_link(current):
            raise symlink_error(current)


def openable(root: Path | None, path: Path) -> bool:
    """Whether ``path`` is a regular file the opens here would accept: not a link itself and no
    link below ``root`` on the way (:func:`check_below`). Listings use it so that they never
    show what opening would refuse."""
    try:
        check_below(root, path.parent)
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (StoreError, OSError):
        return False


def stat_or_none(path: Path, doing: str) -> os.stat_result | None:
    """``os.stat(path)`` (links followed), None when nothing is there; any other failure (a
    name over the file system's limit, no permission) is a typed error, where ``Path.exists``
    raises the bare ``OSError``."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _typed(exc, path, doing) from exc


def ensure_directory(directory: Path, root: Path | None = None) -> None:
    """Create ``directory`` (and parents) as ``0700`` when missing; with ``root``, a link in
    any directory below it is refused (:func:`check_below`)."""
    check_path(directory)
    check_below(root, directory)
    missing = []
    current = Path(directory)
    while current != current.parent and stat_or_none(current, "create the directory") is None:
        missing.append(current)
        current = current.parent
    try:  # os.makedirs applies the mode to the leaf only; every created level is private here
        for level in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(level, DIR_MODE)
    except OSError as exc:
        raise _typed(exc, directory, "create the directory") from exc
    check_below(root, directory)  # made by someone else meanwhile: made as a link?


def open_file(path: Path, flags: int, root: Path | None = None) -> int:
    """``os.open`` with ``O_NOFOLLOW | O_CLOEXEC`` and mode ``0600``; typed errors; with
    ``root``, a link in a directory below it is refused (:func:`check_below`). Only a regular
    file is opened (:func:`_open_regular`)."""
    check_path(path)
    check_below(root, path.parent)
    return _open_regular(path, flags, "open")


def _open_regular(path: Path, flags: int, doing: str) -> int:
    """Open ``path`` only if it is a regular file: anything else is a typed error naming it.

    Why: a FIFO planted at a log's path made every open wait forever for a writer (and a
    device or socket is no log either). ``O_NONBLOCK`` makes opening a FIFO return at once (or
    fail with ``ENXIO`` for writing with no reader); ``fstat`` then refuses whatever is not a
    regular file, and a regular file's descriptor is put back to blocking (it never blocks
    anyway; this keeps the flag from leaking to the caller's use).
    """
    try:
        fd = os.open(path, flags | _NONBLOCK | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    except OSError as exc:
        raise _open_error(exc, path, doing) from exc
    return _regular(fd, path, doing)


def _open_error(exc: OSError, path: Path, doing: str) -> StoreError:
    if exc.errno in (errno.ENXIO, errno.EISDIR) and _kind(path) != "a regular file":
        return not_regular_error(path)  # a FIFO without reader (write), a directory (write)
    return _typed(exc, path, doing)


def _regular(fd: int, path: Path, doing: str) -> int:
    """``fd`` back in blocking mode if it is a regular file; else closed, and a typed error."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular_error(path, st.st_mode)
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, OSError):
            raise _typed(exc, path, doing) from exc
        raise
    return fd


def not_regular_error(path: Path, mode: int | None = None) -> StoreError:
    kind = _kind(path) if mode is None else _KINDS.get(stat.S_IFMT(mode), "a special file")
    return StoreError(
        f"{path} is {kind}, not a regular file; the store only reads and writes regular files. "
        "Remove it or point the store elsewhere."
    )


_KINDS = {
    stat.S_IFREG: "a regular file",
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFLNK: "a symbolic link",
}


def _kind(path: Path) -> str:
    try:
        return _KINDS.get(stat.S_IFMT(os.lstat(path).st_mode), "a special file")
    except OSError:
        return "a special file"


def read_bytes(path: Path, root: Path | None = None) -> bytes | None:
    """The whole file, or None when it does not exist; symlinks refused."""
    found = read_from(path, 0, root)
    return None if found is None else found[2]


def read_from(path: Path, offset: int, root: Path | None = None) -> tuple[int, int, bytes] | None:
    """``(inode, size, bytes from offset to the end)`` of the file, or None when it does not
    exist; symlinks refused (below ``root`` too). A reader that knows what it read before reads
    only what follows."""
    check_below(root, check_path(path).parent)
    fd = _open_to_read(path)
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        chunks: list[bytes] = []
        at = offset
        while at < st.st_size:
            chunk = os.pread(fd, min(st.st_size - at, 1 << 20), at)
            if not chunk:
                break
            chunks.append(chunk)
            at += len(chunk)
        return st.st_ino, at, b"".join(chunks)
    except OSError as exc:
        raise _typed(exc, path, "read") from exc
    finally:
        os.close(fd)


def sessions_root(root: Path, log_name: str) -> Path:
    """``root``, refused when it is one session's own directory (it holds ``log_name``): opened
    as a directory of sessions, it got a session nested inside it, so its history read empty,
    new messages went to the nested one, and deleting the session was then refused."""
    try:
        is_session = (root / log_name).is_file()
    except OSError:  # a name too long, a directory it may not read: the operation says so
        is_session = False
    if is_session:
        raise ConfigurationError(
            f"{root} is a session's own directory (it holds {log_name}); open the directory "
            f"above it with session={root.name!r}, or the file {root / log_name} itself"
        )
    return root


def check_log_kind(path: Path) -> None:
    """Refuse a file that is not a session log (one JSON object per line) before anything reads,
    locks or repairs it: a conversation saved as a JSON array, an SQLite database given as a
    bare path, or any text would be read as a log of corrupt lines, its last line cut as a torn
    tail and the next record appended to it. Every writer of a log (ours, Kimi CLI's) starts it
    with ``{``; a crash can zero-fill a block, so a first line of NULs is the log's own damage,
    skipped and reported line by line like any other. A missing or empty file is a new log; one
    that cannot be read (a link, a FIFO) is refused by the operation that reads it, naming why."""
    try:
        found = read_head(path, 4096)
    except StoreError:
        return
    first = found.lstrip(b" \t\r\n")[:1] if found is not None else b""
    if found is None or first in (b"", b"{", b"\x00"):
        return
    if found.startswith(b"SQLite format 3\x00"):
        raise ConfigurationError(f"{path}: an SQLite database; name it as sqlite:///{path}")
    kind = (
        "a JSON array (a conversation file?)"
        if first == b"["
        else "its first line is no JSON object"
    )
    raise ConfigurationError(
        f"{path}: {kind}, not a session log (JSONL, one JSON object per line); nothing was read "
        "or written"
    )


def read_head(path: Path, size: int) -> bytes | None:
    """The file's first ``size`` bytes, or None when it does not exist (as :func:`read_from`)."""
    fd = _open_to_read(path)
    if fd is None:
        return None
    try:
        return os.pread(fd, size, 0)
    except OSError as exc:
        raise _typed(exc, path, "read") from exc
    finally:
        os.close(fd)


def _open_to_read(path: Path) -> int | None:
    """A descriptor of the regular file at ``path`` (no link followed, a FIFO opened without
    waiting, then refused), or None when it does not exist."""
    check_path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _NOFOLLOW | _CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _open_error(exc, path, "read") from exc
    return _regular(fd, path, "read")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY | _CLOEXEC)
    except OSError:  # pragma: no cover - platforms without directory descriptors
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def temp_name(path: Path) -> Path:
    """An unpredictable sibling name for ``path``'s next content."""
    return path.with_name(f".{path.name}.{secrets.token_hex(16)}.tmp")


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (see the module docstring); typed errors.

    A symlink at ``path`` is refused rather than replaced by a regular file.
    """
    check_path(path)
    if is_link(path):
        raise symlink_error(path)
    tmp = temp_name(path)
    fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        try:
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _typed(exc, path, "write") from exc
    if durable:
        fsync_directory(path.parent)


def copy_exclusive(source: Path, target: Path) -> bool:
    """Copy ``source`` to a new ``target`` (False if ``target`` exists); for filesystems
    without hard links. ``O_EXCL`` keeps it from overwriting anything."""
    check_path(target)
    data = read_bytes(source) or b""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    except FileExistsError:
        return False
    except OSError as exc:
        raise _typed(exc, target, "create") from exc
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def remove_stale_temps(path: Path) -> list[Path]:
    """Delete ``.<name>.*.tmp`` siblings of ``path`` left by a crashed writer; return them.

    Call with the lock every writer of ``path`` holds while its temporary file exists.
    """
    check_path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.[0-9A-Za-z]+\.tmp$")
    removed: list[Path] = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        if pattern.match(name):
            stale = path.with_name(name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)  # unlink never follows a link: a planted link is just removed
                removed.append(stale)
    return removed


def create_private(path: Path) -> bool:
    """Create ``path`` empty and ``0600`` when missing (True if this call created it), without
    ever holding a descriptor of the file at ``path``; a symlink there is refused.

    Why so roundabout: this is for a SQLite database that live connections of this process may
    already use. POSIX record locks belong to the process, so closing *any* descriptor of that
    file (even one opened just to create it) silently drops all of their locks; another process
    can then checkpoint and delete the WAL under them (SQLite's "How To Corrupt", 2.2). So an
    existing file is only ``lstat``-ed, and a new one is made as a private temporary file,
    closed, and hard-linked into place: ``link`` fails on any existing name (file or planted
    link) instead of replacing it, and by then no descriptor of the inode is open. Without hard
    links, ``O_CREAT | O_EXCL`` is the fallback: its descriptor is closed at once and only a
    connection opened in those microseconds (on a file that did not exist before) could lose
    its locks. A crash between creating and removing the temporary file leaves it behind, empty.
    """
    check_path(path)
    for _ in range(2):  # pass 2 when another creator won the race: check what it made
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _typed(exc, path, "inspect") from exc
        else:
            if stat.S_ISLNK(st.st_mode):
                raise symlink_error(path)
            return False
        if _link_new_file(path):
            fsync_directory(path.parent)
            return True
    return False


def _link_new_file(path: Path) -> bool:
    """One attempt of :func:`create_private`'s creation; False when ``path`` appeared first."""
    tmp = temp_name(path)
    os.close(open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    try:
        # Link the name itself, never what it points to: had someone swapped our temporary file
        # for a link, ``path`` becomes a link too and the caller's lstat refuses it.
        os.link(tmp, path, follow_symlinks=os.link not in os.supports_follow_symlinks)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise _typed(exc, path, "create") from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    except FileExistsError:
        return False
    except OSError as exc:
        raise _typed(exc, path, "create") from exc
    os.close(fd)
    return True
