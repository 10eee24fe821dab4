"""A provider rule met in the field, with the real SDK shapes.

- A context for a provider whose first turn must be a user turn (Bedrock Converse, Anthropic)
  never opens with the assistant: when the latest user turn rides on tool results (``toolResult``
  + text), its call's group opens with the assistant's ``toolUse``; the cut moves back to the
  user turn before it when that fits, else the overflow is raised. The manager's
  ``get_context()`` and ``trim(provider=...)`` agree.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from botocore.session import get_session
from botocore.validate import ParamValidator

from context_manager import ContextOverflowError, trim
from context_manager.providers import validate

from .helpers import manager_context


@functools.cache
def _converse_shape() -> Any:
    """The Converse request shape botocore ships (loading the service model takes ~35 ms)."""
    model = get_session().get_service_model("bedrock-runtime")
    return model.operation_model("Converse").input_shape


def _converse_ok(messages: list[dict[str, Any]]) -> None:
    """botocore's own check of a Converse request's shape, then the first-turn rule."""
    shape = _converse_shape()
    request = {"modelId": "m", "messages": messages}
    report = ParamValidator().validate(request, shape)
    assert not report.has_errors(), report.generate_report()
    assert messages[0]["role"] == "user"  # "A conversation must start with a user message"


def _tool_use(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": call_id, "name": "read", "input": {"p": call_id}}}],
    }


def _result_and_text(call_id: str, result: str, text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": call_id, "content": [{"text": result}]}},
            {"text": text},
        ],
    }


# -- A: the first turn is a user turn -----------------------------------------------------------


def test_bedrock_overflows_rather_than_open_with_the_tool_use() -> None:
    """The reviewer's case: the turn before the call does not fit with it, so nothing valid fits."""
    history = [
        {"role": "user", "content": [{"text": "Read the file. " + "context " * 150}]},
        _tool_use("t1"),
        _result_and_text("t1", "x = 1\n" * 20, "also, hurry"),
    ]
    with pytest.raises(ContextOverflowError) as from_manager:
        manager_context(history, 150, "bedrock")
    with pytest.raises(ContextOverflowError) as from_trim:
        trim(history, 150, counter="chars", provider="bedrock")
    assert from_manager.value.required == from_trim.value.required > 150
    assert from_manager.value.budget == from_trim.value.budget == 150


def bedrock_loop() -> list[dict[str, Any]]:
    """An older exchange, a short question, a call whose result carries the user's new words,
    a long second call and the assistant's answer. Under these budgets the window keeps the
    call with the user's words apart, and the turn before it is brought back with it."""
    return [
        {"role": "user", "content": [{"text": "old question " * 40}]},
        {"role": "assistant", "content": [{"text": "old answer " * 40}]},
        {"role": "user", "content": [{"text": "Read a."}]},
        _tool_use("t1"),
        _result_and_text("t1", "a = 1", "then read b"),
        _tool_use("t2"),
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t2", "content": [{"text": "b " * 300}]}}],
        },
        {"role": "assistant", "content": [{"text": "Both read."}]},
    ]


@pytest.mark.parametrize("budget", [80, 150])
def test_bedrock_cut_moves_back_to_the_user_turn(budget: int) -> None:
    history = bedrock_loop()
    sent = manager_context(history, budget, "bedrock")
    _converse_ok(sent)
    assert validate(sent, "bedrock") == []
    assert history[2] in sent and history[4] in sent and sent[-1] is history[-1]
    assert sent == trim(history, budget, counter="chars", provider="bedrock")


def anthropic_loop() -> list[dict[str, Any]]:
    def call(call_id: str) -> dict[str, Any]:
        block = {"type": "tool_use", "id": call_id, "name": "read", "input": {}}
        return {"role": "assistant", "content": [block]}

    return [
        {"role": "user", "content": "old question " * 40},
        {"role": "assistant", "content": "old answer " * 40},
        {"role": "user", "content": "Read a."},
        call("toolu_1"),
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a = 1"},
                {"type": "text", "text": "then read b"},
            ],
        },
        call("toolu_2"),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "b " * 300}],
        },
        {"role": "assistant", "content": "Both read."},
    ]


