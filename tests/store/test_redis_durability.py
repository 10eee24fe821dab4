"""What a Redis restart keeps, by its persistence settings, and the warning when it keeps nothing.

Each test runs its own ``redis-server`` in a temporary directory, kills it with SIGKILL and
starts it again on the same directory, as an operator's restart or a crash would.
"""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from context_manager import MessageContextManager

from .backends import contents

pytest.importorskip("redis")
BINARY = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(BINARY is None, reason="REDIS TESTS SKIPPED: no redis-server")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(directory: Path, port: int, *flags: str) -> Iterator[subprocess.Popen[bytes]]:
    assert BINARY is not None
    process = subprocess.Popen(
        [BINARY, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory), *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def test_with_appendfsync_always_a_killed_server_keeps_every_acknowledged_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = _free_port()
    url = f"redis://127.0.0.1:{port}/0"
    flags = ("--appendonly", "yes", "--appendfsync", "always", "--save", "")
    with server(tmp_path, port, *flags) as process:
        manager = MessageContextManager.open(url, session="s", max_tokens=100_000)
        for i in range(50):
            manager.add({"role": "user", "content": f"m{i}"})
        process.send_signal(signal.SIGKILL)
    with server(tmp_path, port, *flags):
        assert contents(url) == [f"m{i}" for i in range(50)]
    assert "appendonly off" not in caplog.text


def test_without_persistence_a_restart_empties_the_session_and_the_store_warned_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = _free_port()
    url = f"redis://127.0.0.1:{port}/0"
    flags = ("--appendonly", "no", "--save", "")
    caplog.set_level(logging.WARNING, logger="context_manager.store")
    with server(tmp_path, port, *flags) as process:
        for worker in range(3):  # per-request opens: the warning is about the server, once
            manager = MessageContextManager.open(url, session="s", max_tokens=100_000)
            manager.add({"role": "user", "content": f"w{worker}"})
            manager.store.close()
        process.send_signal(signal.SIGKILL)
    warnings = [r for r in caplog.records if "appendonly off" in r.getMessage()]
    assert len(warnings) == 1
    assert "restart loses every session write" in warnings[0].getMessage()
    with server(tmp_path, port, *flags):
        assert contents(url) == []  # what the guide's table says: everything is gone
