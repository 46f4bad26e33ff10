"""A project's own presence probes, read: ``def _mistral4_available(): try: from transformers
import Mistral4Config; return True except Exception: return False``, as what it requires.

A probe is a function whose every *success* return is reached only past its upstream imports
and ``hasattr`` tests: where it returned success, they are there. Two kinds of success
(:class:`Success`): a truthy value (failures return ``False``/``None``), or ``None`` (failures
return a reason, a non-empty string: ``_transformers_supports_fp8_to_nf4() -> Optional[str]``).
Its body is read strictly, statement by statement at its top level: a docstring; ``try``
blocks of upstream imports whose every handler fails; ``if not hasattr(x, "n"): <fail>``
(requires ``x.n``); any other ``if`` with no ``else`` whose body fails, or a ``for`` of such
``if`` blocks (they only add ways to fail); and a final success (``return True``/``return
hasattr(x, "n")``, or a name the ``try`` imported: mlflow's ``_try_import_conversational_pipeline``
returns the class; ``return None`` or the end of the body). A block fails by one failure
``return`` or a ``raise``. Anything else, a success past nothing included, makes it no probe
(None).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable

from canary.surface import guards

# The upstream targets a try body imports when it does nothing else, () otherwise; the
# upstream path a module-level name stands for, None if it stands for none; and what a test
# being true says is there (a call of another probe).
ImportsOnly = Callable[[list[ast.stmt]], tuple[str, ...]]
UpstreamOf = Callable[[ast.expr], str | None]
Tested = Callable[[ast.expr], frozenset[str]]


class Success(str, enum.Enum):
    """What a probe returns where everything it tests is there."""

    TRUTHY = "truthy"  # True (or a last hasattr); False or None where something is missing
    NONE = "none"  # None; a reason (a non-empty string) where something is missing

    def __str__(self) -> str:
        return self.value


def requirements(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    imports_only: ImportsOnly,
    upstream_of: UpstreamOf,
    success: Success = Success.TRUTHY,
    tested: Tested = lambda test: frozenset(),
) -> frozenset[str] | None:
    """The upstream targets ``node`` requires for returning ``success``; None: no probe."""
    return _Reader(imports_only, upstream_of, success, tested).read(node)


def worth_reading(node: ast.FunctionDef | ast.AsyncFunctionDef, success: Success) -> bool:
    """What :func:`requirements` needs at the least, read cheaply first (most functions
    tested in an ``if`` are no probe): for a truthy probe, a last statement that returns
    ``True`` or a ``hasattr`` (or a ``try`` whose body ends so); for a reason probe, a
    reason returned and no return of anything but a reason or None."""
    body = node.body
    if not body:
        return False
    if success is Success.TRUTHY:
        last = body[-1]
        if isinstance(last, ast.Try) and last.body:
            last = last.body[-1]
        value = last.value if isinstance(last, ast.Return) else None
        return (
            (isinstance(value, ast.Constant) and value.value is True)
            or (isinstance(value, ast.Call) and getattr(value.func, "id", None) == "hasattr")
            or isinstance(value, ast.Name)  # a getter: what its try imported
            or (_fails([body[-1]], success) and any(_returns_under_if(s) for s in body))
        )
    last = body[-1]
    if isinstance(last, ast.Return) and not (
        last.value is None or (isinstance(last.value, ast.Constant) and last.value.value is None)
    ):
        return False  # ends returning something else: no reason probe (the cheap common case)
    returns = [n.value for n in _own_nodes(node) if isinstance(n, ast.Return)]
    return any(_a_reason(v) for v in returns) and all(
        v is None or _a_reason(v) or (isinstance(v, ast.Constant) and v.value is None)
        for v in returns
    )


def _returns_under_if(statement: ast.stmt) -> bool:
    """``if <test>: return <value>``, no ``else``: a success behind a test."""
    return (
        isinstance(statement, ast.If)
        and not statement.orelse
        and len(statement.body) == 1
        and isinstance(statement.body[0], ast.Return)
        and statement.body[0].value is not None
    )


def _own_nodes(node: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not of the functions and classes in it."""
    found: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        found.append(child)
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(child))
    return found


