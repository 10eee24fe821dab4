"""Runs of plain adds held back until the next read (``budget/pending.py``).

Holding must change nothing anyone can observe. The oracles: the same manager with holding off
(every add written at once, the path every other kind of add takes), compared through every
reader and, at the end, list by list in the ledger; token counts from JavaScript's rule
computed here (UTF-16 code units, no library code); and what each watcher is told.
"""

from __future__ import annotations

import gc
import math
import threading
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_manager import InvalidMessageError, MessageContextManager, ToolResultPruning
from context_manager.budget import _ledger, pending
from context_manager.counting import CharEstimator
from context_manager.events import MessageAdded

from ..test_properties import EXAMPLES, naive_fifo_held, positions

NEVER = 1 << 60
LEDGER_STATE = [
    *("originals", "records", "tokens", "seq", "next_seq", "total", "turns", "open"),
    *("group_start", "group_tokens", "group_pinned", "group_priority", "cum"),
    *("pinned_groups", "pinned_total", "floor", "protected", "kept_protected"),
]


def never_holding(manager: MessageContextManager) -> MessageContextManager:
    manager._pending.run = manager._pending.hold_from = manager._pending._base = NEVER
    return manager


def held(manager: MessageContextManager) -> int:
    """Adds held right now (nothing reads: ``_pending`` is looked at directly)."""
    return len(manager._pending.items) // 4


def js_tokens(text: str) -> int:
    """The estimator's count of a ``{role, content}`` dict: ceil(UTF-16 units / 4) + 3."""
    return math.ceil(len(text.encode("utf-16-le", "surrogatepass")) // 2 / 4) + 3


def plain(i: int, text: str = "") -> dict[str, Any]:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": text or f"message {i}"}


def ledger_state(manager: MessageContextManager) -> dict[str, Any]:
    ledger = manager._ledger  # writes what is held, takes any deferred cut
    counts, tokens = ledger.role_totals()
    state = {name: getattr(ledger, name) for name in LEDGER_STATE}
    return {**state, "counts": counts, "tokens_by_role": tokens}


TEXTS = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["", " " * 50, "\ud800", "a\udfffb", "😀" * 7, "\n\t" * 20]),
)
OPS = st.one_of(
    st.tuples(st.just("plain"), TEXTS),
    st.tuples(st.just("many"), st.integers(1, 40)),
    st.tuples(st.sampled_from(["tools", "pinned", "priority", "system", "bad", "read"]), TEXTS),
    st.tuples(st.sampled_from(["clear", "context", "history", "stats"]), st.just("")),
    st.tuples(st.just("pruning"), st.booleans()),  # a pruned FIFO view evicts on every add
)


@EXAMPLES
@given(
    ops=st.lists(OPS, max_size=40),
    strategy=st.sampled_from(["fifo", "sliding_window", "priority"]),
    window=st.integers(60, 2_000),
    repair=st.booleans(),
)
def test_holding_changes_nothing_a_reader_sees(
    ops: list[Any], strategy: str, window: int, repair: bool
) -> None:
    options: dict[str, Any] = {"counter": "chars", "strategy": strategy, "repair": repair}
    managers = [
        MessageContextManager(window, **options),
        never_holding(MessageContextManager(window, **options)),
    ]
    for call, (op, arg) in enumerate(ops):
        outcomes = [_apply(manager, op, arg, call) for manager in managers]
        assert outcomes[0] == outcomes[1], op
        assert managers[1]._pending.items == []
    assert ledger_state(managers[0]) == ledger_state(managers[1])


def _apply(manager: MessageContextManager, op: str, arg: Any, call: int) -> Any:
    """One step on ``manager``: what it returned or raised (messages are built afresh, so the
    two managers never share a dict)."""
    try:
        if op == "plain":
            return manager.add(plain(call, arg))
        if op == "many":
            return [manager.add(plain(call + i)) for i in range(arg)]
        if op == "tools":
            call_id = f"call_{call}"
            return [
                manager.add(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": "f", "arguments": "{}"},
                            }
                        ],
                    }
                ),
                manager.add({"role": "tool", "tool_call_id": call_id, "content": arg}),
            ]
        if op == "pinned":
            return manager.add(plain(call, arg), pinned=True)
        if op == "priority":
            return manager.add(plain(call, arg), priority=2)
        if op == "system":
            return manager.add({"role": "system", "content": arg or "be brief"})
        if op == "bad":
            return manager.add({"role": "robot", "content": arg})
        if op == "read":
            return (len(manager), manager.token_count, manager.messages)
        if op == "clear":
            return manager.clear()
        if op == "pruning":
            return manager.use_pruning(ToolResultPruning() if arg else None)
        if op == "context":
            return manager.get_context()
        if op == "history":
            return manager.history()
        return manager.stats()
    except Exception as error:  # the same typed error on both sides
        return type(error), str(error)


