"""Provider-native compaction: what precedes the latest compaction item is not sent (every
strategy, ``trim()``), and the native compactor with its fallbacks to ours.

Compaction items are built with the real SDK classes (``tests/messages/native_compaction.py``);
the rule is checked by ``check_rule`` there, which shares no code with the library.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_manager import MessageContextManager, trim
from context_manager.compaction import CompactionEntry, add_compaction_listener
from context_manager.compaction.native import (
    FellBack,
    NativeCompacted,
    acompact_native,
    compact_native,
)
from context_manager.providers import validate

from ..messages.native_compaction import (
    anthropic_turn,
    as_json,
    check_rule,
    holds_compaction,
    openai_compacted,
    openai_item,
)

SYSTEM = {"role": "system", "content": "You are a careful coding assistant."}


def turns(start: int, count: int, size: int = 40) -> list[dict[str, str]]:
    out = []
    for k in range(start, start + count):
        out.append({"role": "user", "content": f"question {k} " + "q" * size})
        out.append({"role": "assistant", "content": f"answer {k} " + "a" * size})
    return out


def history(compaction: Any) -> list[Any]:
    return [SYSTEM, *turns(0, 6), compaction, *turns(6, 3)]


COMPACTIONS = {"openai": lambda: openai_item(1), "anthropic": lambda: anthropic_turn(1)}


def _manager(strategy: str, budget: int = 100_000, **options: Any) -> MessageContextManager:
    return MessageContextManager(
        budget, counter="chars", reserve_tokens=0, strategy=strategy, **options
    )


# -- the rule under every strategy and trim() ----------------------------------------------------


@pytest.mark.parametrize("maker", sorted(COMPACTIONS))
@pytest.mark.parametrize("strategy", ["sliding_window", "fifo", "priority"])
def test_the_manager_sends_from_the_latest_compaction(maker: str, strategy: str) -> None:
    given = history(COMPACTIONS[maker]())
    manager = _manager(strategy)
    manager.extend(given)
    context = manager.get_context()
    assert holds_compaction(given[13])
    assert context == [SYSTEM, *given[13:]]  # everything after it fits: all of it is sent
    assert check_rule(given, context) == []


@pytest.mark.parametrize("maker", sorted(COMPACTIONS))
@pytest.mark.parametrize("strategy", ["sliding_window", "priority"])
def test_trim_sends_from_the_latest_compaction(maker: str, strategy: str) -> None:
    given = history(COMPACTIONS[maker]())
    context = trim(given, 100_000, counter="chars", strategy=strategy)
    assert context == [SYSTEM, *given[13:]]
    assert check_rule(given, context) == []
    small = trim(given, 120, counter="chars", strategy=strategy)  # the newest turns only
    assert check_rule(given, small) == [] and small[-1] is given[-1]


def test_a_compaction_after_the_latest_user_turn_stands_for_it() -> None:
    given = [SYSTEM, *turns(0, 4), openai_item(2)]
    expected = [SYSTEM, given[-1]]
    assert trim(given, 100_000, counter="chars") == expected
    manager = _manager("sliding_window")
    manager.extend(given)
    assert manager.get_context() == expected


def test_pins_before_the_compaction_are_still_sent() -> None:
    given = history(openai_item(3))
    pinned = {2}
    context = trim(given, 100_000, counter="chars", pinned=pinned)
    assert context == [SYSTEM, given[2], *given[13:]]
    assert check_rule(given, context, pinned) == []


def test_an_anthropic_compaction_turn_opens_the_request() -> None:
    given = history(anthropic_turn(4))
    for context in (
        trim(given, 100_000, counter="chars", provider="anthropic"),
        _filled("anthropic", given).get_context(),
    ):
        assert context == [SYSTEM, *given[13:]]
        assert validate(context, "anthropic") == []


def test_a_compaction_another_provider_made_is_not_sent() -> None:
    """A model switch: an OpenAI compaction under Anthropic rules is dropped, and sets no floor
    (the turns before it are what the new model can read)."""
    given = history(openai_item(5))
    for context in (
        trim(given, 100_000, counter="chars", provider="anthropic"),
        _filled("anthropic", given).get_context(),
    ):
        assert not any(holds_compaction(m) for m in context)
        assert context == [m for m in given if not holds_compaction(m)]
        assert validate(context, "anthropic") == []


def test_the_floor_holds_after_the_manager_forgets_old_messages() -> None:
    """A summary cut past 4,096 groups makes the manager drop what it no longer holds and
    renumber the rest: the latest compaction is still where the context starts. Our summary
    stands for messages before it, which it stands for too: it is not sent."""
    manager = _manager("sliding_window")
    manager.extend(turns(0, 2500, size=1))  # messages 0..4999
    item = openai_item(8)
    manager.add(item)  # message 5000
    after = turns(2500, 3, size=1)
    manager.extend(after)
    summary = {"role": "user", "content": "Summary of the first 4,990 messages."}
    manager.apply_compaction(summary, 4990)
    assert len(manager.messages) == 10 + 1 + 6
    assert manager.get_context() == [item, *after]


def _filled(provider: str, given: list[Any]) -> MessageContextManager:
    manager = _manager("sliding_window", provider=provider)
    manager.extend(given)
    return manager


# -- property: byte-identical, nothing before the latest ----------------------------------------


@st.composite
def conversations(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = [SYSTEM]
    for k in range(draw(st.integers(1, 8))):
        size = draw(st.integers(0, 120))
        out.append({"role": "user", "content": f"u{k} " + "x" * size})
        if draw(st.booleans()):
            out.append({"role": "assistant", "content": f"a{k} " + "y" * size})
        kind = draw(st.sampled_from(["none", "none", "openai", "anthropic"]))
        if kind == "openai":
            out.append(openai_item(k, draw(st.integers(8, 400))))
        elif kind == "anthropic":
            out.append(anthropic_turn(k))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversations(),
    st.integers(60, 3000),
    st.sampled_from(["sliding_window", "priority"]),
)
def test_property_compactions_are_sent_as_given_and_nothing_before_the_latest(
    given_messages: list[Any], budget: int, strategy: str
) -> None:
    before = [as_json(m) for m in given_messages]
    contexts = []  # (held history, context)
    try:
        context = trim(given_messages, budget, counter="chars", strategy=strategy)
        contexts.append((given_messages, context))
    except Exception as exc:  # only the typed overflow may refuse
        assert type(exc).__name__ == "ContextOverflowError"
    for name in (strategy, "fifo"):
        manager = _manager(name, budget)
        try:
            manager.extend(given_messages)
            context = manager.get_context()
        except Exception as exc:
            assert type(exc).__name__ == "ContextOverflowError"
            continue
        # FIFO drops messages for good: the rule holds over what it still holds.
        held = given_messages if name != "fifo" else [SYSTEM, *manager.messages]
        contexts.append((held, context))
    for held, context in contexts:
        assert check_rule(held, context) == []
    if strategy == "sliding_window" and len(contexts) == 3:
        assert contexts[0][1] == contexts[1][1]  # trim()'s scan gives the manager's answer
    assert [as_json(m) for m in given_messages] == before  # nothing was edited


# -- the native compactor -----------------------------------------------------------------------


class ScriptedResponses:
    """``client.responses`` of a scripted OpenAI client: ``compact`` returns real SDK objects,
    or raises the SDK's own error, as scripted; it records what it was sent."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.inputs: list[list[Any]] = []

    def compact(self, *, model: str, input: list[Any]) -> Any:
        self.inputs.append(list(input))
        if self.fail:
            request = httpx.Request("POST", "https://api.openai.com/v1/responses/compact")
            raise openai.InternalServerError(
                "upstream overloaded", response=httpx.Response(500, request=request), body=None
            )
        return openai_compacted(len(self.inputs))