class _Reader:
    """Reads one function's body as a probe, statement by statement."""

    def __init__(
        self, imports_only: ImportsOnly, upstream_of: UpstreamOf, success: Success, tested: Tested
    ):
        self.imports_only = imports_only
        self.upstream_of = upstream_of
        self.success = success
        self.tested = tested
        self.required: set[str] = set()
        self.local: dict[str, str] = {}  # a name a try body imported: the target it stands for

    def read(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str] | None:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        for index, statement in enumerate(body):
            last = index == len(body) - 1
            if last and isinstance(statement, ast.Return):
                return frozenset(self.required) if self.succeeds(statement) else None
            if (gated := self.gated_success(statement)) is not None:
                # mlflow's `if cp := _try_import_pipeline(): return isinstance(p, cp)`, then
                # `return False`: a truthy value comes only from behind the test
                rest = body[index + 1 :]
                failing = bool(rest) and all(_fails([s], self.success) for s in rest)
                return frozenset(self.required | gated) if failing else None
            done = self.statement(statement, last=last)
            if done is not None:
                return frozenset(self.required) if done else None
        # the end of the body returns None: success for a reason probe
        return frozenset(self.required) if self.success is Success.NONE else None

    def gated_success(self, statement: ast.stmt) -> frozenset[str] | None:
        """What ``if <test>: return <value>`` (no ``else``) requires where it returns, for a
        truthy probe: what its test being true says is there (another probe called);
        None: not that form, or a test that says nothing."""
        if self.success is not Success.TRUTHY or not _returns_under_if(statement):
            return None
        required = self.tested(statement.test)  # type: ignore[attr-defined]
        return required or None

    def statement(self, statement: ast.stmt, *, last: bool) -> bool | None:
        """Read one statement: None to go on, or whether the function is a probe."""
        if isinstance(statement, ast.Try) and not statement.orelse and not statement.finalbody:
            return self.tried(statement, last=last)
        if isinstance(statement, ast.If) and _fails_if(statement, self.success):
            test = statement.test
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                target = self.hasattr_target(test.operand)
                if target is not None:
                    self.required.add(target)
            return None
        if isinstance(statement, ast.For) and not statement.orelse:
            if not all(_fails_if(s, self.success) for s in statement.body):
                return False
            self.loop(statement)
            return None
        if isinstance(statement, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id not in self.local and self.upstream_of(t) is None
            for t in statement.targets
        ):
            return None  # binds a name of its own: what it requires stays as it was
        return False

    def tried(self, statement: ast.Try, *, last: bool) -> bool | None:
        """A ``try`` of upstream imports whose every handler fails (its body may end in the
        final success)."""
        tried = statement.body
        ends = bool(tried) and isinstance(tried[-1], ast.Return)
        imports = self.imports_only(tried[:-1] if ends else tried)
        if not imports or not all(_fails(h.body, self.success) for h in statement.handlers):
            return False
        self.required.update(imports)
        self.required.update(_modules(tried))  # from m import x imported: m is there too
        self.local.update(_bound_names(tried))
        return (last and self.succeeds(tried[-1])) if ends else None

    def loop(self, statement: ast.For) -> None:
        """``for n in ("a", "b"): if not hasattr(x, n): <fail>`` requires ``x.a`` and ``x.b``."""
        names = statement.iter.elts if isinstance(statement.iter, (ast.Tuple, ast.List)) else []
        if not isinstance(statement.target, ast.Name) or not all(
            isinstance(n, ast.Constant) and isinstance(n.value, str) for n in names
        ):
            return
        variable = statement.target.id
        for test in (s.test for s in statement.body if isinstance(s, ast.If)):
            if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
                continue
            call = test.operand
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id == "hasattr"
                and len(call.args) == 2
                and isinstance(call.args[1], ast.Name)
                and call.args[1].id == variable
                and (base := self.dotted(call.args[0])) is not None
            ):
                self.required.update(f"{base}.{n.value}" for n in names)  # type: ignore[attr-defined]

    def succeeds(self, statement: ast.stmt) -> bool:
        """A final return of success past what is required so far (one more hasattr)."""
        if not isinstance(statement, ast.Return):
            return False
        value = statement.value
        if self.success is Success.NONE:
            return value is None or (isinstance(value, ast.Constant) and value.value is None)
        if isinstance(value, ast.Constant) and value.value is True:
            return True
        if isinstance(value, ast.Name) and value.id in self.local:
            return True  # what the try imported: an object, truthy where the import worked
        target = None if value is None else self.hasattr_target(value)
        if target is not None:
            self.required.add(target)
        return target is not None

    def hasattr_target(self, test: ast.expr) -> str | None:
        args = guards.builtin_call(test, "hasattr", 2)
        if args is None:
            return None
        obj, name = args
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return None
        base = self.dotted(obj)
        return None if base is None else f"{base}.{name.value}"

    def dotted(self, obj: ast.expr) -> str | None:
        """The upstream path ``obj`` names: through a name a try body imported, or one of
        the module's."""
        if isinstance(obj, ast.Name) and obj.id in self.local:
            return self.local[obj.id]
        if isinstance(obj, ast.Attribute) and (base := self.dotted(obj.value)) is not None:
            return f"{base}.{obj.attr}"
        return self.upstream_of(obj)


def _fails_if(statement: ast.stmt, success: Success) -> bool:
    """An ``if`` with no ``else`` whose block fails."""
    return (
        isinstance(statement, ast.If) and not statement.orelse and _fails(statement.body, success)
    )


def _fails(body: list[ast.stmt], success: Success) -> bool:
    """The block is one return of a failure, or one ``raise`` (``pass``-free: anything else
    may go on)."""
    if len(body) != 1:
        return False
    if isinstance(body[0], ast.Raise):
        return True
    if not isinstance(body[0], ast.Return):
        return False
    value = body[0].value
    if success is Success.NONE:
        return _a_reason(value)
    return value is None or (isinstance(value, ast.Constant) and value.value in (False, None))


def _a_reason(value: ast.expr | None) -> bool:
    """A non-empty string: a literal, or an f-string with literal text."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str) and bool(value.value)
    return isinstance(value, ast.JoinedStr) and any(
        isinstance(part, ast.Constant) and part.value for part in value.values
    )


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