def test_a_run_is_held_from_the_ninth_add_after_a_read() -> None:
    manager = MessageContextManager(10**6, counter="chars")
    for i in range(pending.RUN):
        manager.add(plain(i))
        assert held(manager) == 0
    manager.add(plain(8))
    assert held(manager) == 1
    assert len(manager) == 9 and held(manager) == 0  # a read writes the run...
    manager.add(plain(9))
    assert held(manager) == 0  # ...and the next run starts over


def test_text_and_count_are_taken_at_the_add() -> None:
    """A caller who edits a dict after adding it changes the message sent (the caller's own
    object, as for every add) but not what was counted or recorded."""
    messages = [plain(i, "x" * 40) for i in range(30)]
    manager = MessageContextManager(10**6, counter="chars")
    counts = [manager.add(message) for message in messages]
    assert held(manager) == 30 - pending.RUN
    messages[20]["content"] = "y" * 4_000
    assert counts == [js_tokens("x" * 40)] * 30
    assert manager.token_count == sum(counts)
    assert manager._ledger.records[20].text == "x" * 40
    assert manager.get_context()[20] is messages[20]


@pytest.mark.parametrize(
    "text",
    ["", " " * 100_000, "\ud800", "\udfff\ud800", "😀" * 1_000, "é" * 1_000, "x" * 1_000_000],
)
def test_hostile_texts_count_as_javascript_does(text: str) -> None:
    manager = MessageContextManager(10**9, counter="chars")
    for i in range(pending.RUN):
        manager.add(plain(i))
    assert manager.add({"role": "user", "content": text}) == js_tokens(text)
    assert held(manager) == 1
    assert manager.token_count == js_tokens(text) + sum(js_tokens(f"message {i}") for i in range(8))


def _watched(kind: str) -> MessageContextManager:
    manager = MessageContextManager(10**6, counter="chars")
    if kind == "subscriber":
        manager.subscribe(lambda event: None)
    elif kind == "on_evict":
        manager.on_evict = lambda gone: None
    elif kind == "on_near_limit":
        manager.on_near_limit = lambda stats: None
    elif kind == "journal":
        manager.attach_journal(SimpleNamespace(write=[].append))
    return manager


@pytest.mark.parametrize("kind", ["subscriber", "on_evict", "on_near_limit", "journal"])
def test_nothing_is_held_while_someone_watches(kind: str) -> None:
    manager = _watched(kind)
    for i in range(50):
        manager.add(plain(i))
        assert held(manager) == 0


@pytest.mark.parametrize(
    "options",
    [
        {"counter": "tiktoken"},
        {"counter": CharEstimator(chars_per_token=3.5)},
        {"counter": "chars", "repair": True},
        {"counter": "chars", "pruning": "auto"},
    ],
)
def test_nothing_is_held_where_an_add_decides_or_counts_otherwise(options: dict[str, Any]) -> None:
    if options.get("pruning") == "auto":
        options = {**options, "pruning": ToolResultPruning()}
    manager = MessageContextManager(10**6, **options)
    for i in range(50):
        manager.add(plain(i))
    assert held(manager) == 0


def test_adds_that_are_not_plain_write_the_run_first() -> None:
    manager = MessageContextManager(10**6, counter="chars")
    for i in range(20):
        manager.add(plain(i))
    manager.add(plain(20), pinned=True)  # pinned: the usual path, after the held adds
    manager.add(plain(21), priority=3)
    manager.add({"role": "user", "content": "x", "name": "bob"})  # three keys
    assert held(manager) == 0
    assert [item.index for item in manager.history()] == list(range(23))


def test_a_subscriber_arriving_mid_run_is_told_of_the_next_add_only() -> None:
    manager = MessageContextManager(10**6, counter="chars")
    for i in range(20):
        manager.add(plain(i))
    events: list[Any] = []
    manager.subscribe(events.append)
    manager.add(plain(20))
    assert [type(e) for e in events] == [MessageAdded] and events[0].index == 20
    assert len(manager) == 21 and held(manager) == 0


def test_an_invalid_message_mid_run_loses_nothing_held() -> None:
    manager = MessageContextManager(10**6, counter="chars")
    for i in range(20):
        manager.add(plain(i))
    with pytest.raises(InvalidMessageError):
        manager.add({"role": "robot", "content": "beep"})
    assert len(manager) == 20


def test_clear_forgets_held_adds() -> None:
    manager = MessageContextManager(10**6, counter="chars")
    for i in range(20):
        manager.add(plain(i))
    manager.clear()
    assert len(manager) == 0 and manager.token_count == 0
    manager.add(plain(0))
    assert manager.messages == [plain(0)]


