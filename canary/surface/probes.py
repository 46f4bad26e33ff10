"""A project's own presence probes, read: ``def _mistral4_available(): try: from transformers
import Mistral4Config; return True except Exception: return False``, as what it requires.

A probe is a function every truthy return of which is reached only past its upstream imports
and ``hasattr`` tests: where it returned truthy, they are there. Its body is read strictly:
a docstring, ``try`` blocks of upstream imports whose every handler returns a falsy constant,
``if not hasattr(x, "n"): return False``, and a final ``return True`` or ``return hasattr(x,
"n")``. Anything else, a truthy return past nothing included, makes it no probe (None).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

# The upstream targets a try body imports when it does nothing else, () otherwise; and the
# upstream path a module-level name stands for, None if it stands for none.
ImportsOnly = Callable[[list[ast.stmt]], tuple[str, ...]]
UpstreamOf = Callable[[ast.expr], str | None]


def requirements(
    node: ast.FunctionDef | ast.AsyncFunctionDef, imports_only: ImportsOnly, upstream_of: UpstreamOf
) -> frozenset[str] | None:
    """The upstream targets ``node`` requires for returning a truthy value; None: no probe."""
    required: set[str] = set()
    local: dict[str, str] = {}  # a name a try body imported: the target it stands for

    def hasattr_target(test: ast.expr) -> str | None:
        if not (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "hasattr"
            and len(test.args) == 2
            and not test.keywords
            and isinstance(test.args[1], ast.Constant)
            and isinstance(test.args[1].value, str)
        ):
            return None
        obj = test.args[0]
        base = local.get(obj.id) if isinstance(obj, ast.Name) else None
        base = base or upstream_of(obj)
        return None if base is None else f"{base}.{test.args[1].value}"

    def truthy_return(statement: ast.stmt) -> bool:
        """A final return: True past what is required so far, or one more hasattr."""
        if not isinstance(statement, ast.Return) or statement.value is None:
            return False
        if isinstance(statement.value, ast.Constant) and statement.value.value is True:
            return True
        target = hasattr_target(statement.value)
        if target is not None:
            required.add(target)
        return target is not None

    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for index, statement in enumerate(body):
        last = index == len(body) - 1
        if isinstance(statement, ast.Try) and not statement.orelse and not statement.finalbody:
            tried = statement.body
            ends = bool(tried) and isinstance(tried[-1], ast.Return)
            imports = imports_only(tried[:-1] if ends else tried)
            if not imports or not all(_returns_falsy(h.body) for h in statement.handlers):
                return None
            required.update(imports)
            required.update(_modules(tried))  # from m import x imported: m is there too
            local.update(_bound_names(tried))
            if ends:
                return frozenset(required) if last and truthy_return(tried[-1]) else None
        elif isinstance(statement, ast.If) and not statement.orelse and not last:
            test = statement.test
            negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            target = hasattr_target(test.operand) if negated else None  # type: ignore[attr-defined]
            if target is None or not _returns_falsy(statement.body):
                return None
            required.add(target)
        elif last and truthy_return(statement):
            return frozenset(required)
        else:
            return None
    return None  # falls off the end: returns None, never truthy; no probe worth reading


def _returns_falsy(body: list[ast.stmt]) -> bool:
    """The block is one return of False or None (``pass``-free: anything else may go on)."""
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    value = body[0].value
    return value is None or (isinstance(value, ast.Constant) and value.value in (False, None))


def _modules(body: list[ast.stmt]) -> set[str]:
    """The modules a try body's ``from m import x`` statements import from (the caller has
    checked every import is upstream's); a package's root is there wherever it is installed."""
    return {
        s.module
        for s in body
        if isinstance(s, ast.ImportFrom) and s.level == 0 and s.module and "." in s.module
    }


def _bound_names(body: list[ast.stmt]) -> dict[str, str]:
    """The names a try body's imports bind, each to the dotted target it imported."""
    bound: dict[str, str] = {}
    for statement in body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    head = alias.name.split(".", 1)[0]
                    bound[head] = head
        elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
            for alias in statement.names:
                bound[alias.asname or alias.name] = f"{statement.module}.{alias.name}"
    return bound
