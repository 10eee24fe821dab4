"""A Responses reasoning item and the output item that follows it travel together.

OpenAI refuses a request holding an output item without the reasoning item that produced it
("Item 'msg_...' of type 'message' was provided without its required 'reasoning' item") and a
reasoning item without its following item. That holds for every output: a function call, an
assistant message, a hosted tool's call (web search, code interpreter). The items are built with
the openai SDK's own types, as ``response.output`` holds them, and the checker below is the
provider's rule, not ours.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from context_manager import MessageContextManager, trim

responses = pytest.importorskip("openai.types.responses")


def reasoning(k: int, size: int) -> Any:
    return responses.ResponseReasoningItem(
        id=f"rs_{k}", type="reasoning", summary=[], encrypted_content="gAAAA" + "Z" * size
    )


def message(k: int, text: str) -> Any:
    part = responses.ResponseOutputText(type="output_text", text=text, annotations=[])
    return responses.ResponseOutputMessage(
        id=f"msg_{k}", type="message", role="assistant", status="completed", content=[part]
    )


def web_search(k: int) -> Any:
    from openai.types.responses.response_function_web_search import ActionSearch

    action = ActionSearch(type="search", query=f"query {k}")
    return responses.ResponseFunctionWebSearch(
        id=f"ws_{k}", type="web_search_call", status="completed", action=action
    )


def code_call(k: int) -> Any:
    return responses.ResponseCodeInterpreterToolCall(
        id=f"ci_{k}",
        type="code_interpreter_call",
        status="completed",
        code="print(1)",
        container_id="cntr",
        outputs=None,
    )


def session(turns: int, seed: int) -> list[Any]:
    """User turns, each answered by reasoning, maybe a hosted call (itself after reasoning),
    then a message; as a caller appends ``response.output`` to its input list."""
    rng = random.Random(seed)
    items: list[Any] = []
    for k in range(turns):
        items.append({"role": "user", "content": f"question {k} " + "word " * rng.randint(5, 80)})
        if rng.random() < 0.5:
            items.append(reasoning(2 * k, rng.randint(50, 2_000)))
            items.append(rng.choice((web_search, code_call))(k))
        items.append(reasoning(2 * k + 1, rng.randint(50, 2_000)))
        items.append(message(k, "answer " * rng.randint(3, 60)))
    return items


def kind(item: Any) -> str:
    return item["role"] if isinstance(item, dict) else item.type


def orphans(context: list[Any]) -> list[str]:
    """OpenAI's rule: each reasoning item is directly followed by the output item it produced,
    and each output item produced after reasoning is directly preceded by it."""
    problems = []
    for k, item in enumerate(context):
        after = context[k + 1] if k + 1 < len(context) else None
        before = context[k - 1] if k else None
        if kind(item) == "reasoning" and (after is None or kind(after) in ("user", "reasoning")):
            problems.append(f"{item.id} sent without its following item")
        if kind(item) in ("message", "web_search_call", "code_interpreter_call") and (
            before is None or kind(before) != "reasoning"
        ):
            problems.append(f"{item.id} sent without its required reasoning item")
    return problems


def test_an_answer_message_is_never_sent_without_its_reasoning() -> None:
    items = [
        {"role": "user", "content": "Tell me a long story."},
        reasoning(1, 4_000),
        message(1, "Once upon a time."),
        {"role": "user", "content": "Shorter please."},
    ]
    kept = trim(items, 200, provider="openai-responses", counter="tiktoken")
    assert orphans(kept) == []
    assert kept == [items[3]]  # the reasoning does not fit, so neither does its message


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("budget", [1_500, 4_000])
def test_every_request_of_a_long_session_pairs_reasoning_with_its_item(
    seed: int, budget: int
) -> None:
    items = session(120, seed)
    manager = MessageContextManager(
        budget, counter="tiktoken", reserve_tokens=0, provider="openai-responses"
    )
    checked = 0
    for k, item in enumerate(items):
        manager.add(item)
        if kind(item) == "user":
            context = manager.get_context()
            assert orphans(context) == [], f"after item {k}"
            assert context == trim(
                items[: k + 1], budget, provider="openai-responses", counter="tiktoken"
            )
            checked += 1
    assert checked == 120


def test_validate_accepts_reasoning_before_its_message_and_flags_one_that_lost_it() -> None:
    from context_manager.providers import validate

    answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
    }
    items = [{"role": "user", "content": "go"}, reasoning(1, 40), answer]
    assert validate(items, "openai-responses") == []  # the shape the Agents SDK stores
    assert validate([items[1], answer], "openai-responses", source=items) == []
    lost = validate([items[0], answer], "openai-responses", source=items)
    assert [(p.index, p.rule) for p in lost] == [(1, "reasoning-before-output")]


def call(k: int) -> Any:
    return responses.ResponseFunctionToolCall(
        id=f"fc_{k}", call_id=f"call_{k}", type="function_call", name="probe", arguments="{}"
    )


def response_items(context: list[Any]) -> list[list[str]]:
    """The output items of each response left in ``context``, by id, in order: a run of model
    items (reasoning, message, call) between a user turn and a call's output."""
    runs: list[list[str]] = []
    run: list[str] = []
    for item in context:
        if isinstance(item, dict):  # a user turn or a call's output
            runs, run = [*runs, run] if run else runs, []
        else:
            run.append(item.id)
    return [*runs, run] if run else runs


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("budget", [1_500, 3_000])
def test_a_preamble_message_keeps_its_calls_reasoning(seed: int, budget: int) -> None:
    """A reasoning model that says something before it calls returns ``[reasoning, message,
    function_call]``; OpenAI refuses the call without the reasoning item ("Item 'fc_...' of
    type 'function_call' was provided without its required 'reasoning' item"). Every request
    of a 150-turn session sends each response whole or not at all."""
    rng = random.Random(seed)
    manager = MessageContextManager(
        budget, counter="tiktoken", reserve_tokens=0, provider="openai-responses"
    )
    whole = {}
    for k in range(150):
        manager.add({"role": "user", "content": f"step {k} " + "detail " * rng.randint(0, 60)})
        output = [
            reasoning(k, rng.randint(50, 600)),
            message(k, "Checking now. " * rng.randint(1, 40)),
            call(k),
        ]
        manager.extend(output)
        whole[f"rs_{k}"] = [item.id for item in output]
        manager.add({"type": "function_call_output", "call_id": f"call_{k}", "output": "ok"})
        for run in response_items(manager.get_context()):
            assert run == whole[run[0]], f"turn {k}: a response cut to {run}"


def test_output_messages_in_a_row_are_trimmed_one_by_one() -> None:
    """An agent that posts progress updates (output messages one after another, no user turn
    between) is not one group: a tight budget keeps the newest of them, not nothing."""
    items: list[Any] = [{"role": "user", "content": "Start the migration and keep me posted."}]
    items += [message(k, f"Step {k} done. " + "Progress detail. " * 6) for k in range(40)]
    kept = trim(items, 1_600, provider="openai-responses", counter="tiktoken")
    assert kept[-1] is items[-1]
    assert len(kept) > 10  # each update fits on its own (about 40 tokens each)
    manager = MessageContextManager(
        1_600, counter="tiktoken", reserve_tokens=0, provider="openai-responses"
    )
    manager.extend(items)
    assert manager.get_context() == kept
