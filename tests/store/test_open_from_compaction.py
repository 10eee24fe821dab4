"""A compacted session opens from its latest compaction: what a reopened manager holds and sends
is what the live one held and sent, on every backend, sync and async.

The oracle is the live manager (what the user had before closing) and a ``strict=True`` open,
which reads and checks every record. The open reads the message records the latest compaction
left out no further than to count them; a broken one of them is therefore not reported (it is
not read), while a strict open still is.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.compaction import SimpleCompaction, compactions
from context_manager.errors import StoreConflictError, StoreCorruptionError

from .backends import Backend, user

SMALL = {"max_tokens": 6_000, "system_prompt": "You are terse."}


def exchange(i: int) -> list[dict[str, Any]]:
    """A user turn answered through a tool call, as an OpenAI chat history holds it."""
    call = {"id": f"call_{i}", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    return [
        user(f"question {i}: " + "why " * 40),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{i}", "content": "found " * 60},
        {"role": "assistant", "content": f"answer {i}"},
    ]


def observed(manager: MessageContextManager) -> dict[str, Any]:
    """Everything a caller can read of a manager's state."""
    stats = manager.stats()
    return {
        "history": [
            (h.index, h.message, h.tokens, h.pinned, h.priority) for h in manager.history()
        ],
        "context": manager.get_context(),
        "token_count": manager.token_count,
        "used_tokens": manager.used_tokens,
        "summary": manager.summary,
        "compaction": manager.compaction,
        "system": manager.system_message,
        "compactions": [entry.to_dict() for entry in compactions(manager)],
        "calibration": (stats.calibrated, stats.calibration),
        "context_tokens": stats.context_tokens,
    }


def report(manager: MessageContextManager, i: int) -> None:
    """A provider's usage report for the context just sent: a little above our count, as a
    tokenizer that counts more than the estimate would bill it (a sample calibration uses)."""
    manager.record_usage(manager.context_tokens() * (120 + i % 7) // 100)


def build(manager: MessageContextManager, *, pin_first: bool = False) -> int:
    """Two compactions (one by the compaction package, one by hand) with usage reports, a
    checkpoint and messages between them; returns the checkpoint's id."""
    for i in range(12):
        for k, message in enumerate(exchange(i)):
            manager.add(message, pinned=pin_first and i == 0 and k == 0)
        report(manager, i)
    checkpoint = manager.checkpoint()
    manager.compact(
        lambda text: "the first dozen questions", policy=SimpleCompaction(max_preserved_messages=4)
    )
    for i in range(12, 20):
        manager.extend(exchange(i))
        report(manager, i)
    kept = manager.history()[-6].index
    manager.apply_compaction({"role": "user", "content": "summary of everything"}, kept)
    for i in range(20, 23):
        manager.extend(exchange(i))
    report(manager, 99)
    return checkpoint


def reopen(backend: Backend, **options: Any) -> MessageContextManager:
    return backend.manager("s", **{**SMALL, **options})


def assert_reopens_as(live: MessageContextManager, backend: Backend) -> None:
    """Closed and opened again, the session is what ``live`` held and sent."""
    expected = observed(live)
    live.store.close()
    assert observed(reopen(backend)) == expected


@pytest.mark.parametrize("pin_first", [False, True])
def test_a_reopened_compacted_session_holds_and_sends_what_the_live_one_did(
    backend: Backend, pin_first: bool
) -> None:
    live = backend.manager("s", **SMALL)
    build(live, pin_first=pin_first)
    expected = observed(live)
    assert expected["history"][0][0] >= (0 if pin_first else 70)  # the compactions cut it
    live.store.close()

    reopened = reopen(backend)
    assert observed(reopened) == expected
    strict = reopen(backend, strict=True)  # reads and checks every record
    assert observed(strict) == expected
    strict.store.close()

    # It goes on as the live one would: another compaction, then a reopen again.
    for i in range(23, 26):
        reopened.extend(exchange(i))
    reopened.compact(
        lambda text: "third summary", policy=SimpleCompaction(max_preserved_messages=2)
    )
    reopened.add(user("and now?"))
    expected = observed(reopened)
    reopened.store.close()
    assert observed(reopen(backend)) == expected
    assert observed(reopen(backend, strict=True)) == expected


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "bedrock"])
def test_a_provider_that_keeps_roles_apart_sends_what_the_live_one_did(
    backend: Backend, provider: str
) -> None:
    """Those providers never let a cut bring two turns of one role together. Between a pinned
    user turn and the first user turn a compaction kept, the compacted answer is gone: the two
    are not neighbours, whether the manager held that answer until the compaction or its
    reader never read it. The kept turn is therefore not sent."""
    options = {"max_tokens": 2_000, "provider": provider}
    live = backend.manager("s", **options)
    live.add(user("pinned rule"), pinned=True)
    live.add({"role": "assistant", "content": "ok"})
    live.add(user("question 2"))
    live.compact(lambda text: "earlier turns", policy=SimpleCompaction(max_preserved_messages=1))
    live.add(user("question 3"))
    expected = observed(live)
    sent = [  # Bedrock merges the turns of one role into one message: their texts, in order
        part if isinstance(part, str) else part["text"]
        for m in expected["context"]
        for part in ([m["content"]] if isinstance(m["content"], str) else m["content"])
    ]
    assert sent[-2:] == ["pinned rule", "question 3"]
    live.store.close()
    assert observed(backend.manager("s", **options)) == expected
    assert observed(backend.manager("s", strict=True, **options)) == expected