@pytest.mark.parametrize("budget", [100, 180])
def test_anthropic_has_the_rule_too(budget: int) -> None:
    from anthropic.types import MessageParam  # the SDK's request shape

    history: list[MessageParam] = anthropic_loop()  # type: ignore[assignment]
    sent = manager_context(list(history), budget, "anthropic")
    assert sent[0]["role"] == "user" and validate(sent, "anthropic") == []
    assert history[2] in sent and sent[-1] is history[-1]
    assert sent == trim(list(history), budget, counter="chars", provider="anthropic")


# -- B: a result larger than the window, earlier in the same tool loop --------------------------


def _anthropic_reply(call_id: str) -> dict[str, Any]:
    """The assistant turn as an Anthropic agent appends it: the SDK's own content blocks."""
    from anthropic.types import Message as AnthropicMessage

    reply = AnthropicMessage.model_validate(
        {
            "id": f"msg_{call_id}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": call_id, "name": "read", "input": {"n": 1}}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )
    return {"role": "assistant", "content": reply.content}


def _anthropic_ok(sent: list[Any]) -> None:
    """Anthropic's rules, checked here: a user turn first, and every ``tool_use`` answered by a
    ``tool_result`` at the start of the very next (user) turn."""
    turns = [
        {
            "role": m["role"],
            "content": m["content"]
            if isinstance(m["content"], str)
            else [b if isinstance(b, dict) else b.model_dump() for b in m["content"]],
        }
        for m in sent
    ]
    assert turns[0]["role"] == "user"
    for i, turn in enumerate(turns):
        uses = [
            b["id"]
            for b in turn["content"]
            if not isinstance(turn["content"], str) and b["type"] == "tool_use"
        ]
        if uses:
            nxt = turns[i + 1]["content"]
            answered = [b["tool_use_id"] for b in nxt if b["type"] == "tool_result"]
            assert answered == uses and nxt[: len(uses)] == [
                b for b in nxt if b["type"] == "tool_result"
            ]


def _texts(content: Any) -> list[str]:
    """What a turn says, block by block (text, results, a call's name and input): a lower
    bound on what the provider counts, whatever its framing."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content:
        b = block if isinstance(block, dict) else block.model_dump()
        b = b.get("toolUse") or b.get("toolResult") or b
        for key in ("text", "name"):
            if isinstance(b.get(key), str):
                out.append(b[key])
        if "input" in b:
            out.append(json.dumps(b["input"]))
        if "content" in b:
            out += _texts(b["content"])
    return out


def _said(provider: str, text: str) -> dict[str, Any]:
    """A plain user turn in the provider's own shape."""
    return {"role": "user", "content": text if provider == "anthropic" else [{"text": text}]}


def _use(provider: str, call_id: str) -> dict[str, Any]:
    """The assistant's call: the Anthropic SDK's blocks, or a Converse ``toolUse``."""
    return _anthropic_reply(call_id) if provider == "anthropic" else _tool_use(call_id)


def _result(provider: str, call_id: str, text: str, words: str | None = None) -> dict[str, Any]:
    """The result of a call, with the person's ``words`` after it when given."""
    if provider != "anthropic":
        if words:
            return _result_and_text(call_id, text, words)
        block = {"toolResult": {"toolUseId": call_id, "content": [{"text": text}]}}
        return {"role": "user", "content": [block]}
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": call_id, "content": text}
    ]
    if words:
        blocks.append({"type": "text", "text": words})
    return {"role": "user", "content": blocks}


