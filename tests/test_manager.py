"""MessageContextManager: budget configuration, state, callbacks and strategies end to end."""

from __future__ import annotations

import gc
import math
import threading
import tracemalloc
import weakref
from typing import Any

import pytest

from context_manager import (
    ConfigurationError,
    ContextOverflowError,
    InvalidMessageError,
    MessageContextManager,
    Priority,
    SlidingWindow,
    normalize,
    trim,
)
from context_manager.counting import CharEstimator
from context_manager.events import MessageAdded

EXACT = CharEstimator(message_overhead=0, prompt_overhead=0)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def test_budget_is_window_minus_reserve() -> None:
    m = MessageContextManager(10_000)
    assert (m.max_tokens, m.reserve_tokens, m.budget_tokens) == (10_000, 2_000, 8_000)
    m = MessageContextManager(10_000, reserve_tokens=500)
    assert m.budget_tokens == 9_500
    assert MessageContextManager().max_tokens == 128_000


def test_model_window_and_limit() -> None:
    m = MessageContextManager(model="gpt-4o-2024-08-06")
    assert m.max_tokens == 128_000
    assert MessageContextManager(50_000, model="gpt-4o").max_tokens == 50_000
    with pytest.raises(ConfigurationError, match="exceeds gpt-4o's context window"):
        MessageContextManager(200_000, model="gpt-4o")
    with pytest.raises(ConfigurationError, match="unknown model"):
        MessageContextManager(model="no-such-model")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"reserve_ratio": 1.5},
        {"reserve_tokens": 20_000},
        {"strategy": "lifo"},
        {"warn_ratio": 0},
        {"max_tokens": -5},
    ],
)
def test_bad_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        MessageContextManager(**{"max_tokens": 10_000, **kwargs})


def test_from_config_accepts_camel_case() -> None:
    m = MessageContextManager.from_config(
        {"contextLength": 4000, "reserveTokens": 1000, "strategy": "priority", "warnRatio": 0.5}
    )
    assert (m.max_tokens, m.budget_tokens, m.strategy.name, m.warn_ratio) == (
        4000,
        3000,
        "priority",
        0.5,
    )
    m = MessageContextManager.from_config(
        {"max_tokens": 4000, "reserve_ratio": 0.5, "maxMessages": 3, "strategy": "sliding_window"}
    )
    assert m.budget_tokens == 2000 and isinstance(m.strategy, SlidingWindow)
    with pytest.raises(ConfigurationError, match="unknown config key 'maxTokenz'"):
        MessageContextManager.from_config({"maxTokenz": 1})


def test_stats_and_counts_by_role() -> None:
    m = MessageContextManager(1000, reserve_tokens=0, counter=EXACT)
    m.set_system_prompt("x" * 40)  # 10 tokens
    m.extend([user("a" * 8), bot("b" * 12)])
    s = m.stats()
    assert (s.used_tokens, s.remaining_tokens, s.budget_tokens, s.message_count) == (
        15,
        985,
        1000,
        3,
    )
    assert s.counts_by_role == {"system": 1, "user": 1, "assistant": 1, "tool": 0}
    assert s.tokens_by_role == {"system": 10, "user": 2, "assistant": 3, "tool": 0}
    assert s.context_tokens == 15 and s.context_message_count == 3
    assert m.token_count == 15 and len(m) == 3


def test_can_add_and_count_message() -> None:
    m = MessageContextManager(10, reserve_tokens=0, counter=EXACT)
    m.add(user("x" * 32))  # 8 tokens
    assert m.count_message(user("y" * 8)) == 2
    assert m.can_add(user("y" * 8)) and not m.can_add(user("y" * 9))


def test_near_limit_fires_once_per_crossing() -> None:
    seen: list[int] = []
    m = MessageContextManager(
        100,
        reserve_tokens=0,
        counter=EXACT,
        strategy="sliding_window",
        warn_ratio=0.5,
        on_near_limit=lambda s: seen.append(s.used_tokens),
    )
    m.add(user("x" * 160))  # 40
    assert seen == []
    m.add(bot("x" * 40))  # 50 -> crosses
    m.add(bot("x" * 40))  # 60, still above: no second call
    assert seen == [50]
    m.clear()
    m.add(user("x" * 200))
    assert seen == [50, 50]


