"""Property tests: compaction keeps the manager's invariants on random protocol-valid histories."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager.compaction import SimpleCompaction, TokenBudgetCompaction
from context_manager.errors import CompactionError
from context_manager.manager import MessageContextManager

from .conversations import conversation
from .test_compaction_manager import assert_invariants

POLICIES = st.one_of(
    st.builds(TokenBudgetCompaction, keep_recent_tokens=st.integers(0, 120),
              reserve_tokens=st.integers(2, 5000),
              token_source=st.sampled_from(["pi", "manager"])),
    st.builds(SimpleCompaction, max_preserved_messages=st.integers(1, 4)),
)


def _fill(manager: MessageContextManager, messages: list[dict[str, Any]], pins: list[bool]
          ) -> None:
    for message, pinned in zip(messages, pins, strict=False):
        manager.add(message, pinned=pinned and message["role"] == "user")


@settings(max_examples=250)  # ~10 s; compaction per example costs far more than a trim
@given(first=conversation(), second=conversation(max_turns=10), policy=POLICIES,
       pins=st.lists(st.booleans(), max_size=80))
def test_compaction_keeps_invariants(first: list[dict[str, Any]],
                                     second: list[dict[str, Any]], policy: Any,
                                     pins: list[bool]) -> None:
    manager = MessageContextManager(1_000_000, system_prompt="sys")
    _fill(manager, first, [p and i % 3 == 0 for i, p in enumerate(pins)])
    for batch in ([], second):
        _fill(manager, [m for m in batch if m["role"] != "system"], [])
        if not any(h.record.is_user_turn for h in manager.history()):
            return
        before = {h.index: h for h in manager.history()}
        previous = manager.compaction
        try:
            entry = manager.compact(policy=policy)
        except CompactionError:
            assert manager.compaction is previous
            assert {h.index: h for h in manager.history()} == before
            continue
        after = manager.history()
        cut = entry.first_kept_index
        assert cut in before and not before[cut].record.result_ids
        # below the cut only pinned messages and the latest user turn's group may stay
        order = list(before)
        at = max(k for k, i in enumerate(order) if before[i].record.is_user_turn)
        start = at
        while start > 0 and before[order[start]].record.result_ids:
            start -= 1
        end = at + 1
        while end < len(order) and before[order[end]].record.result_ids:
            end += 1
        protected = set(order[start:end])
        for item in after:
            assert item.index >= cut or item.pinned or item.index in protected
        assert [h.index for h in after if h.index >= cut] == [i for i in before if i >= cut]
        assert_invariants(manager)
