"""Offload handles a copied history shows resolve in a session copied under a new id, and the
copy still refuses the handles of any other session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import OffloadHandleError, OffloadNotFoundError
from context_manager.offload import offload_results, recall, stub_handle
from context_manager.store import copy_session
from context_manager.store.offload import attach_store_offload


def _resolves(area: Any, handle: str) -> bool:
    try:
        recall(area, handle, lines=[1, 1])
    except OffloadNotFoundError:
        return False
    return True


def _read(manager: MessageContextManager, i: int, body: str, area: Any, door: bool) -> None:
    manager.add({"role": "user", "content": f"read file {i}"})
    call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
    message = {"role": "tool", "tool_call_id": f"c{i}", "content": body}
    if door:
        message = offload_results(message, area, max_chars=2_000)
    manager.add(message)
    manager.add({"role": "assistant", "content": f"read file {i}"})


def _source(tmp_path: Path) -> tuple[str, str]:
    """Session ``user-1`` on SQLite whose last tool result was offloaded at the door (its stub
    names the handle); returns the URL and that handle."""
    url = f"sqlite:///{tmp_path / 'src.db'}"
    manager = MessageContextManager.open(url, session="user-1", max_tokens=8_000)
    area = attach_store_offload(manager)
    body = "\n".join(f"{n}|sku-{n}" for n in range(5_000))  # line n + 1 holds sku-n
    _read(manager, 0, body, area, door=True)
    handle = stub_handle(manager.messages[-2]["content"])
    assert handle is not None
    manager.store.close()
    return url, handle


def test_copy_to_a_new_session_resolves_the_handles_its_history_shows(tmp_path: Path) -> None:
    url, _ = _source(tmp_path)
    copy_session(url, f"{tmp_path}/dst/", session="user-1", to_session="user-1-copy")
    copy = MessageContextManager.open(f"{tmp_path}/dst/", session="user-1-copy", max_tokens=8_000)
    area = attach_store_offload(copy)
    shown = stub_handle(copy.get_context()[-2]["content"])
    assert shown is not None
    assert recall(area, shown, pattern="|sku-4321").text == "4322: 4321|sku-4321"
    copy.store.close()


def test_a_copy_still_refuses_handles_of_other_sessions(tmp_path: Path) -> None:
    url, source_handle = _source(tmp_path)
    other = MessageContextManager.open(url, session="other", max_tokens=8_000)
    other_area = attach_store_offload(other)
    foreign = other_area.put("another user's secret")
    other.store.close()
    copy_session(url, f"{tmp_path}/dst/", session="user-1", to_session="user-1-copy")
    copy = MessageContextManager.open(f"{tmp_path}/dst/", session="user-1-copy", max_tokens=8_000)
    area = attach_store_offload(copy)
    for handle in (foreign, source_handle):  # the source's own handles are not the copy's
        with pytest.raises(OffloadHandleError, match="another session"):
            recall(area, handle)
    copy.store.close()
