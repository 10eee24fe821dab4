"""The command line on bad files and closed pipes: one clean line, exit 2, nothing half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from context_manager.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "context_manager" / "data" / "sample_conversation.json"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'[{"role": "user", "content": "caf\xe9"}]', "not UTF-8"),
        (b"\xff\xfe[\x00]\x00", "not UTF-8"),  # UTF-16 with its byte order mark
        (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        (b'{"role": "user", "content": ' + b"[" * 200_000 + b"}\n", "nested too deeply"),
        (b'[{"role": "user", "content": "a"}, {"role": "nobody"}]', "error"),
        (b"[1, 2", "invalid JSON"),
        (b'{"role": "user"}\n{oops\n', "invalid JSON line"),
    ],
)
@pytest.mark.parametrize("command", ["count", "trim", "stats"])
def test_bad_files_give_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, says: str, command: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    assert main([command, str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing half-written
    assert captured.err.startswith("context-manager: error: ") and says in captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err


def test_utf8_byte_order_mark_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + SAMPLE.read_bytes())
    assert main(["count", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] > 0


def test_missing_file_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trim", str(tmp_path / "none.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """``context-manager trim big.json | head -c 100``: no BrokenPipeError traceback."""
    big = tmp_path / "big.json"
    big.write_text(json.dumps([{"role": "user", "content": "x" * 2000}] * 2000))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "context_manager", "trim", str(big), "--budget-tokens", "10000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100)
    proc.stdout.close()  # the reader goes away, like head
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert proc.returncode in (0, 141)


DIGITS = sys.get_int_max_str_digits()
TOO_LONG = b"9" * (DIGITS + 100)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (  # JSONL: the line number, then the field
            b'{"role": "user", "content": "ok"}\n{"role": "user", "content": "\\ud800"}\n',
            "bad.json:2: ['content'] holds a lone surrogate (\\ud800) at position 0",
        ),
        (  # a JSON array: the message index, then the field
            b'[{"role": "user", "content": [{"type": "text", "text": "a\\uDC00"}]}]',
            "bad.json: message 0: ['content'][0]['text'] holds a lone surrogate (\\udc00)",
        ),
        (b'[{"role": "user", "content": "x", "n": ' + TOO_LONG + b"}]", "unreadable number"),
        (b'{"role": "user", "content": "x", "n": ' + TOO_LONG + b"}\n", "bad.json:1: unreadable"),
    ],
    ids=["lone surrogate in JSONL", "lone surrogate in an array", "huge int", "huge int JSONL"],
)
@pytest.mark.parametrize("command", ["count", "trim", "stats", "check"])
def test_lone_surrogates_and_unreadable_numbers_give_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, says: str, command: str
) -> None:
    if b"9999" in content and not DIGITS:
        pytest.skip("Python runs without a digit limit")
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    assert main([command, str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing half-written
    assert captured.err.startswith("context-manager: error: ") and says in captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err


def test_escaped_surrogate_pair_is_one_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only a *lone* surrogate is refused: a pair decodes to one astral character."""
    path = tmp_path / "emoji.jsonl"
    path.write_bytes(b'{"role": "user", "content": "hi \\ud83d\\ude00"}\n')
    assert main(["trim", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == [{"role": "user", "content": "hi \U0001f600"}]


PASSWORD = "S3cretPW"
TARGETS = [
    f"REDIS://u:{PASSWORD}@127.0.0.1:1/0",
    f"Postgresql://u:{PASSWORD}@127.0.0.1:1/db",
    f"mysql://u:{PASSWORD}@h/db",
    f"redis+sentinel://u:{PASSWORD}@h",
    f"host=h password={PASSWORD}",
    f"sqlite:///nowhere/x.db?password={PASSWORD}",
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "command",
    [
        ["compactions", "{t}"],
        ["sessions", "list", "{t}"],
        ["sessions", "delete", "{t}", "s1"],
        ["sessions", "copy", "{t}", "{t}", "--session", "s1"],
        ["sessions", "copy", "{t}", "{t}", "--session"],  # argparse's own usage error
    ],
)
def test_no_command_prints_a_password_given_on_its_command_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    command: list[str],
) -> None:
    """Whatever the scheme's spelling, the form (URL, libpq key=value, query) or the message
    (ours, a client library's), and nothing is created for a target that does not exist."""
    monkeypatch.chdir(tmp_path)
    try:
        status = main([part.format(t=target) for part in command])
    except SystemExit as done:
        status = done.code
    assert status == 2
    captured = capsys.readouterr()
    assert PASSWORD not in captured.out + captured.err
    assert "error: " in captured.err
    assert os.listdir(tmp_path) == []  # no database file, no directory named after the DSN


def _replay_plotted(plot: Path) -> int:
    """``replay`` of the bundled sample drawn to ``plot`` (matplotlib: the ``plot`` extra)."""
    pytest.importorskip("matplotlib")
    args = ["replay", str(SAMPLE), "--provider", "openai", "--counter", "chars"]
    return main([*args, "--budget-tokens", "2000", "--plot", str(plot)])


def test_a_plot_that_cannot_be_written_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _replay_plotted(tmp_path / "missing" / "x.png") == 2
    err = capsys.readouterr().err
    assert err.startswith("context-manager: error: ") and "Traceback" not in err
    assert err.count("\n") == 1
    # The path and the OS's reason, as the CLI names every other file it cannot use.
    assert err.endswith(f"{tmp_path / 'missing' / 'x.png'}: No such file or directory\n")


def test_a_plot_named_without_a_suffix_is_written_where_it_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """matplotlib writes ``myplot.png`` for ``myplot``; the command names that file."""
    assert _replay_plotted(tmp_path / "myplot") == 0
    written = tmp_path / "myplot.png"
    assert written.is_file()
    assert f"plot: {written}\n" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.mkdir(), "a directory"),
        (lambda p: os.mkfifo(p), "not a regular file"),
        (lambda p: p.write_text('[{"role": "user", "n": ' + "9" * 5000 + "}]"), "4,300 digits"),
    ],
)
def test_an_input_that_is_no_message_file_says_what_it_is(
    make: Any, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "input"
    make(target)
    assert main(["count", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("context-manager: error: ") and said in err
    assert "set_int_max_str_digits" not in err and err.count("\n") == 1


def test_verify_skips_a_json_file_it_cannot_read_as_a_fixture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "numbers.json").write_text("[" + "9" * 5000 + "]")
    assert main(["verify", str(tmp_path)]) == 2
    assert "no fixture files" in capsys.readouterr().err
