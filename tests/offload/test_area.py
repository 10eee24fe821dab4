"""The in-memory area, paging, stubs, and the view's use of an area (manager and trim())."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import MessageContextManager, trim
from context_manager.compaction.pruning import ToolResultPruning
from context_manager.counting import get_counter
from context_manager.errors import (
    ConfigurationError,
    ContextManagerError,
    OffloadError,
    OffloadHandleError,
    OffloadNotFoundError,
)
from context_manager.offload import (
    MemoryOffload,
    OffloadOnly,
    attach_offload,
    offload_results,
    recall,
    run_recall,
)

HANDLE = re.compile(r"cm-off:[0-9a-f]{8}-[0-9a-f]{32}")


def text_of(n: int) -> str:
    return "\n".join(f"line {i}: ümlaut 🙂 value={i * 7}" for i in range(1, n + 1))


def call(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "cat", "arguments": "{}"}}
        ],
    }


def handles(messages: list[Any]) -> list[str]:
    return list(dict.fromkeys(h for m in messages for h in HANDLE.findall(str(m.get("content")))))


@pytest.mark.parametrize("how", ["lines", "bytes"])
def test_paging_with_next_reads_everything_back_within_the_cap(how: str) -> None:
    # a line far over the cap in the middle: lines page it by bytes, then go on by lines
    text = text_of(1500) + "\n" + "x" * 30_000 + "\n" + text_of(1500)
    area = MemoryOffload("s")
    handle = area.put(text)
    o200k = get_counter("o200k_base")
    args: dict[str, Any] = {"lines": [1, None]} if how == "lines" else {"bytes": [0, None]}
    rebuilt = ""
    while True:
        page = recall(area, handle, max_tokens=700, counter=o200k, **args)
        assert 0 < o200k.count_text(page.text) <= 700
        assert page.total_bytes == len(text.encode()) and page.total_lines == 3001
        ends_line = page.unit == "lines" or (page.next is not None and "lines" in page.next)
        rebuilt += page.text + ("\n" if ends_line else "")
        if page.next is None:
            break
        args = page.next
    assert rebuilt.rstrip("\n") == text


def test_pattern_search_pages_and_reports_line_numbers() -> None:
    area = MemoryOffload("s")
    text = text_of(5000)
    handle = area.put(text)
    page = recall(area, handle, pattern="VALUE=7000", max_tokens=50, counter="chars")
    assert page.text == "1000: line 1000: ümlaut 🙂 value=7000"
    assert page.matches == 1
    seen, args = [], {"pattern": "value=70"}
    while True:
        page = recall(area, handle, max_tokens=40, counter="chars", **args)
        seen += [int(row.split(":", 1)[0]) for row in page.text.splitlines() if page.matches]
        if page.next is None:
            break
        args = page.next
    expected = [n for n, row in enumerate(text.split("\n"), 1) if "value=70" in row]
    assert seen == expected


def test_errors_are_typed_and_readable_by_a_model() -> None:
    area, other = MemoryOffload("a"), MemoryOffload("b")
    handle = area.put("data")
    with pytest.raises(OffloadHandleError):
        other.get(handle)
    with pytest.raises(OffloadHandleError):
        area.get("/etc/passwd")
    with pytest.raises(ConfigurationError):
        recall(area, handle, bytes=[0, 2], pattern="x")
    with pytest.raises(ConfigurationError):
        recall(area, handle, lines=["a", 2])  # type: ignore[list-item]
    assert run_recall(area, '{"handle": "/etc/passwd"}').startswith("recall error: ")
    assert run_recall(area, "not json") == "recall error: the arguments are not valid JSON"
    assert run_recall(area, {"handle": handle, "mode": 1}).startswith("recall error: unknown")
    assert run_recall(area, {"handle": handle}).endswith("\ndata")


def test_memory_area_is_bounded_oldest_first() -> None:
    area = MemoryOffload("s", max_bytes=100)
    first = area.put("a" * 40)
    second = area.put("b" * 40)
    third = area.put("c" * 40)  # 120 bytes: the oldest goes
    assert area.stored_bytes == 80
    with pytest.raises(OffloadNotFoundError):
        area.get(first)
    assert area.get(second).text == "b" * 40
    assert area.get(third).text == "c" * 40
    with pytest.raises(OffloadError):
        area.put("d" * 101)
    assert area.delete_entries() == 2
    with pytest.raises(OffloadNotFoundError):
        area.get(third)


def test_same_key_same_handle_and_retire_revive() -> None:
    area = MemoryOffload("s")
    one = area.put("payload", key="k")
    assert area.put("payload", key="k") == one
    area.retire()
    with pytest.raises(OffloadNotFoundError):
        area.get(one)
    area.revive([one, "not a handle"])
    assert area.get(one).text == "payload"
    area.retire()
    assert area.put("payload", key="k") == one
    assert area.get(one).text == "payload"


def test_offload_results_at_the_door_openai_and_anthropic() -> None:
    area = MemoryOffload("s")
    big = text_of(4000)
    openai_msg = {"role": "tool", "tool_call_id": "c1", "content": big}
    small = {"role": "tool", "tool_call_id": "c2", "content": "ok"}
    anthropic_msg = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": big}],
    }
    out = offload_results(openai_msg, area, max_chars=1000, head_chars=100, tail_chars=100)
    assert out is not openai_msg and openai_msg["content"] == big  # a copy, input untouched
    assert offload_results(small, area) is small
    (handle,) = handles([out])
    assert recall(area, handle, lines=[2000, 2000]).text == big.split("\n")[1999]
    blocks = offload_results(anthropic_msg, area, max_chars=1000)["content"]
    assert HANDLE.findall(str(blocks))[0] == handle  # same text, same handle


def test_trim_with_offload_only_keeps_a_recallable_stub() -> None:
    area = MemoryOffload("s")
    big = text_of(20_000).replace("line 9876:", "NEEDLE 9876:")
    messages = [{"role": "user", "content": "read"}, call("c1")]
    messages.append({"role": "tool", "tool_call_id": "c1", "content": big})
    kept = trim(messages, 3000, counter="chars", pruning=OffloadOnly(area))
    assert len(kept) == 3 and "NEEDLE" not in kept[-1]["content"]
    (handle,) = handles(kept)
    assert "NEEDLE 9876" in recall(area, handle, pattern="needle").text
    # without an area the cut is the plain one
    plain = trim(messages, 3000, counter="chars")
    assert not handles(plain)


def test_pruning_trims_to_stubs_and_clear_restores_after_revive() -> None:
    area = MemoryOffload("s")
    pruning = ToolResultPruning(soft_ratio=0.0, hard_ratio=None, keep_last=1, offload=area)
    manager = MessageContextManager(40_000, counter="chars", pruning=pruning)
    for i in range(3):
        manager.add({"role": "user", "content": f"read {i}"})
        manager.add(call(f"c{i}"))
        manager.add({"role": "tool", "tool_call_id": f"c{i}", "content": f"F{i}\n" + text_of(300)})
    found = handles(manager.get_context())
    assert len(found) == 2  # two old results trimmed to stubs, the newest kept whole
    assert [recall(area, h, lines=[1, 1]).text for h in found] == ["F0", "F1"]


def test_attach_offload_follows_clear() -> None:
    area = MemoryOffload("s")
    manager = MessageContextManager(3000, counter="chars")
    attach_offload(manager, area)
    messages = [{"role": "user", "content": "read"}, call("c1")]
    messages.append({"role": "tool", "tool_call_id": "c1", "content": text_of(5000)})
    for m in messages:
        manager.add(m)
    (handle,) = handles(manager.get_context())
    manager.clear()
    with pytest.raises(OffloadNotFoundError):  # a cleared history's handles stop resolving
        recall(area, handle)
    for m in messages:
        manager.add(m)
    assert handles(manager.get_context()) == [handle]
    assert recall(area, handle, lines=[1, 1]).text == "line 1: ümlaut 🙂 value=7"


def test_an_area_that_refuses_leaves_the_plain_cut(caplog: pytest.LogCaptureFixture) -> None:
    area = MemoryOffload("s", max_bytes=1000)  # every big output is over its bound
    messages = [{"role": "user", "content": "read"}, call("c1")]
    messages.append({"role": "tool", "tool_call_id": "c1", "content": text_of(5000)})
    kept = trim(messages, 3000, counter="chars", pruning=OffloadOnly(area))
    assert not handles(kept) and "[Tool result trimmed:" in kept[-1]["content"]
    assert "offload failed" in caplog.text
    with pytest.raises(OffloadError):  # at the door the same failure is raised, not hidden
        offload_results(messages[-1], area, max_chars=100)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["handle", "lines", "bytes", "pattern", "max_tokens", "other"]), _JSON
    ),
    st.booleans(),
)
def test_run_recall_answers_text_for_any_arguments(args: dict[str, Any], real: bool) -> None:
    area = _FUZZ_AREA
    if real:
        args["handle"] = _FUZZ_HANDLE
    out = run_recall(area, args)
    assert isinstance(out, str) and out
    with contextlib.suppress(ContextManagerError):
        recall(area, args.get("handle"), **{k: v for k, v in args.items() if k in _OPTIONS})


_OPTIONS = {"lines", "bytes", "pattern", "max_tokens"}
_FUZZ_AREA = MemoryOffload("fuzz")
_FUZZ_HANDLE = _FUZZ_AREA.put(text_of(300) + "\n" + "🙂" * 5000)


def test_attach_offload_without_an_area_gives_the_manager_its_own() -> None:
    manager = MessageContextManager(3000, counter="chars")
    area = attach_offload(manager)
    assert isinstance(area, MemoryOffload)
    for m in [{"role": "user", "content": "read"}, call("c1")]:
        manager.add(m)
    manager.add({"role": "tool", "tool_call_id": "c1", "content": text_of(5000)})
    (handle,) = handles(manager.get_context())
    assert recall(area, handle, lines=[5000, 5000]).text == "line 5000: ümlaut 🙂 value=35000"


def test_a_page_stays_within_its_cap_whatever_the_pattern() -> None:
    area = MemoryOffload("s")
    handle = area.put(text_of(200))
    missing = recall(area, handle, pattern="Z" * 1_000, max_tokens=100, counter="chars")
    assert missing.matches == 0 and len(missing.text) <= 400  # 100 tokens of chars/4
    with pytest.raises(ConfigurationError):
        recall(area, handle, pattern="Z" * 1_001)
    assert run_recall(area, {"handle": handle, "pattern": "Z" * 5_000}).startswith("recall error")


def _nested(depth: int) -> list[Any]:
    value: list[Any] = [0]
    for _ in range(depth):
        value = [value]
    return value


_DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "arguments",
    [
        '{"handle": ' + _DEEP + "}",  # past the JSON reader's recursion limit
        '{"handle": "HANDLE", "lines": ' + _DEEP + "}",
        {"handle": "HANDLE", "lines": _nested(100_000)},  # too deep to describe in an error
        {"handle": "HANDLE", 1: 2, "x": 3},  # unknown keys of mixed types
    ],
    ids=["deep-json", "deep-lines-json", "deep-lines-dict", "mixed-keys"],
)
def test_run_recall_answers_text_for_hostile_arguments(arguments: Any) -> None:
    """docs/guide/offload.md: run_recall always answers text, an error included."""
    area = MemoryOffload("s")
    handle = area.put(text_of(50))
    if isinstance(arguments, str):
        arguments = arguments.replace("HANDLE", handle)
    else:
        arguments = {k: handle if v == "HANDLE" else v for k, v in arguments.items()}
    out = run_recall(area, arguments)
    assert out.startswith("recall error: ")


@pytest.mark.parametrize("size", [150, 500, 1_000, 3_000, 20_000])
def test_offload_results_never_makes_a_stub_larger_than_the_result(size: int) -> None:
    area = MemoryOffload("s")
    text = "z" * (size - 1) + "!"
    message = {"role": "tool", "tool_call_id": "c", "content": text}
    out = offload_results(message, area, max_chars=100)
    stub = out["content"]
    assert len(stub) <= len(text)
    if out is message:  # the stub would not have shrunk it: left whole
        assert size < 500
        return
    assert len(stub) < len(text) and stub.startswith("[Tool result offloaded: ")
    head, tail = (int(n) for n in re.findall(r"the first (\d+) and last (\d+)", stub)[0])
    previews = stub.split(".]\n\n", 1)[1]
    assert head + tail <= 100 and previews.startswith("z" * head + "\n...\n")
    assert previews == "z" * head + "\n...\n" + "z" * (tail - 1) + "!"
    (handle,) = set(HANDLE.findall(stub))
    assert recall(area, handle, max_tokens=10_000, counter="chars").text == text


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        ({"lines": [5, 2]}, "lines must end where it starts or after"),
        ({"bytes": [10, 5]}, "bytes must end where it starts or after"),
        ({"lines": [5000, 6000]}, "lines start past the end: the result has 1000"),
        ({"bytes": [99_999, None]}, "bytes start past the end"),
    ],
)
def test_a_range_that_selects_nothing_is_an_error_the_model_can_correct(
    asked: dict[str, Any], said: str
) -> None:
    """An empty page would tell the model nothing; the error says what to ask instead."""
    area = MemoryOffload("s")
    handle = area.put("\n".join(f"line {i}" for i in range(1000)))
    assert run_recall(area, {"handle": handle, **asked}).startswith(f"recall error: {said}")
    assert "line 999" in run_recall(area, {"handle": handle, "lines": [1000, 1000]})