class ScriptedClient:
    def __init__(self, fail: bool = False) -> None:
        self.responses = ScriptedResponses(fail)


class AsyncScriptedResponses(ScriptedResponses):
    async def compact(self, *, model: str, input: list[Any]) -> Any:  # type: ignore[override]
        await asyncio.sleep(0)
        return ScriptedResponses.compact(self, model=model, input=input)


def openai_compactor(client: Any) -> Any:
    def compactor(messages: list[Any]) -> Any:
        return client.responses.compact(model="gpt-5.2", input=messages).output

    return compactor


def _long(provider: str | None = "openai-responses") -> MessageContextManager:
    manager = MessageContextManager(
        2_000, counter="chars", reserve_tokens=0, provider=provider, system_prompt="Be brief."
    )
    manager.extend(turns(0, 30, size=60))
    return manager


def test_the_native_compactor_appends_the_providers_items() -> None:
    client = ScriptedClient()
    manager = _long()
    held = manager.messages
    result = compact_native(manager, openai_compactor(client), provider="openai-responses")
    assert isinstance(result, NativeCompacted)
    assert client.responses.inputs == [held]  # the whole held history, as added
    (item,) = result.items
    assert item is not None and holds_compaction(item)
    context = manager.get_context()
    assert context[1] is item and len(context) == 2  # system prompt, then the compaction
    assert manager.messages == [*held, item]  # the history is kept; only the view starts later
    assert validate(context, "openai-responses") == []
    manager.add({"role": "user", "content": "and now?"})
    again = compact_native(manager, openai_compactor(client), provider="openai-responses")
    assert isinstance(again, NativeCompacted)
    assert client.responses.inputs[1] == [item, {"role": "user", "content": "and now?"}]
    assert manager.get_context()[1:] == list(again.items)


