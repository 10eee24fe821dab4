"""Crash safety and concurrency of the log, with real processes.

Writers are forked children (fork is fast, so hundreds of kills stay well under a few seconds);
a child acknowledges a record on a pipe only after ``append_message`` returned, and is killed
with SIGKILL at a random moment. Records are up to 64 KB so a kill can land inside a ``write``.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from context_manager.manager import MessageContextManager
from context_manager.store import JsonlLog

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

KILL_ITERATIONS = 200
KILLS_PER_FILE = 25  # each file survives this many kills in a row


def _child(body: object, *args: object) -> tuple[int, int]:
    """Fork; the child runs ``body(ack_fd, *args)`` and never returns. Returns (pid, read fd)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(read_fd)
        try:
            body(write_fd, *args)  # type: ignore[operator]
        finally:
            os._exit(0)
    os.close(write_fd)
    return pid, read_fd


def _read_all(fd: int) -> str:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode()


def _writer(ack_fd: int, path: str, iteration: int, seed: int, tear: bool) -> None:
    rng = random.Random(seed)
    log = JsonlLog(path, fsync=rng.choice(["never", "checkpoint", "always"]))
    tear_after = rng.randrange(1, 6)
    for i in range(100_000):
        size = rng.choice([10, 100, 1000, 8000, 64_000])
        log.append_message({"role": "user", "content": f"{iteration}:{i}:" + "x" * size})
        os.write(ack_fd, f"{iteration}:{i}\n".encode())
        if tear and i + 1 == tear_after:
            # Simulate a writer dying inside write(): half a line and no newline.
            with open(path, "ab") as raw:
                raw.write(b'{"role":"user","content":"' + b"t" * rng.randrange(1, 5000))
            os.write(ack_fd, b"TORN\n")
            time.sleep(60)


@pytest.mark.slow  # a kill loop
def test_sigkill_mid_append_loses_no_acknowledged_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(20261121)
    acked_total = natural_torn = injected_torn = 0
    for iteration in range(KILL_ITERATIONS):
        if iteration % KILLS_PER_FILE == 0:  # a fresh log now and then keeps restores cheap
            path = tmp_path / f"log{iteration}" / "context.jsonl"
            durable: list[str] = []  # keys restored after the previous kill: must stay
        tear = iteration % 4 == 3
        pid, ack_fd = _child(_writer, str(path), iteration, rng.randrange(2**32), tear)
        early = b""
        if tear:  # kill only once the half line is on disk
            while not early.endswith(b"TORN\n"):
                early += os.read(ack_fd, 4096)
        time.sleep(rng.uniform(0, 0.008))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        acks = (early.decode() + _read_all(ack_fd)).split()
        torn = "TORN" in acks
        acked = [a for a in acks if a != "TORN"]
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="context_manager.store"):
            restored = JsonlLog(path, strict=True).restore()  # strict: no corrupt middle line
        keys = [":".join(m.message["content"].split(":")[:2]) for m in restored.messages]
        assert keys[: len(durable)] == durable, f"iteration {iteration}: older records changed"
        new = keys[len(durable) :]
        # Everything acknowledged is there, in order; at most one more record (written, then
        # killed before its ack) may follow.
        assert new[: len(acked)] == acked, f"iteration {iteration}: acknowledged record lost"
        assert len(new) - len(acked) in (0, 1)
        if torn:
            injected_torn += 1
            assert restored.torn_tail and "torn last line" in caplog.text
        elif restored.torn_tail:
            natural_torn += 1
            assert "torn last line" in caplog.text
        durable = keys
        acked_total += len(acked)
    assert injected_torn == KILL_ITERATIONS // 4
    assert acked_total > KILL_ITERATIONS  # the writers did get work done before being killed
    print(
        f"\n{KILL_ITERATIONS} kills, {acked_total} acknowledged records, 0 lost; "
        f"{injected_torn} injected and {natural_torn} natural torn tails ignored",
        file=sys.stderr,
    )


def _appender(ack_fd: int, path: str, name: str, count: int) -> None:
    rng = random.Random(name)
    log = JsonlLog(path, fsync="never")
    os.write(ack_fd, b"ready\n")
    for i in range(count):
        log.append_message(
            {"role": "user", "content": f"{name}:{i}:" + name * rng.choice([1, 500, 70_000])}
        )


@pytest.mark.slow
def test_two_processes_appending_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    count = 300
    children = [_child(_appender, str(path), name, count) for name in ("a", "b", "c")]
    for pid, fd in children:
        assert _read_all(fd) == "ready\n"
        os.waitpid(pid, 0)
    raw = path.read_text()
    assert raw.endswith("\n")
    records = [json.loads(line) for line in raw.splitlines()]  # every line parses
    assert len(records) == 3 * count
    for name in ("a", "b", "c"):
        own = [r["content"] for r in records if r["content"].startswith(name + ":")]
        assert [int(c.split(":")[1]) for c in own] == list(range(count))
        assert all(set(c.split(":", 2)[2]) == {name} for c in own)


def _lock_holder(ack_fd: int, path: str) -> None:
    """Another writer following the documented protocol (docs/guide/persistence.md): an
    exclusive ``flock`` on the sidecar ``<log>.lock`` around its own append."""
    import fcntl

    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    os.write(ack_fd, b"locked\n")
    time.sleep(0.3)
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"role": "user", "content": "holder"}) + "\n")
    fcntl.flock(lock, fcntl.LOCK_UN)
    os.write(ack_fd, b"released\n")


def test_an_append_waits_for_another_process_holding_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    pid, fd = _child(_lock_holder, str(path))
    assert os.read(fd, 7) == b"locked\n"
    started = time.monotonic()
    JsonlLog(path).append_message({"role": "user", "content": "waiter"})
    waited = time.monotonic() - started
    os.waitpid(pid, 0)
    _read_all(fd)
    assert waited > 0.15
    assert [json.loads(x)["content"] for x in path.read_text().splitlines()] == ["holder", "waiter"]


def test_threads_adding_into_one_manager_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    manager = MessageContextManager.open(path, max_tokens=10_000_000)
    threads, per_thread = 8, 250

    def work(t: int) -> None:
        for i in range(per_thread):
            manager.add({"role": "user", "content": f"{t}:{i}"})

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    held = [m["content"] for m in manager.messages]
    logged = [json.loads(x)["content"] for x in path.read_text().splitlines()]
    assert len(held) == threads * per_thread
    assert logged == held  # the file order is the manager's order
    for t in range(threads):
        own = [int(c.split(":")[1]) for c in held if c.startswith(f"{t}:")]
        assert own == list(range(per_thread))
    reopened = MessageContextManager.open(path, max_tokens=10_000_000)
    assert reopened.messages == manager.messages


def test_adds_racing_a_revert_are_never_lost_from_the_log(tmp_path: Path) -> None:
    """Without the manager lock around revert, 15 of 20 such runs ended with file != manager."""
    path = tmp_path / "context.jsonl"
    manager = MessageContextManager.open(path, max_tokens=10_000_000)
    manager.add({"role": "user", "content": "start"})
    done = threading.Event()

    def writer() -> None:
        for i in range(3000):
            manager.add({"role": "user", "content": f"w{i}"})
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reverts = 0
    while not done.is_set():
        checkpoint = manager.checkpoint()
        time.sleep(0.0005)
        manager.revert_to(checkpoint)
        reverts += 1
    thread.join()
    assert reverts > 0
    # Whatever survived the reverts, the file and the manager agree exactly.
    assert MessageContextManager.open(path, max_tokens=10_000_000).messages == manager.messages
