"""Copy a session between stores (JSONL to PostgreSQL, Redis to SQLite, ...), record by record.

The current generation is copied as its records (metadata, checkpoints and compaction entries
included), re-encoded by the same rules every backend uses, so the copy restores to the same
manager. The destination session must be empty: a copy never merges two histories.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ConfigurationError
from ..offload.area import rebind_handles
from .offload import copy_offload
from .protocol import Store
from .records import ATTRS_KEY, CRC_KEY, logger, read_record
from .targets import open_store

__all__ = ["copy_session"]


def _check_session(given: object, store: Store, session: str | None) -> None:
    """A store object is one session: naming another one is a mistake, refused (as
    ``delete_session`` refuses it), never a silent copy of the wrong session."""
    is_store = isinstance(given, Store) and not isinstance(given, (str, os.PathLike))
    if is_store and session is not None and session != store.session:
        raise ConfigurationError(
            f"the store given is session {store.session!r}, not {session!r}; pass a target "
            "to copy another session"
        )


def _rebound(record: dict[str, Any], source: str, destination: str) -> dict[str, Any]:
    """``record`` with the offload handles of ``source`` it quotes re-bound to ``destination``
    (``offload.area.rebind_handles``: the copied area resolves them under the new id). A record
    so rewritten loses its CRC, which named the old text (the destination seals it again when
    it writes with ``integrity``)."""
    new = rebind_handles(record, source, destination)
    attrs = new.get(ATTRS_KEY) if new is not record else None
    if isinstance(attrs, dict) and CRC_KEY in attrs:
        attrs = {key: value for key, value in attrs.items() if key != CRC_KEY}
        new = {key: value for key, value in new.items() if key != ATTRS_KEY}
        if attrs:
            new[ATTRS_KEY] = attrs
    return new  # type: ignore[no-any-return]


def copy_session(
    source: str | os.PathLike[str] | Store,
    destination: str | os.PathLike[str] | Store,
    *,
    session: str | None = None,
    to_session: str | None = None,
) -> int:
    """Copy ``session`` from ``source`` to ``destination`` (as ``to_session``); returns the
    number of records copied. A record that cannot be read (malformed, nested too deeply, an
    integer too long, a CRC that does not match) is skipped with a warning naming its position,
    on every backend, as a restore would skip it. A message record the manager would refuse is
    copied as it is: a restore of the copy skips it as one of the source does, and the message
    records a compaction's cut counts stay the same. Records keep their ids, so the destination
    refuses a record it already holds like any retried write. The records are written in one
    atomic step (one transaction, one script, one file write), so a copy that fails (a full
    disk, a dropped connection) writes nothing and can simply be run again."""
    src = open_store(source, session=session)
    try:
        _check_session(source, src, session)
        dst = open_store(destination, session=to_session if to_session is not None else session)
    except BaseException:
        src.close()
        raise
    try:
        _check_session(destination, dst, to_session)
        records: list[dict[str, Any]] = []
        for position, line in src.load().lines:
            value = read_record(line, check_message=False)
            if isinstance(value, str):
                logger.warning(
                    "%s session %r: not copying record %d: %s",
                    src.target,
                    src.session,
                    position,
                    value,
                )
                continue
            records.append(_rebound(value, src.session, dst.session))
        if dst.load().lines:
            raise ConfigurationError(
                f"{dst.target}: session {dst.session!r} already has records; copy into a new "
                "session (--to-session) or clear it first"
            )
        if records:  # one atomic write: a copy that fails leaves no partial session behind
            dst.append(records, durable=True)
        copy_offload(src, dst)  # offloaded tool results follow their session (offload.py)
        return len(records)
    finally:
        src.close()
        dst.close()
