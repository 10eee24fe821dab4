"""The offload area contract, its handles, and the base class every area shares.

Handles are ``cm-off:<tag>-<random>``: 128 random bits (``secrets``), so a handle cannot be
guessed, and an 8-hex tag derived from the session id, so a handle carried into another session
is refused as such (:class:`~context_manager.errors.OffloadHandleError`) rather than looked up.
Anything else (a path, a truncated or forged handle) is refused before any I/O: the backends
only ever see the 32 hex digits of a checked handle, never the caller's text.

*Live* entries: an area keeps what it stored until :meth:`OffloadArea.delete_entries`, but a
handle resolves only while its result is part of the history. :meth:`~OffloadArea.retire`
(called when the history is cleared or rebuilt, e.g. by ``revert_to``) makes every handle stop
resolving; :meth:`~OffloadArea.revive` (a replayed message that names the handle) and a new
``put`` of the same data under the same ``key`` make it resolve again, under the same handle.
So a result reverted away stops resolving while every kept one still does.

A backend implements the abstract methods of :class:`BaseArea` (``_insert``, ``_fetch``,
``_revive``, ``_import``, ``retire``, ``delete_entries``, ``entries``); the checks, the
encoding and the slicing (``slicing.py``) live here once.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..counting import TokenCounter, get_counter
from ..errors import ConfigurationError, OffloadHandleError, OffloadNotFoundError
from ..messages.nesting import short_repr
from .slicing import Slice, select

__all__ = [
    "HANDLE_PREFIX",
    "BaseArea",
    "Entry",
    "OffloadArea",
    "Slice",
    "keyed_token",
    "rebind_handles",
    "sample_handle",
    "session_tag",
]

HANDLE_PREFIX = "cm-off:"
#: A handle (its session tag, its token), alone or in free text (a stub, a message quoting one).
HANDLE = re.compile(r"cm-off:([0-9a-f]{8})-([0-9a-f]{32})")
#: Random bytes in a handle's token (its 32 hex digits).
_TOKEN_BYTES = 16


def session_tag(session: str) -> str:
    """The 8 hex digits binding a handle to its session (not a secret: a routing check)."""
    return hashlib.blake2s(session.encode("utf-8"), digest_size=4).hexdigest()


def keyed_token(session: str, key: str) -> str:
    """The token of a put with ``key`` (the offloader's key is the text's SHA-256): derived,
    not drawn, so a stub can be rendered with its exact handle before anything is stored, and
    the same text gets the same handle again after an eviction (a prompt cache keeps the stub).
    It tells nothing the caller did not know: finding it takes the text itself."""
    material = f"{session}\0{key}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(material).hexdigest()[: 2 * _TOKEN_BYTES]


def sample_handle(session: str) -> str:
    """A handle of the form and length every handle of ``session`` has, naming nothing: what
    a stub is rendered with to be sized before anything is stored (pruning skips a stub that
    would not be cheaper than its result without storing the result)."""
    return f"{HANDLE_PREFIX}{session_tag(session)}-{'0' * 2 * _TOKEN_BYTES}"


def rebind_handles(value: Any, source: str, destination: str) -> Any:
    """``value`` (a stored record: JSON values) with every handle of session ``source`` it
    quotes re-tagged for ``destination``; ``value`` itself when it quotes none.

    Copying a session under a new id (``copy_session(..., to_session=...)``) copies its area's
    entries under their own tokens, and rewrites the history with this, so the stubs the copy
    shows name handles of the copy, which its area resolves; a handle is still only ever
    looked up in its own session (the tag check is kept). Only the 8-hex tag changes: every
    text keeps its length, a handle of any other session is left as it is."""
    old, new = session_tag(source), session_tag(destination)
    if old == new:
        return value

    def swap(found: re.Match[str]) -> str:
        return f"{HANDLE_PREFIX}{new}-{found.group(2)}" if found.group(1) == old else found.group()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return HANDLE.sub(swap, item) if HANDLE_PREFIX in item else item
        if isinstance(item, dict):
            out = {key: walk(inner) for key, inner in item.items()}
            same = all(out[key] is inner for key, inner in item.items())
            return item if same else out
        if isinstance(item, list):
            items = [walk(inner) for inner in item]
            return item if all(a is b for a, b in zip(items, item, strict=True)) else items
        return item

    return walk(value)


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored result, as :meth:`BaseArea.entries` lists it (copying between backends)."""

    token: str  # the 32 random hex digits of the handle
    key: str | None
    live: bool
    data: bytes


@runtime_checkable
class OffloadArea(Protocol):
    """Where offloaded results of one session live. Methods raise only ``OffloadError`` (and
    subclasses), ``StoreError`` (store-backed areas) and ``ConfigurationError``."""

    @property
    def session(self) -> str:
        """The session the handles are bound to."""
        ...

    def put(self, data: str | bytes, *, key: str | None = None) -> str:
        """Store ``data`` (text is stored as UTF-8); its handle. With ``key``, a second put of
        the same key returns the first handle (and makes it resolve again after a retire)."""
        ...

    def get(
        self,
        handle: str,
        *,
        lines: tuple[int, int | None] | None = None,
        byte_range: tuple[int, int | None] | None = None,
        pattern: str | None = None,
        max_tokens: int = 2000,
        counter: str | TokenCounter | None = None,
    ) -> Slice:
        """A slice of the stored data within ``max_tokens``, with the total size."""
        ...

    def retire(self) -> None:
        """Every handle stops resolving until revived or put again (the history was rebuilt)."""
        ...

    def revive(self, handles: Iterable[str]) -> None:
        """These handles (of this session) resolve again; unknown ones are ignored."""
        ...

    def delete_entries(self) -> int:
        """Delete everything stored for the session; how many entries were deleted."""
        ...


