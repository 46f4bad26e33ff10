"""Small questions of the syntax tree the walk asks: a function's parameters, a call's
arguments, the module an import names."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from canary.surface import importers


def absolute_module(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The absolute module ``from <node.module> import ...`` names inside ``module``."""
    if not node.level:
        return node.module
    return importers.absolute(module, is_package, node.level, node.module)


def root_name(node: ast.AST) -> ast.Name | None:
    """The name an attribute chain, subscript or call starts from (None: none)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node if isinstance(node, ast.Name) else None


def positional(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in (*node.args.posonlyargs, *node.args.args)]


def arguments(args: ast.arguments) -> Iterator[str]:
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        yield arg.arg
    for arg in (args.vararg, args.kwarg):
        if arg is not None:
            yield arg.arg


def defaults(args: ast.arguments) -> list[ast.expr]:
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


def annotations(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    args = node.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None and arg.annotation is not None:
            yield arg.annotation
    if node.returns is not None:
        yield node.returns


def argument(node: ast.Call, index: int, names: tuple[str, ...]) -> ast.expr | None:
    if index < len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args):
        return node.args[index]
    name = names[index] if index < len(names) else None
    return next((k.value for k in node.keywords if k.arg == name), None)


def is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def read_on_self(node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The attributes a method reads on its first parameter (``self.n``, ``getattr(self,
    "n", ...)``), its nested functions' reads included (they close over it)."""
    params = positional(node)
    if not params:
        return frozenset()
    me = params[0]
    found = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load):
            if is_name(child.value, me):
                found.add(child.attr)
        elif (
            isinstance(child, ast.Call)
            and is_name(child.func, "getattr")
            and len(child.args) >= 2
            and is_name(child.args[0], me)
            and isinstance(child.args[1], ast.Constant)
            and isinstance(child.args[1].value, str)
        ):
            found.add(child.args[1].value)
    return frozenset(found)


def argument_or_keyword(node: ast.Call, index: int, keyword: str) -> ast.expr | None:
    if index < len(node.args):
        return node.args[index]
    return next((k.value for k in node.keywords if k.arg == keyword), None)