def test_the_async_compactor_runs_the_same_flow() -> None:
    client = ScriptedClient()
    client.responses = AsyncScriptedResponses()

    async def compactor(messages: list[Any]) -> Any:
        return (await client.responses.compact(model="gpt-5.2", input=messages)).output

    manager = _long()
    result = asyncio.run(acompact_native(manager, compactor, provider="openai-responses"))
    assert isinstance(result, NativeCompacted)
    assert manager.get_context()[1:] == list(result.items)


def test_a_failing_compactor_falls_back_to_our_summary() -> None:
    client = ScriptedClient(fail=True)
    manager = _long()
    result = compact_native(manager, openai_compactor(client), provider="openai-responses")
    assert isinstance(result, FellBack)
    assert "InternalServerError" in result.reason
    assert isinstance(result.result, CompactionEntry)
    context = manager.get_context()
    assert manager.summary is not None and context[1] is manager.summary
    assert not any(holds_compaction(m) for m in context)


def test_a_compaction_made_by_another_provider_is_not_kept() -> None:
    """The conversation goes to Anthropic: an OpenAI compaction could not be read there."""
    client = ScriptedClient()
    manager = _long(provider="anthropic")
    result = compact_native(manager, openai_compactor(client), provider="anthropic")
    assert isinstance(result, FellBack) and "made by openai" in result.reason
    assert isinstance(result.result, CompactionEntry)
    assert not any(holds_compaction(m) for m in manager.messages)
    assert not any(holds_compaction(m) for m in manager.get_context())


def test_a_provider_without_native_compaction_never_calls_the_compactor() -> None:
    client = ScriptedClient()
    manager = _long(provider="openai")  # Chat Completions: no compaction items
    result = compact_native(manager, openai_compactor(client), provider="openai")
    assert isinstance(result, FellBack) and "no native compaction" in result.reason
    assert client.responses.inputs == []
    assert isinstance(result.result, CompactionEntry)


def test_a_model_switch_falls_back_and_sends_no_foreign_compaction() -> None:
    """The history holds an OpenAI compaction; the next request goes to Anthropic."""
    manager = _long(provider="anthropic")
    manager.add(openai_item(9))
    manager.extend(turns(20, 2, size=60))
    calls: list[Any] = []

    def anthropic_compactor(messages: list[Any]) -> Any:
        calls.append(messages)
        return [anthropic_turn(9)]

    result = compact_native(manager, anthropic_compactor, provider="anthropic")
    assert isinstance(result, FellBack) and "made by openai" in result.reason
    assert calls == []  # Anthropic cannot read what it would have been sent
    context = manager.get_context()
    assert not any(holds_compaction(m) for m in context)
    assert [p.rule for p in validate(context, "anthropic")] == []


def test_a_compactor_returning_no_compaction_falls_back() -> None:
    manager = _long()
    result = compact_native(manager, lambda messages: [], provider="openai-responses")
    assert isinstance(result, FellBack) and "no compaction item" in result.reason


def test_a_native_compaction_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    manager = MessageContextManager.open(
        path, max_tokens=2_000, counter="chars", reserve_tokens=0, system_prompt="Be brief."
    )
    manager.extend(turns(0, 30, size=60))
    result = compact_native(
        manager, openai_compactor(ScriptedClient()), provider="openai-responses"
    )
    assert isinstance(result, NativeCompacted)
    context = manager.get_context()
    manager.store.close()
    reopened = MessageContextManager.open(path, max_tokens=2_000, counter="chars", reserve_tokens=0)
    assert reopened.get_context() == context
    assert type(reopened.get_context()[1]) is type(result.items[0])
    reopened.store.close()


