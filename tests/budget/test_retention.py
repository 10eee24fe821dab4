"""Cache-friendly trimming (``retention_ratio``): stateful == stateless == naive oracle.

For random growing histories, at every step: the manager fed message by message, ``trim()``
called afresh on the prefix, and the naive restatement of the rule (``tests/naive_retention.py``)
agree; every invariant holds (system prompt, pins, whole tool groups, latest user turn, order,
budget); and the cut is cache-friendly: without pins nothing dropped ever comes back, and a
contiguous context that still fits with the new messages is sent again as the prefix.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_manager import ContextOverflowError, MessageContextManager, trim
from context_manager.budget import FIFO, SlidingWindow, get_strategy
from context_manager.errors import ConfigurationError

from ..conversations import conversation
from ..naive import NaiveCounter, naive_read
from ..test_properties import EXAMPLES, assert_protocol_valid, positions
from .naive_retention import naive_retained

COUNTER = NaiveCounter()


@st.composite
def growing(draw: st.DrawFn) -> tuple[list[Any], set[int], int, float, int | None]:
    messages = draw(conversation(max_turns=25))
    n = len(messages)
    pinned = set(draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=2))) if n else set()
    total = sum(COUNTER.count(m) for m in messages) + 3
    budget = draw(st.integers(1, max(total // 2, 1) + 20))
    ratio = draw(st.sampled_from([0.05, 0.3, 0.5, 0.7, 0.8, 0.9, 0.99]))
    cap = draw(st.none() | st.none() | st.integers(0, n + 1))
    return messages, pinned, budget, ratio, cap


def _tokens(messages: list[Any], idx: list[int]) -> int:
    """An independent recount: per-message estimator counts plus the reply priming."""
    return 3 + sum(COUNTER.count(messages[i]) for i in idx)


@EXAMPLES
@given(data=growing())
def test_manager_trim_and_oracle_agree_at_every_step(data: Any) -> None:
    messages, pinned, budget, ratio, cap = data
    before = copy.deepcopy(messages)
    manager = MessageContextManager(
        budget,
        reserve_tokens=0,
        strategy="sliding_window",
        retention_ratio=ratio,
        max_messages=cap,
        counter="chars",
    )
    previous: tuple[list[int], list[int], bool] | None = None
    for n in range(1, len(messages) + 1):
        manager.add(messages[n - 1], pinned=(n - 1) in pinned)
        prefix = messages[:n]
        expected = naive_retained(
            prefix,
            counter=COUNTER,
            budget=budget,
            ratio=ratio,
            pinned={p for p in pinned if p < n},
            max_messages=cap,
        )
        if expected == "overflow":
            with pytest.raises(ContextOverflowError):
                manager.get_context()
            with pytest.raises(ContextOverflowError):
                trim(
                    prefix,
                    budget,
                    retention_ratio=ratio,
                    max_messages=cap,
                    pinned={p for p in pinned if p < n},
                    counter="chars",
                )
            previous = None
            continue
        assert not isinstance(expected, str)
        kept_idx, complete, on_anchor = expected
        stateful = manager.get_context()
        stateless = trim(
            prefix,
            budget,
            retention_ratio=ratio,
            max_messages=cap,
            pinned={p for p in pinned if p < n},
            counter="chars",
        )
        assert positions(stateful, messages) == kept_idx
        assert [id(m) for m in stateless] == [id(m) for m in stateful]
        _check_invariants(prefix, kept_idx, complete, pinned, budget)
        if not pinned and cap is None and previous is not None:
            _check_cache_friendly(prefix, previous, (kept_idx, complete), budget)
        previous = (kept_idx, complete, on_anchor)
    assert messages == before, "input mutated"


def _check_invariants(
    prefix: list[Any], kept: list[int], complete: list[int], pinned: set[int], budget: int
) -> None:
    assert kept == sorted(kept), "order changed"
    assert _tokens(prefix, kept) <= budget, "over budget"
    assert_protocol_valid([prefix[i] for i in kept])
    sent = set(kept)
    done = set(complete)
    if prefix and prefix[0]["role"] in ("system", "developer"):
        assert kept[:1] == [0], "system prompt dropped"
    for p in pinned:
        if p in done:
            assert p in sent, "pinned message dropped"
    users = [i for i in done if naive_read(prefix[i]).is_user_turn]
    if users:
        assert max(users) in sent, "latest user turn dropped"


def _check_cache_friendly(
    prefix: list[Any],
    previous: tuple[list[int], list[int], bool],
    current: tuple[list[int], list[int]],
    budget: int,
) -> None:
    (old, old_complete, on_anchor), (new, new_complete) = previous, current
    # Nothing dropped comes back: a complete message once left out stays out.
    dropped = set(old_complete) - set(old)
    assert not dropped & set(new), "a dropped message came back"
    # Hold: a context cut at a turn anchor that still fits with what was completed since is
    # sent again as the prefix. (Cut elsewhere, the latest turn alone is over about r x room
    # and the next user turn may move the cut: the documented fallback.)
    grown = old + sorted(set(new_complete) - set(old_complete))
    if on_anchor and _tokens(prefix, grown) <= budget:
        assert new == grown, "the cut moved although everything after it fits"


@EXAMPLES
@given(data=growing())
def test_fifo_with_retention_keeps_the_invariants(data: Any) -> None:
    messages, pinned, budget, ratio, _ = data
    manager = MessageContextManager(
        budget, reserve_tokens=0, strategy="fifo", retention_ratio=ratio, counter="chars"
    )
    for i, m in enumerate(messages):
        manager.add(m, pinned=i in pinned)
        try:
            kept = manager.get_context()
        except ContextOverflowError:
            continue
        idx = positions(kept, messages)
        assert idx == sorted(idx)
        assert_protocol_valid(kept)
        assert _tokens(messages, idx) <= budget


def test_a_long_session_shares_its_prefix() -> None:
    """Twenty turns of ~100 tokens under a 1,000-token budget: the cut moves rarely."""
    history: list[Any] = [{"role": "system", "content": "be brief"}]
    firsts = []
    for turn in range(60):
        history.append({"role": "user", "content": f"question {turn} " + "x" * 200})
        history.append({"role": "assistant", "content": f"answer {turn} " + "y" * 200})
        context = trim(history, 1_000, retention_ratio=0.5)
        firsts.append(id(context[1]))
        assert _tokens(history, positions(context, history)) <= 1_000
    plain = [id(trim(history[: 2 * t + 3], 1_000)[1]) for t in range(60)]
    moves = sum(a != b for a, b in itertools.pairwise(firsts))
    plain_moves = sum(a != b for a, b in itertools.pairwise(plain))
    assert moves * 3 <= plain_moves, (moves, plain_moves)


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.2, float("nan"), True, "0.7"])
def test_retention_ratio_is_validated(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="retention_ratio"):
        MessageContextManager(1_000, strategy="sliding_window", retention_ratio=bad)
    with pytest.raises(ConfigurationError, match="retention_ratio"):
        trim([{"role": "user", "content": "hi"}], 100, retention_ratio=bad)


def test_retention_ratio_configuration() -> None:
    assert isinstance(get_strategy("sliding_window", retention_ratio=0.7), SlidingWindow)
    assert get_strategy("fifo", retention_ratio=0.7).retention_ratio == 0.7  # type: ignore[attr-defined]
    assert isinstance(get_strategy("fifo", retention_ratio=0.5), FIFO)
    with pytest.raises(ConfigurationError, match="fifo and sliding_window"):
        get_strategy("priority", retention_ratio=0.7)
    with pytest.raises(ConfigurationError, match="constructor"):
        get_strategy(SlidingWindow(), retention_ratio=0.7)
    manager = MessageContextManager.from_config(
        {"maxTokens": 1_000, "strategy": "sliding_window", "retentionRatio": 0.6}
    )
    assert manager.strategy.retention_ratio == 0.6  # type: ignore[attr-defined]
