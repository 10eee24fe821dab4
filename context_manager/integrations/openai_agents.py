"""OpenAI Agents SDK: a ``Session`` that keeps everything and sends what fits.

``ContextManagerSession`` implements the SDK's ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``). Items are Responses API input items; the manager
groups parallel ``function_call`` items with their outputs and keeps a ``reasoning`` item with the
calls after it, so ``get_items()`` returns a provider-valid view within the budget. With
``directory`` the session is persisted (write-ahead, lossless) and reopened by the same id; each id
gets a directory of its own (:func:`session_file_name`) holding its log and the generations the log
rotates to, so two users never read each other's history, not even after a clear or a pop.

The session bounds what a run loads; what each model call sends (the loaded items, the items
the run adds, the instructions and the tool schemas) is bounded by ``trimming_input_filter``
(``RunConfig(call_model_input_filter=...)``), with or without this session.
``handoff_input_filter`` trims the conversation a hand-off passes to the receiving agent. Both
live in :mod:`.openai_agents_filters` and are re-exported here.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import string
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, ContextManagerError
from ..manager import MessageContextManager
from ..messages import message_list, normalize
from ..messages.groups import joins_previous
from .openai_agents_filters import handoff_input_filter, trimming_input_filter

__all__ = [
    "ContextManagerSession",
    "handoff_input_filter",
    "session_file_name",
    "trimming_input_filter",
]

_DEFAULTS: dict[str, Any] = {"strategy": "sliding_window", "provider": "openai-responses"}

#: Characters a file name keeps as they are; every other one is percent-escaped. ASCII only, so a
#: name does not depend on the Unicode tables of the Python version or on how a file system
#: normalizes Unicode (macOS), and ``%`` is not here, so every escaped name contains one.
_KEPT = frozenset(string.ascii_letters + string.digits + "-_.")
#: Longest name used as is (ASCII, so bytes). The store derives names up to 44 bytes longer next
#: to a flat log of earlier versions (``.<name>.jsonl.<32 hex>.tmp`` while it rotates), a session
#: directory's name is at most 2 longer (:func:`_directory_name`); file systems allow 255 bytes.
_MAX_NAME = 200
#: How much of a too-long name stays readable in front of its hash.
_HASHED_PREFIX = 64


def session_file_name(session_id: str) -> str:
    """The name that holds ``session_id`` in a session directory: its sub-directory
    ``<name>/`` (a name ending in ``.jsonl`` or ``.lock`` has that ``.`` escaped there, see
    :func:`_directory_name`), or the flat ``<name>.jsonl`` of earlier versions.

    Distinct ids always get distinct names, and every name is a plain file name (ASCII letters,
    digits, ``-_.%~``; never ``/``, NUL, ``..`` or a leading ``.``; at most 200 characters):

    - an id of ASCII letters, digits and ``-_.`` that does not start with ``.`` and has at most
      200 characters is its own name (``user-42`` -> ``user-42``), as in earlier versions;
    - otherwise each other character (and a leading ``.``) becomes ``%XX`` per UTF-8 byte
      (``alice@example.com`` -> ``alice%40example.com``). ``%`` is always escaped, so the name
      decodes back to the id (``urllib.parse.unquote(name, errors="surrogatepass")``);
    - a name that would exceed 200 characters becomes its first 64 characters, ``~`` and the
      SHA-256 of the whole id (64 hex digits). ``~`` appears in no other name, and ids sharing a
      long prefix still differ in the hash.

    Earlier versions replaced every other character by ``_``, which gave ``alice@example.com``
    and ``alice_example.com`` one file; see docs/integrations/openai-agents.md for moving such
    files to their new places.
    """
    if not isinstance(session_id, str) or not session_id:
        raise ConfigurationError(f"session_id must be a non-empty string, got {session_id!r}")
    # one piece per character; lone surrogates are escaped too, never an encoding error
    pieces = [
        c
        if c in _KEPT and not (i == 0 and c == ".")
        else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
        for i, c in enumerate(session_id)
    ]
    name = "".join(pieces)
    if len(name) <= _MAX_NAME:
        return name
    prefix: list[str] = []
    size = 0
    for piece in pieces:  # whole characters only, so the prefix still decodes
        size += len(piece)
        if size > _HASHED_PREFIX:
            break
        prefix.append(piece)
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{''.join(prefix)}~{digest}"


#: The log's name inside a session's directory (the JSONL store's session layout). Clearing or
#: reverting links the old file to ``context_<N>.jsonl`` next to it, inside the same directory.
_SESSION_LOG = "context.jsonl"
#: A flat name ending like this may be another log's rotated generation (``user_1.jsonl`` is where
#: the store moves ``user.jsonl`` on a clear), so it is never opened as a session's own log.
_ROTATED = re.compile(r"_[0-9]+\Z")
#: Endings of the files the flat layout keeps in the directory itself (logs, their rotations and
#: lock files); no session directory name ends with one (compared ignoring case).
_FLAT_ENDINGS = (".jsonl", ".lock")


def _directory_name(name: str) -> str:
    """The name of the session's directory: ``name``, with the last ``.`` escaped (``%2E``) when
    ``name`` ends in ``.jsonl`` or ``.lock``.

    So a directory never takes the place of a flat log (``user.jsonl``), of one of its rotations or
    of its lock file (``user.jsonl.lock``), all written by earlier versions in the same directory.
    Still one name per id: the escaped name decodes to the same id (``%`` is always escaped, so
    ``%2E`` can only stand for ``.``), and hashed names end in hex digits, so they never change.
    """
    for ending in _FLAT_ENDINGS:
        if name.lower().endswith(ending):
            dot = len(name) - len(ending)
            return f"{name[:dot]}%2E{name[dot + 1 :]}"
    return name


def _is_flat_log(path: Path) -> bool:
    """Whether something other than a directory is at ``path`` (a link is the store's to refuse)."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _session_path(directory: Path, session_id: str) -> Path:
    """Where the session lives: ``<directory>/<name>/context.jsonl``, or the flat file an earlier
    version wrote for it.

    Earlier versions kept every session in a flat ``<directory>/<stem>.jsonl``, the stem being the
    id's name or, before that, the id itself when every character was a letter or digit (any
    script) or ``-_.`` (ids renamed since: non-ASCII letters, a leading ``.``, more than 200
    characters). While the session's directory holds no log, such a file is still its log (the
    name first, then the id): no other id has that name or spelling (names are injective; a new
    name is ASCII, never starts with ``.`` and is either at most 200 characters or contains
    ``~``). But the store rotates a flat log in the same directory (``user.jsonl`` to
    ``user_1.jsonl``), so a flat stem ending in ``_`` and digits may hold another session's old
    history: such a file is never opened here (docs/integrations/openai-agents.md says how to
    move one that is known to be the session's own).
    """
    name = session_file_name(session_id)
    path = directory / _directory_name(name) / _SESSION_LOG
    if os.path.lexists(path):
        return path
    stems = [name]
    if name != session_id and all(c.isalnum() or c in "-_." for c in session_id):
        stems.append(session_id)
    for stem in stems:
        legacy = directory / f"{stem}.jsonl"
        if not _ROTATED.search(stem) and _is_flat_log(legacy):
            return legacy
    return path


class ContextManagerSession:
    """An Agents SDK session backed by a :class:`MessageContextManager`.

    ``directory`` (optional) holds one directory per session id, ``<directory>/<name>/`` (``name``
    from :func:`session_file_name`), with the write-ahead log ``context.jsonl`` (kept in
    :attr:`path`; a flat ``<directory>/<name>.jsonl`` from an earlier version is still used, see
    :func:`_session_path`) and the generations clears and pops rotate it to; without it the
    session lives in memory. Other keyword options go to the manager (defaults:
    ``strategy="sliding_window"``, ``provider="openai-responses"``); a sliding window keeps the
    whole history, so nothing is lost to trimming and ``pop_item`` can always undo.
    """

    session_settings: Any = None

    def __init__(
        self, session_id: str, *, directory: str | os.PathLike[str] | None = None, **options: Any
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ConfigurationError(f"session_id must be a non-empty string, got {session_id!r}")
        self.session_id = session_id
        self._options = {**_DEFAULTS, **options}
        #: The session's log file (None for an in-memory session).
        self.path: Path | None = None
        if directory is not None and not isinstance(directory, str | os.PathLike):
            raise ConfigurationError(f"directory must be a path, got {type(directory).__name__}")
        try:
            if directory is None:
                self.manager = MessageContextManager(**self._options)
            else:
                # the store creates the session's directory (and ``directory``) private, 0700
                self.path = _session_path(Path(directory), session_id)
                self.manager = MessageContextManager.open(self.path, **self._options)
        except TypeError as exc:  # an option the manager does not take
            raise ConfigurationError(f"ContextManagerSession: {exc}") from None

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The trimmed view (within budget, calls with their outputs); ``limit`` caps the
        number of items, newest first, without splitting a call from its output."""
        if limit is not None and (type(limit) is not int):
            raise ConfigurationError(f"limit must be an int or None, got {limit!r:.40}")
        context = self.manager.get_context()
        if limit is None or limit >= len(context):
            return context
        if limit <= 0:
            return []
        # start on a group's first item: never on an output whose call is cut off, nor inside a
        # reasoning item's group (the one grouping rule, messages.groups)
        start = len(context) - limit
        prev = normalize(context[start - 1])  # only the items read: the cut's neighbours on
        while start < len(context):
            rec = normalize(context[start])
            if not joins_previous(prev, rec):
                break
            prev, start = rec, start + 1
        return context[start:]

    async def add_items(self, items: list[Any]) -> None:
        """Store new items, all or none: an item the manager refuses (an output without its
        call, an unreadable item) leaves the session as it was, as the SDK's own sessions do
        (its recovery of a failed write reads the tail back and expects either state). A
        persistent session writes them in one append."""
        given = message_list(items)
        manager = self.manager
        with manager.locked():
            journal = manager.store
            if journal is not None:
                with journal.batch(atomic=True):
                    for item in given:
                        manager.add(item)
                return
            before = manager.messages
            try:
                for item in given:
                    manager.add(item)
            except ContextManagerError:
                manager.clear(keep_system_prompt=True)
                manager.extend(before)
                raise

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item (None when empty).

        The manager's history is append-only, so this rebuilds it without the last item (the
        log rotates; the old generation stays on disk): O(history), for the rare undo.
        """
        with self.manager.locked():
            items = self.manager.messages
            if not items:
                return None
            self.manager.clear(keep_system_prompt=True)
            self.manager.extend(items[:-1])
            return items[-1]

    async def clear_session(self) -> None:
        self.manager.clear(keep_system_prompt=True)
