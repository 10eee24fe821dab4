"""The command line reads at most ``CONTEXT_MANAGER_MAX_INPUT_BYTES`` (default 256 MiB) of a
file or stdin: one byte more is one error line and exit status 2, and the read stops there
(a pipe that never ends ends the command instead of filling memory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import context_manager
from context_manager.cli import main

ENV = "CONTEXT_MANAGER_MAX_INPUT_BYTES"
#: The directory holding this checkout's package, for the child process.
SOURCE = str(Path(context_manager.__file__).resolve().parents[1])


def _file_of(path: Path, size: int) -> Path:
    """A valid message list of exactly ``size`` bytes (padded with JSON whitespace)."""
    body = json.dumps([{"role": "user", "content": "hello"}]).encode()
    path.write_bytes(body + b" " * (size - len(body)))
    assert path.stat().st_size == size
    return path


def test_a_file_at_the_limit_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "1000")
    path = _file_of(tmp_path / "at.json", 1000)
    assert main(["count", str(path), "--json", "--counter", "chars"]) == 0
    assert len(json.loads(capsys.readouterr().out)["messages"]) == 1


def test_a_limit_far_above_the_input_costs_only_the_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A petabyte limit on a 100-byte file: memory follows the input, not the limit."""
    monkeypatch.setenv(ENV, str(10**15))
    path = _file_of(tmp_path / "small.json", 100)
    assert main(["count", str(path), "--json", "--counter", "chars"]) == 0
    assert len(json.loads(capsys.readouterr().out)["messages"]) == 1


@pytest.mark.parametrize("command", ["count", "trim", "stats", "check"])
def test_a_file_one_byte_over_the_limit_is_one_error_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    monkeypatch.setenv(ENV, "1000")
    path = _file_of(tmp_path / "over.json", 1001)
    assert main([command, str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("context-manager: error: ")
    assert "larger than the input limit of 1,000 bytes" in captured.err
    assert ENV in captured.err


@pytest.mark.parametrize(
    "value", ["0", "-5", "ten", "1e6", "²", pytest.param("9" * 5000, id="5000-digits")]
)
def test_a_bad_limit_is_one_error_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    value: str,
) -> None:
    monkeypatch.setenv(ENV, value)
    path = _file_of(tmp_path / "ok.json", 100)
    assert main(["count", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{ENV} must be a whole number of bytes" in err


def test_stdin_is_refused_at_the_limit_without_waiting_for_its_end() -> None:
    # The writer sends 80,000 bytes and keeps the pipe open: a read to the end would wait for
    # it (and, from an endless source, fill memory); a bounded read stops one byte past 65,536.
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; sys.stdout.buffer.write(b'[]' * 40_000); sys.stdout.flush(); "
            "time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None
        done = subprocess.run(
            [sys.executable, "-m", "context_manager", "count", "-"],
            stdin=writer.stdout,
            capture_output=True,
            text=True,
            env={**os.environ, ENV: "65536", "PYTHONPATH": SOURCE},
            timeout=60,
        )
    finally:
        writer.kill()
        writer.wait()
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "context-manager: error: <stdin>: larger than the input limit of 65,536 bytes; "
        f"set {ENV} to read more\n"
    )
