"""Offloaded tool results on every backend (JSONL, SQLite, real Redis, real PostgreSQL):
stored beside the session, bound to it, kept across reopen, compaction and copy, retired by a
revert and deleted with the session."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from context_manager.compaction.pruning.fallback import emergency_pruning
from context_manager.errors import ConfigurationError, OffloadHandleError, OffloadNotFoundError
from context_manager.offload import attach_offload, offload_results, recall
from context_manager.store import copy_session
from context_manager.store.offload import attach_store_offload, offload_area
from context_manager.store.targets import open_store

from .backends import Backend, user

HANDLE = re.compile(r"cm-off:[0-9a-f]{8}-[0-9a-f]{32}")


def log_text(n: int, fact: str) -> str:
    """A tool output of ``n`` lines with one fact in the middle."""
    rows = [f"{i:07d} GET /api/items/{i} 200 {i % 97}ms" for i in range(n)]
    rows.insert(n // 2, fact)
    return "\n".join(rows)


def exchange(call_id: str, output: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "cat", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def handles(messages: list[Any]) -> list[str]:
    return list(dict.fromkeys(h for m in messages for h in HANDLE.findall(str(m.get("content")))))


def test_put_get_and_reopen(backend: Backend) -> None:
    text = log_text(20_000, "FACT: the deploy key rotates on Tuesdays")
    store = backend.store("s1")
    area = offload_area(store)
    handle = area.put(text)
    assert HANDLE.fullmatch(handle)
    page = area.get(handle, pattern="deploy key")
    assert page.text.endswith("FACT: the deploy key rotates on Tuesdays")
    assert page.total_bytes == len(text.encode())
    assert page.total_lines == text.count("\n") + 1
    store.close()

    reopened = backend.store("s1")  # a new connection: the data is in the backend
    again = offload_area(reopened)
    assert again.get(handle, lines=(2, 3)).text == "\n".join(text.split("\n")[1:3])
    tail = again.get(handle, byte_range=(len(text.encode()) - 20, None))
    assert tail.text == text[-20:]
    reopened.close()


def test_handles_are_bound_to_their_session(backend: Backend) -> None:
    first, second = backend.store("s1"), backend.store("s2")
    mine, theirs = offload_area(first), offload_area(second)
    handle = mine.put("secret output")
    with pytest.raises(OffloadHandleError, match="another session"):
        theirs.get(handle)
    forged = handle[:-8] + "00000000"
    with pytest.raises(OffloadNotFoundError):
        mine.get(forged)
    for bad in ("/etc/passwd", "../s2/context.jsonl", "cm-off:zz", handle + "0"):
        with pytest.raises(OffloadHandleError):
            mine.get(bad)
    # Each session deletes only its own results.
    other = theirs.put("theirs")
    assert mine.delete_entries() == 1
    with pytest.raises(OffloadNotFoundError):
        mine.get(handle)
    assert theirs.get(other).text == "theirs"
    first.close()
    second.close()


def test_manager_offloads_the_cut_and_keeps_it_across_reopen_and_revert(backend: Backend) -> None:
    manager = backend.manager("s1", max_tokens=4000, counter="chars")
    area = attach_store_offload(manager)
    manager.add(user("read log a"))
    for message in exchange("a", log_text(30_000, "FACT_A=alpha-17")):
        manager.add(message)
    (handle_a,) = handles(manager.get_context())
    checkpoint = manager.checkpoint()
    manager.add(user("read log b"))
    for message in exchange("b", log_text(30_000, "FACT_B=beta-29")):
        manager.add(message)
    (handle_b,) = handles(manager.get_context())
    assert "FACT_B=beta-29" in recall(area, handle_b, pattern="FACT_B").text

    reopened = backend.manager("s1", max_tokens=4000, counter="chars")
    area2 = attach_store_offload(reopened)
    assert "FACT_B=beta-29" in recall(area2, handle_b, pattern="FACT_B").text
    assert handles(reopened.get_context()) == [handle_b]  # the same stub: same handle

    reopened.revert_to(checkpoint)
    assert handles(reopened.get_context()) == [handle_a]  # cut again, under its first handle
    assert "FACT_A=alpha-17" in recall(area2, handle_a, pattern="FACT_A").text
    with pytest.raises(OffloadNotFoundError):  # the reverted result's handle stops resolving
        recall(area2, handle_b)


def test_cleared_results_are_recallable_and_survive_compaction(backend: Backend) -> None:
    pruning = emergency_pruning()  # clear every result but the newest
    manager = backend.manager("s1", max_tokens=6000, counter="chars", pruning=pruning)
    area = attach_store_offload(manager)
    facts = []
    for i in range(3):
        manager.add(user(f"read log {i}"))
        fact = f"FACT_{i}=value-{i * 11}"
        output = log_text(5_000, fact) if i < 2 else fact  # two huge outputs, then a small one
        facts.append(fact)
        for message in exchange(f"c{i}", output):
            manager.add(message)
    context = manager.get_context()
    found = handles(context)
    assert len(found) == 2  # both cleared results name their handle
    assert context[-1]["content"] == "FACT_2=value-22"

    def recovered(area: Any) -> list[str]:
        return [recall(area, h, pattern="FACT_").text.split(": ", 1)[1] for h in found]

    assert recovered(area) == facts[:2]
    entry = manager.compact()
    assert entry.first_kept_index > 0  # a real summary replaced the old turns
    assert recovered(area) == facts[:2]
    reopened = backend.manager("s1", max_tokens=6000, counter="chars", pruning=pruning)
    assert recovered(attach_store_offload(reopened)) == facts[:2]


def test_copy_session_carries_offloaded_results(backend: Backend, tmp_path: Path) -> None:
    source = open_store(str(tmp_path / "src"), session="c1")
    source.append([{"role": "user", "content": "hi"}])
    handle = offload_area(source).put(log_text(1000, "FACT=copied"))
    copy_session(source, backend.store("c1"))
    there = backend.store("c1")
    assert "FACT=copied" in offload_area(there).get(handle, pattern="FACT=").text
    # ... and back out to another backend
    copy_session(there, f"sqlite:///{tmp_path}/back.db", session="c1")
    back = open_store(f"sqlite:///{tmp_path}/back.db", session="c1")
    assert "FACT=copied" in offload_area(back).get(handle, pattern="FACT=").text
    back.close()


def test_redis_keys_expire_with_the_session_ttl(redis_url: str) -> None:
    import redis

    prefix = "t" + uuid.uuid4().hex[:10] + ":"
    store = open_store(redis_url, session="s1", ttl=120, prefix=prefix)
    offload_area(store).put("x" * 1000, key="k")
    client = redis.Redis.from_url(redis_url)
    for suffix in ("data", "live", "keys"):
        assert 0 < client.ttl(f"{prefix}{{s1}}:off:{suffix}") <= 120
    client.close()
    store.close()


def test_copying_from_a_database_without_offloads_writes_no_table(tmp_path: Path) -> None:
    import sqlite3

    source = open_store(f"sqlite:///{tmp_path}/src.db", session="c1")
    source.append([{"role": "user", "content": "hi"}])
    assert copy_session(source, str(tmp_path / "out"), session="c1") == 1
    tables = sqlite3.connect(tmp_path / "src.db").execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'"
    )
    assert "context_offload" not in {row[0] for row in tables}


def test_asyncio_managers_get_an_area(backend: Backend) -> None:
    """aopen: SQLite and JSONL use the sync store they wrap; Redis and PostgreSQL take the
    area of a sync store of the same session, as the error says."""
    from .aio import aopen, run

    async def scenario() -> str:
        manager = await aopen(backend, "s1", max_tokens=4000, counter="chars")
        if backend.name in ("redis", "postgres"):
            with pytest.raises(ConfigurationError, match="sync store"):
                attach_store_offload(manager)
            area = attach_offload(manager, offload_area(backend.store("s1")))
        else:
            area = attach_store_offload(manager)
        async with manager.store.batch():
            manager.add(user("read"))
            for message in exchange("a", log_text(20_000, "FACT=async")):
                manager.add(message)
        (handle,) = handles(manager.get_context())
        found = recall(area, handle, pattern="FACT=").text
        await manager.store.aclose()
        return found

    assert run(scenario()).endswith("FACT=async")


def test_door_stubs_in_the_history_follow_a_revert(backend: Backend) -> None:
    """Results offloaded before ``add`` (the history holds the stub): a revert keeps the
    handles its kept messages name and retires the reverted ones."""
    manager = backend.manager("s1", max_tokens=1_000_000, counter="chars")
    area = attach_store_offload(manager)
    manager.add(user("read a"))
    first, second = exchange("a", log_text(3_000, "FACT=kept")), exchange("b", "")
    manager.add(first[0])
    manager.add(offload_results(first[1], area, max_chars=1_000))
    checkpoint = manager.checkpoint()
    manager.add(user("read b"))
    manager.add(second[0])
    gone = dict(second[1], content=log_text(3_000, "FACT=gone"))
    manager.add(offload_results(gone, area, max_chars=1_000))
    kept_handle, gone_handle = handles(manager.get_context())
    manager.revert_to(checkpoint)
    assert "FACT=kept" in recall(area, kept_handle, pattern="FACT=").text
    with pytest.raises(OffloadNotFoundError):
        recall(area, gone_handle)
