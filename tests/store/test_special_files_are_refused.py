"""What is not a regular file at a store's paths is a typed error naming it, never a hang.

A FIFO at ``<root>/<session>/context.jsonl`` made ``open()`` wait forever for a writer (the
read opened it blocking); one at the lock's path was locked and used. Each case runs in a child
process with a timeout, so a regression fails the test instead of hanging the run.

A path component longer than the file system allows raised the bare ``OSError`` of
``Path.exists`` (File name too long); it is the same ``StoreError`` as any path the store
cannot create.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreError
from context_manager.store import connect, open_store

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")

#: Opens the session ``s`` of the directory argv[1], adds a message, prints what happened.
CHILD = """
import json, sys
from context_manager import MessageContextManager
from context_manager.errors import ContextManagerError
try:
    manager = MessageContextManager.open(sys.argv[1], session="s", max_tokens=100)
    manager.add({"role": "user", "content": "hi"})
    print(json.dumps({"ok": len(manager.messages)}))
except ContextManagerError as exc:
    print(json.dumps({"error": type(exc).__name__, "text": str(exc)}))
"""


def _open_in_child(root: Path) -> dict[str, object]:
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(root)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).resolve().parents[2],
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"opening a session with a special file under {root} hangs")
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return "a FIFO"


def _directory(path: Path) -> str:
    path.mkdir()
    return "a directory"


@pytest.mark.parametrize("name", ["context.jsonl", "context.jsonl.lock"])
@pytest.mark.parametrize("make", [_fifo, _directory], ids=["fifo", "directory"])
def test_a_special_file_at_a_session_path_is_a_store_error(
    name: str, make: Callable[[Path], str], tmp_path: Path
) -> None:
    (tmp_path / "s").mkdir()
    planted = tmp_path / "s" / name
    kind = make(planted)
    found = _open_in_child(tmp_path)
    assert found.get("error") == "StoreError", found
    text = str(found["text"])
    assert str(planted) in text and kind in text and "not a regular file" in text


def test_listing_skips_the_session_that_opening_refuses(tmp_path: Path) -> None:
    for session in ("good", "bad"):
        (tmp_path / session).mkdir()
    os.mkfifo(tmp_path / "bad" / "context.jsonl")
    manager = MessageContextManager.open(tmp_path, session="good", max_tokens=100)
    manager.add({"role": "user", "content": "hi"})
    manager.store.close()
    store = open_store(tmp_path, session="good")
    try:
        assert store.sessions() == ["good"]
    finally:
        store.close()


LONG = "y" * 300  # over NAME_MAX (255) on every common file system

OPENS: dict[str, Callable[[Path], object]] = {
    "directory": lambda root: MessageContextManager.open(root / LONG, session="s", max_tokens=9),
    "below it": lambda root: MessageContextManager.open(root / LONG / "x", max_tokens=9),
    "file": lambda root: MessageContextManager.open(root / f"{LONG}.jsonl", max_tokens=9),
    "connect": lambda root: connect(str(root / LONG)),
    "connect, then a session": lambda root: connect(str(root / LONG) + "/").session("s"),
}


@pytest.mark.parametrize("how", list(OPENS))
def test_a_name_too_long_is_a_store_error(how: str, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="too long") as info:
        OPENS[how](tmp_path)
    assert LONG in str(info.value)  # names the path
    assert os.listdir(tmp_path) == []
