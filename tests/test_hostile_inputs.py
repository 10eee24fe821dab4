"""Hostile values through the public API: integers past Python's digit limit, values that contain
themselves or nest 100,000 levels deep, in messages, tool definitions, SDK objects and stored
sessions. Each must end in a typed error that says where (message index and field path, or
line number), in time that grows linearly (``tests/linear_time.py``), never in a bare
``ValueError`` / ``RecursionError`` or a stall; a stored line that cannot be read is skipped with
a warning (``StoreCorruptionError`` in strict mode) instead of making the session unopenable.
"""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager, trim
from context_manager.counting import count_tokens
from context_manager.errors import (
    ConfigurationError,
    InvalidMessageError,
    StoreCorruptionError,
)
from context_manager.messages import normalize, to_json_text
from context_manager.messages.nesting import MAX_DEPTH
from context_manager.providers import validate
from context_manager.store import JsonlLog, SessionIndex
from tests.linear_time import assert_linear

LIMIT = sys.get_int_max_str_digits()
needs_digit_limit = pytest.mark.skipif(LIMIT == 0, reason="Python runs without a digit limit")
#: An integer Python refuses to turn into text (or read from text) under its digit limit.
HUGE = 10 ** (LIMIT + 100) if LIMIT else 0
HUGE_TEXT = "9" * (LIMIT + 100)


def nested_dicts(levels: int) -> dict[str, Any]:
    """``levels`` levels of dicts: 1 is ``{}``, 2 is ``{"a": {}}``..."""
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels - 1):
        node["a"] = node = {}
    return root


def nested_lists(levels: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(levels - 1):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


def self_dict() -> dict[str, Any]:
    value: dict[str, Any] = {"type": "loop"}
    value["self"] = value
    return value


def self_list() -> list[Any]:
    value: list[Any] = ["loop"]
    value.append(value)
    return value


#: name -> (builder, size): ``size`` is what the time may grow with (the levels built).
VALUES: dict[str, tuple[Callable[[], Any], int]] = {
    "dict that contains itself": (self_dict, 1_000),
    "list that contains itself": (self_list, 1_000),
    "dicts 10k deep": (lambda: nested_dicts(10_000), 10_000),
    "lists 10k deep": (lambda: nested_lists(10_000), 10_000),
    "dicts 100k deep": (lambda: nested_dicts(100_000), 100_000),
    "lists 100k deep": (lambda: nested_lists(100_000), 100_000),
}


@functools.cache
def value(name: str) -> Any:
    """Built once per run: the library never changes what it is given."""
    return VALUES[name][0]()


def says_nesting(text: str) -> bool:
    return "contains itself" in text or f"more than {MAX_DEPTH} levels" in text


#: Where a message carries the value: its builder and the field path the error must name.
PLACES: dict[str, tuple[Callable[[Any], dict[str, Any]], str]] = {
    "content part": (
        lambda v: {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "x", "v": v}],
        },
        "['content'][1]['v']",
    ),
    "tool-call arguments": (
        lambda v: {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": v}}
            ],
        },
        "['tool_calls'][0]['function']['arguments']",
    ),
    "tool_use input": (
        lambda v: {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": v}],
        },
        "['content'][0]['input']",
    ),
}
FIRST = {"role": "user", "content": "hello"}


def _manager_add(bad: Any) -> None:
    manager = MessageContextManager(10_000)
    manager.add(FIRST)
    manager.add(bad)


#: Entry point -> a call that reads ``bad`` as message 1.
ENTRIES: dict[str, Callable[[Any], object]] = {
    "add": _manager_add,
    "extend": lambda bad: MessageContextManager(10_000).extend([FIRST, bad]),
    "trim": lambda bad: trim([FIRST, bad], 10_000),
    "trim(validate='all')": lambda bad: trim([FIRST, bad], 10_000, validate="all"),
    "trim(counter='tiktoken')": lambda bad: trim([FIRST, bad], 10_000, model="gpt-4o"),
    "count_tokens": lambda bad: count_tokens([FIRST, bad]),
    "count_tokens(chars)": lambda bad: count_tokens([FIRST, bad], counter="chars"),
    "normalize": lambda bad: normalize(bad, 1),
}