@pytest.mark.parametrize("enabled", [True, False])
def test_a_long_run_is_written_with_the_collector_paused_and_restored(enabled: bool) -> None:
    manager = MessageContextManager(10**6, counter="chars")
    for i in range(500):
        manager.add(plain(i))
    seen: list[bool] = []
    original = pending._write_run

    def spy(*args: Any) -> None:
        seen.append(gc.isenabled())
        original(*args)

    pending._write_run = spy  # type: ignore[assignment]
    (gc.enable if enabled else gc.disable)()
    try:
        assert len(manager) == 500
        assert seen == [False] and gc.isenabled() is enabled
    finally:
        pending._write_run = original
        gc.enable()


def test_concurrent_writers_and_readers_lose_and_reorder_nothing() -> None:
    manager = MessageContextManager(10**9, counter="chars")
    writers, each = 4, 2_000
    done = threading.Event()
    errors: list[BaseException] = []

    def write(w: int) -> None:
        try:
            for i in range(each):
                manager.add({"role": "user", "content": f"{w}:{i}"})
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
    ledger = manager._ledger
    assert ledger.seq == list(range(writers * each))
    assert ledger.cum[-1] == ledger.total == sum(js_tokens(t) for t in texts)


def test_a_run_that_outgrows_the_room_a_read_left_still_cuts() -> None:
    """A read's cut frees much room (a long first turn goes), so the next run's first adds fit
    and its later held ones do not: their cut must still be taken by the next read."""
    messages = [{"role": "user", "content": "x" * 1_000}]
    messages += [plain(i + 1, "y" * 40) for i in range(120)]
    expected = naive_fifo_held(messages, set(), 400)
    for second in range(16, 60):  # the first run's cut frees the room the second fills
        manager = MessageContextManager(400, reserve_tokens=0, strategy="fifo")
        for i, message in enumerate(messages):
            manager.add(message)
            if i in (15, second):
                assert positions(manager.messages, messages) == expected[i]
        assert positions(manager.messages, messages) == expected[-1]


def test_a_fifo_manager_given_pruning_holds_no_more() -> None:
    """With a pruned view, FIFO evicts on the pruned sums on every add, even with room: the
    adds after ``use_pruning`` take the usual path (and with ``None`` may be held again)."""
    managers = [MessageContextManager(1_000, reserve_tokens=0) for _ in range(2)]
    never_holding(managers[1])
    for manager in managers:
        for k in range(6):
            call = {"id": f"c{k}", "type": "function", "function": {"name": "f", "arguments": ""}}
            manager.add({"role": "user", "content": f"q{k}"})
            manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
            manager.add({"role": "tool", "tool_call_id": f"c{k}", "content": "ok"})
        manager.get_context()
        manager.use_pruning(ToolResultPruning())
        for i in range(120):
            manager.add(plain(i, "y" * 20))
        assert held(manager) == 0
    assert ledger_state(managers[0]) == ledger_state(managers[1])
    managers[0].use_pruning(None)
    for i in range(20):
        managers[0].add(plain(i))
    assert held(managers[0]) > 0


@pytest.mark.parametrize("run", [5, 50])  # written one by one, and at once
def test_a_reader_without_the_lock_waits_for_a_drain(run: int) -> None:
    """``token_count`` takes no lock: while another thread writes held adds into the ledger,
    it must wait for them rather than read a half-written ledger."""
    manager = MessageContextManager(10**6, counter="chars", strategy="sliding_window")
    texts = [f"{i:040d}" for i in range(pending.RUN + run)]
    for text in texts:
        manager.add({"role": "user", "content": text})
    assert held(manager) == run
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(manager.token_count))
    original = pending.Message

    def record(role: str, text: str) -> Any:
        if not reader.is_alive() and not seen:
            reader.start()
            reader.join(0.2)  # blocked on the lock, not done
        return original(role, text)

    with mock.patch.object(pending, "Message", record):
        manager.add({"role": "user", "content": "x"}, priority=1)  # the usual path: drains
    reader.join()
    assert seen == [sum(map(js_tokens, texts)) + js_tokens("x")]  # after the add, all of it


def test_a_reader_without_the_lock_waits_for_a_deferred_cut() -> None:
    manager = MessageContextManager(400, reserve_tokens=0)  # FIFO: cuts wait for a read
    for i in range(200):
        manager.add(plain(i, "y" * 40))
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(manager.token_count))
    original = _ledger.Ledger.evict_before

    def evict_before(ledger: Any, new_floor: int) -> Any:
        if not reader.is_alive() and not seen:
            reader.start()
            reader.join(0.2)
        return original(ledger, new_floor)

    with mock.patch.object(_ledger.Ledger, "evict_before", evict_before):
        assert len(manager) > 0  # takes the cut under the lock
    reader.join()
    assert seen == [manager.token_count] and manager.token_count <= 400