def test_clear_keeps_system_prompt_unless_asked() -> None:
    m = MessageContextManager(1000)
    m.extend([{"role": "system", "content": "sys"}, user("q")])
    m.clear()
    assert m.get_context() == [{"role": "system", "content": "sys"}] and m.system_prompt == "sys"
    m.clear(keep_system_prompt=False)
    assert m.get_context() == [] and m.token_count == 0


def test_set_system_prompt_replaces_and_recounts() -> None:
    m = MessageContextManager(1000, counter=EXACT)
    m.set_system_prompt("a" * 40)
    m.set_system_prompt({"role": "developer", "content": "b" * 80})
    assert m.token_count == 20
    assert m.get_context() == [{"role": "developer", "content": "b" * 80}]


def test_record_usage_anchors_counts() -> None:
    m = MessageContextManager(1000, counter=EXACT)
    m.add(user("x" * 40))
    m.record_usage({"prompt_tokens": 50, "completion_tokens": 3})
    m.add(bot("y" * 20))  # +5
    assert m.used_tokens == 55 and m.stats().calibrated
    m.record_usage(
        {"input_tokens": 10, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 5}
    )
    assert m.used_tokens == 45
    with pytest.raises(ConfigurationError, match="usage needs prompt_tokens"):
        m.record_usage({"nothing": 1})


def test_fifo_evicts_oldest_groups_on_add() -> None:
    evicted: list[Any] = []
    m = MessageContextManager(
        30, reserve_tokens=0, counter=EXACT, strategy="fifo", on_evict=evicted.extend
    )
    msgs = [user("a" * 40), bot("b" * 40), user("c" * 40), bot("d" * 40)]
    m.extend(msgs)
    assert evicted == msgs[:1] and m.messages == msgs[1:]
    assert m.token_count == 30 and m.get_context() == msgs[1:]


class Tracked(dict[str, Any]):
    """A message dict that can be watched with a weak reference."""


def test_fifo_releases_evicted_messages_at_once() -> None:
    """Memory follows what is held: an evicted message is no longer referenced by the manager
    (not only at the next storage compaction, 4,096 groups later)."""
    manager = MessageContextManager(300, reserve_tokens=0, strategy="fifo")
    watched = []
    evicted: list[Any] = []
    manager.on_evict = evicted.extend
    for n in range(60):
        message = Tracked(role="user" if n % 2 == 0 else "assistant", content=f"turn {n} " * 8)
        watched.append(weakref.ref(message))
        manager.add(message)
        del message
    held = {id(m) for m in manager.messages}
    gone = [ref for ref in watched if ref() is not None and id(ref()) not in held]
    assert len(evicted) > 20 and len(gone) == len(evicted)  # only the callback's list holds them
    evicted.clear()
    assert all(ref() is None for ref in gone)
    assert len(manager.messages) == 60 - len(gone) and manager.get_context()


def test_sliding_window_keeps_history_and_caps_messages() -> None:
    m = MessageContextManager(1000, strategy=SlidingWindow(max_messages=2))
    msgs = [user("1"), bot("2"), user("3"), bot("4")]
    m.extend(msgs)
    assert m.get_context() == msgs[2:] and m.messages == msgs


def test_latest_user_message_kept_even_if_older_than_the_window() -> None:
    m = MessageContextManager(20, reserve_tokens=0, counter=EXACT, strategy="sliding_window")
    question = user("q" * 20)  # 5
    m.extend([user("old" * 10), question] + [bot("x" * 24) for _ in range(5)])  # 6 each
    ctx = m.get_context()
    assert ctx[0] is question and len(ctx) == 3  # 5 + 6 + 6 <= 20


def test_priority_drops_lowest_first_and_keeps_order() -> None:
    m = MessageContextManager(12, reserve_tokens=0, counter=EXACT, strategy=Priority())
    a, b, c, d = user("a" * 16), bot("b" * 16), user("c" * 16), bot("d" * 16)  # 4 tokens each
    m.add(a, priority=5)
    m.add(b, priority=0)
    m.add(c, priority=1)
    m.add(d, priority=0)
    assert m.get_context() == [a, c, d]  # b goes first (lowest, oldest); then it fits


