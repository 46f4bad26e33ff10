"""What makes a site *guarded*: code that runs only when a test about upstream passed, so a
miss there does not crash, it silently skips the patch.

The tests that count are the ones issue 12 names: ``hasattr(x, "y")``, ``getattr(x, "y",
default)``, a version comparison, and an ``is_*_available()`` call (``find_spec`` too: the
same question asked of importlib). Both branches of such a test are guarded (the ``else`` of
a version test is the code for the other releases), and so is the rest of a block after
``if <test>: return`` (or ``continue``/``break``; not ``raise``, which is no silent skip).
``try`` with a handler and ``with contextlib.suppress(...)`` are decided by the walker,
which sees the statements.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence

_AVAILABLE = re.compile(r"^_*is_\w+_available$|^find_spec$")
_VERSION = re.compile(r"version", re.IGNORECASE)
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_SILENT_EXITS = (ast.Return, ast.Continue, ast.Break)


def _callee_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def is_presence_call(node: ast.AST) -> bool:
    """``hasattr(x, "y")`` or ``getattr(x, "y", default)``: asks whether ``x.y`` exists."""
    name = _callee_name(node)
    if name == "hasattr":
        return True
    if name == "getattr" and isinstance(node, ast.Call):
        return len(node.args) >= 3 or any(k.arg == "default" for k in node.keywords)
    return False


def _speaks_of_version(node: ast.expr) -> bool:
    for part in ast.walk(node):
        name = part.id if isinstance(part, ast.Name) else getattr(part, "attr", None)
        if isinstance(name, str) and _VERSION.search(name):
            return True
    return False


def _is_version_comparison(node: ast.Compare) -> bool:
    # An ordering between two things one of which speaks of a version: Version(x) >= ...,
    # transformers_version < "4.50", torch.__version__ > ... (== on a version is rare and
    # usually a config value, not a release test).
    if not any(isinstance(op, _ORDERING) for op in node.ops):
        return False
    return any(_speaks_of_version(side) for side in (node.left, *node.comparators))


def is_guard_test(test: ast.expr) -> bool:
    """Whether a condition asks about upstream's presence, shape or version: the test
    itself, or a part of it joined by ``and``/``or``/``not`` (or an argument of a call, as
    in ``callable(getattr(x, "y", None))``)."""
    if isinstance(test, (ast.BoolOp, ast.UnaryOp)):
        parts = test.values if isinstance(test, ast.BoolOp) else [test.operand]
        return any(is_guard_test(part) for part in parts)
    if isinstance(test, ast.Compare):
        return _is_version_comparison(test) or any(
            is_guard_test(side) for side in (test.left, *test.comparators)
        )
    if not isinstance(test, ast.Call):
        return False
    name = _callee_name(test)
    return (
        is_presence_call(test)
        or (name is not None and _AVAILABLE.match(name) is not None)
        or any(isinstance(a, ast.Call) and is_guard_test(a) for a in test.args)
    )


def is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:``: the block never runs, so it is no runtime dependency."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def exits(body: Sequence[ast.stmt], *, silently: bool = False) -> bool:
    """The block always leaves: what follows it in the enclosing block runs only when the
    test that led into it failed. ``silently``: by ``return``/``continue``/``break``, not by
    ``raise`` (after ``if version < floor: raise ImportError`` a miss still crashes, loudly:
    that is no guard)."""
    return bool(body) and isinstance(body[-1], _SILENT_EXITS if silently else _EXITS)


def presence_tested(
    test: ast.expr, *, positive: bool = True
) -> Iterator[tuple[ast.expr, str, bool]]:
    """What ``test`` being ``positive`` says about attributes: ``(object, name, present)``.
    Inside ``if hasattr(x, "y"):`` ``x.y`` is present; after ``if hasattr(x, "y"): return``
    it is absent. Used to tell a project's own attribute: one it sets only where it knows
    the attribute is not there yet, or reads only once it knows it is."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from presence_tested(test.operand, positive=not positive)
    elif isinstance(test, ast.BoolOp):
        # a and b holds: both hold; a or b fails: both fail. Otherwise nothing is known.
        if isinstance(test.op, ast.And) == positive:
            for value in test.values:
                yield from presence_tested(value, positive=positive)
    elif isinstance(test, ast.Compare) and len(test.ops) == 1:
        # getattr(x, "y", None) is not None
        is_none = (
            isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
        )
        if is_none and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
            holds = isinstance(test.ops[0], ast.IsNot) == positive
            yield from presence_tested(test.left, positive=holds)
    elif is_presence_call(test) and isinstance(test, ast.Call):
        obj, name = [*test.args, None, None][:2]
        if obj is not None and isinstance(name, ast.Constant) and isinstance(name.value, str):
            yield obj, name.value, positive
