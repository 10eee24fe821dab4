"""A revert to a checkpoint taken after a compaction keeps the handles the kept history names:
those quoted by stubs in its messages and by the compaction's summary, which is sent on every
request. (Before, the summary's handle was retired by the revert's clear and never revived: the
model was told where a result was and recall said it did not exist.)"""

from __future__ import annotations

from pathlib import Path

from context_manager import MessageContextManager, ToolResultPruning
from context_manager.compaction import TokenBudgetCompaction
from context_manager.errors import OffloadNotFoundError
from context_manager.offload import recall, stub_handle
from context_manager.store.offload import attach_store_offload


def _resolves(area: object, handle: str) -> bool:
    try:
        recall(area, handle, lines=[1, 1])  # type: ignore[arg-type]
    except OffloadNotFoundError:
        return False
    return True


def test_a_revert_after_a_compaction_keeps_the_handle_its_summary_quotes(tmp_path: Path) -> None:
    options = {
        "max_tokens": 8_000,
        "counter": "chars",
        "system_prompt": "agent",
        "pruning": ToolResultPruning(soft_ratio=0.0, hard_ratio=None, keep_last=1),
    }
    manager = MessageContextManager.open(f"sqlite:///{tmp_path / 'c.db'}", session="s", **options)
    area = attach_store_offload(manager)
    seen: list[str] = []  # the view's stubs, as the model saw them
    for i in range(8):
        manager.add({"role": "user", "content": f"read file {i}"})
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
        body = f"FILE {i}\n" + f"line of file {i}\n" * 400
        manager.add({"role": "tool", "tool_call_id": f"c{i}", "content": body})
        manager.add({"role": "assistant", "content": f"read file {i}"})
        for message in manager.get_context():
            handle = stub_handle(message["content"]) if message["role"] == "tool" else None
            if handle and handle not in seen:
                seen.append(handle)
    quoted = seen[0]
    manager.compact(
        lambda request: f"Files were read; file 0 is stored as {quoted}.",  # as a good LLM would
        policy=TokenBudgetCompaction(keep_recent_tokens=600, reserve_tokens=2_000),
    )
    checkpoint = manager.checkpoint()  # after the compaction
    manager.add({"role": "user", "content": "one more turn, then undo it"})
    manager.revert_to(checkpoint)
    assert quoted in str(manager.get_context())  # the summary still tells the model about it
    assert _resolves(area, quoted)
    manager.store.close()
