"""``sessions()`` of a JSONL store lists only what opening accepts: a session directory or a
log that is a symbolic link is refused when opened (docs/security.md), so it is not listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_manager.errors import StoreError
from context_manager.store import JsonlLog


def _refused(root: Path, session: str) -> None:
    """Opening ``session`` and reading it: the store refuses the link."""
    with pytest.raises(StoreError, match="symbolic link"):
        log = JsonlLog(root, session=session)
        try:
            log.load()
        finally:
            log.close()


def _listed(root: Path) -> list[str]:
    log = JsonlLog(root, session="real")
    try:
        return log.sessions()
    finally:
        log.close()


def _write(root: Path, session: str) -> None:
    log = JsonlLog(root, session=session)
    try:
        log.append([{"role": "user", "content": f"hello from {session}"}])
    finally:
        log.close()


def test_a_linked_session_directory_is_not_listed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _write(root, "real")
    _write(tmp_path / "elsewhere", "away")
    (root / "linked").symlink_to(tmp_path / "elsewhere" / "away", target_is_directory=True)
    _refused(root, "linked")  # what opening does with it ...
    assert _listed(root) == ["real"]  # ... so the listing leaves it out


def test_a_linked_session_log_is_not_listed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _write(root, "real")
    _write(tmp_path / "elsewhere", "away")
    (root / "linked").mkdir(mode=0o700)
    (root / "linked" / "context.jsonl").symlink_to(
        tmp_path / "elsewhere" / "away" / "context.jsonl"
    )
    _refused(root, "linked")  # what opening does with it ...
    assert _listed(root) == ["real"]  # ... so the listing leaves it out


def test_a_linked_single_file_log_is_not_listed(tmp_path: Path) -> None:
    _write(tmp_path / "elsewhere", "away")
    link = tmp_path / "linked.jsonl"
    link.symlink_to(tmp_path / "elsewhere" / "away" / "context.jsonl")
    log = JsonlLog(link)
    try:
        with pytest.raises(StoreError, match="symbolic link"):
            log.load()
        assert log.sessions() == []
    finally:
        log.close()
    plain = JsonlLog(tmp_path / "plain.jsonl")
    try:
        plain.append([{"role": "user", "content": "hi"}])
        assert plain.sessions() == ["plain"]
    finally:
        plain.close()
