"""What a catalog check's outcome depends on besides upstream's files: its own code, and the
engine that runs it (canary's package, the Python and the pytest it runs under).

A check's code is its definition in its module (for a table row: the body and that row)
and every top-level statement of the module it reaches by name, transitively; a module it
imports that is neither canary's engine nor installed (a helper beside the catalog) counts
whole. Editing one check, or a helper only some checks use, changes those checks' digests
and no other; editing anything of canary outside the catalog changes the engine's.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import sys
import sysconfig
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import packaging
import pytest

import canary

PACKAGE_DIR = Path(canary.__file__).resolve().parent
CATALOG = "checks"  # canary/checks/: each check is keyed by its own code, not the engine's
_INSTALLED = tuple(
    Path(p).resolve() for p in {sysconfig.get_path("stdlib"), sysconfig.get_path("purelib")} if p
)


@functools.cache
def engine_digest(root: Path = PACKAGE_DIR) -> str:
    """Every source file of canary's package but the catalog, the Python running it (its
    ``ast`` and ``pickle`` differ between versions) and the pytest and packaging it runs
    with (assertion messages, version parsing): any change recomputes every outcome."""
    digest = hashlib.sha256(f"{sys.implementation.name}\0{sys.version}\0".encode())
    digest.update(f"pytest {pytest.__version__}\0packaging {packaging.__version__}\0".encode())
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] == CATALOG or "__pycache__" in relative.parts:
            continue
        digest.update(relative.as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@dataclass(frozen=True)
class _Definition:
    """Where a check is written: the nodes that define it (the rest is reached by name)."""

    roots: tuple[ast.AST, ...]


class CheckCode:
    """The code digests of a run's checks, each check module read once.

    ``judging`` names the options that change how a failed plain ``assert`` reads (pytest
    rewrites it): part of the digest of a check whose code asserts, and of no other, so
    ``-v`` and ``-q`` runs share every other outcome.
    """

    def __init__(self, judging: str = "") -> None:
        self.judging = judging
        self._modules: dict[str, _ModuleCode] = {}
        self._digests: dict[tuple[str, str], str] = {}

    def digest(self, item: pytest.Item) -> str:
        """The digest of the code ``item``'s check runs (one per check, whatever case)."""
        module = getattr(item, "module", None)
        name = getattr(item, "originalname", item.name)
        where = getattr(module, "__file__", None)
        if module is None or where is None:
            return _unknown(item)
        key = (where, name)
        if (found := self._digests.get(key)) is None:
            code = self._module(module)
            function = getattr(item, "function", None)
            found = code.digest_of(_unwrapped(function), name, self.judging)
            self._digests[key] = found
        return found

    def _module(self, module: Any) -> _ModuleCode:
        path = module.__file__
        if path not in self._modules:
            source = Path(path).read_text(encoding="utf-8")
            self._modules[path] = _ModuleCode(source, module.__name__, module.__package__)
        return self._modules[path]


def _unwrapped(function: Callable[..., Any] | None) -> Callable[..., Any] | None:
    # @check wraps the check (functools.wraps); a table row is the table's own function.
    return getattr(function, "__wrapped__", function)


def _unknown(item: pytest.Item) -> str:
    # No source to key by: a digest no later run reproduces, so nothing is ever reused.
    return f"unkeyed-{id(item)}-{id(object())}"