def _provider_ok(provider: str, sent: list[Any]) -> None:
    """The provider's own rules, checked here (Anthropic) or by botocore (Converse)."""
    if provider == "anthropic":
        _anthropic_ok(sent)
    else:
        _converse_ok(sent)


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_an_oversized_result_does_not_make_every_later_request_overflow(provider: str) -> None:
    """A tool loop read a result larger than the window; the person then speaks inside the loop
    (a result + text turn). Every request must still be sent: the turn the loop started from,
    the newest exchanges that fit, never the oversized result (it used to be protected with the
    latest turn, so each request raised ``ContextOverflowError`` until the next plain user turn)."""
    from context_manager import MessageContextManager
    from context_manager.counting.tiktoken_loader import load_encoding  # tiktoken, bundled ranks

    budget = 2_000
    enc = load_encoding("o200k_base")
    manager = MessageContextManager(budget, reserve_tokens=0, counter="tiktoken", provider=provider)
    opener = _said(provider, "Read the build logs and fix the failing test.")
    manager.add(opener)
    manager.add(_use(provider, "toolu_big"))
    manager.add(_result(provider, "toolu_big", "ERROR build step failed\n" * 2_000))  # ~10k
    for turn in range(40):
        call_id = f"toolu_{turn}"
        manager.add(_use(provider, call_id))
        manager.add(
            _result(provider, call_id, f"line {turn}: ok", f"step {turn} looks fine, go on")
        )
        sent = manager.get_context()
        _provider_ok(provider, sent)
        assert sent[0] is opener and sent[-1]["content"][-1] is not None
        texts = [t for m in sent for t in _texts(m["content"])]
        assert not any("ERROR build step failed" in t for t in texts)
        assert sum(len(enc.encode(t)) for t in texts) <= budget
        assert validate(sent, provider) == []
        assert sent == trim(manager.messages, budget, counter="tiktoken", provider=provider)


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_fifo_keeps_the_turn_a_tool_loop_started_from(provider: str) -> None:
    """FIFO drops the oldest messages for good. When the latest user turn rides on a result, the
    turn the loop started from must survive with it, or the held history (what is sent) opens
    with the assistant's call, which the provider rejects. Once the person speaks in a plain
    turn again, that old turn is let go like any other."""
    from context_manager import MessageContextManager, count_tokens

    evicted: list[Any] = []
    manager = MessageContextManager(
        600,
        reserve_tokens=0,
        counter="chars",
        provider=provider,
        strategy="fifo",
        on_evict=evicted.extend,
    )

    requests = 0
    for task in range(6):
        opener = _said(provider, f"Task {task}: read every file and summarise.")
        manager.add(opener)
        for step in range(40):
            call_id = f"toolu_{task}_{step}"
            manager.add(_use(provider, call_id))
            words = "and the tests too" if step == 1 else None
            text = f"file {step}: " + "data " * (10 + step % 7)
            manager.add(_result(provider, call_id, text, words))
            sent = manager.get_context()
            requests += 1
            _provider_ok(provider, sent)
            assert validate(sent, provider) == []
            if step >= 1:  # the latest user turn rides on the step-1 result from here on
                assert sent[0] is opener and opener in manager.messages
        # The held history stays in the budget but for the one turn kept below the floor.
        assert manager.token_count <= 600 + count_tokens([opener], counter="chars")
        assert evicted  # and FIFO did evict
    assert requests == 240
    old = [
        m
        for m in evicted
        if m.get("content") == _said(provider, "Task 0: read every file and summarise.")["content"]
    ]
    assert len(old) == 1  # the first task's turn was let go once the next task began


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_a_large_result_sent_with_the_persons_words_is_cut_in_every_later_request(
    provider: str,
) -> None:
    """The person speaks in the turn that carries a result larger than the window (result +
    text). That turn is the latest user turn for the rest of the loop, so every request sends
    it: its result is cut to fit then too, not only while it is the newest exchange (each later
    request used to raise ``ContextOverflowError`` until the next plain user turn)."""
    from context_manager import MessageContextManager
    from context_manager.counting.tiktoken_loader import load_encoding  # tiktoken, bundled ranks

    budget = 2_000
    enc = load_encoding("o200k_base")
    manager = MessageContextManager(budget, reserve_tokens=0, counter="tiktoken", provider=provider)
    manager.add(_said(provider, "Fix the failing test."))
    manager.add(_use(provider, "toolu_big"))
    words = "Also check the README."
    manager.add(_result(provider, "toolu_big", "ERROR build step failed\n" * 2_000, words))
    for turn in range(6):
        sent = manager.get_context()
        _provider_ok(provider, sent)
        texts = [t for m in sent for t in _texts(m["content"])]
        assert words in texts  # the person's words are sent whole
        assert any("ERROR build step failed" in t for t in texts)  # head and tail of the result
        assert sum(len(enc.encode(t)) for t in texts) <= budget
        assert sent == trim(manager.messages, budget, counter="tiktoken", provider=provider)
        manager.add(_use(provider, f"toolu_{turn}"))
        # every other result of the loop is large too: both are cut in one request
        large = turn % 2 == 1
        text = "WARN slow test in module foo\n" * 1_500 if large else f"line {turn}: ok"
        manager.add(_result(provider, f"toolu_{turn}", text))
        if large:
            newest = manager.get_context()[-1]
            assert any("WARN slow test" in t for t in _texts(newest["content"]))  # sent, cut