def test_overflow_error_states_the_shortfall() -> None:
    m = MessageContextManager(10, reserve_tokens=0, counter=EXACT)
    m.set_system_prompt("s" * 24)  # 6
    m.add(user("u" * 24))  # 6
    with pytest.raises(ContextOverflowError) as info:
        m.get_context()
    assert info.value.shortfall == 2 and info.value.required == 12 and info.value.budget == 10
    assert "short by 2" in str(info.value)


def test_pinned_messages_survive_every_strategy() -> None:
    for strategy in ("fifo", "sliding_window", "priority"):
        m = MessageContextManager(12, reserve_tokens=0, counter=EXACT, strategy=strategy)
        keep = user("k" * 16)
        m.add(keep, pinned=True)
        m.extend([bot("x" * 16), user("y" * 16), bot("z" * 16)])
        ctx = m.get_context()
        assert ctx[0] is keep and len(ctx) == 3, strategy


def test_tool_definitions_are_charged_once() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    m = MessageContextManager(1000, tools=tools)
    assert m.used_tokens == m.counter.prompt_overhead + m.counter.count_tools(tools) > 3


def test_one_shot_trim() -> None:
    msgs = [{"role": "system", "content": "s"}, user("a" * 40), bot("b" * 40), user("c" * 40)]
    assert trim(msgs, 14, counter=EXACT) == [msgs[0], msgs[3]]
    assert trim(msgs, 1000, counter=EXACT) == msgs
    assert trim(msgs, 24, counter=EXACT, strategy="priority", priorities=[0, 0, 0, 0]) == [
        msgs[0],
        msgs[2],
        msgs[3],
    ]
    assert trim(msgs, 21, counter=EXACT, pinned={1}) == [msgs[0], msgs[1], msgs[3]]
    with pytest.raises(ContextOverflowError):
        trim(msgs, 5, counter=EXACT)


@pytest.mark.slow
def test_a_long_fifo_history_stays_exact_in_bounded_memory() -> None:
    """30,000 messages of 1 KB through a 2,000-token FIFO window: what is held is the newest
    messages, recounted exactly, and what the manager keeps in memory is a fraction of the 30 MB
    that went through (evicted messages and their bookkeeping are released, not just skipped)."""
    n, size = 30_000, 1_000
    m = MessageContextManager(2000, reserve_tokens=0, counter=EXACT, strategy="fifo")
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(n):
            m.add((user if i % 2 == 0 else bot)(f"{i} " + "x" * size))
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    held = m.messages
    assert [x["content"].split()[0] for x in held] == [str(i) for i in range(n - len(held), n)]
    assert m.token_count == sum(EXACT.count_message(normalize(x)) for x in held)
    assert retained < n * size // 2, f"{retained:,} bytes retained"


def test_anthropic_tool_result_turns_do_not_displace_the_users_request() -> None:
    m = MessageContextManager(60, reserve_tokens=0, counter=EXACT, strategy="sliding_window")
    question = user("q" * 40)  # 10 tokens
    m.extend([user("old" * 20), question])
    for i in range(6):
        m.add(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "run", "input": {}}],
            }
        )
        m.add(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * 40}],
            }
        )
    ctx = m.get_context()
    assert ctx[0] is question  # kept although six newer "user" turns (tool results) exist
    assert m.context_tokens() <= 60


def test_fifo_keeps_the_recent_history_through_ten_thousand_adds() -> None:
    # Regression (found by the benchmarks): 10k adds through a small window evict thousands of
    # groups, and once the manager reclaimed their storage held messages went missing.
    manager = MessageContextManager(2_000, strategy="fifo")
    for i in range(10_000):
        manager.add({"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} " + "x" * 400})
        context = manager.get_context()
        assert context[-1]["content"].startswith(f"{i} ")
        assert len(context) >= min(i + 1, 10), (i, len(context))
        assert len(manager) == len(manager.messages)


