"""The layout's promises, read from the source: imports go one way.

Every ``import`` and ``from ... import`` in ``canary/`` counts, function-level ones
included. A module importing ``canary.a.b`` depends on ``canary.a.b`` (and on
``canary.a`` only where it names that package itself); ``from canary.a import b``
depends on the submodule ``canary.a.b`` when there is one, else on ``canary.a``.

Run it alone to check the architecture: ``pytest tests/test_architecture.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import canary

PACKAGE_DIR = Path(canary.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    _module_name(path): path
    for path in sorted(PACKAGE_DIR.rglob("*.py"))
    if "__pycache__" not in path.parts
}


def _resolve(module: str, name: str | None) -> str | None:
    """The canary module an import names, or None for anything outside canary."""
    if name is not None and f"{module}.{name}" in MODULES:
        return f"{module}.{name}"
    return module if module in MODULES else None


def imports_of(name: str) -> set[str]:
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(t for alias in node.names if (t := _resolve(alias.name, None)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.update(t for alias in node.names if (t := _resolve(base, alias.name)))
    found.discard(name)
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def _cycle() -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(GRAPH[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(GRAPH):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_graph_sees_function_level_imports():
    # canary.run imports the GitHub source inside source_for (requests only when needed).
    assert "canary.sources.github" in GRAPH["canary.run"]


def test_no_import_cycle_in_canary():
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize(
    ("layer", "never"),
    [
        ("canary.report", "canary.plugin"),  # after-run code runs without pytest's session
        ("canary.sources", "canary.workspace"),  # sources know nothing of cases or checks
        ("canary.sources", "canary.catalog"),
        ("canary.codeindex", "canary.catalog"),  # the index knows nothing of checks
        ("canary.workspace", "canary.plugin"),
        ("canary.run", "canary.plugin"),
        # where a name lives is read from code indexes a caller loads: nothing above them
        ("canary.symbols", "canary.sources"),
        ("canary.symbols", "canary.workspace"),
        ("canary.symbols", "canary.catalog"),
        ("canary.symbols", "canary.surface"),
    ],
)
def test_lower_layers_never_reach_up(layer, never):
    offenders = sorted(
        name
        for name, targets in GRAPH.items()
        if (name == layer or name.startswith(f"{layer}."))
        and any(t == never or t.startswith(f"{never}.") for t in targets)
    )
    assert not offenders, f"{', '.join(offenders)} import {never}"
