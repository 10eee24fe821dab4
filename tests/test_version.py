"""One version string, and a top level that holds only the names it exports."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import tomllib
import warnings
from importlib import metadata
from pathlib import Path

import pytest

import context_manager
from context_manager.cli import main

ROOT = Path(__file__).resolve().parent.parent
DIST = "context-manager"


def _homes() -> dict[str, str]:
    """docs/reference.md's table of names that are imported from a subpackage, by name."""
    text = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    homes = {}
    for names, home in re.findall(r"^\| (`.+`) \| `(context_manager\.[\w.]+)` \|$", text, re.M):
        homes.update(dict.fromkeys(re.findall(r"`(\w+)`", names), home))
    return homes


# The 21 names that were at the top level while 0.2.0 was being written, and their homes.
HOMES = _homes()


def _installed_from_this_tree() -> bool:
    """Whether the installed distribution is this checkout (editable, or its files are ours)."""
    dist = metadata.distribution(DIST)
    direct = dist.read_text("direct_url.json")
    if direct:
        info = json.loads(direct)
        if info.get("dir_info", {}).get("editable"):
            return bool(info["url"] == ROOT.as_uri())
    init = Path(str(dist.locate_file("context_manager/__init__.py")))
    return init.resolve() == Path(context_manager.__file__).resolve()


def test_installed_distribution_has_the_package_version() -> None:
    try:
        installed = metadata.version(DIST)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{DIST} is not installed (pip install -e .)")
    if not _installed_from_this_tree():
        pytest.skip(f"the installed {DIST} is another checkout: pip install -e . here")
    assert installed == context_manager.__version__, "stale metadata: pip install -e . again"


def test_pyproject_reads_the_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]
    assert dynamic["version"] == {"attr": "context_manager.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", context_manager.__version__)


def test_changelog_names_the_version() -> None:
    changelog = (ROOT / "docs" / "changelog.md").read_text(encoding="utf-8")
    newest = re.search(r"^## (\S+)", changelog, re.M)
    assert newest is not None and newest.group(1) == context_manager.__version__


def test_cli_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"context-manager {context_manager.__version__}\n"
    done = subprocess.run(
        [sys.executable, "-m", "context_manager", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0 and done.stdout.split() == [DIST, context_manager.__version__]


#: The names that were at the top level while 0.2.0 was being written: each keeps a listed home.
MOVED = {
    "AnthropicSummarizer", "CheckpointNotFoundError", "CompactionEntry", "CompactionError",
    "CompactionInProgressError", "CompactionTriggers", "ExtractiveSummarizer", "Image", "JsonlLog",
    "OpenAISummarizer", "ResetPolicy", "SessionIndex", "SimpleCompaction", "StoreCorruptionError",
    "TokenBudgetCompaction", "ToolCall", "ToolResult", "add_compaction_listener",
    "asend_with_recovery", "is_context_overflow", "send_with_recovery",
}  # fmt: skip


def test_reference_lists_every_home() -> None:
    assert HOMES.keys() >= MOVED


@pytest.mark.parametrize("name", sorted(HOMES))
def test_names_outside_all_live_only_in_their_home(name: str) -> None:
    assert name not in context_manager.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation path: a plain AttributeError
        with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
            getattr(context_manager, name)
        with pytest.raises(ImportError):
            exec(f"from context_manager import {name}", {})
    assert getattr(importlib.import_module(HOMES[name]), name) is not None
    assert name not in dir(context_manager)