def raises_in_linear_time(
    call: Callable[[], object], size: int, error: type[Exception], what: str
) -> str:
    """``call()`` raises ``error``, in time linear in ``size``; returns the error's text.

    Called once before it is timed, so that loading a tokenizer is not counted as its time.
    """
    texts: list[str] = []
    with pytest.raises(error):
        call()

    def run(_: str) -> None:
        with pytest.raises(error) as info:
            call()
        texts.append(str(info.value))

    assert_linear(run, "x" * size, what=what)
    return texts[0]


# --- values that contain themselves or nest too deeply ------------------------------------------
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", VALUES)
@pytest.mark.parametrize("entry", ENTRIES)
def test_self_containing_or_deep_message_is_a_typed_error_naming_where(
    entry: str, name: str, place: str
) -> None:
    build, path = PLACES[place]
    bad = build(value(name))
    text = raises_in_linear_time(
        lambda: ENTRIES[entry](bad), VALUES[name][1], InvalidMessageError, f"{entry}: {name}"
    )
    assert text.startswith("message 1: "), text
    assert path in text and says_nesting(text), text


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", VALUES)
def test_validate_reports_it_as_a_problem_of_that_message(name: str, place: str) -> None:
    bad = PLACES[place][0](value(name))
    problems = validate([FIRST, bad], "anthropic")
    readable = [p for p in problems if p.rule == "readable"]
    assert [p.index for p in readable] == [1]
    assert PLACES[place][1] in readable[0].reason and says_nesting(readable[0].reason)


@pytest.mark.parametrize("name", VALUES)
def test_system_prompt_that_nests_too_deeply_is_refused(name: str) -> None:
    prompt = {"role": "system", "content": [{"type": "x", "v": value(name)}]}
    text = raises_in_linear_time(
        lambda: MessageContextManager(10_000, system_prompt=prompt),
        VALUES[name][1],
        InvalidMessageError,
        f"system_prompt: {name}",
    )
    assert "['content'][0]['v']" in text and says_nesting(text), text


def test_tool_results_nested_in_tool_results_100k_deep() -> None:
    """``normalize`` itself recurses here (a tool_result's blocks are read like a message's)."""
    block: dict[str, Any] = {"type": "text", "text": "leaf"}
    for _ in range(100_000):
        block = {"type": "tool_result", "tool_use_id": "c1", "content": [block]}
    message = {"role": "user", "content": [block]}
    text = raises_in_linear_time(
        lambda: normalize(message, 4), 100_000, InvalidMessageError, "nested tool results"
    )
    assert text.startswith("message 4: ['content'][0]['content'][0]"), text
    assert says_nesting(text)


def test_to_json_text_names_the_field_that_contains_itself() -> None:
    args = {"query": "x", "filters": [self_dict()]}
    with pytest.raises(InvalidMessageError, match=r"\['filters'\]\[0\]\['self'\] is"):
        to_json_text(args)


# --- tool definitions ---------------------------------------------------------------------------
def _tool(schema: Any) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"x": schema}}
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


TOOL_ENTRIES: dict[str, Callable[[list[Any]], object]] = {
    "manager": lambda tools: MessageContextManager(10_000, tools=tools),
    "manager(tiktoken)": lambda tools: MessageContextManager(model="gpt-4o", tools=tools),
    "trim": lambda tools: trim([FIRST], 10_000, tools=tools),
    "count_tokens": lambda tools: count_tokens([FIRST], tools=tools),
    "count_tokens(chars)": lambda tools: count_tokens([FIRST], counter="chars", tools=tools),
}


@pytest.mark.parametrize("name", VALUES)
@pytest.mark.parametrize("entry", TOOL_ENTRIES)
def test_tool_schema_that_nests_too_deeply_is_a_configuration_error(entry: str, name: str) -> None:
    tools = [{"type": "function", "function": {"name": "ok"}}, _tool(value(name))]
    text = raises_in_linear_time(
        lambda: TOOL_ENTRIES[entry](tools), VALUES[name][1], ConfigurationError, entry
    )
    assert text.startswith("tools: [1]['function']['parameters']['properties']['x']"), text
    assert says_nesting(text)


def test_tool_schema_as_deep_as_allowed_is_counted() -> None:
    tools = [_tool(nested_dicts(MAX_DEPTH - 5))]  # tools list, tool, function, parameters, ...
    manager = MessageContextManager(100_000, tools=tools)
    assert manager.tools == tools
    assert count_tokens([FIRST], counter="chars", tools=tools) > count_tokens(
        [FIRST], counter="chars"
    )


