"""Every ``python`` code block in README.md and docs/ runs, so the docs cannot rot.

The blocks of one page run in order in one namespace (a later block may use what an earlier one
defined), in a fresh temporary directory, offline. A block that cannot run here (it needs an API
key or a server) is fenced ``py`` instead of ``python`` and says so in the text around it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks(page: Path) -> list[tuple[int, str]]:
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in BLOCK.finditer(text)]


@pytest.mark.parametrize(
    "page", [p for p in PAGES if _blocks(p)], ids=lambda p: str(p.relative_to(ROOT))
)
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CONTEXT_MANAGER_DOCS_TEST", "1")
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for line, code in _blocks(page):
        try:
            exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
        except Exception as exc:  # report which block broke, with the page and line
            raise AssertionError(
                f"{page.relative_to(ROOT)} line {line}: {type(exc).__name__}: {exc}"
            ) from exc


def test_readme_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert first_block is not None
    commands = first_block.group(1).strip().splitlines()
    assert len(commands) == 2
    assert "context-manager demo" in commands[0]
    assert "pytest" in commands[1]
    assert text.index("```bash") < 400  # first thing on the page
    assert len(text.splitlines()) <= 200
    assert os.path.exists(ROOT / "mkdocs.yml")


def test_readme_links_resolve() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to missing {target}"
