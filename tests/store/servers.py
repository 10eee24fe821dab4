"""Real servers for the store tests and benchmarks: a ``redis-server`` and a PostgreSQL cluster
(initdb + pg_ctl), each on a free loopback port in a temporary directory, started once per
test session.

PostgreSQL refuses to run as root, so when the tests run as root the cluster is owned by and run
as the ``postgres`` user (``runuser``). Where a binary is absent the dependent tests skip with a
loud reason naming the package to install (``.ci/run`` installs both, so CI always runs them).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on port {port} did not come up in {timeout}s")


class Unavailable(Exception):
    """The server's binaries are not installed (the message says what to install)."""


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway ``redis-server`` on a free loopback port; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise Unavailable("redis-server not installed (apt-get install redis-server)")
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="cm-redis-") as directory:
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                directory,
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_port(port)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            process.wait(10)


def _pg_bindir() -> Path | None:
    config = shutil.which("pg_config")
    if config:
        out = subprocess.run([config, "--bindir"], capture_output=True, text=True, check=False)
        candidate = Path(out.stdout.strip())
        if (candidate / "initdb").exists():
            return candidate
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(found, "initdb").exists():
            return Path(found)
    return None


@contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster (initdb + pg_ctl) on a free loopback port; yields its URL."""
    bindir = _pg_bindir()
    if bindir is None:
        raise Unavailable("initdb/pg_ctl not found (apt-get install postgresql)")
    as_user: list[str] = []
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            raise Unavailable("running as root without runuser to drop to the postgres user")
        as_user = [runuser, "-u", "postgres", "--"]
    port = _free_port()
    directory = tempfile.mkdtemp(prefix="cm-pg-")
    data, log = Path(directory, "data"), Path(directory, "server.log")
    if as_user:
        shutil.chown(directory, "postgres", "postgres")
    subprocess.run(
        [
            *as_user,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [
            *as_user,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(log),
            "-o",
            options,
            "-w",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        _wait_port(port)
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(directory, ignore_errors=True)
