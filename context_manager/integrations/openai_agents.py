"""OpenAI Agents SDK: a ``Session`` that keeps everything and sends what fits.

``ContextManagerSession`` implements the SDK's ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``). Items are Responses API input items; the manager
groups parallel ``function_call`` items with their outputs and keeps a ``reasoning`` item with the
calls after it, so ``get_items()`` returns a provider-valid view within the budget. With
``directory`` (or a database ``store``) the session is persisted (write-ahead, lossless) and
reopened by the same id; in a directory each id gets a directory of its own
(:func:`session_file_name`) holding its log and the generations the log rotates to, so two users
never read each other's history, not even after a clear or a pop.

The session bounds what a run loads; what each model call sends (the loaded items, the items
the run adds, the instructions and the tool schemas) is bounded by ``trimming_input_filter``
(``RunConfig(call_model_input_filter=...)``), with or without this session.
``handoff_input_filter`` trims the conversation a hand-off passes to the receiving agent. Both
live in :mod:`.openai_agents_filters` and are re-exported here.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import stat
import string
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, ContextManagerError, InvalidMessageError
from ..manager import MessageContextManager
from ..messages import message_list, normalize
from .openai_agents_filters import handoff_input_filter, trimming_input_filter

if TYPE_CHECKING:
    from ..store import StoreHandle

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
    :func:`_session_path`) and the generations clears and pops rotate it to. ``store`` (instead)
    is a database URL (``sqlite:///``, ``redis://``, ``postgresql://``) or a
    :class:`~context_manager.store.StoreHandle`, holding the session under its id. Without
    either the session lives in memory. Other keyword options go to the manager (defaults:
    ``strategy="sliding_window"``, ``provider="openai-responses"``); a sliding window keeps the
    whole history, so nothing is lost to trimming and ``pop_item`` can always undo.

    The protocol methods answer as the SDK's own ``SQLiteSession`` does on the same calls (a
    leading system item is an item: popped, cleared), except where the manager keeps the
    history valid: an item it refuses (an output without its call) raises, an open call a user
    item interrupts gets a synthetic output, and ``get_items()`` without a limit returns the
    view that fits the budget (without a call still waiting for its output). A ``system_prompt=``
    option is configuration, not an item: it stays
    through ``clear_session`` and is never popped. Items are copied in and out (JSON data: dicts
    and lists), so editing an item given or returned never changes the history.
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        *,
        directory: str | os.PathLike[str] | None = None,
        store: str | StoreHandle | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ConfigurationError(f"session_id must be a non-empty string, got {session_id!r}")
        self.session_id = session_id
        self._options = {**_DEFAULTS, **options}
        #: A ``system_prompt`` option is configuration: kept by clears, never popped.
        self._configured = options.get("system_prompt") is not None
        #: The session's log file (None in memory or in a database ``store``).
        self.path: Path | None = None
        if directory is not None and not isinstance(directory, str | os.PathLike):
            raise ConfigurationError(f"directory must be a path, got {type(directory).__name__}")
        if store is not None and directory is not None:
            raise ConfigurationError("pass directory= (files) or store= (a database), not both")
        try:
            if store is not None:
                self.manager = _open_store(store, session_id, self._options)
            elif directory is None:
                self.manager = MessageContextManager(**self._options)
            else:
                # the store creates the session's directory (and ``directory``) private, 0700
                self.path = _session_path(Path(directory), session_id)
                self.manager = MessageContextManager.open(self.path, **self._options)
        except TypeError as exc:  # an option the manager does not take
            raise ConfigurationError(f"ContextManagerSession: {exc}") from None

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """Without ``limit``, the view to send (within budget, calls with their outputs); with
        it, the last ``limit`` items of the whole history, as the SDK's sessions answer it (the
        SDK reads a write's tail back by ``limit``), whatever the budget: ``O(history)``."""
        if limit is not None and (type(limit) is not int):
            raise ConfigurationError(f"limit must be an int or None, got {limit!r:.40}")
        if limit is None:
            return _copies(self.manager.get_context())
        if limit <= 0:
            return []
        with self.manager.locked():
            items = self.manager.messages
            system = self.manager.system_message
        if system is not None and limit > len(items):
            return _copies([system, *items[-limit:]])
        return _copies(items[-limit:])

    async def add_items(self, items: list[Any]) -> None:
        """Store copies of new items, all or none: an item the manager refuses (an output
        without its call, an unreadable item) leaves the session as it was, as the SDK's own
        sessions do (its recovery of a failed write reads the tail back and expects either
        state). A persistent session writes them in one append."""
        given = _copies(message_list(items), adding=True)
        try:
            self._add_all(given)
        except InvalidMessageError:
            noted = _late_outputs_as_notes(self.manager, given)
            if noted is None:
                raise
            self._add_all(noted)

    def _add_all(self, given: list[Any]) -> None:
        manager = self.manager
        with manager.locked():
            journal = manager.store
            if journal is not None:
                with journal.batch(atomic=True):
                    for item in given:
                        manager.add(item)
                return
            before, system = manager.messages, manager.system_message
            try:
                for item in given:
                    manager.add(item)
            except ContextManagerError:  # back to what it was, system prompt included
                manager.clear(keep_system_prompt=False)
                if system is not None:
                    manager.set_system_prompt(system)
                manager.extend(before)
                raise

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item (None when empty), a leading system item too.

        Popping a user item also removes the synthetic outputs the session stored for the open
        calls it interrupted (:func:`_closures_before`), so the calls are open again and their
        real outputs can still be added, as with ``SQLiteSession``. The manager's history is
        append-only, so this rebuilds it without them (a store's log rotates; the old generation
        stays): O(history), for the rare undo.
        """
        manager = self.manager
        with manager.locked():
            items = manager.messages
            if not items:
                system = manager.system_message
                if system is None or self._configured:
                    return None
                manager.clear(keep_system_prompt=False)
                return system
            keep = len(items) - 1 - _closures_before(items, manager.interrupted_result)
            manager.clear(keep_system_prompt=True)
            manager.extend(items[:keep])
            return items[-1]

    async def clear_session(self) -> None:
        """Forget every item, a leading system item too (a ``system_prompt`` option stays)."""
        self.manager.clear(keep_system_prompt=self._configured)


def _open_store(store: object, session_id: str, options: dict[str, Any]) -> MessageContextManager:
    """The manager restored from session ``session_id`` of a database URL or a connected handle
    (a JSONL path goes in ``directory``, which gives each id its own directory; a ``Store``
    object is bound to one session already, whatever the id)."""
    from ..store import StoreHandle
    from ..store.session import open_session
    from ..store.targets import SCHEMES

    if not isinstance(store, StoreHandle) and not (
        isinstance(store, str) and store.startswith(SCHEMES)
    ):
        raise ConfigurationError(
            f"store must be a URL ({', '.join(SCHEMES)}) or a StoreHandle; "
            f"for files pass directory=, got {type(store).__name__}"
        )
    return open_session(MessageContextManager, store, session=session_id, **options)


def _late_outputs_as_notes(manager: MessageContextManager, items: list[Any]) -> list[Any] | None:
    """``items`` with each output for a call the session closed as interrupted turned into a
    user item saying what the tool returned; None when there is none (the refusal stands).

    A tool that needs approval runs when the run resumes, which may be after the person sent
    another message: the session closed the call then (an output reading ``interrupted_result``,
    as the Responses API needs one output per call), so the real output is a second one, which
    no provider takes. It still says what the tool did (it ran, its effect is real): dropped, the
    model would believe it never ran. Only read on that refusal (the history is scanned once)."""
    closed = {
        item.get("call_id")
        for item in manager.messages
        if isinstance(item, dict)
        and item.get("type") == "function_call_output"
        and item.get("output") == manager.interrupted_result
    }
    out, changed = [], False
    for item in items:
        late = isinstance(item, dict) and item.get("type") == "function_call_output"
        if late and item.get("call_id") in closed:
            note = f"[The tool call {item['call_id']} marked interrupted above finished later; "
            out.append({"role": "user", "content": f"{note}its output:]\n{normalize(item).text}"})
            changed = True
        else:
            out.append(item)
    return out if changed else None


def _closures_before(items: list[Any], text: str) -> int:
    """How many items right before the newest one the session made up for it: when the newest
    is a user item, the outputs that closed the calls it interrupted (the manager stores them
    right before it, each reading ``text``, its ``interrupted_result``). A real output reading
    exactly that text, right before a user item, is taken for one."""
    if normalize(items[-1]).role != "user":
        return 0
    n = 0
    for i in range(len(items) - 2, -1, -1):
        rec = normalize(items[i])
        if rec.role != "tool" or rec.text != text:
            break
        n += 1
    return n


def _copies(items: list[Any], *, adding: bool = False) -> list[Any]:
    """Copies of ``items``, so the caller and the session never share a dict or a list: the SDK's
    items are JSON data, copied as such (O(their size), less than counting them took); any other
    object is deep-copied."""
    try:
        return [_copy(item) for item in items]
    except RecursionError:
        if not adding:  # stored items were copied once already: hand them over as they are
            return list(items)
        raise InvalidMessageError("an item is nested too deeply to copy") from None


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


#: Values shared as they are (immutable).
_ATOMS = frozenset((str, int, float, bool, type(None), bytes))
