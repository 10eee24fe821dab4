"""Hypothesis throws arbitrary values at the entry points added for sessions at scale, offload
and compaction (a session cache, deleting a session, listing compactions, native compaction,
recall): only ContextManagerError may escape. Marked slow, as ``test_fuzz_public.py``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_manager import MessageContextManager
from context_manager.compaction import compact_native, compactions
from context_manager.offload import MemoryOffload, recall, run_recall
from context_manager.store import SessionCache, connect, delete_session, list_compactions

from .test_fuzz_public import fuzz, messages, only_typed, values

pytestmark = pytest.mark.slow

targets = st.one_of(
    values,
    st.sampled_from(
        [
            "",
            "sqlite://",
            "sqlite:///",
            "redis://:pw@[::1",
            "postgresql://u:p%zz@h/db",
            "nope://x",
            "dir/\x00",
        ]
    ),
)


@fuzz
@given(values)
def test_session_cache_bound(bound: Any) -> None:
    only_typed(SessionCache, bound)


@fuzz
@given(targets, values, values)
def test_connect_and_delete(
    tmp_path_factory: pytest.TempPathFactory, target: Any, cache: Any, session: Any
) -> None:
    where = tmp_path_factory.mktemp("fuzz")
    if isinstance(target, str) and not target.startswith(("sqlite", "redis", "postgres", "nope")):
        # confined to a fresh directory: the fuzz must never reach a real file of this machine
        target = str(where / target.replace("\x00", "").replace("..", "").lstrip("/")) or target
    only_typed(connect, target, cache=cache)
    only_typed(delete_session, target, session=session)
    only_typed(list_compactions, target, session=session)


@fuzz
@given(st.lists(messages, max_size=6), values, st.sampled_from(["openai-responses", "anthropic"]))
def test_native_compaction_with_any_compactor_output(
    batch: list[Any], output: Any, provider: str
) -> None:
    manager = MessageContextManager(4_000, counter="chars")
    for message in batch:
        only_typed(manager.add, message)
    only_typed(compact_native, manager, lambda held: output, provider=provider)
    compactions(manager)
    manager.get_context()


@fuzz
@given(values, values, values, values, values)
def test_recall_with_any_arguments(
    handle: Any, lines: Any, span: Any, pattern: Any, cap: Any
) -> None:
    area = MemoryOffload("fuzz")
    real = area.put("alpha\nbeta\n" * 50)
    for h in (handle, real):
        only_typed(recall, area, h, lines=lines, bytes=span, pattern=pattern, max_tokens=cap)
        assert isinstance(run_recall(area, {"handle": h, "lines": lines, "pattern": pattern}), str)
