"""Fault injection: a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes writes fail with
EFBIG part-way, like a full disk. Every add either persists or raises a typed StoreError, and
after reopening, what was acknowledged in memory is exactly what is on disk."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from context_manager.manager import MessageContextManager

from .backends import run_child

resource = pytest.importorskip("resource")
ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    from context_manager.errors import ContextManagerError, StoreError
    from context_manager.manager import MessageContextManager

    path, limit = sys.argv[1], int(sys.argv[2])
    manager = MessageContextManager.open(path, max_tokens=10_000_000, fsync=sys.argv[3])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    acked, refused = [], 0
    for i in range(200):
        text = f"message {i} " + "x" * (i % 37) * 5
        try:
            if i % 50 == 49:
                manager.record_usage(1000 + i)
            manager.add({"role": "user", "content": text})
        except StoreError:
            refused += 1
            continue
        acked.append(text)
    memory = [m["content"] for m in manager.messages]
    print(json.dumps({"acked": acked, "refused": refused, "memory": memory}))
    """
)


@pytest.mark.parametrize("fsync", ["never", "always"])
def test_full_disk_every_add_persists_or_raises_store_error(tmp_path: Path, fsync: str) -> None:
    path = tmp_path / "context.jsonl"
    result = run_child(CHILD, str(path), "6000", fsync, timeout=300)
    assert result["refused"] > 100  # the limit really bit
    assert result["memory"] == result["acked"]  # memory never ran ahead of disk
    restored = [m["content"] for m in MessageContextManager.open(path).messages]
    assert restored == result["acked"]  # every acknowledged add is on disk, nothing else
    assert path.stat().st_size <= 6000


CHECKPOINTS = textwrap.dedent(
    """
    import json, resource, signal, sys
    from context_manager.errors import StoreError
    from context_manager.manager import MessageContextManager

    path, limit = sys.argv[1], int(sys.argv[2])
    manager = MessageContextManager.open(path, max_tokens=10_000_000)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    made, refused, reasons = [], 0, set()
    for i in range(300):
        try:
            manager.add({"role": "user", "content": f"turn {i} " + "y" * 40})
            made.append(manager.checkpoint())
        except StoreError as exc:  # anything else escapes and fails the test
            refused += 1
            reasons.add(type(exc).__name__)
    print(json.dumps({"made": made, "refused": refused, "reasons": sorted(reasons)}))
    """
)


def test_checkpoints_on_a_full_disk_raise_store_error(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    result = run_child(CHECKPOINTS, str(path), "4000", timeout=300)
    assert result["refused"] > 100
    assert result["reasons"] == ["StoreError"]
    assert result["made"] == list(range(len(result["made"])))  # ids stay consecutive
    reopened = MessageContextManager.open(path)
    assert reopened.store.log.next_checkpoint_id == len(result["made"])


COPY = textwrap.dedent(
    """
    import json, resource, signal, sys
    from context_manager.errors import StoreError
    from context_manager.store import copy_session

    source, destination, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        copy_session(source, destination, session="big")
        print(json.dumps({"error": None}))
    except StoreError as exc:
        print(json.dumps({"error": type(exc).__name__}))
    """
)


def test_a_copy_that_runs_out_of_space_writes_nothing(tmp_path: Path) -> None:
    """A copy is one atomic write: cut short by a full disk it leaves no partial session (one
    would open as a valid, shorter history), and run again with room it copies everything."""
    source = f"sqlite:///{tmp_path / 'source.db'}"
    manager = MessageContextManager.open(source, session="big", max_tokens=10**9)
    manager.extend({"role": "user", "content": f"message {i} " + "z" * 600} for i in range(1500))
    manager.store.close()
    destination = tmp_path / "sessions"
    result = run_child(COPY, source, str(destination), str(600_000), timeout=300)
    assert result["error"] is not None  # the limit really bit
    after = MessageContextManager.open(destination, session="big", max_tokens=10**9)
    assert after.messages == []
    after.store.close()
    from context_manager.store import copy_session

    assert copy_session(source, destination, session="big") == 1500
    again = MessageContextManager.open(destination, session="big", max_tokens=10**9)
    assert len(again.messages) == 1500
    again.store.close()
