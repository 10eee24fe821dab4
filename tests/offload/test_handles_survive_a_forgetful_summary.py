"""After a compaction the model can still name every offloaded result it may recall.

Results offloaded at the door leave a stub naming their handle (``cm-off:...``) in the history.
A compaction replaces those messages with a summary; one that forgets the handles left them
resolvable but unnamed (1 of 12 in the context), so the model could no longer recall them.
The handles are now among the kept facts: the summary's facts block names those it left out.
"""

from __future__ import annotations

from pathlib import Path

from context_manager import MessageContextManager
from context_manager.compaction import TokenBudgetCompaction
from context_manager.offload import offload_results, recall, stub_handle
from context_manager.store.offload import attach_store_offload


def test_every_handle_of_a_compacted_result_is_named_after_the_compaction(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    manager = MessageContextManager.open(url, session="s", max_tokens=8_000, counter="chars")
    area = attach_store_offload(manager)
    handles = []
    for k in range(12):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "sql", "arguments": "{}"}}
        manager.add({"role": "user", "content": f"run query {k} " + "w " * 40})
        manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
        rows = "\n".join(f"q{k} row {i}" for i in range(3000))
        result = {"role": "tool", "tool_call_id": f"c{k}", "content": rows}
        stubbed = offload_results(result, area, max_chars=600)
        manager.add(stubbed)
        handles.append(stub_handle(stubbed["content"]))
        manager.add({"role": "assistant", "content": f"done {k}"})
    manager.add({"role": "user", "content": "continue"})
    policy = TokenBudgetCompaction(keep_recent_tokens=500, reserve_tokens=2_000)
    manager.compact(lambda request: "Ran the queries.", policy=policy)

    sent = "\n".join(str(message) for message in manager.get_context())
    assert all(handle in sent for handle in handles)
    for k, handle in enumerate(handles):  # and each still resolves to its own result
        assert recall(area, handle, lines=[1, 1]).text == f"q{k} row 0"
    manager.store.close()