def _call(call_id: str, *before: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": "read", "input": {}}
    return {"role": "assistant", "content": [*before, block]}


def _answer(call_id: str, words: int, text: str | None = None) -> dict[str, Any]:
    return _result("anthropic", call_id, "data " * words, text)


def test_fifo_keeps_a_server_compaction_turn_as_the_one_a_loop_is_sent_from() -> None:
    """Anthropic's server compaction (a ``compaction`` block the API returns in an assistant
    turn) opens a context: the API reads the turns before it from the block. When FIFO has
    evicted past that turn and the person speaks inside the loop again, the context must still
    open with it, not with the newest call."""
    from context_manager import MessageContextManager

    evicted: list[Any] = []
    manager = MessageContextManager(
        300, reserve_tokens=0, provider="anthropic", strategy="fifo", on_evict=evicted.extend
    )
    manager.add({"role": "user", "content": "Start the audit."})
    summary = {"type": "compaction", "content": "summary of the audit so far"}
    opened = _call("c", summary)
    manager.add(opened)
    manager.add(_answer("c", 10, "first words inside the loop"))
    for k in range(6):
        manager.add(_call(f"x{k}"))
        manager.add(_answer(f"x{k}", 60))
    manager.add(_call("d"))
    manager.add(_answer("d", 10, "second words inside the loop"))
    sent = manager.get_context()
    assert sent[0] is opened and sent[0]["content"][0]["type"] == "compaction"
    _anthropic_ok(sent[1:])  # after it: every call answered at the start of the next turn
    assert opened not in evicted


@pytest.mark.parametrize("strategy", ["sliding_window", "fifo"])
def test_a_pinned_system_message_does_not_stand_for_the_turn_a_loop_started_from(
    strategy: str,
) -> None:
    """A pinned system message is read apart by the provider (Anthropic's ``system``, Bedrock's
    ``system`` list): it opens no context, so the user turn the loop started from is still sent
    before the call the latest turn rides on."""
    from context_manager import MessageContextManager

    start = {"role": "user", "content": "Start the audit."}
    manager = MessageContextManager(300, reserve_tokens=0, provider="anthropic", strategy=strategy)
    manager.add(start)
    manager.add({"role": "system", "content": "Reminder: be terse."}, pinned=True)
    manager.add(_call("a"))
    manager.add(_answer("a", 400))
    manager.add(_call("b"))
    manager.add(_answer("b", 5, "and the tests"))
    sent = manager.get_context()
    turns = [m for m in sent if m["role"] != "system"]
    assert turns[0] is start
    _anthropic_ok(turns)
    if strategy == "sliding_window":
        assert sent == trim(manager.messages, 300, provider="anthropic", pinned=[1])
