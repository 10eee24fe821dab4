"""A failed Anthropic server compaction (``content: null``) is no compaction.

The Anthropic SDK's ``BetaCompactionBlock``: "When content is None, it indicates the compaction
failed to produce a valid summary ... Clients may round-trip compaction blocks with null
content; the server treats them as no-ops." The turns before such a block are still the
conversation. The context used to start at it (every earlier turn silently dropped), and a
native compactor returning one was applied as a compaction (the whole history dropped).
"""

from __future__ import annotations

from anthropic.types.beta import BetaMessage

from context_manager import MessageContextManager
from context_manager.compaction.native import FellBack, compact_native


def _reply(content: str | None) -> BetaMessage:
    return BetaMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "compaction", "content": content},
                {"type": "text", "text": "ok, continuing"},
            ],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def _session(reply: BetaMessage) -> list[object]:
    manager = MessageContextManager(200_000, provider="anthropic", system_prompt="Be brief.")
    for k in range(5):
        manager.add({"role": "user", "content": f"fact {k}: the key is at secret/app{k}"})
        manager.add({"role": "assistant", "content": f"noted {k}"})
    manager.add({"role": "user", "content": "continue"})
    manager.add(reply)
    manager.add({"role": "user", "content": "what was fact 2?"})
    return manager.get_context()


def test_turns_before_a_failed_compaction_are_still_sent() -> None:
    context = _session(_reply(None))
    assert any("secret/app2" in str(message) for message in context)
    assert len(context) == 1 + 13  # the system prompt, then every turn


def test_turns_before_a_compaction_with_a_summary_are_not() -> None:
    context = _session(_reply("Facts 0-4: keys under secret/app0..4."))
    assert not any("secret/app2" in str(message) for message in context)


def test_a_native_compactor_that_returns_a_failed_block_falls_back() -> None:
    manager = MessageContextManager(2_000, counter="chars", provider="anthropic")
    for k in range(30):
        manager.add({"role": "user", "content": f"step {k}: keep file src/m{k}.py " + "d " * 8})
        manager.add({"role": "assistant", "content": f"done {k}. " + "ok " * 8})

    def compactor(messages: object) -> list[object]:
        return [{"role": "assistant", "content": [{"type": "compaction", "content": None}]}]

    result = compact_native(manager, compactor, provider="anthropic")
    assert isinstance(result, FellBack)
    context = manager.get_context()
    assert not any(
        isinstance(m, dict) and m.get("content") == [{"type": "compaction", "content": None}]
        for m in context
    )
    assert context[-1] == {"role": "assistant", "content": "done 29. " + "ok " * 8}
