"""Redis with ``ttl=``: the offloaded results live as long as the session whose history names
their handles. A session kept alive by writes (appends, or the rotation of a revert) keeps its
offloads too, though nothing offloads again; a session without offloads gets no offload keys."""

from __future__ import annotations

import time
import uuid
from typing import Any

from context_manager import MessageContextManager
from context_manager.offload import offload_results, recall, stub_handle
from context_manager.store.offload import attach_store_offload, offload_area
from context_manager.store.targets import open_store

TTL = 1  # seconds; the session is written every STEP, so it never expires
STEP = 0.3


def call(call_id: str) -> dict[str, Any]:
    function = {"name": "dump", "arguments": "{}"}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def test_appends_keep_the_offloaded_results_alive(redis_url: str) -> None:
    options = {"ttl": TTL, "prefix": f"t{uuid.uuid4().hex[:8]}:"}
    manager = MessageContextManager.open(
        redis_url, session="s1", max_tokens=8_000, store_options=options
    )
    area = attach_store_offload(manager)
    manager.add({"role": "user", "content": "dump the table"})
    manager.add(call("c1"))
    tool = {"role": "tool", "tool_call_id": "c1", "content": "first row\n" + "row\n" * 20_000}
    manager.add(offload_results(tool, area, max_chars=2_000))
    handle = stub_handle(manager.messages[-1]["content"])
    for i in range(8):  # 2.4 s of an active chat, each write within the ttl of the last
        time.sleep(STEP)
        manager.add({"role": "user" if i % 2 == 0 else "assistant", "content": f"msg {i}"})
    manager.store.close()

    again = MessageContextManager.open(
        redis_url, session="s1", max_tokens=8_000, store_options=options
    )
    assert stub_handle(again.messages[2]["content"]) == handle
    assert recall(attach_store_offload(again), handle, lines=[1, 1]).text == "first row"
    again.store.close()


def test_reverts_keep_the_offloaded_results_alive(redis_url: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    store = open_store(redis_url, session="s1", ttl=TTL, prefix=prefix)
    handle = offload_area(store).put("kept\n" * 1_000, key="k")
    store.append([{"role": "tool", "tool_call_id": "c1", "content": handle}])
    mark = store.checkpoint()
    time.sleep(0.6 * TTL)
    store.revert_to(mark)  # a rotation, the only write since the put: it renews the keys
    time.sleep(0.6 * TTL)  # past the ttl of the put, within the ttl of the revert
    store.close()

    again = open_store(redis_url, session="s1", ttl=TTL, prefix=prefix)
    assert handle.encode() in again.load().lines[0][1]
    assert offload_area(again).get(handle, lines=(1, 1)).text == "kept"
    again.close()


def test_a_session_without_offloads_gets_no_offload_keys(redis_url: str) -> None:
    import redis

    prefix = f"t{uuid.uuid4().hex[:8]}:"
    store = open_store(redis_url, session="s1", ttl=60, prefix=prefix)
    store.append([{"role": "user", "content": "hi"}])
    store.revert_to(store.checkpoint())
    store.close()
    client = redis.Redis.from_url(redis_url)
    assert client.exists(*(f"{prefix}{{s1}}:off:{s}" for s in ("data", "live", "keys"))) == 0
    assert 0 < client.ttl(f"{prefix}{{s1}}:gen") <= 60
    client.close()
