"""The command line and the README's two set-up commands."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from context_manager import ContextManagerError, count_tokens, trim
from context_manager.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "context_manager" / "data" / "sample_conversation.json"


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```bash\n(.*?)```", text, re.S)
    assert match, "README must open with a bash block"
    assert text.index(match.group(0)) < text.index("\n## "), "the set-up block must come first"
    return [line for line in match.group(1).splitlines() if line.strip()]


def test_readme_opens_with_exactly_two_commands_and_ci_runs_the_second() -> None:
    commands = readme_commands()
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[1] in ci
    # The README's run leaves out the tests marked slow; CI runs them right after it.
    assert ci.index("python -m pytest -m slow") > ci.index(commands[1])


def test_readme_main_job_runs() -> None:
    main_job = readme_commands()[0].split("&&", 1)[1].split()
    assert main_job[0] == "context-manager"
    exe = shutil.which("context-manager")
    argv = [exe, *main_job[1:]] if exe else [sys.executable, "-m", "context_manager", *main_job[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "Kept, in order:" in lines
    summary = lines[-1]
    kept, total = map(int, re.search(r"kept (\d+)/(\d+) messages", summary).groups())  # type: ignore[union-attr]
    assert 0 < kept < total == len(json.loads(SAMPLE.read_text()))
    used, budget = map(int, re.search(r"(\d+)/(\d+) tokens", summary).groups())  # type: ignore[union-attr]
    assert used <= budget == 480


@pytest.mark.parametrize(
    ("budget", "flags", "options"),
    [
        (500, [], {}),
        (600, [], {}),
        (500, ["--strategy", "priority"], {"strategy": "priority"}),
        (600, ["--max-messages", "6"], {"max_messages": 6}),
        (500, ["--provider", "anthropic"], {"provider": "anthropic"}),
        (500, ["--counter", "estimate"], {"counter": "estimate"}),
    ],
    ids=["500", "600", "priority", "max-messages", "anthropic", "estimate"],
)
def test_trim_prints_what_trim_returns(
    capsys: pytest.CaptureFixture[str], budget: int, flags: list[str], options: dict[str, Any]
) -> None:
    """``--budget-tokens`` is ``trim()``'s input budget (no 20% reserve); the rest its defaults."""
    sample = json.loads(SAMPLE.read_text())
    expected = trim(sample, budget, **options)
    assert 0 < len(expected) < len(sample)
    assert main(["trim", str(SAMPLE), "--budget-tokens", str(budget), *flags]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == expected
    tokens = count_tokens(expected, None, counter=options.get("counter"))
    assert tokens <= budget
    assert err.startswith(
        f"kept {len(expected)}/{len(sample)} messages, {tokens}/{budget} tokens ["
    )


def test_trim_without_max_tokens_has_no_token_limit(capsys: pytest.CaptureFixture[str]) -> None:
    sample = json.loads(SAMPLE.read_text())
    assert main(["trim", str(SAMPLE)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == trim(sample, 2**53) == sample
    tokens = count_tokens(sample, None)
    assert (
        err == f"kept {len(sample)}/{len(sample)} messages, {tokens} tokens "
        "(no --budget-tokens: no token limit)\n"
    )


def test_trim_validate_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An orphaned tool result beyond the cut: unread by default, refused with ``all``."""
    history = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "x", "content": "r"},
        {"role": "assistant", "content": "long " * 100},
        {"role": "user", "content": "again"},
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(history))
    assert main(["trim", str(path), "--budget-tokens", "50"]) == 0
    assert json.loads(capsys.readouterr().out) == trim(history, 50)
    assert main(["trim", str(path), "--budget-tokens", "50", "--validate", "all"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("context-manager: error: message 1: tool result references")
    with pytest.raises(ContextManagerError):
        trim(history, 50, validate="all")


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--budget-tokens", "0"], "budget_tokens must be a positive int"),
        (["--budget-tokens", "-5"], "budget_tokens must be a positive int"),
    ],
)
def test_trim_option_errors_are_trims_own(
    capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    assert main(["trim", str(SAMPLE), *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("context-manager: error: ") and says in captured.err


def test_stats_window_is_a_managers_window(capsys: pytest.CaptureFixture[str]) -> None:
    """``stats --window 600``: 20% reserved, so it sends what ``trim()`` keeps within 480."""
    sample = json.loads(SAMPLE.read_text())
    assert main(["stats", str(SAMPLE), "--window", "600"]) == 0
    stats = json.loads(capsys.readouterr().out)
    expected = trim(sample, 480)
    assert stats["budget_tokens"] == 480 and stats["reserve_tokens"] == 120
    assert stats["context_message_count"] == len(expected) < len(trim(sample, 600))
    assert stats["context_tokens"] == count_tokens(expected, None)


def test_help_says_which_budget_each_command_takes(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("trim", "stats"):
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        if command == "trim":
            assert "trim()" in text and "the input budget, trim()'s budget_tokens" in text
            assert "--window" not in text
        else:
            assert "MessageContextManager" in text and "20% is reserved" in text
            assert "--budget-tokens" not in text


def test_count_and_stats(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    jsonl = tmp_path / "chat.jsonl"
    jsonl.write_text(
        '{"role":"_system_prompt","content":"meta"}\n'
        '{"role":"user","content":"hello there"}\n\n'
        '{"role":"assistant","content":"hi"}\n'
    )
    assert main(["count", str(jsonl), "--json", "--counter", "chars"]) == 0
    counted = json.loads(capsys.readouterr().out)
    # a session log reads as a restore does: its system prompt first (it is sent and counted)
    assert [r["tokens"] for r in counted["messages"]] == [4, 6, 4]  # ceil(4/4)+3, ceil(11/4)+3, ..
    assert counted["total"] == 14 and counted["prompt_total"] == 17
    assert main(["stats", str(jsonl), "--window", "100"]) == 0  # a manager: 20% reserved
    stats = json.loads(capsys.readouterr().out)
    assert stats["max_tokens"] == 100 and stats["budget_tokens"] == 80
    assert stats["counts_by_role"]["user"] == 1


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[1, 2", "invalid JSON at line 1"),
        ('{"role":"user","content":"a"}\nnot json\n', ":2: invalid JSON line"),
        ('[{"role":"robot","content":"a"}]', "message 0: unknown role 'robot'"),
        # Legal for Python's json, not JSON (Node's JSON.parse refuses them), and written back
        # they would make stdout unreadable as JSON:
        ('[{"role":"user","content":"x","n":NaN}]', "bare NaN is not JSON"),
        ('[{"role":"user","content":"x","n":1e999}]', "1e999 is too large for a float"),
        ('{"role":"user","content":"x","n":-Infinity}\n', "bare -Infinity is not JSON"),
    ],
)
def test_bad_files_get_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, fragment: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["trim", str(bad), "--budget-tokens", "100"]) == 2
    printed = capsys.readouterr()
    assert fragment in printed.err and printed.out == ""


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["count", "/nonexistent.json"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_verify_reports_mismatch_with_a_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = {
        "suite": "pi.calculateContextTokens",
        "package": "@mariozechner/pi-coding-agent@0.73.1",
        "function": "calculateContextTokens",
        "cases": [
            {"id": "ok", "input": {"totalTokens": 7}, "expected": 7},
            {"id": "wrong", "input": {"totalTokens": 7}, "expected": 8},
        ],
    }
    (tmp_path / "s.json").write_text(json.dumps(suite))
    assert main(["verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL pi.calculateContextTokens" in out and "1/2" in out and "case wrong" in out
    assert "0 suites passed, 1 failed" in out


@pytest.mark.slow  # every committed fixture case (tens of thousands)
def test_verify_committed_fixtures_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(ROOT / "compat_fixtures" / "fixtures")]) == 0
    assert "FAIL" not in capsys.readouterr().out


def test_check_lists_provider_problems_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps([{"role": "assistant", "content": "hello"}, {"role": "user", "content": "hi"}])
    )
    assert main(["check", str(path), "--provider", "anthropic"]) == 1
    assert "message 0" in capsys.readouterr().out
    assert main(["check", str(path), "--provider", "openai"]) == 0


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"\xff\xfe[]", "not UTF-8"),
        (b"[" * 100_000, "nested too deeply"),
        (b"[{oops", "invalid JSON"),
        (b'{"role": "user", "content": "x"}\n' + b"[" * 100_000 + b"\n", "nested too deeply"),
    ],
    ids=["utf16", "deep-array", "broken", "deep-jsonl"],
)
def test_bad_files_are_one_line_errors_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, fragment: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    assert main(["count", str(path)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_bom_is_not_content(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"role": "user", "content": "x"}]).encode())
    assert main(["count", str(path)]) == 0


def test_closed_pipe_is_quiet() -> None:
    import subprocess
    import sys

    sample = ROOT / "context_manager" / "data" / "sample_conversation.json"
    script = (
        f"{sys.executable} -m context_manager trim {sample} --budget-tokens 100000 "
        "| head -c 10 > /dev/null"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
