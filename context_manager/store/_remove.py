"""Removing a JSONL session from disk (``JsonlLog.delete``): all at once, never through a link.

Why it is built this way:

- **One atomic step makes the session disappear.** A session directory (``<root>/<session>/``:
  the log, its rotated generations ``context_N.jsonl``, the offload side directory, the lock) is
  first renamed to an unpredictable hidden name in the root (``.<session>.<random>.deleted``),
  then removed. A reader or writer sees the whole session or none of it, never a log without its
  older generations; session ids cannot start with ``.``, so the hidden name is never listed as
  a session. A delete killed half-way leaves the hidden directory, which the next delete of the
  same session removes.
- **Only a session's own files.** A directory holding anything but the log, its rotated
  generations, temporary files, offload directory and lock is refused (nothing is deleted): a
  wrong root or session id must not remove someone's data.
- **Never outside the root.** The session directory is ``lstat``-ed: a symbolic link there is
  refused with a typed error rather than followed (the data it points to is not ours to remove).
  Inside, :func:`shutil.rmtree` removes links as links and never descends through them (on
  platforms where it works on directory descriptors, ``rmtree.avoids_symlink_attacks``, a link
  swapped in while it runs is not followed either; elsewhere we refuse to delete).
- A single log file (no session root) has no directory of its own: the log is unlinked first
  (the session is gone from then on), then its rotated generations, offload directory,
  temporary files and lock.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
from pathlib import Path

from ..errors import StoreError
from . import _files

__all__ = ["remove_session"]


def remove_session(log: Path, in_root: bool, lock_name: str) -> bool:
    """Remove the session whose log is ``log``: its directory when it is a session of a root
    (``<root>/<session>/context.jsonl``), else the log's own files; True when any of it (other
    than the lock) existed."""
    return remove_session_directory(log.parent, lock_name) if in_root else remove_log_files(log)


def _error(path: Path, exc: OSError) -> StoreError:
    return StoreError(f"{path}: cannot delete: {exc.strerror or exc}; delete it again to finish")


def _remove_tree(path: Path) -> None:
    """Remove ``path`` (a real directory), removing links inside it without following them."""
    if not shutil.rmtree.avoids_symlink_attacks:  # pragma: no cover - not on Linux or macOS
        raise StoreError(
            f"{path}: this platform cannot remove a directory without following links planted "
            "in it; remove it by hand"
        )
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _error(path, exc) from None


def remove_session_directory(directory: Path, lock_name: str) -> bool:
    """Rename ``directory`` out of sight, then remove it; True when it held anything but the
    lock file ``lock_name``. Leftovers of an earlier interrupted delete are removed too."""
    root = directory.parent
    leftover = re.compile(rf"^\.{re.escape(directory.name)}\.[0-9a-f]{{32}}\.deleted$")
    with contextlib.suppress(OSError):
        for name in os.listdir(root):
            if leftover.match(name) and not _files.is_link(root / name):
                _remove_tree(root / name)
    try:
        mode = os.lstat(directory).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _error(directory, exc) from None
    if not stat.S_ISDIR(mode):
        raise StoreError(
            f"{directory} is {'a symbolic link' if stat.S_ISLNK(mode) else 'not a directory'}; "
            "the store deletes only a session directory of its own (see docs/security.md)"
        )
    trash = root / f".{directory.name}.{secrets.token_hex(16)}.deleted"
    try:
        names = os.listdir(directory)
        foreign = [n for n in names if not _own(n, lock_name.removesuffix(".lock"))]
        if foreign:  # not a session directory of ours: a wrong root or session id
            raise StoreError(
                f"{directory} holds files that are not a session's ({', '.join(foreign[:3])}"
                f"{', ...' if len(foreign) > 3 else ''}); nothing was deleted"
            )
        found = any(name != lock_name for name in names)
        os.rename(directory, trash)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _error(directory, exc) from None
    _files.fsync_directory(root)
    if _files.is_link(trash):  # swapped for a link after the check: remove the link only
        os.unlink(trash)
        return found
    _remove_tree(trash)
    return found


def _own(name: str, log: str) -> bool:
    """``name`` is one of the files a session directory holds for its log ``log``: the log, its
    rotated generations, their temporary files, the offload directory, the lock."""
    stem, dot, suffix = log.rpartition(".")
    return (
        name in (log, f"{log}.lock", f"{log}.offload")
        or re.fullmatch(rf"{re.escape(stem)}_\d+{dot}{re.escape(suffix)}", name) is not None
        or re.fullmatch(rf"\.{re.escape(log)}\.[0-9A-Za-z]+\.tmp", name) is not None
    )


def remove_log_files(path: Path) -> bool:
    """Remove a single log ``path`` and everything beside it that is its own; True when any of
    it (besides the lock) existed."""
    parent = path.parent
    rotated = re.compile(rf"^{re.escape(path.stem)}_\d+{re.escape(path.suffix)}$")
    temporary = re.compile(rf"^\.{re.escape(path.name)}\.[0-9A-Za-z]+\.tmp$")
    try:
        names = os.listdir(parent)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _error(parent, exc) from None
    ordered = [path.name]  # the log first: from then on the session is gone
    ordered += sorted(n for n in names if rotated.match(n) or temporary.match(n))
    ordered += [f"{path.name}.offload", f"{path.name}.lock"]
    found = False
    for name in ordered:
        target = parent / name
        try:
            if stat.S_ISDIR(os.lstat(target).st_mode):
                _remove_tree(target)
            else:
                os.unlink(target)  # a link is removed, never followed
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _error(target, exc) from None
        found = found or not name.endswith(".lock")
    _files.fsync_directory(parent)
    return found
