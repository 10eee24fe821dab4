"""Property tests: compaction keeps the manager's invariants on random protocol-valid histories."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager.compaction import SimpleCompaction, TokenBudgetCompaction
from context_manager.errors import CompactionError
from context_manager.manager import MessageContextManager

from ..conversations import conversation
from .test_on_manager import assert_invariants

# A policy is drawn as a recipe and sized to the history it will see, so that most examples
# really cut (a fixed keep_recent_tokens would hold the whole of most small histories).
POLICIES = st.one_of(
    st.tuples(
        st.just("budget"),
        st.floats(0.0, 0.6),
        st.integers(2, 5000),
        st.sampled_from(["pi", "manager"]),
    ),
    st.tuples(st.just("simple"), st.integers(1, 4)),
)


def _policy(recipe: tuple[Any, ...], manager: MessageContextManager) -> Any:
    if recipe[0] == "simple":
        return SimpleCompaction(max_preserved_messages=recipe[1])
    _, share, reserve, source = recipe
    held = sum(h.tokens for h in manager.history())
    return TokenBudgetCompaction(
        keep_recent_tokens=int(held * share), reserve_tokens=reserve, token_source=source
    )


def _fill(
    manager: MessageContextManager,
    messages: list[dict[str, Any]],
    pins: list[bool],
    sizes: list[int] | None = None,
) -> None:
    """Add ``messages`` (text contents padded to ``sizes`` chars, so there is something to cut)."""
    for k, message in enumerate(messages):
        if sizes and isinstance(message.get("content"), str):
            message = {**message, "content": message["content"] + "w " * sizes[k % len(sizes)]}
        pinned = k < len(pins) and pins[k]
        manager.add(message, pinned=pinned and message["role"] == "user")


REACHED = {"runs": 0, "compacted": 0}


@settings(max_examples=250)  # ~10 s; compaction per example costs far more than a trim
@given(
    first=conversation(min_turns=6),
    second=conversation(max_turns=10),
    recipe=POLICIES,
    pins=st.lists(st.booleans(), max_size=80),
    sizes=st.lists(st.integers(0, 300), min_size=1, max_size=12),
)
def _compaction_keeps_invariants(
    first: list[dict[str, Any]],
    second: list[dict[str, Any]],
    recipe: tuple[Any, ...],
    pins: list[bool],
    sizes: list[int],
) -> None:
    manager = MessageContextManager(1_000_000, system_prompt="sys")
    _fill(manager, first, [p and i % 3 == 0 for i, p in enumerate(pins)], sizes)
    REACHED["runs"] += 1
    for batch in ([], second):
        batch = json.loads(re.sub(r'"t(\d+_\d+)"', r'"b\1"', json.dumps(batch)))  # fresh ids
        _fill(manager, [m for m in batch if m["role"] != "system"], [], sizes)
        before = {h.index: h for h in manager.history()}
        previous = manager.compaction
        try:
            entry = manager.compact(policy=_policy(recipe, manager))
        except CompactionError:
            assert manager.compaction is previous
            assert {h.index: h for h in manager.history()} == before
            continue
        REACHED["compacted"] += 1
        after = manager.history()
        cut = entry.first_kept_index
        assert cut in before and not before[cut].record.result_ids
        # below the cut only pinned messages and the latest user turn's group may stay
        order = list(before)
        turns = [k for k, i in enumerate(order) if before[i].record.is_user_turn]
        protected: set[int] = set()
        if turns:
            start = turns[-1]
            while start > 0 and before[order[start]].record.result_ids:
                start -= 1
            end = turns[-1] + 1
            while end < len(order) and before[order[end]].record.result_ids:
                end += 1
            protected = set(order[start:end])
        for item in after:
            assert item.index >= cut or item.pinned or item.index in protected
        assert [h.index for h in after if h.index >= cut] == [i for i in before if i >= cut]
        assert_invariants(manager)


def test_compaction_keeps_invariants() -> None:
    """Runs the property and proves it has teeth: most examples really compact and get checked."""
    REACHED.update(runs=0, compacted=0)
    _compaction_keeps_invariants()
    assert REACHED["runs"] > 0
    # each run may compact twice; at least ~70% of runs must really be checked after a cut
    assert REACHED["compacted"] >= 0.7 * REACHED["runs"], REACHED