def test_an_anthropic_compactor_appends_its_compaction_turn() -> None:
    manager = _long(provider="anthropic")
    sent: list[Any] = []

    def compactor(messages: list[Any]) -> Any:
        sent.append(messages)
        return [anthropic_turn(3)]  # messages.create(..., pause_after_compaction=True)

    result = compact_native(manager, compactor, provider="anthropic")
    assert isinstance(result, NativeCompacted) and result.provider == "anthropic"
    manager.add({"role": "user", "content": "go on"})
    context = manager.get_context()
    assert context[1:] == [result.items[0], {"role": "user", "content": "go on"}]
    assert validate(context, "anthropic") == []
    assert check_rule([context[0], *manager.messages], context) == []


def test_a_compaction_turn_that_calls_a_tool_keeps_its_results() -> None:
    """Anthropic may compact and go on in the same turn: the turn's call and its results are one
    group, which the context starts with."""
    from anthropic.types.beta import BetaMessage

    turn = BetaMessage.model_validate(
        {
            **anthropic_turn(6).model_dump(mode="json", exclude_none=True),
            "content": [
                as_json(anthropic_turn(6).content[0]),
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
            ],
            "stop_reason": "tool_use",
        }
    )
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"}],
    }
    given = [SYSTEM, *turns(0, 4), turn, result, {"role": "assistant", "content": "It prints 1."}]
    for context in (
        trim(given, 100_000, counter="chars", provider="anthropic"),
        _filled("anthropic", given).get_context(),
    ):
        assert context == [SYSTEM, *given[9:]]
        assert validate(context, "anthropic") == []


@pytest.mark.parametrize("fail", [False, True])
def test_listeners_hear_a_native_compaction_start_and_end(fail: bool) -> None:
    heard: list[Any] = []
    manager = _long()
    add_compaction_listener(manager, heard.append)
    held = len(manager.messages)
    compact_native(manager, openai_compactor(ScriptedClient(fail)), provider="openai-responses")
    native = heard[:2]
    assert [e.type for e in native] == ["start", "end"]
    assert native[0].first_kept_index == held  # nothing of the history is rewritten
    assert (native[1].error is not None) == fail
    if fail:  # then ours ran, with its own start and end
        assert [e.type for e in heard[2:]] == ["start", "end"] and heard[3].error is None


@pytest.mark.parametrize("provider", ["anthropic", "openai-responses"])
def test_a_native_compaction_after_ours_opens_the_conversation(provider: str) -> None:
    """Anthropic refuses a request whose compaction block is not first; what the native
    compaction stands for includes our summary, so the compactor is shown it, and it is not
    sent again after the compaction."""
    from context_manager.compaction import TokenBudgetCompaction
    from context_manager.compaction.native import compact_native

    manager = MessageContextManager(20_000, counter="chars", provider=provider)
    manager.set_system_prompt("sys")
    for n in range(10):
        manager.add({"role": "user", "content": f"q{n} " + "w " * 200})
        manager.add({"role": "assistant", "content": f"answer {n} " + "a " * 100})
    manager.compact(lambda request: "OUR SUMMARY", policy=TokenBudgetCompaction(300, 1_000))
    seen: list[Any] = []

    def compactor(messages: list[Any]) -> list[Any]:
        seen.extend(messages)
        if provider == "anthropic":
            block = {"type": "compaction", "content": "native summary"}
            return [{"role": "assistant", "content": [block]}]
        return [{"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA" + "x" * 40}]

    compact_native(manager, compactor, provider=provider)
    manager.add({"role": "user", "content": "next"})
    context = manager.get_context()
    assert "OUR SUMMARY" in str(seen[0])  # the compactor saw what our summary stands for
    assert "OUR SUMMARY" not in str(context)
    first = context[1]  # after the system prompt: the compaction
    if provider == "anthropic":
        assert first["content"][0]["type"] == "compaction"
    else:
        assert first["type"] == "compaction"
    assert context[-1] == {"role": "user", "content": "next"}
    assert manager.stats().context_message_count == len(context)