# --- SDK objects --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", VALUES)
def test_langchain_tool_call_args_that_nest_too_deeply(name: str) -> None:
    messages = pytest.importorskip("langchain_core.messages")
    bad = messages.AIMessage(
        content="", tool_calls=[{"id": "c1", "name": "f", "args": {"v": value(name)}}]
    )
    text = raises_in_linear_time(
        lambda: MessageContextManager(10_000).extend([FIRST, bad]),
        VALUES[name][1],
        InvalidMessageError,
        f"LangChain: {name}",
    )
    assert text.startswith("message 1: .tool_calls[0]['args']['v']"), text
    assert says_nesting(text)


@pytest.mark.parametrize("name", VALUES)
def test_pydantic_ai_tool_call_args_that_nest_too_deeply(name: str) -> None:
    messages = pytest.importorskip("pydantic_ai.messages")
    part = messages.ToolCallPart(tool_name="f", args={"v": value(name)}, tool_call_id="c1")
    bad = messages.ModelResponse(parts=[part])
    text = raises_in_linear_time(
        lambda: trim([FIRST, bad], 10_000), VALUES[name][1], InvalidMessageError, name
    )
    assert text.startswith("message 1: .parts[0].args['v']"), text
    assert says_nesting(text)


def test_openai_model_that_contains_itself() -> None:
    chat = pytest.importorskip("openai.types.chat")
    bad = chat.ChatCompletionMessage.model_construct(
        role="assistant", content="x", extra=self_dict()
    )
    with pytest.raises(InvalidMessageError, match=r"^message 1: .*Circular reference"):
        count_tokens([FIRST, bad])


# --- stores: what is written, and lines that cannot be read -------------------------------------
def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("name", VALUES)
def test_store_refuses_a_field_it_could_not_read_back_and_writes_nothing(
    tmp_path: Path, name: str
) -> None:
    """The field is one ``normalize`` ignores, so only the store's JSON check can catch it."""
    path = tmp_path / "context.jsonl"
    manager = MessageContextManager.open(path, max_tokens=10_000)
    manager.add(FIRST)
    before = lines(path)
    bad = {"role": "user", "content": "hi", "metadata": {"trace": value(name)}}
    text = raises_in_linear_time(
        lambda: manager.add(bad), VALUES[name][1], InvalidMessageError, f"store: {name}"
    )
    assert text.startswith("message 1: ['metadata']['trace']") and says_nesting(text), text
    assert lines(path) == before and manager.messages == [FIRST]


def test_store_keeps_a_message_exactly_as_deep_as_allowed(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    manager = MessageContextManager.open(path, max_tokens=100_000)
    # message, content list, part: three levels before the part's value
    deepest = {"role": "user", "content": [{"type": "x", "v": nested_lists(MAX_DEPTH - 3)}]}
    manager.add(deepest)
    with pytest.raises(InvalidMessageError, match=f"more than {MAX_DEPTH} levels"):
        manager.add({"role": "user", "content": [{"type": "x", "v": nested_lists(MAX_DEPTH - 2)}]})
    reopened = MessageContextManager.open(path, max_tokens=100_000, strict=True)
    assert reopened.messages == [deepest] and reopened.token_count == manager.token_count


def test_store_refuses_an_integer_it_cannot_write_naming_the_field(tmp_path: Path) -> None:
    if not LIMIT:
        pytest.skip("Python runs without a digit limit")
    path = tmp_path / "context.jsonl"
    manager = MessageContextManager.open(path, max_tokens=10_000)
    manager.add(FIRST)
    with pytest.raises(InvalidMessageError, match=rf"^message 1: \['metadata'\]\['n'\] .*{LIMIT}"):
        manager.add({"role": "user", "content": "hi", "metadata": {"n": HUGE}})
    assert len(lines(path)) == 1 and manager.messages == [FIRST]


#: Lines of a log with ``N`` where an integer too long to read goes.
HUGE_LINES = {
    "message field": '{"role":"user","content":"b","n":N}',
    "tool-call arguments": (
        '{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function",'
        '"function":{"name":"f","arguments":{"n":N}}}]}'
    ),
    "usage count": '{"role":"_usage","token_count":N}',
    "checkpoint id": '{"role":"_checkpoint","id":N}',
}


@needs_digit_limit
@pytest.mark.parametrize("line", HUGE_LINES.values(), ids=list(HUGE_LINES))
def test_jsonl_line_with_a_huge_integer_is_skipped_or_a_strict_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, line: str
) -> None:
    path = tmp_path / "context.jsonl"
    path.write_text(
        '{"role":"user","content":"a"}\n'
        + line.replace(":N", ":" + HUGE_TEXT)
        + '\n{"role":"user","content":"c"}\n'
    )
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        manager = MessageContextManager.open(path, max_tokens=10_000)
    assert [m["content"] for m in manager.messages] == ["a", "c"]
    assert "line 2" in caplog.text and "digits" in caplog.text
    assert JsonlLog(path).restore().skipped_lines == [2]
    with pytest.raises(StoreCorruptionError) as info:
        MessageContextManager.open(path, max_tokens=10_000, strict=True)
    assert info.value.line == 2 and "digits" in str(info.value)


