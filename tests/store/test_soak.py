"""Soak: workers racing on a few shared sessions while the parent kill -9s one every 0.1-0.3 s.

Each worker loops over per-request sessions (open, ``retrying`` one add, close), reporting every
acknowledged add to the parent through a pipe before doing anything else (a write of less than
``PIPE_BUF`` bytes to a pipe is atomic and outlives the writer, so an acknowledged add is one the
parent heard about). The parent kills a random worker with SIGKILL and starts a replacement
under a new worker id, for a fixed time per backend. Then every session is opened fresh: every
acknowledged add is there exactly once, each worker's adds are in its order, and the only
records that were not acknowledged are the in-flight add of a killed worker (at most once).
"""

from __future__ import annotations

import os
import selectors
import signal
import time
from collections import Counter
from multiprocessing.process import BaseProcess
from random import Random

import pytest

from context_manager import MessageContextManager
from context_manager.store import retrying

from .backends import FORK, Backend, user

WORKERS = 4  # alive at any time
SESSIONS = 3  # fewer sessions than workers: they conflict
DURATION = 12.0  # seconds of kill loop per backend
KILL_EVERY = (0.1, 0.3)  # seconds between two kill -9s


def session_of(worker: int, i: int) -> str:
    return f"soak{(worker + i) % SESSIONS}"


def text_of(worker: int, i: int) -> str:
    """Unique per (worker, i), of varying length (torn tails of different sizes)."""
    return f"w{worker}-{i} " + "x" * ((worker * 31 + i * 7) % 64)


def key_of(text: str) -> tuple[int, int]:
    worker, i = text.split(" ", 1)[0][1:].split("-")
    return int(worker), int(i)


class _CountedAdd:
    """The change given to ``retrying``: one add, counting how often ``retrying`` ran it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls = 0

    def __call__(self, manager: MessageContextManager) -> None:
        self.calls += 1
        manager.add(user(self.text))


def _report(pipe: int, line: str) -> None:
    data = line.replace("\n", " ").encode("ascii", "backslashreplace")[:3000] + b"\n"
    os.write(pipe, data)  # fewer than PIPE_BUF bytes: one atomic write


def _soak_worker(backend: Backend, worker: int, deadline: float, pipe: int, unused: int) -> None:
    os.close(unused)  # the pipe's read end
    i = 0
    try:
        while time.monotonic() < deadline:
            change = _CountedAdd(text_of(worker, i))
            manager = backend.manager(session_of(worker, i))  # a per-request open
            try:
                retrying(manager, change, attempts=100)
                _report(pipe, f"ack {worker} {i} {change.calls}")  # before anything else
            finally:
                manager.store.close()
            i += 1
    except BaseException as exc:
        _report(pipe, f"err {worker} {i} {type(exc).__name__}: {exc}")
        os._exit(1)
    os._exit(0)


def _stored(backend: Backend, session: str) -> list[str]:
    """The session's messages, read by a fresh open."""
    manager = backend.manager(session)
    try:
        return [m["content"] for m in manager.messages]
    finally:
        manager.store.close()


