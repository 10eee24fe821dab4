"""The package layout holds: imports form a DAG (lazy imports included) and point down the layers.

Imports are read from the source with ``ast`` (module level and inside functions alike; only
``if TYPE_CHECKING:`` blocks are skipped, since they never run), so a lazy import cannot hide a
cycle. The layer table mirrors docs/architecture.md.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "context_manager"

# Lower rank = lower layer. A module may import its own rank or lower, never higher, except for
# the documented lazy entry points below.
LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (0, ("errors", "_js", "_flows", "data")),
    (1, ("messages", "models")),
    (2, ("counting", "_config")),
    (
        3,
        (
            "events",
            "host",
            "_hub",
            "stats",
            "budget",
            "providers",
            "cache",
            "prompt_cache",
            "offload",
        ),
    ),
    (4, ("manager", "_tool_calls")),
    (5, ("oneshot",)),
    (6, ("compaction",)),
    (7, ("store",)),
    (8, ("interop",)),
    (9, ("parity", "replay")),
    (10, ("cli", "_cli_input", "_cli_store", "__main__", "integrations")),
]
# Convenience methods on the manager (in its base, _hub.ExtensionHub) that load an upper layer
# on first use; the layers they load never import the manager, so the graph stays acyclic.
LAZY_ENTRY_POINTS = {
    ("context_manager._hub", "context_manager.store.session"),
    ("context_manager._hub", "context_manager.compaction.runner"),
    ("context_manager._hub", "context_manager.store"),
    ("context_manager._hub", "context_manager.compaction"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("context_manager"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.startswith("context_manager"):
                found.add(target)
                for alias in node.names:  # `from . import x` may name a submodule
                    candidate = f"{target}.{alias.name}"
                    if _exists(candidate):
                        found.add(candidate)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").exists() or (PACKAGE / rel / "__init__.py").exists()


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        edges = set()
        for target in _imports(path):
            # importing a.b.c runs a and a.b first; the root package imports nothing eagerly
            parts = target.split(".")
            for k in range(2, len(parts) + 1):
                prefix = ".".join(parts[:k])
                if not name.startswith(prefix + "."):  # our own parents ran before us
                    edges.add(prefix)
        edges.discard(name)
        graph[name] = {e for e in edges if e != "context_manager"}
    return graph


def _rank(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for rank, names in LAYERS:
        if top in names:
            return rank
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")


def test_every_module_has_a_layer() -> None:
    for module in _graph():
        if module != "context_manager":
            _rank(module)


def test_imports_point_down() -> None:
    wrong = []
    for module, targets in _graph().items():
        if module == "context_manager":
            continue
        for target in targets:
            if _rank(target) > _rank(module) and (module, target) not in LAZY_ENTRY_POINTS:
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports pointing up the layers:\n" + "\n".join(sorted(wrong))


def test_imports_form_a_dag() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1 visiting, 2 done
    cycle: list[str] = []

    def walk(node: str, path: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle.extend([*path[path.index(nxt) :], nxt])
                return True
            if state.get(nxt) is None and walk(nxt, [*path, nxt]):
                return True
        state[node] = 2
        return False

    for node in sorted(graph):
        if state.get(node) is None and walk(node, [node]):
            break
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_js_leaf_and_errors_root() -> None:
    graph = _graph()
    assert graph["context_manager.errors"] == set()
    assert graph["context_manager._js"] <= {"context_manager.errors"}


def test_runtime_never_imports_parity() -> None:
    users = {
        module
        for module, targets in _graph().items()
        if any(t.startswith("context_manager.parity") for t in targets)
    }
    allowed = {"context_manager.cli"}
    assert {u for u in users if not u.startswith("context_manager.parity")} <= allowed


# Being split while the open issues land (tracked in docs/architecture.md).
OVERSIZED: set[str] = set()


def test_no_module_over_500_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 520
        and str(p.relative_to(PACKAGE)) not in OVERSIZED
    }
    assert not long, f"modules over ~500 lines: {long}"


def test_small_public_surface() -> None:
    import context_manager

    assert len(context_manager.__all__) <= 25
    for name in context_manager.__all__:
        assert getattr(context_manager, name) is not None
    # In a fresh interpreter, the names dir() lists beyond what importing defined are the ones
    # loaded on first use: each must be in __all__, and each name in __all__ must be listed.
    code = (
        "import context_manager as c; "
        "print(sorted(n for n in dir(c) if not n.startswith('_') and n not in vars(c)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    lazy = set(ast.literal_eval(out))
    assert lazy == set(context_manager.__all__)


@pytest.mark.parametrize("module", ["context_manager"])
def test_import_loads_nothing_heavy(module: str) -> None:
    """``import context_manager`` loads no submodule, asyncio or regex compilation of ours."""
    code = (
        f"import sys; import {module}; "
        "print(sorted(m for m in sys.modules if m.startswith('context_manager.') "
        "or m == 'asyncio'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