def test_a_revert_past_the_latest_compaction_reads_the_records_it_skipped(
    backend: Backend,
) -> None:
    live = backend.manager("s", **SMALL)
    checkpoint = build(live)
    live.revert_to(checkpoint)
    assert len(live.history()) == 48 and live.summary is None
    live.store.close()

    checkpoint = build(writer := reopen(backend))  # compacted again after the revert
    writer.store.close()
    reopened = reopen(backend)
    assert reopened.history()[0].index > 96
    reopened.revert_to(checkpoint)  # before both compactions: the messages it never read
    reverted = observed(reopened)
    assert [h[0] for h in reverted["history"]] == list(range(96))
    reopened.store.close()
    assert observed(reopen(backend, strict=True)) == reverted


def test_the_open_does_not_read_the_messages_the_compaction_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    backend = Backend("jsonl", str(tmp_path / "sessions"))
    live = backend.manager("s", **SMALL)
    build(live)
    expected = observed(live)
    live.store.close()
    log = tmp_path / "sessions" / "s" / "context.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    third = next(k for k, line in enumerate(lines) if line.startswith(b'{"role":"user"'))
    lines[third] = b'{"role":"user","content":"damaged ' + b"\xff" * 3 + b'"}\n'  # not UTF-8
    log.write_bytes(b"".join(lines))

    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        assert observed(reopen(backend)) == expected
    assert "corrupt" not in caplog.text  # never read: its message was compacted away
    with pytest.raises(StoreCorruptionError):
        reopen(backend, strict=True)


@pytest.mark.parametrize(
    ("written", "read"),
    [
        # evicts on add: what it holds depends on every add
        ({"strategy": "fifo"}, {"strategy": "fifo"}),
        # repairs the tool-call protocol as messages come: its repairer follows every one
        ({"repair": True}, {"repair": True}),
        # another counter than the one the counts and usage reports were stored under
        ({}, {"counter": "chars"}),
    ],
    ids=["fifo", "repair", "another-counter"],
)
def test_a_manager_that_needs_every_record_reads_them_all(
    backend: Backend, written: dict[str, Any], read: dict[str, Any]
) -> None:
    live = backend.manager("s", **{**SMALL, **written})
    build(live)
    live.store.close()
    expected = observed(reopen(backend, strict=True, **read))
    assert observed(reopen(backend, **read)) == expected


def test_a_compaction_without_history_indices_is_read_from_every_record(
    backend: Backend,
) -> None:
    """A ``_compaction`` record another tool (or an earlier version) wrote names its cut only
    by ``first_kept_index``, a message line index."""
    store = backend.store("s")
    messages = [
        user(f"u{i}") if i % 2 == 0 else {"role": "assistant", "content": f"a{i}"}
        for i in range(10)
    ]
    store.append(messages)
    store.append(
        [{"role": "_compaction", "content": None, "summary": "old turns", "first_kept_index": 6}]
    )
    store.append([user("u10")])
    store.close()
    reopened = reopen(backend)
    assert [h.index for h in reopened.history()] == [6, 7, 8, 9, 10]
    assert reopened.summary == {"role": "user", "content": "old turns"}


def test_an_async_open_reads_from_the_latest_compaction_too(backend: Backend) -> None:
    live = backend.manager("s", **SMALL)
    build(live)
    expected = observed(live)
    live.store.close()

    assert backend.opened_in_tasks(observed, 4, **SMALL) == [expected] * 4


