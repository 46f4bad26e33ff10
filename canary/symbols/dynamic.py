"""What a module-level ``__getattr__`` serves, where its text says so.

peft's tuner packages end with::

    def __getattr__(name):
        if (name == "Linear8bitLt") and is_bnb_available():
            from .bnb import Linear8bitLt

            return Linear8bitLt

        raise AttributeError(f"module {__name__} has no attribute {name}")

Each ``if`` that compares the parameter to literals serves those names (when its optional
dependency is installed: the case a reference is about, as for try/except imports); the
import inside the branch says where the name is defined. When the body is nothing but
such branches and a final ``raise AttributeError``, it serves no other name.

transformers 5.23+ assigns one instead, for the names it deprecated::

    __getattr__ = deprecate_attr(
        __name__, rename={"Llama4ProcessorKwargs": (ProcessingKwargs, "5.29.0")}
    )

which serves the keys of its ``rename`` and ``remove`` tables, and no other name.

transformers 5.23+ also loads its pipeline classes so, from a module-level table::

    def __getattr__(name):
        if name in _PIPELINE_CLASS_TO_MODULE:
            module = importlib.import_module(_PIPELINE_CLASS_TO_MODULE[name])
            ...

which serves the table's keys, each from the module the table names for it.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from canary.codeindex import NOT_LITERAL, Function, Import

Literal = Callable[[str], object]
"""The literal value of a module-level name (``NOT_LITERAL``: not one)."""


@dataclass(frozen=True)
class Served:
    """The names a ``__getattr__`` serves (each with the import that defines it inside its
    branch, where there is one) and whether it serves nothing else."""

    names: dict[str, Import | None]
    closed: bool


def served(function: Function, literal: Literal = lambda name: NOT_LITERAL) -> Served:
    """What ``function``, a module's ``__getattr__``, serves; ``literal``: the module's
    constants, for a test against a table (``name in _TABLE``)."""
    try:
        node = ast.parse(textwrap.dedent(function.source)).body[0]
    except (SyntaxError, IndexError):
        return Served({}, closed=False)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.args.args:
        return Served({}, closed=False)
    param = node.args.args[0].arg
    names: dict[str, Import | None] = {}
    closed = True
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    offset = function.line - node.lineno
    for i, stmt in enumerate(body):
        literals = _compared(stmt.test, param, literal) if isinstance(stmt, ast.If) else None
        if literals is not None and not stmt.orelse:  # type: ignore[union-attr]
            table = _import_table(stmt, param, literal)  # type: ignore[arg-type]
            for name in literals:
                names[name] = _imported(stmt.body, name, offset) or (  # type: ignore[union-attr]
                    Import(name, table[name], name, stmt.lineno + offset) if table else None
                )
        elif not (i == len(body) - 1 and _raises_attribute_error(stmt)):
            closed = False
    return Served(names, closed)


def _compared(test: ast.expr, param: str, literal: Literal) -> set[str] | None:
    """The literals ``test`` requires the parameter to equal: ``name == "x"``,
    ``name in ("x", "y")``, either of them ``and``-ed with anything; None otherwise."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        found = [s for s in (_compared(v, param, literal) for v in test.values) if s is not None]
        return set.intersection(*found) if found else None
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        parts = [_compared(v, param, literal) for v in test.values]
        return set().union(*parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.left, ast.Name)
        and test.left.id == param
    ):
        return None
    op, right = test.ops[0], test.comparators[0]
    if isinstance(op, ast.Eq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return {right.value}
    if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        values = [e.value for e in right.elts if isinstance(e, ast.Constant)]
        if len(values) == len(right.elts) and all(isinstance(v, str) for v in values):
            return set(values)
    return _keys(right, literal) if isinstance(op, ast.In) else None


def _keys(table: ast.expr, literal: Literal) -> set[str] | None:
    """The strings a module constant ``name in`` tests holds (a dict's keys)."""
    value = literal(table.id) if isinstance(table, ast.Name) else NOT_LITERAL
    if not isinstance(value, (dict, tuple, list, set, frozenset)):
        return None
    keys = list(value)
    return set(keys) if all(isinstance(k, str) for k in keys) else None


def _import_table(branch: ast.If, param: str, literal: Literal) -> Mapping[str, str] | None:
    """The table ``if name in TABLE:`` tests, where the branch imports the module it names
    for the name (``importlib.import_module(TABLE[name])``): name -> module."""
    test = branch.test
    if not (isinstance(test, ast.Compare) and isinstance(test.comparators[0], ast.Name)):
        return None
    table_name = test.comparators[0].id
    table = literal(table_name)
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        return None
    for node in ast.walk(ast.Module(body=branch.body, type_ignores=[])):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).endswith("import_module")
            and len(node.args) == 1
            and ast.unparse(node.args[0]) == f"{table_name}[{param}]"
        ):
            return table
    return None


def _imported(body: list[ast.stmt], name: str, offset: int) -> Import | None:
    """The import binding ``name`` in a branch; ``offset`` turns its line into the file's."""
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if (alias.asname or alias.name) == name:
                    module = "." * stmt.level + (stmt.module or "")
                    return Import(name, module, alias.name, stmt.lineno + offset)
    return None


def _raises_attribute_error(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id == "AttributeError"


def served_by_assignment(value: str) -> Served | None:
    """What ``__getattr__ = <value>`` serves, where ``value`` is a ``deprecate_attr(...)``
    call with literal tables (None: anything else, which may serve any name)."""
    try:
        node = ast.parse(value, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("deprecate_attr")):
        return None
    names: dict[str, Import | None] = {}
    for keyword in node.keywords:
        if keyword.arg not in ("rename", "remove") or not isinstance(keyword.value, ast.Dict):
            return None
        for key in keyword.value.keys:
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            names[key.value] = None
    if len(node.args) != 1:
        return None  # the tables passed by position, or not at all: not read
    return Served(names, closed=True)
