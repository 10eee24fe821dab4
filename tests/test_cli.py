"""The command line and the README's two set-up commands."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci.splitlines()


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


def test_trim_prints_kept_json_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trim", str(SAMPLE), "--max-tokens", "500", "--strategy", "priority"]) == 0
    out, err = capsys.readouterr()
    kept = json.loads(out)
    sample = json.loads(SAMPLE.read_text())
    assert kept[0] == sample[0] and kept[-1] == sample[-1]
    assert all(m in sample for m in kept)
    assert err.startswith(f"kept {len(kept)}/{len(sample)} messages") and "[" in err


def test_count_and_stats(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    jsonl = tmp_path / "chat.jsonl"
    jsonl.write_text(
        '{"role":"_system_prompt","content":"meta"}\n'
        '{"role":"user","content":"hello there"}\n\n'
        '{"role":"assistant","content":"hi"}\n'
    )
    assert main(["count", str(jsonl), "--json"]) == 0
    counted = json.loads(capsys.readouterr().out)
    assert [r["tokens"] for r in counted["messages"]] == [6, 4]  # ceil(11/4)+3, ceil(2/4)+3
    assert counted["total"] == 10 and counted["prompt_total"] == 13
    assert main(["stats", str(jsonl), "--max-tokens", "100"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["budget_tokens"] == 80 and stats["counts_by_role"]["user"] == 1


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[1, 2", "invalid JSON at line 1"),
        ('{"role":"user","content":"a"}\nnot json\n', ":2: invalid JSON line"),
        ('[{"role":"robot","content":"a"}]', "message 0: unknown role 'robot'"),
    ],
)
def test_bad_files_get_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, fragment: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["trim", str(bad), "--max-tokens", "100"]) == 2
    assert fragment in capsys.readouterr().err


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
        f"{sys.executable} -m context_manager trim {sample} --max-tokens 100000 "
        "| head -c 10 > /dev/null"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