def test_a_turn_compacted_in_the_middle_keeps_its_user_message(backend: Backend) -> None:
    """An agent loop: one user turn, then tool calls; a compaction inside it keeps the turn's
    user message (the latest one), so the reader starts there, before the cut."""
    live = backend.manager("s", **SMALL)
    live.extend(exchange(0))
    live.add(user("do the long task"))
    for i in range(1, 30):
        live.extend(exchange(i)[1:3])  # call, result
        report(live, i)
    kept = live.history()[-4].index
    live.apply_compaction({"role": "user", "content": "what the loop did"}, kept)
    live.add({"role": "assistant", "content": "done"})
    expected = observed(live)
    assert [h[0] for h in expected["history"]][:2] == [4, kept]  # the turn, then the cut
    live.store.close()
    assert observed(reopen(backend)) == expected
    assert observed(reopen(backend, strict=True)) == expected


def test_a_record_the_manager_skipped_before_the_cut_makes_it_read_everything(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """A message record another tool wrote that the manager refuses is not in the history:
    the compaction after it cannot name where a reader starts, so every record is read."""
    caplog.set_level(logging.ERROR, logger="context_manager.store")  # the skip warnings
    store = backend.store("s")
    store.append([{"role": "tool", "tool_call_id": "never_called", "content": "result"}])
    store.close()
    live = reopen(backend)
    build(live)
    assert_reopens_as(live, backend)


def test_a_compaction_that_cannot_be_applied_leaves_every_message_held(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """Its summary names an object type nothing here can rebuild: the record is skipped with a
    warning, as by a strict-free full read, and what it would have cut stays."""
    store = backend.store("s")
    store.append([user(f"u{i}") for i in range(6)])
    summary = {"type": "no_such_package.Summary", "payload": {"text": "gone"}}
    store.append(
        [
            {
                "role": "_compaction",
                "content": None,
                "summary": "gone",
                "first_kept_index": 4,
                "summary_message": summary,
                "_cm": {"history": [4, 4, []]},
            }
        ]
    )
    store.append([user("u6")])
    store.close()
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = reopen(backend)
    assert [h.index for h in reopened.history()] == list(range(7))
    assert reopened.summary is None
    assert "cannot be replayed" in caplog.text or "rejected" in caplog.text


@pytest.mark.parametrize("fallback", ["a usage report without our count", "an unknown summary"])
def test_a_damaged_record_is_reported_once_when_the_open_reads_everything_after_all(
    backend: Backend, caplog: pytest.LogCaptureFixture, fallback: str
) -> None:
    """The open starts at the compaction, then finds it needs every record: the reader (a usage
    report it cannot count) or the replay (a summary it cannot rebuild) falls back. A damaged
    record both passes met is reported once, as by an open that read everything at once."""
    store = backend.store("s")
    store.append([user(f"u{i}") for i in range(3)])
    store.append([{"role": "_checkpoint", "content": None, "id": "not a number"}])
    store.append([user(f"u{i}") for i in range(3, 6)])
    compaction: dict[str, Any] = {
        "role": "_compaction",
        "content": None,
        "summary": "s",
        "first_kept_index": 4,
        "_cm": {"history": [4, 4, []]},
    }
    if fallback == "an unknown summary":
        compaction["summary_message"] = {"type": "no_such_package.Summary", "payload": {}}
    else:
        store.append([{"role": "_usage", "content": None, "token_count": 900}])
    store.append([compaction])
    store.append([user("u6")])
    store.close()
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = reopen(backend)
    assert caplog.text.count("needs an integer 'id'") == 1
    first = 0 if fallback == "an unknown summary" else 4  # the summary is skipped: nothing cut
    assert [h.index for h in reopened.history()] == list(range(first, 7))


@pytest.mark.parametrize(
    "history",
    [
        *([4, start, []] for start in (5, "4", True, -1, 10**16, 4.0, None)),
        *([4, 4, below] for below in ([4], [-1], ["1"], [True], "x", [1, 1], None, [0])),
        "4",
        [4],
        [4, 4],
        [[4], 4, []],
        [None, 4, []],
    ],
)
def test_a_damaged_starting_point_never_changes_what_a_reopen_holds(
    tmp_path: Path, history: Any
) -> None:
    """A reader starts only where the record's own cut allows (never past the messages it kept)
    and otherwise reads every record: the result is always the full read's."""
    backend = Backend("sqlite", f"sqlite:///{tmp_path}/store.db")
    store = backend.store("s")
    store.append([user(f"u{i}") for i in range(8)])
    store.append(
        [
            {
                "role": "_compaction",
                "content": None,
                "summary": "s",
                "first_kept_index": 4,
                "_cm": {"history": history},
            }
        ]
    )
    store.close()
    expected = observed(reopen(backend, strict=True))
    assert observed(reopen(backend)) == expected


def test_usage_reports_after_the_starting_point_calibrate_as_a_full_read(
    backend: Backend,
) -> None:
    """An agent loop whose reports all come after the turn the compaction keeps, reopened with
    another counter: each report is counted again from the replayed context, which must hold
    the messages the full read holds, so this open reads everything."""
    live = backend.manager("s", **SMALL)
    for i in range(6):
        live.extend(exchange(i))
    live.add(user("run the long task"))
    for i in range(6, 30):
        live.extend(exchange(i)[1:3])
        report(live, i)
    live.apply_compaction({"role": "user", "content": "the loop so far"}, live.history()[-4].index)
    live.add({"role": "assistant", "content": "done"})
    live.store.close()
    expected = observed(reopen(backend, strict=True, counter="chars"))
    assert observed(reopen(backend, counter="chars")) == expected


def test_a_line_skipped_as_unreadable_before_the_cut_keeps_the_indices(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A line the writer's own open skipped as unreadable is in no history: a reader counting
    the message lines before the starting point would count it, so the compaction names none."""
    caplog.set_level(logging.ERROR, logger="context_manager.store")
    backend = Backend("jsonl", str(tmp_path / "sessions"))
    first = backend.manager("s", **SMALL)
    first.extend(user(f"msg {i}") for i in range(10))
    first.store.close()
    log = tmp_path / "sessions" / "s" / "context.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    lines[3] = b'{"role":"user","content":"torn mess' + lines[4]  # a torn line, then appended
    del lines[4]
    log.write_bytes(b"".join(lines))

    live = backend.manager("s", **SMALL)  # skips the merged line with a warning
    live.extend(user(f"msg {i}") for i in range(10, 20))
    live.apply_compaction(user("summary"), 15)
    live.add(user("after"))
    assert_reopens_as(live, backend)


def test_a_line_another_writer_left_unreadable_keeps_the_indices(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same, for an unreadable line the writer met catching up with another writer."""
    caplog.set_level(logging.ERROR, logger="context_manager.store")
    backend = Backend("jsonl", str(tmp_path / "sessions"))
    live = backend.manager("s", **SMALL)
    live.extend(user(f"msg {i}") for i in range(10))
    with open(tmp_path / "sessions" / "s" / "context.jsonl", "ab") as log:
        log.write(b'{"role":"user","content":"cut short\n')  # another writer's damaged line
    with pytest.raises(StoreConflictError):
        live.add(user("msg 10"))
    live.store.reload(live)  # reads the lines written since, skipping the damaged one
    live.extend(user(f"msg {i}") for i in range(10, 20))
    live.apply_compaction(user("summary"), 15)
    live.add(user("after"))
    assert_reopens_as(live, backend)


@pytest.mark.parametrize("held_before_the_cut", ["a pinned message", "the latest user turn"])
def test_messages_held_before_the_cut_are_read_and_those_between_are_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, held_before_the_cut: str
) -> None:
    """A pinned task statement, or the one user turn of a long agent loop, stays held before
    the cut: the open reads it, and still skips the compacted messages between it and the cut
    (a damaged one there goes unnoticed; a strict open reports it)."""
    backend = Backend("jsonl", str(tmp_path / "sessions"))
    live = backend.manager("s", **SMALL)
    pinned = held_before_the_cut == "a pinned message"
    live.add(user("the task: " + "do it " * 20), pinned=pinned)
    for i in range(30):
        if pinned:
            live.extend(exchange(i))
        else:
            live.extend(exchange(i)[1:3])
        report(live, i)
    live.apply_compaction({"role": "user", "content": "so far"}, live.history()[-6].index)
    live.add({"role": "assistant", "content": "done"})
    expected = observed(live)
    assert expected["history"][0][0] == 0 and expected["history"][1][0] > 50
    live.store.close()
    log = tmp_path / "sessions" / "s" / "context.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    tenth = [k for k, line in enumerate(lines) if line.startswith(b'{"role":"tool"')][10]
    lines[tenth] = b'{"role":"tool","content":"damaged ' + b"\xff" * 3 + b'"}\n'
    log.write_bytes(b"".join(lines))

    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        assert observed(reopen(backend)) == expected
    assert "corrupt" not in caplog.text
    with pytest.raises(StoreCorruptionError):
        reopen(backend, strict=True)
