"""A clear that keeps the system prompt is two writes: the rotation, then the prompt again.

When the second fails (here: a file-size limit, as a full disk does, after the rotation went
through) the store is already cleared. Memory must then hold what the store holds, so that the
next add and a fresh open agree, instead of keeping the old history on top of a cleared log.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .backends import run_child

pytest.importorskip("resource")

CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    from context_manager import MessageContextManager
    from context_manager.errors import StoreError

    root = sys.argv[1]
    manager = MessageContextManager.open(root, session="s", max_tokens=10**6, system_prompt="SYS")
    manager.add({"role": "user", "content": "old-1"})
    manager.add({"role": "assistant", "content": "old-2"})
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8, hard))  # the new log takes no prompt line
    error = ""
    try:
        manager.clear()
    except StoreError as exc:
        error = str(exc) + " | " + " ".join(getattr(exc, "__notes__", []))
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    after = [m["content"] for m in manager.messages]
    manager.add({"role": "user", "content": "new"})
    memory = {"messages": [m["content"] for m in manager.messages], "system": manager.system_prompt}
    manager.store.close()
    fresh = MessageContextManager.open(root, session="s", max_tokens=10**6)
    disk = {"messages": [m["content"] for m in fresh.messages], "system": fresh.system_prompt}
    print(json.dumps({"error": error, "after": after, "memory": memory, "disk": disk}))
    """
)


def test_a_clear_whose_prompt_write_fails_leaves_memory_as_the_store_has_it(
    tmp_path: Path,
) -> None:
    result = run_child(CHILD, str(tmp_path) + "/")
    assert result["error"], "the prompt write was expected to fail under the size limit"
    assert "rebuilt" in result["error"]  # the caller is told what memory holds now
    assert "the clear itself was stored" in result["error"]  # not "nothing was changed" alone
    assert result["after"] == []  # the store was cleared: so is memory
    assert result["memory"] == result["disk"] == {"messages": ["new"], "system": None}
