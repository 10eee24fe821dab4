"""The JSONL offload area: files in ``<log>.offload/`` beside a session's log (see
``offload.py``). One ``<token>.data`` and one ``<token>.meta`` (key, live) per result, plus a
``<digest>.key`` file naming the token stored under a key, all written atomically (0600 in a
0700 directory, links refused, as the log is)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..offload.area import BaseArea, Entry
from . import _files
from .jsonl import JsonlLog

__all__ = ["JsonlOffload"]

_TOKEN = re.compile(r"[0-9a-f]{32}")


def _live(meta: bytes) -> bool:
    """Whether a ``.meta`` file says live (a damaged one reads as not live)."""
    try:
        value = json.loads(meta)
    except ValueError:
        return False
    return isinstance(value, dict) and bool(value.get("live"))


class JsonlOffload(BaseArea):
    """Files in ``<log>.offload/`` beside a JSONL log."""

    def __init__(self, log: JsonlLog) -> None:
        super().__init__(log.session)
        self.directory = log.path.with_name(log.path.name + ".offload")
        self._durable = log.fsync != "never"
        #: No link from here down to the area (the session directory, the area itself): a
        #: planted one would send results elsewhere, or a delete through it remove other files.
        self._root = log.root if log.root is not None else log.path.parent

    def _checked(self) -> None:
        _files.check_below(self._root, self.directory)

    def _data(self, token: str) -> Path:
        return self.directory / f"{token}.data"

    def _meta(self, token: str) -> Path:
        return self.directory / f"{token}.meta"

    def _key(self, key: str) -> Path:
        """The file naming the token stored under ``key`` (a digest: any key is a safe name)."""
        return self.directory / f"{hashlib.sha256(key.encode('utf-8')).hexdigest()}.key"

    def _write_meta(self, token: str, key: str | None, live: bool) -> None:
        meta = json.dumps({"key": key, "live": live, "at": time.time()}).encode()
        _files.atomic_write(self._meta(token), meta, durable=self._durable)

    def _metas(self) -> Iterator[tuple[str, dict[str, Any]]]:
        self._checked()
        try:
            names = sorted(p.name for p in self.directory.iterdir() if p.name.endswith(".meta"))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(f"{self.directory}: cannot list: {exc.strerror}") from exc
        for name in names:
            raw = _files.read_bytes(self.directory / name)
            if raw is None:
                continue
            try:
                meta = json.loads(raw)
            except ValueError:
                continue  # a foreign or damaged file: not ours to read
            if isinstance(meta, dict):
                yield name[: -len(".meta")], meta

    def _insert(self, token: str, data: bytes, key: str | None) -> str:
        _files.ensure_directory(self.directory, self._root)
        if key is not None:
            raw = _files.read_bytes(self._key(key))
            known = raw.decode("ascii", "replace") if raw is not None else ""
            meta_raw = _files.read_bytes(self._meta(known)) if _TOKEN.fullmatch(known) else None
            if meta_raw is not None and self._data(known).exists():
                if not _live(meta_raw):
                    self._write_meta(known, key, True)
                return known
        _files.atomic_write(self._data(token), data, durable=self._durable)
        self._write_meta(token, key, True)  # an entry exists once its meta does
        if key is not None:
            _files.atomic_write(self._key(key), token.encode(), durable=self._durable)
        return token

    def _fetch(self, token: str) -> bytes | None:
        self._checked()
        raw = _files.read_bytes(self._meta(token))
        return _files.read_bytes(self._data(token)) if raw is not None and _live(raw) else None

    def _set_live(self, tokens: list[str] | None, live: bool) -> None:
        wanted = set(tokens) if tokens is not None else None
        for token, meta in list(self._metas()):
            if (wanted is None or token in wanted) and bool(meta.get("live")) != live:
                self._write_meta(token, meta.get("key"), live)

    def _revive(self, tokens: list[str]) -> None:
        self._set_live(tokens, True)

    def retire(self) -> None:
        self._set_live(None, False)

    def delete_entries(self) -> int:
        self._checked()
        n = 0
        try:
            paths = list(self.directory.iterdir())
        except FileNotFoundError:
            return 0
        for path in paths:
            n += path.name.endswith(".meta")
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StoreError(f"{path}: cannot delete: {exc.strerror}") from exc
        with contextlib.suppress(OSError):  # another writer added a file meanwhile: it stays
            self.directory.rmdir()
        return n

    def entries(self) -> Iterator[Entry]:
        for token, meta in list(self._metas()):
            data = _files.read_bytes(self._data(token))
            if data is not None:
                yield Entry(token, meta.get("key"), bool(meta.get("live")), data)

    def _import(self, entry: Entry) -> None:
        _files.ensure_directory(self.directory, self._root)
        _files.atomic_write(self._data(entry.token), entry.data, durable=self._durable)
        self._write_meta(entry.token, entry.key, entry.live)
        if entry.key is not None:
            _files.atomic_write(self._key(entry.key), entry.token.encode(), durable=self._durable)