@pytest.mark.slow
def test_soak_kill_9_workers_on_shared_sessions_loses_and_duplicates_nothing(
    backend: Backend,
) -> None:
    rng = Random()
    for s in range(SESSIONS):  # tables / directories exist before the race
        backend.manager(f"soak{s}").store.close()
    read_end, write_end = os.pipe()
    live: dict[int, BaseProcess] = {}
    killed: list[int] = []
    started = 0
    deadline = time.monotonic() + DURATION
    received = bytearray()

    def start_worker() -> None:
        nonlocal started
        process = FORK.Process(
            target=_soak_worker, args=(backend, started, deadline, write_end, read_end)
        )
        process.start()
        live[started] = process
        started += 1

    for _ in range(WORKERS):
        start_worker()
    next_kill = time.monotonic() + rng.uniform(*KILL_EVERY)
    waiting = selectors.DefaultSelector()  # not select(): descriptors pass 1024 in a long run
    waiting.register(read_end, selectors.EVENT_READ)
    while (now := time.monotonic()) < deadline:
        if waiting.select(max(0.0, min(next_kill, deadline) - now)):
            received += os.read(read_end, 1 << 16)
        if next_kill <= time.monotonic() < deadline:
            victim = rng.choice(sorted(live))
            process = live.pop(victim)
            assert process.pid is not None
            os.kill(process.pid, signal.SIGKILL)
            process.join(10)
            assert process.exitcode == -signal.SIGKILL, f"worker {victim}: {process.exitcode}"
            killed.append(victim)
            start_worker()
            next_kill = time.monotonic() + rng.uniform(*KILL_EVERY)
    for worker, process in live.items():  # the survivors finish their request and stop
        process.join(60)
        if process.exitcode is None:
            assert process.pid is not None
            os.kill(process.pid, signal.SIGKILL)
            process.join(10)
        assert process.exitcode == 0, f"worker {worker} ended with {process.exitcode}"
    waiting.close()
    os.close(write_end)
    while chunk := os.read(read_end, 1 << 16):  # every writer is gone: reads up to EOF
        received += chunk
    os.close(read_end)

    acked: dict[int, list[int]] = {w: [] for w in range(started)}
    errors: list[str] = []
    conflicts = 0
    for line in received.decode().splitlines():
        kind, who, index, rest = [*line.split(" ", 3), ""][:4]
        if kind == "ack":
            acked[int(who)].append(int(index))
            conflicts += int(rest) - 1
        else:
            errors.append(line)
    in_flight = {(w, len(acked[w])) for w in killed}  # a killed worker's last add, unacked
    expected = {(w, i) for w, mine in acked.items() for i in mine}

    stored = {f"soak{s}": _stored(backend, f"soak{s}") for s in range(SESSIONS)}
    counts = Counter(key_of(text) for texts in stored.values() for text in texts)
    duplicates = sum(n - 1 for n in counts.values())
    lost = sorted(expected - set(counts))
    unexpected = sorted(set(counts) - expected - in_flight)
    print(
        f"{backend.name}: {len(expected)} acknowledged appends, {len(killed)} kill -9, "
        f"{conflicts} conflicts retried, {duplicates} duplicates, {len(lost)} lost"
    )

    assert errors == [], "workers failed on their own (not killed)"
    for worker, mine in acked.items():  # the reports themselves: one per add, in order
        assert mine == list(range(len(mine))), f"worker {worker} reported {mine}"
    assert lost == [], f"acknowledged appends missing from the store: {lost[:20]}"
    assert duplicates == 0, f"stored more than once: {[k for k, n in counts.items() if n > 1]}"
    assert unexpected == [], f"stored but neither acknowledged nor in flight: {unexpected[:20]}"
    for session, texts in stored.items():
        for text in texts:  # intact, and in the session it was written to
            worker, i = key_of(text)
            assert text == text_of(worker, i)
            assert session_of(worker, i) == session, f"{text!r} found in {session}"
        for worker in acked:  # each worker's adds in its order
            mine = [i for w, i in map(key_of, texts) if w == worker]
            assert mine == sorted(mine), f"{session}: worker {worker} out of order: {mine}"
    # the soak measured something: kills landed, adds were acknowledged. (Conflicts are not
    # asserted: on PostgreSQL a per-request open costs far more than its read-to-append
    # window, and a 12 s run can see as few as 4.)
    assert len(killed) >= DURATION / KILL_EVERY[1] / 2
    assert len(expected) >= 50

    for s in range(SESSIONS):  # and every session still takes writes after the crashes
        manager = backend.manager(f"soak{s}")
        retrying(manager, lambda m: m.add(user("after the soak")), attempts=100)
        manager.store.close()
        assert _stored(backend, f"soak{s}")[-1] == "after the soak"
