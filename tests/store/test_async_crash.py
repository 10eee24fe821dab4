"""An async writer killed with SIGKILL and restarted, again and again: nothing acknowledged is
lost, nothing is stored twice or out of order, and a batch is stored whole or not at all.

Each writer is a forked process running an event loop: it opens the session with
``MessageContextManager.aopen``, numbers its messages from what the session already holds, and
writes batches of one to four messages (``async with manager.store.batch():``), acknowledging
a batch on a pipe only after the block returned. It is killed at a random moment (often with
a write in flight) and a new writer carries on. At the end the session must hold exactly
0, 1, 2, ... with every acknowledged number, and each batch's messages together.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from typing import Any

import pytest

from context_manager import MessageContextManager

from .aio import stored
from .backends import Backend, user

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

KILLS = 16


def _writer(ack_fd: int, backend: Backend, seed: int) -> None:  # pragma: no cover - child
    async def write() -> None:
        rng = random.Random(seed)
        manager = await MessageContextManager.aopen(
            backend.target,
            session="crash",
            store_options=dict(backend.options),
            max_tokens=1_000_000_000,
        )
        n = len(manager.messages)
        os.write(ack_fd, f"ready {n}\n".encode())
        while True:
            size = rng.randint(1, 4)
            pad = "x" * rng.choice([10, 1000, 20_000])
            async with manager.store.batch():
                manager.extend(user(f"{n + i}/{size}:{pad}") for i in range(size))
            n += size
            os.write(ack_fd, f"{n}\n".encode())

    asyncio.run(write())


def _fork(backend: Backend, seed: int) -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(read_fd)
        try:
            _writer(write_fd, backend, seed)
        finally:
            os._exit(0)
    os.close(write_fd)
    return pid, read_fd


def _read_until_ready(fd: int) -> tuple[int, bytes]:
    data = b""
    while b"\n" not in data:
        chunk = os.read(fd, 4096)
        if not chunk:
            raise AssertionError(f"the writer died before it was ready: {data!r}")
        data += chunk
    line, rest = data.split(b"\n", 1)
    return int(line.split()[1]), rest


def _drain(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


@pytest.mark.slow  # a kill loop (pytest -m slow)
def test_an_async_writer_killed_and_restarted_loses_and_repeats_nothing(
    backend: Backend,
) -> None:
    rng = random.Random(20260507)
    acknowledged = 0
    in_flight_kills = 0
    for kill in range(KILLS):
        pid, fd = _fork(backend, rng.randrange(2**32))
        start, early = _read_until_ready(fd)
        assert start >= acknowledged, f"kill {kill}: the restart found less than was acked"
        time.sleep(rng.uniform(0.005, 0.06))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        acks = [int(a) for a in (early + _drain(fd)).split()]
        if acks:
            acknowledged = acks[-1]
        records = [r for r in stored(backend, "crash") if not r["role"].startswith("_")]
        numbers = [int(r["content"].split("/")[0]) for r in records]
        assert numbers == list(range(len(numbers))), f"kill {kill}: lost, repeated or reordered"
        assert len(numbers) >= acknowledged, f"kill {kill}: an acknowledged batch is missing"
        in_flight_kills += len(numbers) > acknowledged  # it died after storing, before acking
        # a batch is one os.write; a kill inside a write of several pages can leave its first
        # lines whole (JSONL): a reader must see all of a batch or none of it
        assert _torn_batches(records) == [], f"kill {kill}: a batch is stored in part"
    assert acknowledged > KILLS  # the writers got work done between the kills
    print(
        f"{backend.name}: {KILLS} kills, {acknowledged} acknowledged, {in_flight_kills} "
        "killed between a stored batch and its acknowledgement"
    )


def _torn_batches(records: list[dict[str, Any]]) -> list[int]:
    """The first numbers of batches not all there, together (``n/size`` marks a batch's size)."""
    out, i = [], 0
    while i < len(records):
        first, size = records[i]["content"].split(":", 1)[0].split("/")
        batch = [r["content"].split(":", 1)[0] for r in records[i : i + int(size)]]
        expected = [f"{int(first) + k}/{size}" for k in range(int(size))]
        whole = 0
        while whole < len(batch) and batch[whole] == expected[whole]:
            whole += 1
        if whole < int(size):
            out.append(int(first))
        i += whole or 1
    return out
