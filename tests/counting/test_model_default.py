"""``model=`` picks the counter everywhere: manager, trim(), count_tokens() and the CLI agree;
without a model all four use the same safe default (``"estimate"``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tiktoken")

from context_manager.cli import main
from context_manager.counting import count_tokens, get_counter
from context_manager.manager import MessageContextManager
from context_manager.oneshot import trim

MESSAGES = [
    {"role": "system", "content": "你是一个简洁的助手。"},
    {"role": "user", "content": "把这段日志总结一下: 2026-01-02T03:04:05Z ERROR db=7 timeout"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "grep", "arguments": '{"pattern":"ERROR","n":200}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY" * 20},
]


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("gpt-4o", "tiktoken:o200k_base"),
        ("gpt-4-0613", "tiktoken:cl100k_base"),
        ("claude-sonnet-4-5", "estimate:claude-sonnet-4-5"),
        (None, "estimate"),
    ],
)
def test_manager_counts_with_the_models_counter(model: str | None, name: str) -> None:
    manager = MessageContextManager(model=model)
    manager.extend(MESSAGES)
    assert manager.stats().counter == name
    assert manager.counter is get_counter(model=model)


def test_one_safe_default_without_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manager, trim(), count_tokens() and the CLI count alike, and never below o200k."""
    default = get_counter()
    assert default is get_counter("estimate") and default.name == "estimate"
    manager = MessageContextManager()
    assert manager.counter is default
    total = count_tokens(MESSAGES)
    assert total == count_tokens(MESSAGES, counter="estimate")
    assert trim(MESSAGES, total) == MESSAGES and trim(MESSAGES, total - 1) != MESSAGES
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES), encoding="utf-8")
    assert main(["count", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["prompt_total"] == total
    exact = count_tokens(MESSAGES, model="gpt-4o")  # tiktoken o200k with OpenAI's framing
    assert total >= exact > count_tokens(MESSAGES, counter="chars")


def test_explicit_chars_keeps_pi_arithmetic_with_a_model() -> None:
    manager = MessageContextManager(model="gpt-4o", counter="chars")
    assert manager.stats().counter == "chars/4"


@pytest.mark.parametrize("model", ["gpt-4o", "claude-opus-4-5", "gemini-2.5-pro", None])
def test_cli_and_api_give_the_same_figure(
    model: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES), encoding="utf-8")
    argv = ["count", str(path), "--json"] + (["--model", model] if model else [])
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["prompt_total"] == count_tokens(MESSAGES, model=model)
    assert report["counter"] == get_counter(model=model).name
    assert sum(report["by_role"].values()) == report["total"]
    assert main(argv[:2] + argv[3:]) == 0  # the human table says the same
    assert f"counter: {report['counter']}" in capsys.readouterr().out


def test_trim_with_a_model_uses_its_tokenizer() -> None:
    budget = count_tokens(MESSAGES, counter="chars")  # everything fits by chars/4 ...
    assert trim(MESSAGES, budget, counter="chars") == MESSAGES
    by_model = trim(MESSAGES, budget, model="gpt-4o")  # ... not by gpt-4o's real count
    assert by_model == trim(MESSAGES, budget, counter="tiktoken:o200k_base")
    dropped = trim(MESSAGES, budget, model="gpt-4o", truncate_newest=False)
    assert dropped == MESSAGES[:2]
    # by default the newest tool exchange is cut to fit instead of dropped
    assert by_model[:2] == MESSAGES[:2] and by_model[2] is MESSAGES[2]
    assert "[Tool result trimmed" in by_model[3]["content"]


def test_count_tokens_takes_a_counter() -> None:
    assert count_tokens(MESSAGES, model="gpt-4o", counter="chars") == count_tokens(
        MESSAGES, counter="chars"
    )
    assert count_tokens(MESSAGES, counter="estimate") > count_tokens(MESSAGES, counter="chars")