@needs_digit_limit
def test_sqlite_row_with_a_huge_integer_is_skipped_or_a_strict_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path}/chat.db"
    manager = MessageContextManager.open(url, max_tokens=10_000)
    for text in "abc":
        manager.add({"role": "user", "content": text})
    manager.store.log.close()
    with sqlite3.connect(tmp_path / "chat.db") as db:
        changed = db.execute(
            "UPDATE context_records SET body = ? WHERE body LIKE ?",
            ('{"role":"user","content":"b","n":' + HUGE_TEXT + "}", '%"content":"b"%'),
        ).rowcount
    assert changed == 1
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = MessageContextManager.open(url, max_tokens=10_000)
    assert [m["content"] for m in reopened.messages] == ["a", "c"]
    assert "digits" in caplog.text
    reopened.store.log.close()
    with pytest.raises(StoreCorruptionError, match="digits"):
        MessageContextManager.open(url, max_tokens=10_000, strict=True)


@needs_digit_limit
def test_session_index_with_a_huge_integer_is_a_corruption_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_text('{"k": {"sessionId": "s1", "updatedAt": ' + HUGE_TEXT + "}}")
    index = SessionIndex(path)
    with pytest.raises(StoreCorruptionError, match=r"sessions\.json: unreadable number") as info:
        index.get("k")
    assert info.value.path == str(path)
    with pytest.raises(StoreCorruptionError):
        index.resolve("k")
    assert HUGE_TEXT in path.read_text()  # nothing was rewritten


# --- huge integers in messages ------------------------------------------------------------------
HUGE_ENTRIES = {
    name: ENTRIES[name] for name in ("add", "extend", "trim", "count_tokens", "normalize")
}


@needs_digit_limit
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("entry", HUGE_ENTRIES)
def test_huge_integer_in_a_message_is_a_typed_error_naming_it(entry: str, place: str) -> None:
    bad = PLACES[place][0]({"n": HUGE})
    with pytest.raises(InvalidMessageError) as info:
        HUGE_ENTRIES[entry](bad)
    assert str(info.value).startswith("message 1: ") and str(LIMIT) in str(info.value)
    assert info.value.index == 1


@needs_digit_limit
def test_huge_integer_is_a_problem_for_validate() -> None:
    bad = PLACES["tool_use input"][0]({"n": HUGE})
    problems = validate([FIRST, bad], "openai")
    assert [(p.index, p.rule) for p in problems] == [(1, "readable")]


def test_integer_within_the_limit_is_counted_exactly() -> None:
    args = {"n": 10**100}
    message = PLACES["tool_use input"][0](args)
    assert normalize(message).tool_calls[0].arguments == json.dumps(args, separators=(",", ":"))


@pytest.mark.parametrize("value", [None, 42, "user: hi", b"hi", {"role": "user", "content": "hi"}])
def test_a_value_that_is_no_list_of_messages_is_a_configuration_error(value: Any) -> None:
    """Every entry point taking messages says so, instead of a bare TypeError from inside (or
    reading a string or one message dict item by item)."""
    from context_manager import ConfigurationError, count_tokens, trim
    from context_manager.providers import validate

    for call in (
        lambda: MessageContextManager(1_000).extend(value),
        lambda: validate(value, "openai"),
        lambda: trim(value, 1_000),
        lambda: count_tokens(value),
    ):
        with pytest.raises(ConfigurationError, match="must be a list of messages"):
            call()


def test_a_summarizer_that_cannot_be_called_is_refused_when_the_manager_is_built() -> None:
    """Not later, on the first compaction, when the conversation already needs one."""
    from context_manager import ConfigurationError, MessageContextManager

    with pytest.raises(ConfigurationError, match="summarizer must be callable"):
        MessageContextManager(1_000, summarizer="gpt-4o-mini")