@pytest.mark.parametrize(
    "attribute", ["max_tokens", "reserve_tokens", "budget_tokens", "counter", "strategy", "tools"]
)
def test_configuration_that_feeds_cached_totals_is_read_only(attribute: str) -> None:
    m = MessageContextManager(1000, tools=[{"type": "function", "function": {"name": "f"}}])
    before = m.used_tokens
    with pytest.raises(AttributeError):
        setattr(m, attribute, getattr(m, attribute))
    assert m.used_tokens == before


def test_repair_can_be_switched_on_after_an_interrupted_tool_call() -> None:
    m = MessageContextManager(1000)
    m.add(user("run it"))
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    m.add(call)
    reply = {"role": "assistant", "content": "I will not wait for it."}
    with pytest.raises(InvalidMessageError):
        m.add(reply)  # an assistant turn cannot follow an unanswered call
    m.repair = True
    m.add(reply)
    context = m.get_context()
    assert context[-1] == reply
    assert context[-2]["role"] == "tool" and context[-2]["tool_call_id"] == "c1"


def js_tokens(text: str) -> int:
    """The estimator's count of a ``{role, content}`` dict, from JavaScript's rule computed here:
    ceil(UTF-16 code units / 4) + 3."""
    return math.ceil(len(text.encode("utf-16-le", "surrogatepass")) // 2 / 4) + 3


@pytest.mark.parametrize(
    "text",
    ["", " " * 100_000, "\ud800", "\udfff\ud800", "😀" * 1_000, "é" * 1_000, "x" * 1_000_000],
)
def test_add_counts_hostile_texts_as_javascript_does(text: str) -> None:
    manager = MessageContextManager(10**9, counter="chars")
    manager.extend(user(f"message {i}") for i in range(20))
    assert manager.add(user(text)) == js_tokens(text)
    before = sum(js_tokens(f"message {i}") for i in range(20))
    assert manager.token_count == js_tokens(text) + before


def test_text_and_count_are_taken_at_the_add() -> None:
    """A caller who edits a dict after adding it changes the message sent (the caller's own
    object) but not what was counted or recorded."""
    messages = [user("x" * 40) if i % 2 == 0 else bot("x" * 40) for i in range(30)]
    manager = MessageContextManager(10**6, counter="chars")
    counts = [manager.add(message) for message in messages]
    messages[20]["content"] = "y" * 4_000
    assert counts == [js_tokens("x" * 40)] * 30
    assert manager.token_count == sum(counts)
    assert manager.history()[20].record.text == "x" * 40
    assert manager.get_context()[20] is messages[20]


def test_a_subscriber_hears_of_every_add_after_it_subscribed() -> None:
    manager = MessageContextManager(10**6, counter="chars")
    manager.extend(user(f"{i}") for i in range(20))
    events: list[Any] = []
    manager.subscribe(events.append)
    manager.add(bot("20"), priority=2)
    assert events == [MessageAdded(bot("20"), normalize(bot("20")), 20, js_tokens("20"), False, 2)]


def test_extend_keeps_the_messages_before_an_invalid_one() -> None:
    manager = MessageContextManager(10**6, counter="chars")
    with pytest.raises(InvalidMessageError):
        manager.extend([*(user(f"{i}") for i in range(20)), {"role": "robot", "content": "beep"}])
    assert len(manager) == 20 and manager.messages == [user(f"{i}") for i in range(20)]


def test_concurrent_writers_and_readers_lose_and_reorder_nothing() -> None:
    manager = MessageContextManager(10**9, counter="chars")
    writers, each = 4, 2_000
    done = threading.Event()
    errors: list[BaseException] = []

    def write(w: int) -> None:
        try:
            for i in range(each):
                manager.add(user(f"{w}:{i}"))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    sizes: list[int] = []

    def read() -> None:  # everything fits: each read sees every add before it, in order
        while not done.is_set():
            sizes.append(len(manager.get_context()))

    reader = threading.Thread(target=read)
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    reader.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    reader.join()
    assert not errors and sizes == sorted(sizes)
    texts = [m["content"] for m in manager.messages]
    assert len(texts) == writers * each
    for w in range(writers):
        mine = [int(t.split(":")[1]) for t in texts if t.startswith(f"{w}:")]
        assert mine == list(range(each))
    assert [item.index for item in manager.history()] == list(range(writers * each))
    assert manager.token_count == sum(js_tokens(t) for t in texts)
