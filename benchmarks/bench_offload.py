"""Offload and recall latency per backend: memory, JSONL, SQLite, Redis, PostgreSQL.

    python -m benchmarks.bench_offload              # starts its own Redis and PostgreSQL
    python -m benchmarks.bench_offload --repeat 5   # quicker

Per backend (each area on its store's connection, ``store/offload.py``):

* **put**: storing one tool output of 64 KiB, 1 MiB and 4 MiB (a service log);
* **recall**: one page of the 4 MiB output within 2,000 tokens (the safe estimate), by
  ``lines`` (from line 40,000), by ``bytes`` (from the middle) and by ``pattern`` (a literal
  search through every line);
* **first request**: ``get_context`` of a store-backed manager whose newest tool output (4 MiB)
  does not fit, with the area attached: the cut, its stub and the put; **next request**: the
  same again (the stored handle is reused: no put, no I/O).

Medians of ``--repeat`` runs, in milliseconds. Redis and PostgreSQL are throwaway local servers
(``tests/store/servers.py``) on loopback; numbers are for this machine only: compare rows, not
absolutes. No target is enforced here (the sizes are dominated by moving megabytes).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.bench_stores import _targets
from context_manager import MessageContextManager
from context_manager.offload import MemoryOffload, attach_offload, recall
from context_manager.offload.area import BaseArea
from context_manager.store.offload import attach_store_offload, offload_area
from context_manager.store.targets import open_store

SIZES = {"64 KiB": 64 * 1024, "1 MiB": 1024 * 1024, "4 MiB": 4 * 1024 * 1024}


def log_of(size: int, seed: str) -> str:
    row = 0
    parts: list[str] = []
    total = 0
    while total < size:
        line = f"{seed} host{row % 50:02d} GET /v1/items/{row} 200 {row % 97}ms"
        parts.append(line)
        total += len(line) + 1
        row += 1
    parts[len(parts) // 2] = f"{seed} INCIDENT disk quota exceeded"
    return "\n".join(parts)


def median_ms(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure_area(area: BaseArea, repeat: int) -> dict[str, float]:
    row: dict[str, float] = {}
    for label, size in SIZES.items():
        texts = iter([log_of(size, uuid.uuid4().hex[:8]) for _ in range(repeat)])
        row[f"put {label}"] = median_ms(lambda texts=texts: area.put(next(texts)), repeat)
    big = log_of(SIZES["4 MiB"], "bench")
    handle = area.put(big)
    middle = len(big) // 2
    row["lines"] = median_ms(lambda: recall(area, handle, lines=[40_000, None]), repeat)
    row["bytes"] = median_ms(lambda: recall(area, handle, bytes=[middle, None]), repeat)
    row["pattern"] = median_ms(lambda: recall(area, handle, pattern="INCIDENT"), repeat)
    return row


def exchange(text: str, call_id: str) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "cat", "arguments": "{}"}}
    return [
        {"role": "user", "content": "read the log"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": text},
    ]


def measure_view(make: Callable[[], MessageContextManager], repeat: int) -> tuple[float, float]:
    first, later = [], []
    for i in range(repeat):
        manager = make()
        for message in exchange(log_of(SIZES["4 MiB"], f"v{i}"), f"c{i}"):
            manager.add(message)
        start = time.perf_counter()
        manager.get_context()
        first.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        manager.get_context()
        later.append((time.perf_counter() - start) * 1000)
    return statistics.median(first), statistics.median(later)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=9, help="runs per cell (median)")
    args = parser.parse_args(argv)
    columns = [*(f"put {k}" for k in SIZES), "lines", "bytes", "pattern"]
    print(
        "| backend | "
        + " | ".join(columns)
        + " | first request (cut + put) | next request |\n|---|"
        + "---:|" * (len(columns) + 2)
    )
    with tempfile.TemporaryDirectory() as directory, _targets(directory) as targets:
        rows: list[tuple[str, dict[str, float], tuple[float, float]]] = []

        def memory_manager() -> MessageContextManager:
            manager = MessageContextManager(16_000, counter="chars")
            attach_offload(manager, MemoryOffload("bench", max_bytes=1 << 30))
            return manager

        memory = MemoryOffload("bench", max_bytes=1 << 30)
        rows.append(("memory", measure_area(memory, args.repeat), measure_view(memory_manager, 3)))
        for name, target, options in targets:
            store = open_store(target, session="bench", **options)
            area_row = measure_area(offload_area(store), args.repeat)
            store.close()

            def store_manager(target: str = target, options: dict[str, Any] = options) -> Any:
                manager = MessageContextManager.open(
                    target,
                    session="v" + uuid.uuid4().hex[:8],
                    store_options=dict(options),
                    max_tokens=16_000,
                    counter="chars",
                )
                attach_store_offload(manager)
                return manager

            rows.append((name, area_row, measure_view(store_manager, 3)))
        for name, row, (first, later) in rows:
            cells = " | ".join(f"{row[c]:.1f}" for c in columns)
            print(f"| {name} | {cells} | {first:.0f} | {later:.0f} |", flush=True)


if __name__ == "__main__":
    main()
