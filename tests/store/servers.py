"""Real servers for the store tests and benchmarks: a ``redis-server``, a PostgreSQL cluster
(initdb + pg_ctl) and a PgBouncer in front of it, each on a free loopback port in a temporary
directory, started once per test session.

PostgreSQL and PgBouncer refuse to run as root, so when the tests run as root they are owned by
and run as the ``postgres`` user (``runuser``). Where a binary is absent the dependent tests skip
with a loud reason naming the package to install (``.ci/run`` installs all three, so CI always
runs them).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


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


def _as_postgres_user() -> list[str]:
    """The command prefix that drops root to the ``postgres`` user (nothing when not root)."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    if runuser is None:
        raise Unavailable("running as root without runuser to drop to the postgres user")
    return [runuser, "-u", "postgres", "--"]


@contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster (initdb + pg_ctl) on a free loopback port; yields its URL."""
    bindir = _pg_bindir()
    if bindir is None:
        raise Unavailable("initdb/pg_ctl not found (apt-get install postgresql)")
    as_user = _as_postgres_user()
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


@contextmanager
def pgbouncer_server(postgres_url: str, *, pool_size: int = 2) -> Iterator[str]:
    """A PgBouncer in **transaction** pooling mode in front of ``postgres_url``; yields its URL.

    Transaction mode is what managed poolers and most Kubernetes setups run: each transaction
    may get a different server connection, so anything a client leaves on its server connection
    (a prepared statement, a ``SET``) is seen by the next client. A small ``pool_size`` makes
    clients share server connections often, so such leaks show up within a few requests.
    """
    binary = shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(p, os.X_OK)), None
    )
    if binary is None:
        raise Unavailable("pgbouncer not installed (apt-get install pgbouncer)")
    target = urlsplit(postgres_url)
    user = target.username or "postgres"
    as_user = _as_postgres_user()
    # PgBouncer 1.21+ can track protocol-level prepared statements (max_prepared_statements);
    # 0 turns that off, as in the many deployments that run an older pooler or leave it off.
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    found = re.search(r"(\d+)\.(\d+)", version.stdout)
    tracks = found is not None and (int(found[1]), int(found[2])) >= (1, 21)
    port = _free_port()
    directory = tempfile.mkdtemp(prefix="cm-pgbouncer-")
    if as_user:
        shutil.chown(directory, "postgres", "postgres")
    log = Path(directory, "pgbouncer.log")
    Path(directory, "userlist.txt").write_text(f'"{user}" ""\n')
    Path(directory, "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={target.hostname} port={target.port}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "auth_type = trust\n"
        f"auth_file = {directory}/userlist.txt\n"
        "pool_mode = transaction\n"
        f"default_pool_size = {pool_size}\n"
        "max_client_conn = 1000\n"
        "log_connections = 0\n"
        "log_disconnections = 0\n"
        + ("max_prepared_statements = 0\n" if tracks else "")
        + f"logfile = {log}\n"
        f"pidfile = {directory}/pgbouncer.pid\n"
    )
    if as_user:
        for name in ("userlist.txt", "pgbouncer.ini"):
            shutil.chown(Path(directory, name), "postgres", "postgres")
    # -q: log to the file only (a pipe nobody reads would fill up and stall the pooler).
    process = subprocess.Popen(
        [*as_user, binary, "-q", str(Path(directory, "pgbouncer.ini"))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        try:
            _wait_port(port, timeout=15)
        except RuntimeError:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
            raise RuntimeError(f"pgbouncer did not start: {tail}") from None
        yield urlunsplit(target._replace(netloc=f"{user}@127.0.0.1:{port}"))
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        shutil.rmtree(directory, ignore_errors=True)


def _cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is valid and free too."""
    for _ in range(200):
        port = _free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for a Redis cluster node")


class RedisCluster:
    """Three ``redis-server --cluster-enabled yes`` primaries joined by ``redis-cli --cluster
    create``; each node can be killed and started again on its own directory and port."""

    def __init__(self, directory: Path, binary: str, cli: str) -> None:
        self.directory = directory
        self.binary = binary
        self.cli = cli
        self.ports: list[int] = []
        while len(self.ports) < 3:
            port = _cluster_port()
            if port not in self.ports:
                self.ports.append(port)
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self, port: int) -> None:
        node_dir = self.directory / str(port)
        node_dir.mkdir(exist_ok=True)
        self.processes[port] = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(node_dir),
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_port(port)

    def kill(self, port: int) -> None:
        process = self.processes.pop(port)
        process.kill()
        process.wait(10)

    def wait_ok(self, timeout: float = 90.0) -> None:
        """Until every node reports ``cluster_state:ok`` (all slots covered and agreed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = [
                subprocess.run(
                    [self.cli, "-p", str(port), "cluster", "info"],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout
                for port in self.ports
            ]
            if all("cluster_state:ok" in state for state in states):
                return
            time.sleep(0.1)
        raise RuntimeError("the Redis cluster did not reach cluster_state:ok")

    def close(self) -> None:
        for port in list(self.processes):
            self.kill(port)


@contextmanager
def redis_cluster() -> Iterator[RedisCluster]:
    """A real three-node Redis Cluster on loopback (``redis-cli --cluster create``)."""
    binary, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if binary is None or cli is None:
        raise Unavailable("redis-server / redis-cli not installed (apt-get install redis-server)")
    with tempfile.TemporaryDirectory(prefix="cm-redis-cluster-") as directory:
        cluster = RedisCluster(Path(directory), binary, cli)
        try:
            for port in cluster.ports:
                cluster.start(port)
            created = subprocess.run(
                [
                    cli,
                    "--cluster",
                    "create",
                    *(f"127.0.0.1:{port}" for port in cluster.ports),
                    "--cluster-replicas",
                    "0",
                    "--cluster-yes",
                ],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if created.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout[-500:]}")
            cluster.wait_ok()
            yield cluster
        finally:
            cluster.close()
