"""When a failed upstream import breaks nothing: the ``except ImportError`` of its ``try``
takes its place, giving every name it binds another value or leaving the block silently.

The proof, for an import directly in a ``try`` body: where the module or name is missing
the import raises ImportError; the first handler that catches it runs. If that handler
binds each of the import's names (to another object: a class, a function, an import from
the new place) the names hold the fallback from then on, and what the project does with
them is checked where it does it (as uses of the fallback). If it leaves by ``return``,
``continue`` or ``break``, nothing after it runs there. Either way the import itself
breaks nothing. Not handled: a handler that raises (a break, loudly), that passes (the
names stay unbound: a NameError one use away), or that binds a name to ``None`` (a use
one module away may still need the object: liger defines its output classes only when
the import gave one, and imports them unguarded elsewhere).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from canary.surface import guards

IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    """The handler catches the ImportError a failed import raises."""
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in IMPORT_ERRORS for t in types)


def harmless(node: ast.stmt) -> bool:
    """A statement that cannot raise: ``pass``, or names bound to names or literals
    (``AutoModelForVision2Seq = AutoModelForImageTextToText`` after importing the latter).
    Beside imports in a ``try`` body, it leaves their failure the only way into a
    handler."""
    if isinstance(node, ast.Pass):
        return True
    if not isinstance(node, ast.Assign):
        return False
    return all(isinstance(t, ast.Name) for t in node.targets) and isinstance(
        node.value, (ast.Name, ast.Constant)
    )


def bound_names(node: ast.Import | ast.ImportFrom) -> tuple[str, ...]:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    return tuple(alias.asname or alias.name.split(".", 1)[0] for alias in node.names)


def handled_imports(node: ast.Try) -> dict[int, str]:
    """The imports directly in the ``try`` body whose failure its handler takes the place
    of (by ``id``), each with why (the module docstring's proof). Every handler that may
    catch it must: which one does depends on the error (a missing module or name)."""
    handlers = [h for h in node.handlers if catches_import_error(h)]
    if not handlers:
        return {}
    where = f"line {handlers[0].lineno}"
    if all(guards.exits(h.body, silently=True) for h in handlers):
        why = f"its ImportError leaves the block silently ({where}): nothing after it runs there"
        return {id(n): why for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    given = set.intersection(*(set(_given(h.body)) for h in handlers))
    found = {}
    for statement in node.body:
        if not isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        names = bound_names(statement)
        if any(alias.name == "*" for alias in statement.names):
            continue
        if all(name in given for name in names):
            found[id(statement)] = (
                f"its ImportError is handled ({where}), which gives {', '.join(names)} "
                "another value there"
            )
    return found


def _given(body: Sequence[ast.stmt]) -> Iterator[str]:
    """The names a handler's block binds to something other than ``None`` on every path
    through it (its own top-level statements; a nested block may not run)."""
    if body and isinstance(body[-1], ast.Raise):
        return  # it raises: nothing it binds outlives it
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield statement.name
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            yield from bound_names(statement)
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                yield from _given_by(target, statement.value)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            yield from _given_by(statement.target, statement.value)


def _given_by(target: ast.expr, value: ast.expr) -> Iterator[str]:
    """The names ``target = value`` binds to something other than ``None`` (an unpacked
    value that is no display may hold a None: nothing is known of its parts)."""
    if isinstance(target, ast.Name):
        if not _is_none(value):
            yield target.id
    elif (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
    ):
        for part, given in zip(target.elts, value.elts, strict=True):
            yield from _given_by(part, given)


def _is_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None
