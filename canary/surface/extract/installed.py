"""The upstream module names a project puts modules of its own under, ``sys.modules[name] =
module`` (a vendored model package, a compat alias): an import of one may give the project's."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

_MARK = b".modules["


def installed_modules(
    files: Iterable[str],
    text: Callable[[str], bytes],
    tree: Callable[[str], ast.Module],
    is_upstream: Callable[[str], bool],
) -> dict[str, str]:
    """Each upstream submodule name some file of ``files`` binds in ``sys.modules``, with
    the first place it does so ("path:line"). The name is a literal, or a name its function
    (or module) binds once, to a literal (prismaquant's ``pkg_name = "transformers.models.
    deepseek_v4"``); any other key is not read. A whole package put there (unsloth's ``trl``
    stand-in where trl cannot be imported) is not one: canary reads installed upstream."""
    found: dict[str, str] = {}
    for path in files:
        if _MARK not in text(path):
            continue
        module = tree(path)
        names = _names_of_sys(module)
        for scope in _scopes(module):
            constants = _literals(scope)
            for node in ast.walk(scope):
                if not isinstance(node, ast.Assign):
                    continue
                for target in node.targets:
                    name = _installed_name(target, names, constants)
                    if name is not None and "." in name and is_upstream(name):
                        found.setdefault(name, f"{path}:{node.lineno}")
    return found


def _names_of_sys(module: ast.Module) -> frozenset[str]:
    """The names the module's ``import sys [as x]`` statements bind it to."""
    return frozenset(
        alias.asname or alias.name
        for node in ast.walk(module)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "sys"
    )


def _scopes(module: ast.Module) -> Iterator[ast.AST]:
    yield module
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _literals(scope: ast.AST) -> dict[str, str]:
    """The names ``scope`` binds exactly once, each to a string literal."""
    bound: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        value = node.value if target is name else None
                        bound.setdefault(name.id, []).append(value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
            for name in ast.walk(node.target):
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                    bound.setdefault(name.id, []).append(None)
    return {
        name: values[0].value
        for name, values in bound.items()
        if len(values) == 1
        and isinstance(values[0], ast.Constant)
        and isinstance(values[0].value, str)
    }


def _installed_name(
    target: ast.expr, names_of_sys: frozenset[str], constants: dict[str, str]
) -> str | None:
    """The module name ``target`` is ``sys.modules[name]`` of, where it is known."""
    if not (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Attribute)
        and target.value.attr == "modules"
        and isinstance(target.value.value, ast.Name)
        and target.value.value.id in names_of_sys
    ):
        return None
    key = target.slice
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    if isinstance(key, ast.Name):
        return constants.get(key.id)
    return None
