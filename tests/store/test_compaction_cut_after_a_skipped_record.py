"""A compaction written after a record the manager skipped keeps its cut on reopen and in a copy.

A session holding a message record the manager refuses (one the normalizer rejects, a tool
result without its call: the persistence guide lists both as skipped with a warning) and
compacted after it used to come back with the compacted messages in it again: the cut was
written as a history index (which leaves the skipped record out) and read as a count of the
log's message records (which includes it), on every backend. A copy to another backend dropped
the unreadable record and kept the cut, so the copy differed from its source.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.compaction import SimpleCompaction
from context_manager.store import SessionCache, connect, copy_session

from .backends import Backend, user

BAD_RECORDS = {
    "unreadable": {"role": "user", "content": {"not": "a message"}},
    "orphan_result": {"role": "tool", "tool_call_id": "never_called", "content": "result"},
    "leading_system": {"role": "system", "content": "be brief"},
}


def texts(manager: MessageContextManager) -> list[Any]:
    return [m["content"] for m in manager.get_context()]


@pytest.mark.parametrize("bad", list(BAD_RECORDS))
def test_a_reopened_or_copied_session_sends_what_the_live_one_sent(
    backend: Backend, bad: str, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="context_manager.store")  # the skip warnings
    store = backend.store("s")
    store.append([BAD_RECORDS[bad]])  # what another tool, or an older version, wrote
    store.close()
    manager = backend.manager("s")
    for i in range(5):
        manager.add(user(f"u{i}"))
        manager.add({"role": "assistant", "content": f"a{i}"})
    manager.compact(policy=SimpleCompaction(max_preserved_messages=2))
    manager.add(user("next"))
    live = texts(manager)
    assert live[-3:] == ["u4", "a4", "next"] and "a3" not in live  # what the compaction kept
    manager.store.close()

    assert texts(backend.manager("s")) == live
    copy = f"sqlite:///{tmp_path}/copy.db"
    copy_session(backend.store("s"), copy, session="s")
    reopened = MessageContextManager.open(copy, session="s", max_tokens=1_000_000)
    assert texts(reopened) == live
    reopened.store.close()


def test_a_copy_keeps_a_message_record_the_manager_refuses(tmp_path: Any) -> None:
    source = f"sqlite:///{tmp_path}/a.db"
    backend = Backend("sqlite", source)
    store = backend.store("s")
    store.append([BAD_RECORDS["unreadable"], user("hello")])
    store.close()
    assert copy_session(source, f"sqlite:///{tmp_path}/b.db", session="s") == 2


def test_a_session_served_from_a_session_cache_keeps_the_cut(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """Requests through a handle that keeps the manager between them (what a backend runs):
    the journal's count of the history follows every request, and a cold open agrees."""
    caplog.set_level(logging.ERROR, logger="context_manager.store")
    store = backend.store("s")
    store.append([BAD_RECORDS["unreadable"]])
    store.close()
    handle = connect(backend.target, cache=SessionCache(), **backend.options)
    for i in range(5):
        manager = MessageContextManager.open(handle, session="s", max_tokens=1_000_000)
        manager.add(user(f"u{i}"))
        manager.add({"role": "assistant", "content": f"a{i}"})
        manager.store.close()
    manager = MessageContextManager.open(handle, session="s", max_tokens=1_000_000)
    manager.compact(policy=SimpleCompaction(max_preserved_messages=2))
    live = texts(manager)
    manager.store.close()
    handle.close()
    assert live[-2:] == ["u4", "a4"]
    assert "a3" not in live
    assert texts(backend.manager("s")) == live
