"""``context-manager replay``: settings side by side, priced with the provider's cache rules."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from context_manager.cli import main
from context_manager.counting import get_counter
from context_manager.prompt_cache import cache_rules
from context_manager.replay import recommend, replay, request_points

Msg = dict[str, Any]


def agent_session(turns: int = 40, seed: int = 7) -> list[Msg]:
    """A tool-heavy agent session: each user turn is followed by 1-4 rounds of parallel calls."""
    rng = random.Random(seed)
    out: list[Msg] = [{"role": "system", "content": "You are a coding agent. " * 120}]
    n = 0
    for turn in range(turns):
        out.append(
            {"role": "user", "content": f"task {turn}: " + "please fix it " * rng.randint(5, 40)}
        )
        for _ in range(rng.randint(1, 4)):
            calls = []
            for _ in range(rng.randint(1, 3)):
                n += 1
                calls.append(
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": f"f{n}.py"}),
                        },
                    }
                )
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call in calls:
                body = f"# {call['id']}\n" + "line of code\n" * rng.randint(20, 120)
                out.append({"role": "tool", "tool_call_id": call["id"], "content": body})
        out.append(
            {"role": "assistant", "content": f"done with task {turn}. " * rng.randint(3, 30)}
        )
    return out


def _expected_points(messages: list[Msg]) -> list[int]:
    return [
        i
        for i, m in enumerate(messages)
        if m["role"] == "assistant" and i > 0 and messages[i - 1]["role"] in ("user", "tool")
    ]


def test_a_request_is_made_before_each_assistant_step() -> None:
    session = agent_session(10)
    assert request_points(session) == _expected_points(session)


@pytest.mark.parametrize(
    ("provider", "model"), [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5")]
)
def test_recommended_setting_costs_less_than_plain_window_and_langchain(
    provider: str, model: str
) -> None:
    session = agent_session()
    results = replay(
        session, cache_rules(provider, model), budget=12_000, counter=get_counter("chars")
    )
    by_name = {r.setting: r for r in results}
    best = recommend(results)
    assert best is not None and best.invalid == 0
    assert best.cost < 0.8 * by_name["sliding_window"].cost
    assert best.cost < 0.8 * by_name["langchain"].cost
    for r in results:
        assert r.requests == len(_expected_points(session))
        assert all(row.sent <= 12_000 for row in r.rows)


def test_cli_prints_cost_per_setting(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    session = tmp_path / "session.jsonl"
    session.write_text("\n".join(json.dumps(m) for m in agent_session(15)))
    args = [
        "replay",
        str(session),
        "--provider",
        "anthropic",
        "--budget-tokens",
        "8000",
        "--counter",
        "chars",
    ]
    assert main([*args, "--setting", "sliding_window", "--setting", "retention=0.7"]) == 0
    out = capsys.readouterr().out
    assert "sliding_window" in out and "retention=0.7" in out and "recommended: " in out
    assert main([*args, "--setting", "retention=0.7", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (setting,) = doc["settings"]
    rows = setting["rows"]
    assert setting["tokens_sent"] == sum(r["sent"] for r in rows)
    assert all(r["cached"] + r["written"] <= r["sent"] for r in rows)
    assert rows[0]["reason"] == "first_request"


def test_cli_draws_the_session(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    session = tmp_path / "session.json"
    session.write_text(json.dumps(agent_session(8)))
    png = tmp_path / "replay.png"
    args = [
        "replay",
        str(session),
        "--provider",
        "openai",
        "--budget-tokens",
        "6000",
        "--counter",
        "chars",
    ]
    assert main([*args, "--setting", "sliding_window", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_unknown_setting_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session = tmp_path / "session.json"
    session.write_text(json.dumps(agent_session(3)))
    args = ["replay", str(session), "--provider", "gemini", "--budget-tokens", "6000"]
    args += ["--setting", "lru"]
    assert main(args) == 2
    assert "unknown setting 'lru'" in capsys.readouterr().err


def test_replay_without_budget_or_model_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session = tmp_path / "session.json"
    session.write_text(json.dumps(agent_session(2)))
    assert main(["replay", str(session), "--provider", "openai"]) == 2
    assert "--budget-tokens" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option",
    [
        ["--seconds-between", "inf"],
        ["--seconds-between", "nan"],
        ["--seconds-between", "-5"],
        ["--price", "nan"],
        ["--price", "-1"],
    ],
)
def test_a_time_or_price_that_is_no_finite_non_negative_number_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    """inf seconds read as no time at all (every request cached), NaN gave NaN costs."""
    session = tmp_path / "session.json"
    session.write_text(json.dumps(agent_session(4)))
    args = ["replay", str(session), "--provider", "openai", "--counter", "chars"]
    args += ["--budget-tokens", "6000", *option]
    assert main(args) == 2
    assert "must be a finite number >= 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("messages", None),
        ("messages", {"role": "user", "content": "hi"}),
        ("rules", "openai"),
        ("settings", "sliding_window"),
        ("settings", [None]),
        ("settings", 5),
        ("settings", None),
        ("tools", 5),
        ("seconds_between", True),
        ("counter", 4),
    ],
)
def test_a_wrong_argument_is_a_configuration_error(option: str, value: Any) -> None:
    from context_manager.errors import ConfigurationError

    args: dict[str, Any] = {"messages": agent_session(3), "rules": cache_rules("openai")}
    args |= {"budget": 6_000, "counter": "chars", option: value}
    with pytest.raises(ConfigurationError):
        replay(args.pop("messages"), args.pop("rules"), **args)


def test_a_counter_is_named_as_for_trim() -> None:
    """``counter="chars"`` is the counter ``get_counter("chars")`` gives, as in ``trim()``."""
    session, rules = agent_session(3), cache_rules("openai")
    by_name = replay(session, rules, budget=6_000, counter="chars", settings=["sliding_window"])
    given = replay(
        session, rules, budget=6_000, counter=get_counter("chars"), settings=["sliding_window"]
    )
    assert [r.cost for r in by_name] == [r.cost for r in given]
    assert by_name[0].requests == len(request_points(session))
