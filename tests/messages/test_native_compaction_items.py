"""Provider-native compaction items (OpenAI Responses ``compaction``, Anthropic ``compaction``
blocks) are accepted, counted, kept as given and stored losslessly."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager, count_tokens
from context_manager.providers import validate

from .native_compaction import anthropic_block, anthropic_turn, as_json, blob, openai_item


def _variants() -> list[tuple[str, Any]]:
    """Each way a caller hands us a native compaction, as the SDKs return it."""
    item = openai_item(1)
    turn = anthropic_turn(2)
    return [
        ("openai-object", item),
        ("openai-dict", item.model_dump(mode="json", exclude_none=True)),
        ("anthropic-message", turn),
        ("anthropic-blocks-in-dict", {"role": "assistant", "content": list(turn.content)}),
        ("anthropic-dict", {"role": "assistant", "content": [as_json(anthropic_block(3))]}),
    ]


def _chars(message: Any) -> int:
    return count_tokens([message], counter="chars")


def test_an_encrypted_compaction_costs_what_its_blob_would_as_text() -> None:
    """Opaque content is billed by its length: the item costs what the same characters cost
    as an assistant turn, whatever its id."""
    from openai.types.responses import ResponseCompactionItem

    payload = blob(7, 800)
    short = ResponseCompactionItem.model_validate(
        {"id": "cmp_1", "type": "compaction", "encrypted_content": payload}
    )
    long_id = ResponseCompactionItem.model_validate(
        {"id": "cmp_" + "9" * 300, "type": "compaction", "encrypted_content": payload}
    )
    as_text = {"role": "assistant", "content": payload}
    assert _chars(short) == _chars(long_id) == _chars(as_text)
    bigger = ResponseCompactionItem.model_validate(
        {"id": "cmp_1", "type": "compaction", "encrypted_content": blob(7, 1600)}
    )
    assert _chars(bigger) > _chars(short) + 150  # about 800 more chars: about 200 more tokens


def test_a_readable_compaction_costs_its_summary_text() -> None:
    block = anthropic_block(4)
    summary = block.content
    assert isinstance(summary, str)
    turn = {"role": "assistant", "content": [block]}
    assert _chars(turn) == _chars({"role": "assistant", "content": summary})


@pytest.mark.parametrize(("name", "message"), _variants(), ids=[n for n, _ in _variants()])
def test_each_shape_is_accepted_and_returned_as_given(name: str, message: Any) -> None:
    before = copy.deepcopy(as_json(message))
    manager = MessageContextManager(100_000, counter="chars")
    manager.add({"role": "user", "content": "compact please"})
    manager.add(message)
    manager.add({"role": "user", "content": "go on"})
    context = manager.get_context()
    assert context[0] is message  # what precedes it is not sent
    assert as_json(context[0]) == before  # never edited


@pytest.mark.parametrize("where", ["jsonl", "sqlite"])
def test_compactions_round_trip_through_the_stores(tmp_path: Path, where: str) -> None:
    target = tmp_path / "chat.jsonl" if where == "jsonl" else f"sqlite:///{tmp_path}/chat.db"
    manager = MessageContextManager.open(target, max_tokens=100_000, counter="chars")
    added = []
    for k, (_, message) in enumerate(_variants()):
        for extra in ({"role": "user", "content": f"question {k}"}, message):
            manager.add(extra)
            added.append(extra)
    context = manager.get_context()
    manager.store.close()
    reopened = MessageContextManager.open(target, max_tokens=100_000, counter="chars")
    restored = reopened.messages
    assert restored == added
    assert [type(m) for m in restored] == [type(m) for m in added]
    assert [as_json(m) for m in reopened.get_context()] == [as_json(m) for m in context]
    reopened.store.close()


def test_validate_flags_a_compaction_sent_to_another_provider() -> None:
    item, turn = openai_item(1), anthropic_turn(2)
    user = {"role": "user", "content": "next"}
    to_anthropic = validate([item, user], "anthropic")
    assert [p.rule for p in to_anthropic if p.index == 0] == ["compaction-provider"]
    to_openai = validate([turn, user], "openai-responses")
    assert [p.rule for p in to_openai] == ["compaction-provider"]
    assert validate([item, user], "openai") != []  # chat completions reads no compaction
    assert validate([item, user], "openai-responses") == []
    assert validate([turn, user], "anthropic") == []  # a compaction turn may open the request


def test_validate_flags_an_anthropic_compaction_that_is_not_first() -> None:
    turn = anthropic_turn(5)
    problems = validate([{"role": "user", "content": "hi"}, turn], "anthropic")
    assert [p.rule for p in problems] == ["compaction-first"]
