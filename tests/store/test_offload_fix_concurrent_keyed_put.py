"""Two processes offloading the same content into one session at the same moment (two workers
handling the same retried tool result): the same content is the same key, so the same handle,
and both puts must succeed, on SQLite and on a real PostgreSQL (read committed, where neither
process sees the other's row before it commits)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from context_manager.offload import offload_results, recall, stub_handle
from context_manager.store.offload import offload_area
from context_manager.store.targets import open_store

from .backends import FORK

ROUNDS = 30


def racer(target: str, session: str, prefix: str, barrier: Any, out: Any) -> None:
    """Offload round ``r``'s result after both processes reach the barrier; report failures."""
    store = open_store(target, session=session, prefix=prefix)
    area = offload_area(store)
    handles, errors = [], []
    for r in range(ROUNDS):
        text = f"round {r}\n" + "payload line\n" * 2_000
        barrier.wait(timeout=60)
        try:
            stub = offload_results(
                {"role": "tool", "tool_call_id": f"c{r}", "content": text}, area, max_chars=2_000
            )["content"]
            handle = stub_handle(stub)
            assert recall(area, handle, lines=[1, 1]).text == f"round {r}"
            handles.append(handle)
        except Exception as exc:  # reported to the test, which names it
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
            handles.append(None)
    store.close()
    out.put((handles, errors))


def race(target: str) -> None:
    session, prefix = "race", f"r{uuid.uuid4().hex[:8]}_"
    warm = open_store(target, session=session, prefix=prefix)
    offload_area(warm).put("warm-up")  # the table exists: only the puts race
    warm.close()
    barrier, out = FORK.Barrier(2), FORK.Queue()
    workers = [
        FORK.Process(target=racer, args=(target, session, prefix, barrier, out)) for _ in range(2)
    ]
    for w in workers:
        w.start()
    (first, first_errors), (second, second_errors) = out.get(timeout=120), out.get(timeout=120)
    for w in workers:
        w.join(timeout=30)
    assert first_errors + second_errors == []
    assert first == second  # the same content is the same handle in both processes
    check = open_store(target, session=session, prefix=prefix)
    area = offload_area(check)
    assert [e.live for e in area.entries()].count(True) == ROUNDS + 1
    assert recall(area, first[-1], lines=[1, 1]).text == f"round {ROUNDS - 1}"
    check.close()


def test_postgres_concurrent_puts_of_one_key_both_succeed(postgres_url: str) -> None:
    race(postgres_url)


def test_sqlite_concurrent_puts_of_one_key_both_succeed(tmp_path: Path) -> None:
    race(f"sqlite:///{tmp_path}/race.db")


@pytest.mark.parametrize("revived", [False, True])
def test_a_second_put_of_a_key_keeps_its_handle_and_first_data(
    postgres_url: str, revived: bool
) -> None:
    """The upsert behaves as the plain second put: same handle, the first data, live again."""
    store = open_store(postgres_url, session="s1", prefix=f"k{uuid.uuid4().hex[:8]}_")
    area = offload_area(store)
    handle = area.put("first", key="k")
    if revived:
        area.retire()
    assert area.put("second", key="k") == handle
    assert area.get(handle).text == "first"
    store.close()