class BaseArea(ABC):
    """Handle checks, encoding and slicing over a backend's primitives (see the module doc)."""

    def __init__(self, session: str) -> None:
        if not isinstance(session, str) or not session:
            raise ConfigurationError(
                f"session must be a non-empty str, got {short_repr(session, 60)}"
            )
        if not session.isascii():  # a lone surrogate has no UTF-8 form: no store could key it
            try:
                session.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ConfigurationError(
                    f"session must be valid Unicode text, got {short_repr(session, 60)} "
                    f"(a lone surrogate at index {exc.start})"
                ) from None
        self._session = session
        self._tag = session_tag(session)

    @property
    def session(self) -> str:
        return self._session

    @property
    def capacity(self) -> int | None:
        """The most bytes this area holds at once (older entries are evicted past it), or None
        when it never evicts (the store-backed areas)."""
        return None

    # -- handles -----------------------------------------------------------------------------
    def handle_of(self, token: str) -> str:
        return f"{HANDLE_PREFIX}{self._tag}-{token}"

    def token_of(self, handle: object) -> str:
        """The random part of ``handle``, or :class:`OffloadHandleError` (no I/O)."""
        if not isinstance(handle, str):
            raise OffloadHandleError(
                f"an offload handle is a str like '{HANDLE_PREFIX}…', got {type(handle).__name__}"
            )
        found = HANDLE.fullmatch(handle.strip())
        if found is None:
            raise OffloadHandleError(
                f"{handle[:24]!r} is not an offload handle: use the handle a stub names "
                f"(it starts with '{HANDLE_PREFIX}' and has 8 + 32 hex digits)"
            )
        if found.group(1) != self._tag:
            raise OffloadHandleError(
                f"handle {handle[:16]}… was issued for another session, not {self._session!r}"
            )
        return found.group(2)

    # -- the protocol ------------------------------------------------------------------------
    def put(self, data: str | bytes, *, key: str | None = None) -> str:
        if isinstance(data, str):
            raw = data.encode("utf-8", "surrogatepass")
        elif isinstance(data, bytes | bytearray | memoryview):
            raw = bytes(data)
        else:
            raise ConfigurationError(f"put() takes str or bytes, got {type(data).__name__}")
        if key is not None and (not isinstance(key, str) or not 0 < len(key) <= 200):
            raise ConfigurationError("key must be a str of 1-200 characters or None")
        return self.handle_of(self._insert(self._token(key), raw, key))

    def _token(self, key: str | None) -> str:
        return secrets.token_hex(_TOKEN_BYTES) if key is None else keyed_token(self._session, key)

    def handle_for(self, key: str) -> str:
        """The handle a put with ``key`` gets, without storing anything (a put of a key already
        stored under another token, by an older version, keeps that token)."""
        return self.handle_of(self._token(key))

    def get(
        self,
        handle: str,
        *,
        lines: tuple[int, int | None] | None = None,
        byte_range: tuple[int, int | None] | None = None,
        pattern: str | None = None,
        max_tokens: int = 2000,
        counter: str | TokenCounter | None = None,
    ) -> Slice:
        token = self.token_of(handle)
        data = self._fetch(token)
        if data is None:
            raise OffloadNotFoundError(
                f"handle {handle[:16]}… resolves to nothing in session {self._session!r}: it "
                "was never issued here, or its data was evicted, expired, deleted or reverted"
            )
        return select(
            handle.strip(),
            data,
            lines=lines,
            byte_range=byte_range,
            pattern=pattern,
            max_tokens=max_tokens,
            counter=get_counter(counter),
        )

    def revive(self, handles: Iterable[str]) -> None:
        tokens = []
        for handle in handles:
            found = HANDLE.fullmatch(handle) if isinstance(handle, str) else None
            if found is not None and found.group(1) == self._tag:
                tokens.append(found.group(2))
        if tokens:
            self._revive(sorted(set(tokens)))

    def load(self, entries: Iterable[Entry]) -> int:
        """Store ``entries`` (from another area's :meth:`entries`) under their own tokens."""
        n = 0
        for entry in entries:
            self._import(entry)
            n += 1
        return n

    # -- backend primitives ------------------------------------------------------------------
    @abstractmethod
    def _insert(self, token: str, data: bytes, key: str | None) -> str:
        """Store ``data`` under ``token``; with a stored ``key``, revive and return its token."""

    @abstractmethod
    def _fetch(self, token: str) -> bytes | None:
        """The data of a live entry (None: absent, evicted, expired or retired)."""

    @abstractmethod
    def _revive(self, tokens: list[str]) -> None:
        """These entries resolve again."""

    @abstractmethod
    def _import(self, entry: Entry) -> None:
        """Store ``entry`` under its own token (copying a session between backends)."""

    @abstractmethod
    def retire(self) -> None:
        """Every handle stops resolving until revived or put again (the history was rebuilt)."""

    @abstractmethod
    def delete_entries(self) -> int:
        """Delete every entry of the session; how many there were."""

    @abstractmethod
    def entries(self) -> Iterator[Entry]:
        """Every stored entry, live or not (for copying a session between backends)."""
