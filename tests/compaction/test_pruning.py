"""Tool-result pruning: each parameter, the presets, the view-only contract, the fallback."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from context_manager import ConfigurationError, MessageContextManager, trim
from context_manager.compaction.pruning import (
    OPENCLAW_PLACEHOLDER,
    PruningReport,
    ToolResultPruning,
)
from context_manager.events import Event, ToolResultTruncated
from context_manager.messages.truncate import head_tail, slice_utf16
from context_manager.parity.openclaw import FIXTURE_SUITES

FIXTURES = Path(__file__).parents[2] / "compat_fixtures" / "fixtures"


def call(i: int, name: str = "read", args: str = "{}") -> dict[str, Any]:
    fn = {"name": name, "arguments": args}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{i}", "type": "function", "function": fn}],
    }


def result(i: int, size: int, char: str = "x") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"c{i}", "content": char * size}


def session(n: int, size: int, names: list[str] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    out.append({"role": "user", "content": "go"})
    for i in range(n):
        out += [call(i, names[i % len(names)] if names else "read"), result(i, size)]
    return out


def view(pruning: ToolResultPruning, msgs: list[Any], window: int = 60_000) -> Any:
    m = MessageContextManager(window, reserve_tokens=0, pruning=pruning, counter="chars")
    m.extend(msgs)
    return m, m.get_context()


def tool_sizes(ctx: list[Any]) -> list[int]:
    return [len(c["content"]) for c in ctx if isinstance(c, dict) and c.get("role") == "tool"]


def test_openclaw_parity_fixtures_from_the_real_pruner() -> None:
    data = json.loads((FIXTURES / "openclaw.sessionPruning.json").read_text())
    run = FIXTURE_SUITES[data["suite"]]
    changed = 0
    for case in data["cases"]:
        got = json.loads(json.dumps(run(case["input"])))
        assert got == case["expected"], case["id"]
        changed += bool(got["changed"])
    assert changed > 30
    cleared = [
        c
        for c in data["cases"]
        if "cleared]" in json.dumps(c["expected"]) or "[gone]" in json.dumps(c["expected"])
    ]
    assert len(cleared) >= 5  # the hard clear is exercised too


def test_soft_trim_keeps_head_tail_and_marker_and_never_mutates() -> None:
    msgs = session(20, 20_000)
    before = copy.deepcopy(msgs)
    m, ctx = view(ToolResultPruning.openclaw(), msgs)
    assert msgs == before
    trimmed = [c for c in ctx if c.get("role") == "tool" and len(c["content"]) < 20_000]
    assert len(trimmed) == 17  # the last 3 assistant turns are protected
    text = trimmed[0]["content"]
    assert text.startswith("x" * 1500 + "\n...\n" + "x" * 1500)
    assert "of 20000 chars" in text
    report = m.stats().pruning
    assert isinstance(report, PruningReport)
    assert report.results_trimmed == 17 and report.tokens_freed > 0
    assert m.messages == msgs[1:]  # history untouched


def test_prefix_stable_across_requests() -> None:
    msgs = session(20, 20_000)
    m, first = view(ToolResultPruning.openclaw(), msgs)
    m.add({"role": "user", "content": "more"})
    m.extend([call(99), result(99, 20_000)])
    second = m.get_context()
    n = len(first) - 6  # results that were already old keep their exact bytes
    assert first[:n] == second[:n]


def test_hard_clear_oldest_first_until_below_ratio() -> None:
    m, ctx = view(ToolResultPruning.openclaw(max_chars=None), session(20, 20_000))
    sizes = tool_sizes(ctx)
    cleared = [s == len(OPENCLAW_PLACEHOLDER) for s in sizes]
    assert cleared[0] and not cleared[-1]
    assert cleared == sorted(cleared, reverse=True)  # a prefix is cleared
    assert m.context_tokens() < 0.5 * 60_000 + 5_000


def test_min_prunable_chars_and_soft_ratio_gate() -> None:
    small = ToolResultPruning.openclaw(max_chars=None, min_prunable_chars=10**9)
    _, ctx = view(small, session(20, 20_000))
    assert OPENCLAW_PLACEHOLDER not in {c.get("content") for c in ctx}
    _, ctx = view(ToolResultPruning.openclaw(), session(4, 20_000), window=1_000_000)
    assert tool_sizes(ctx) == [20_000] * 4  # under 30% of the window: nothing happens


def test_keep_last_tool_uses_and_clear_until_all() -> None:
    cfg = ToolResultPruning.anthropic(trigger_tokens=10_000, keep_last=5)
    _, ctx = view(cfg, session(12, 8_000))
    sizes = tool_sizes(ctx)
    assert sizes[-5:] == [8_000] * 5
    assert all(s < 100 for s in sizes[:-5])


def test_exclude_tools_globs_deny_wins() -> None:
    cfg = ToolResultPruning.openclaw(exclude_tools=("web_*",), only_tools=("web_fetch", "read"))
    _, ctx = view(cfg, session(20, 20_000, names=["read", "web_fetch"]))
    names = {
        c["tool_calls"][0]["id"]: c["tool_calls"][0]["function"]["name"]
        for c in ctx
        if c.get("tool_calls")
    }
    for c in ctx:
        if c.get("role") == "tool" and names[c["tool_call_id"]] == "web_fetch":
            assert len(c["content"]) == 20_000
    assert cfg.prunable("READ") and not cfg.prunable("web_fetch") and not cfg.prunable("exec")


def test_clear_at_least_skips_cheap_clears() -> None:
    cfg = ToolResultPruning.anthropic(trigger_tokens=5_000, clear_at_least=10**6)
    m, ctx = view(cfg, session(12, 8_000))
    assert tool_sizes(ctx) == [8_000] * 12 or m.stats().pruning.results_cleared == 0
    assert m.stats().pruning.clear_skipped_below_at_least


def test_clear_tool_inputs() -> None:
    msgs = session(12, 8_000)
    for i, msg in enumerate(msgs):
        if msg.get("tool_calls"):
            msgs[i] = call(i, args=json.dumps({"path": "a" * 500}))
            msgs[i + 1] = {**msgs[i + 1], "tool_call_id": f"c{i}"}
    cfg = ToolResultPruning.anthropic(trigger_tokens=5_000, clear_tool_inputs=True)
    m, ctx = view(cfg, msgs)
    args = [c["tool_calls"][0]["function"]["arguments"] for c in ctx if c.get("tool_calls")]
    assert args[0] == "{}" and args[-1] != "{}"
    assert m.stats().pruning.inputs_cleared == m.stats().pruning.results_cleared


def test_thinking_cleared_keeping_last_turns() -> None:
    msgs: list[Any] = [{"role": "user", "content": "hi"}]
    for i in range(5):
        msgs.append({"role": "assistant", "content": f"a{i}", "reasoning_content": "t" * 2000})
        msgs.append({"role": "user", "content": f"u{i}"})
    cfg = ToolResultPruning(clear_thinking_keep=2, soft_ratio=None)
    m, ctx = view(cfg, msgs)
    kept = [c for c in ctx if c.get("role") == "assistant" and "reasoning_content" in c]
    assert len(kept) == 2 and m.stats().pruning.thinking_cleared == 3


def anthropic_result(i: int, text: str, image: bool) -> dict[str, Any]:
    content: list[Any] = [{"type": "text", "text": text}]
    if image:
        content.append(
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
            }
        )
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": content}],
    }


def anthropic_session(n: int, image: bool) -> list[Any]:
    out: list[Any] = [{"role": "user", "content": "go"}]
    for i in range(n):
        out.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "shot", "input": {}}],
            }
        )
        out.append(anthropic_result(i, "y" * 9000, image))
    return out


@pytest.mark.parametrize("images", ["clear", "keep"])
def test_images_in_anthropic_results_are_handled_explicitly(images: str) -> None:
    msgs = anthropic_session(10, image=True)
    before = copy.deepcopy(msgs)
    m, ctx = view(ToolResultPruning.openclaw(images=images, hard_clear=False), msgs, window=20_000)
    assert msgs == before
    report = m.stats().pruning
    old = ctx[1 + 2 * 0 + 1]["content"][0]["content"]
    if images == "clear":
        assert report.images_cleared == report.results_trimmed > 0 and report.images_kept == 0
        assert "[image removed during context pruning]" in old[0]["text"]
        assert all(b["type"] == "text" for b in old)
    else:
        assert report.images_kept == report.results_trimmed > 0 and report.images_cleared == 0
        assert old[-1]["type"] == "image"


def test_langchain_tool_message_rewritten_as_a_copy() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    msgs: list[Any] = [HumanMessage("go")]
    for i in range(8):
        msgs.append(AIMessage("", tool_calls=[{"id": f"l{i}", "name": "read", "args": {}}]))
        msgs.append(ToolMessage("z" * 9000, tool_call_id=f"l{i}"))
    _, ctx = view(ToolResultPruning.openclaw(hard_clear=False), msgs, window=10_000)
    trimmed = [c for c in ctx if isinstance(c, ToolMessage) and len(c.content) < 9000]
    assert trimmed and all(len(m.content) == 9000 for m in msgs if isinstance(m, ToolMessage))


def test_default_truncates_newest_result_instead_of_dropping() -> None:
    msgs = session(3, 20_000)
    events: list[Event] = []
    for strategy in ("fifo", "sliding_window", "priority"):
        m = MessageContextManager(3_000, reserve_tokens=0, strategy=strategy)
        m.subscribe(events.append)
        m.extend(msgs)
        ctx = m.get_context()
        assert ctx[-1]["tool_call_id"] == "c2" and ctx[-2]["tool_calls"][0]["id"] == "c2"
        assert "[Tool result trimmed" in ctx[-1]["content"]
        assert m.context_tokens() <= m.budget_tokens
        assert msgs[-1]["content"] == "x" * 20_000
    cuts = [e for e in events if isinstance(e, ToolResultTruncated)]
    assert cuts and cuts[0].call_ids == ("c2",) and cuts[0].tokens <= 3_000
    assert cuts[0].original_tokens > 3_000
    kept = trim(msgs, 3_000)
    assert kept[-1]["tool_call_id"] == "c2"
    assert [id(k) for k in trim(msgs, 3_000, truncate_newest=False)] == [id(msgs[0]), id(msgs[1])]


def test_trim_accepts_pruning() -> None:
    msgs = session(20, 20_000)
    out = trim(msgs, 60_000, pruning=ToolResultPruning.openclaw())
    assert len(out) == len(msgs) and msgs[3]["content"] == "x" * 20_000
    assert len(out[3]["content"]) < 4000


def test_slicing_never_splits_surrogate_pairs() -> None:
    text = "😀" * 10
    assert slice_utf16(text, 0, 3) == "😀"
    assert slice_utf16(text, -3) == "😀"
    cut = head_tail("a" * 10 + "😀" * 3000, 5, 5)
    cut.encode("utf-8")  # no lone surrogate
    assert "of 6010 chars" in cut


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_chars": 10},
        {"keep_last": -1},
        {"soft_ratio": 2},
        {"trigger_tokens": 0},
        {"exclude_tools": "read"},
        {"images": "drop"},
        {"marker": "{nope}"},
        {"clear_until": "some"},
    ],
)
def test_bad_config_is_a_typed_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ToolResultPruning(**kwargs)


def test_clear_resets_pruning_state() -> None:
    m, _ = view(ToolResultPruning.openclaw(), session(20, 20_000))
    m.clear()
    m.extend(session(2, 100)[1:])
    assert m.stats().pruning.tokens_freed == 0


def test_file_lists_capped_with_a_count_of_what_was_left_out() -> None:
    from context_manager.compaction.policies import cap_file_lists

    read = [f"src/module_{i:04d}/file.py" for i in range(1000)]
    kept_read, kept_mod, left = cap_file_lists(read + read[:10], ["a.py", "a.py"], 2_000)
    assert kept_mod == ["a.py"] and left == 1000 - len(kept_read)
    assert sum(len(p) + 1 for p in kept_read + kept_mod) <= 2_000


def test_send_with_recovery_falls_back_to_pruning_when_too_short_to_compact() -> None:
    from context_manager.compaction import send_with_recovery

    m = MessageContextManager(200_000, reserve_tokens=0)
    m.extend(session(2, 30_000))
    sent: list[list[Any]] = []

    def send(ctx: list[Any]) -> str:
        sent.append(ctx)
        if len(sent) == 1:
            raise RuntimeError("prompt is too long: 210000 tokens > 200000 maximum")
        return "ok"

    assert send_with_recovery(m, send) == "ok"
    assert sent[1][3]["content"] == OPENCLAW_PLACEHOLDER  # older result cleared, newest intact
    assert sent[1][-1]["content"] == "x" * 30_000
    assert m.messages[2]["content"] == "x" * 30_000  # history untouched


def test_clearing_thinking_never_leaves_an_empty_turn() -> None:
    """An older assistant turn that is nothing but a thinking block (Claude stopped at
    ``max_tokens`` while thinking) kept its role and lost its only block: an empty turn, which
    Anthropic refuses ("all messages must have non-empty content")."""
    from context_manager.providers import validate

    thought = {"type": "thinking", "thinking": "long thought " * 200, "signature": "SIG0"}
    said = {"type": "text", "text": "an answer"}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{**thought, "signature": "SIG"}, said]},
        {"role": "user", "content": "q0"},
        {"role": "assistant", "content": [thought]},
        {"role": "user", "content": "continue"},
    ]
    for i in range(6):
        history += [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t " * 50, "signature": f"S{i}"},
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "r", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "data " * 200}
                ],
            },
        ]
    pruning = ToolResultPruning.anthropic(trigger_tokens=500, clear_thinking_keep=2)
    manager = MessageContextManager(20_000, counter="chars", provider="anthropic", pruning=pruning)
    for message in history:
        manager.add(message)
    for context in (
        manager.get_context(),
        trim(history, 20_000, counter="chars", provider="anthropic", pruning=pruning),
    ):
        assert context[1]["content"] == [said]  # cleared: its answer stays
        assert context[3]["content"] == [thought]  # nothing else to send: kept whole
        assert validate(context, "anthropic", source=history) == []
