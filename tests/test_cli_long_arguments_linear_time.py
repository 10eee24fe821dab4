"""A long command-line argument costs the command line a pass over it, not its square.

Before it runs any command, the CLI looks for credentials in every argument (a URL's password,
a libpq ``password=``) so that nothing it prints shows them. That scan retried every letter of a
long run of letters as the start of a ``key=``: 16,000 letters took 3.4 s and a 64,000-letter
``--model`` kept ``context-manager count`` busy for a minute. The bound is a ratio to a pass over
the same text (``tests/linear_time.py``), so it holds on a slow or busy machine; the old scan
took over 50 times its bound on these sizes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from context_manager.cli import main
from tests.linear_time import assert_linear

SIZE = 32_000
PASSWORD = "S3cr3tPW"

#: Arguments of every shape the scan reads: runs of letters, keys without values, quotes that
#: never close, key=value strings, URLs with many ``@`` or query parameters.
SHAPES = {
    "letters": lambda n: "x" * n,
    "letters-then-space": lambda n: "x" * n + " ",
    "words": lambda n: "ab " * (n // 3),
    "keys-without-values": lambda n: "a=" * (n // 2),
    "spaces-before-equals": lambda n: "a" + " " * n,
    "open-quotes": lambda n: "a='" * (n // 3),
    "backslashes": lambda n: "a\\" * (n // 2),
    "query-like": lambda n: "?a" * (n // 2),
    "url-with-ats": lambda n: "postgresql://" + "@" * n,
    "url-with-a-long-query": lambda n: "redis://h/0?" + "a&" * (n // 2),
}


@pytest.fixture
def messages(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text('[{"role": "user", "content": "hello"}]', encoding="utf-8")
    return path


@pytest.mark.parametrize("shape", SHAPES)
def test_a_long_model_argument_is_scanned_in_linear_time(
    shape: str, messages: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argument = SHAPES[shape](SIZE)
    statuses: list[int] = []

    def run(_: str) -> None:
        statuses.append(main(["count", str(messages), "--model", argument]))
        capsys.readouterr()

    run("")  # the first call imports the commands: not the scan's time
    assert_linear(run, argument, what=f"context-manager count --model <{shape}>")
    assert statuses[0] == 2  # no model has that name: one error line, exit 2


def test_a_password_next_to_a_long_run_of_letters_is_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Faster, and still finding what it found: the password before 32,000 letters is not
    printed in the error that quotes the argument (its first 2,000 characters)."""
    monkeypatch.chdir(tmp_path)
    # (a directory first: a path, so the error quotes it; a bare libpq string is refused whole)
    target = f"runs/host=db password={PASSWORD} " + "x" * SIZE
    outputs: list[str] = []

    def run(_: str) -> None:
        assert main(["sessions", "list", target]) == 2  # no such directory
        captured = capsys.readouterr()
        outputs.append(captured.out + captured.err)

    assert_linear(run, target, what="context-manager sessions list <letters> password=...")
    assert "x" * 100 in outputs[0]  # the error does quote the argument
    assert PASSWORD not in "".join(outputs)
    assert "password=***" in outputs[0]