class _ModuleCode:
    """One check module's top-level statements, by the names they bind."""

    def __init__(self, source: str, name: str, package: str | None) -> None:
        self.source = source
        self.name = name
        self.package = package
        self.tree = ast.parse(source)
        self._dumps: dict[int, bytes] = {}
        self.bindings: dict[str, list[ast.stmt]] = {}
        for statement in self.tree.body:
            for bound in _bound_names(statement):
                self.bindings.setdefault(bound, []).append(statement)

    def digest_of(self, function: Callable[..., Any] | None, name: str, judging: str) -> str:
        definition = self._definition(function, name)
        digest = hashlib.sha256()
        if definition is None:  # not a top-level def: the whole module counts
            digest.update(hashlib.sha256(self.source.encode()).digest())
            digest.update(judging.encode())
            return digest.hexdigest()
        reached, imports = self._closure(definition.roots)
        if _asserts((*definition.roots, *reached)):
            digest.update(judging.encode() + b"\0")
        for root in definition.roots:
            digest.update(ast.dump(root).encode() + b"\0")
        for statement in reached:
            digest.update(self._dump(statement))
        for imported in sorted(imports):
            digest.update(f"{imported}\0".encode())
        return digest.hexdigest()

    def _dump(self, statement: ast.stmt) -> bytes:
        # A top-level statement many checks reach (a helper, a constant) is dumped once;
        # the tree holds every one of them for as long as this object lives.
        if (dumped := self._dumps.get(id(statement))) is None:
            dumped = self._dumps[id(statement)] = ast.dump(statement).encode() + b"\0"
        return dumped

    def _definition(self, function: Callable[..., Any] | None, name: str) -> _Definition | None:
        table = getattr(function, "canary_table", None)
        if table is None:
            found = self._top_level_def(name)
            return _Definition((found,)) if found is not None else None
        body = self._top_level_def(table.body.__name__)
        if body is None:
            return None
        # The body without its decorator (every row), then this row and the table's own
        # arguments (fix=): a change to another row leaves this one's digest alone.
        bare = ast.FunctionDef(**{**vars(body), "decorator_list": []})
        own = _row_call(body.decorator_list, name)
        if own is None:  # rows made by code: every row counts
            return _Definition((bare, *body.decorator_list))
        return _Definition((bare, *own))

    def _top_level_def(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for statement in self.bindings.get(name, []):
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return statement
        return None

    def _closure(self, roots: Iterable[ast.AST]) -> tuple[list[ast.stmt], set[str]]:
        """The top-level statements ``roots`` reach by name, transitively, in source order,
        and what the names they reach through imports are (one line each: a name added to
        an import list that a check does not use leaves it alone)."""
        reached: dict[int, ast.stmt] = {}
        imports: set[str] = set()
        pending = [name for root in roots for name in _names_used(root)]
        seen: set[str] = set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            for statement in self.bindings.get(name, []):
                if isinstance(statement, (ast.Import, ast.ImportFrom)):
                    imports.update(self._import_of(statement, name))
                elif id(statement) not in reached:
                    reached[id(statement)] = statement
                    pending.extend(_names_used(statement))
        order = {id(s): n for n, s in enumerate(self.tree.body)}
        return sorted(reached.values(), key=lambda s: order[id(s)]), imports

    def _import_of(self, statement: ast.Import | ast.ImportFrom, bound: str) -> set[str]:
        """How ``bound`` is imported, and the digest of the module it comes from where
        the engine's digest does not stand for it (a helper module beside the catalog)."""
        found = set()
        for alias in statement.names:
            if (alias.asname or alias.name).split(".")[0] != bound:
                continue
            if isinstance(statement, ast.Import):
                module, line = alias.name, f"import {alias.name} as {alias.asname}"
            else:
                module = self._absolute(statement)
                line = f"from {module} import {alias.name} as {alias.asname}"
            origin = _origin(module)
            if origin is not None and not _covered(origin):
                line += f" @ {hashlib.sha256(origin.read_bytes()).hexdigest()}"
            found.add(line)
        return found

    def _absolute(self, statement: ast.ImportFrom) -> str:
        base = statement.module or ""
        if not statement.level:
            return base
        anchor = (self.package or "").rsplit(".", statement.level - 1)[0]
        return f"{anchor}.{base}" if base else anchor


def _asserts(nodes: Iterable[ast.AST]) -> bool:
    return any(isinstance(node, ast.Assert) for root in nodes for node in ast.walk(root))


def _row_call(decorators: Iterable[ast.expr], test: str) -> tuple[ast.AST, ...] | None:
    """In ``@check.each(row("test_x", ...), ..., fix=...)``: the row naming ``test`` and the
    table's keyword arguments; None where no literal row names it."""
    for decorator in decorators:
        if not isinstance(decorator, ast.Call):
            continue
        for argument in decorator.args:
            if (
                isinstance(argument, ast.Call)
                and argument.args
                and isinstance(first := argument.args[0], ast.Constant)
                and first.value == test
            ):
                return (argument, *decorator.keywords)
    return None


def _bound_names(statement: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    bound = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)  # a def under an if at the top level
    return bound


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


@functools.cache
def _origin(module: str) -> Path | None:
    found = sys.modules.get(module)
    path = getattr(found, "__file__", None)
    if path is None:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
        path = spec.origin if spec is not None else None
    if path is None or not path.endswith(".py"):
        return None
    return Path(path).resolve()


def _covered(origin: Path) -> bool:
    """Whether the engine's digest stands for this file: canary outside the catalog, or
    what is installed with Python or in site-packages (pinned by the environment)."""
    if origin.is_relative_to(PACKAGE_DIR):
        return origin.relative_to(PACKAGE_DIR).parts[0] != CATALOG
    return any(origin.is_relative_to(place) for place in _INSTALLED)
