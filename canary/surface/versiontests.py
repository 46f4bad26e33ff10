"""A project's own version helpers, evaluated: where ``is_transformers_version_in_range(
min_version="4.54.0")`` is true, and where a ``check_version("trl>=0.9", mandatory=True)``
returns instead of raising, as windows of releases.

A helper is one of the project's functions; it is evaluated as called: each parameter bound
to the call's literal argument or its own literal default, its body run symbolically over
booleans whose value is a window (``and``/``or``/``not``, ``x is None`` of a bound
parameter, locals assigned under ``if``, early ``return``/``raise``, nested helpers). An
upstream ``require_version("pkg<spec>")`` raises outside its requirement. Whatever it cannot
read is *unknown* and gives no window, so a window is never narrower than the truth: a site
is only ever left out on releases where it certainly does not run. An unknown outcome that
compared an upstream package's installed version says so (:attr:`Outcome.unread`): the call
then decides where a site runs, and canary cannot say where.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from packaging.requirements import InvalidRequirement, Requirement

from canary.surface.guards import (
    EVERY_RELEASE,
    InstalledVersion,
    Names,
    VersionGate,
    Window,
    called_name,
    catches,
    installed_operands,
    version_window,
)

# Upstream callables that raise (ImportError) where the installed release does not satisfy
# their literal requirement: transformers.utils.versions'.
REQUIRING = frozenset(
    {
        "transformers.utils.versions.require_version",
        "transformers.utils.versions.require_version_core",
        "transformers.utils.require_version",
    }
)
DEPTH = 4  # helpers calling helpers
BUDGET = 400  # statements evaluated per helper call: beyond, its outcome is unknown


@dataclass(frozen=True)
class Cond:
    """A boolean over releases: where it is true and where it is false (None: not read as
    one window); ``constant``: the same on every release."""

    true: Window | None
    false: Window | None
    constant: bool | None = None

    @property
    def gate(self) -> VersionGate | None:
        """As the walker's version test (a constant is no window: never narrows a site)."""
        if self.constant is not None or (self.true is None and self.false is None):
            return None
        return VersionGate(self.true, self.false)

    def negated(self) -> Cond:
        constant = None if self.constant is None else not self.constant
        return Cond(self.false, self.true, constant)


TRUE = Cond(EVERY_RELEASE, None, True)
FALSE = Cond(None, EVERY_RELEASE, False)
UNKNOWN = Cond(None, None)


def constant(value: object) -> Cond:
    return TRUE if value else FALSE


@dataclass(frozen=True)
class Outcome:
    """What a helper call gives: its value as a boolean, and where it returns at all
    (instead of raising)."""

    value: Cond
    returns: Cond
    # why it depends on an upstream package's installed version in a way not read as a
    # window ("": it compares none, or every comparison was read)
    unread: str = ""


_NOT_CONSTANT = object()


class Helper(Names, Protocol):
    """What the evaluator asks of the helper's module (the walker there, its parameters
    bound to the call's literals)."""

    def constant_of(self, node: ast.expr) -> object:
        """The literal value (str, number, bool, None) of ``node``, or ``_NOT_CONSTANT``."""

    def callee_of(self, node: ast.Call) -> tuple[str, object] | None:
        """``("helper", function)`` for a project function, ``("upstream", dotted)`` for an
        upstream callable; None: neither."""

    def run_binding(self, node: ast.stmt) -> None:
        """Run an assignment or an import for its bindings (installed versions, parsed
        versions, ``import transformers`` inside the helper)."""

    def dispatch_table(self, node: ast.expr) -> dict[str, str] | None:
        """A module's dict of string keys to ``operator`` comparisons (or its ``keys()``):
        key -> comparison symbol (``{">=": op.ge}`` -> ``{">=": ">="}``); None: not one."""


def requirement_window(text: str, upstream: frozenset[str]) -> Window | None:
    """``"transformers>=4.41,<5"`` as a window (None: not an upstream requirement)."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    name = requirement.name.lower().replace("_", "-")
    if name not in upstream or requirement.marker is not None or not requirement.specifier:
        return None
    bounds = frozenset(
        (name, spec.operator, spec.version)
        for spec in requirement.specifier
        if spec.operator in ("<", "<=", ">", ">=", "==", "!=") and "*" not in spec.version
    )
    return Window(bounds) if bounds else None


class Evaluator:
    """One helper call evaluated; ``call`` evaluates a nested helper call (its own walker)."""

    def __init__(
        self,
        names: Helper,
        params: Mapping[str, object],
        upstream: frozenset[str],
        call: Callable[[ast.Call], Outcome | None],
    ) -> None:
        self.names = names
        self.params = dict(params)  # parameter -> constant, or _NOT_CONSTANT
        self.upstream = upstream
        self.call = call
        self.locals: dict[str, Cond] = {}
        self.operators: dict[str, str] = {}  # a local bound to a comparison: its symbol
        self.steps = 0
        self.unread = ""  # the first installed version compared and not read (Outcome.unread)

    # expressions

    def cond(self, node: ast.expr) -> Cond:  # noqa: PLR0911 - one return per form
        if isinstance(node, ast.Constant):
            return constant(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.cond(node.operand).negated()
        if isinstance(node, ast.BoolOp):
            parts = [self.cond(value) for value in node.values]
            return (
                _all(parts)
                if isinstance(node.op, ast.And)
                else _all([p.negated() for p in parts]).negated()
            )
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return self.locals[node.id]
            if node.id in self.params:
                value = self.params[node.id]
                return UNKNOWN if value is _NOT_CONSTANT else constant(value)
            flag = self.names.constant_of(node)  # a module's flag: set in no branch alone
            if isinstance(flag, bool):
                return constant(flag)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            folded = self._folded(node)
            if folded is not None:
                return folded
        if isinstance(node, ast.Call):
            compared = self._compared(node)
            if compared is not None:
                return compared
            outcome = self.call(node)
            if outcome is not None:
                self.unread = self.unread or outcome.unread
                return outcome.value  # where it raises, no value: the window stays wide
        return self._window(node)

    def _window(self, node: ast.expr) -> Cond:
        """``node`` as a version test, read by :func:`version_window`."""
        true = version_window(node, self.names, positive=True)
        false = version_window(node, self.names, positive=False)
        if true is None and false is None:
            self.unread = self.unread or self._compares_installed(node)
        return Cond(true, false)

    def _compares_installed(self, node: ast.expr) -> str:
        """Why ``node``, read as no window, compares an upstream package's installed version
        all the same ("": it compares none): as text (trl's old ``version("transformers") >
        current_version``: "4.100" < "4.33"), or with an operand canary does not know."""
        for part in ast.walk(node):
            if not isinstance(part, ast.Compare):
                continue
            for fact in installed_operands(part, self.names):
                if isinstance(fact, InstalledVersion) and not fact.parsed:
                    return f"it compares {fact.package}'s installed version as text"
                return f"it compares {fact.package}'s installed version with an unread value"
        return ""

    def _compared(self, node: ast.Call) -> Cond | None:
        """``op(a, b)`` of a local bound to an ``operator`` comparison (read as ``a <op>
        b``), and ``isinstance(v, str)`` of an installed version (false: it is parsed or a
        version string the helper is given parsed); None: neither."""
        func = node.func
        if not isinstance(func, ast.Name) or len(node.args) != 2 or node.keywords:
            return None
        if func.id in self.operators:
            compare = ast.Compare(
                left=node.args[0],
                ops=[_OPERATOR_NODES[self.operators[func.id]]()],
                comparators=[node.args[1]],
            )
            true = version_window(compare, self.names, positive=True)
            false = version_window(compare, self.names, positive=False)
            return Cond(true, false)
        if func.id == "isinstance" and isinstance(node.args[1], ast.Name):
            fact = self.names.version_of(node.args[0])
            if node.args[1].id == "str" and isinstance(fact, InstalledVersion) and fact.parsed:
                return FALSE
        return None

    def _folded(self, node: ast.Compare) -> Cond | None:
        """``x is None``, ``x == "y"`` of values known here, ``x in TABLE``: a constant."""
        op = node.ops[0]
        if isinstance(op, (ast.In, ast.NotIn)):
            table = self.names.dispatch_table(node.comparators[0])
            key = self._constant(node.left)
            if table is None or not isinstance(key, str):
                return None
            return constant((key in table) == isinstance(op, ast.In))
        left, right = self._constant(node.left), self._constant(node.comparators[0])
        if left is _NOT_CONSTANT or right is _NOT_CONSTANT:
            return None
        op = node.ops[0]
        if isinstance(op, (ast.Is, ast.Eq)):
            return constant(left == right)
        if isinstance(op, (ast.IsNot, ast.NotEq)):
            return constant(left != right)
        return None

    def _constant(self, node: ast.expr) -> object:
        if isinstance(node, ast.Name) and node.id in self.params:
            return self.params[node.id]  # None and booleans too, which are no text values
        return self.names.constant_of(node)

    # statements

    def outcome(self, statements: list[ast.stmt]) -> Outcome:
        """The helper's outcome, running its body: :meth:`block`'s, with what it compared
        and could not read."""
        found = self.block(statements)
        return Outcome(found.value, found.returns, self.unread)

    def block(self, statements: list[ast.stmt]) -> Outcome:  # noqa: PLR0911 - per statement
        """The outcome of running ``statements`` to their end (falling off: None)."""
        for index, node in enumerate(statements):
            rest = statements[index + 1 :]
            self.steps += 1
            if self.steps > BUDGET:
                return Outcome(UNKNOWN, UNKNOWN)
            if isinstance(node, ast.If) and not _exits_within(node):
                self._merge(node)  # both branches fall through: one path on
                continue
            if isinstance(node, ast.Return):
                value = FALSE if node.value is None else self.cond(node.value)
                return Outcome(value, TRUE)
            if isinstance(node, ast.Raise):
                return Outcome(FALSE, FALSE)
            if isinstance(node, ast.If):
                return self._branch(node, rest)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                returns = self.check(node.value)
                if returns is not None and returns.constant is not True:
                    after = self.block(rest)
                    return Outcome(after.value, _all([returns, after.returns]))
                continue
            if isinstance(node, ast.Try):
                taken = [h for h in node.handlers if not _not_installed(h)]
                if not all(_raises(handler.body) for handler in taken):
                    return Outcome(UNKNOWN, UNKNOWN)
                return self.block([*node.body, *node.orelse, *node.finalbody, *rest])
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
                self._bind(node)
                continue
            if any(isinstance(n, (ast.Return, ast.Raise)) for n in ast.walk(node)):
                return Outcome(UNKNOWN, UNKNOWN)  # a loop, a with: not followed
        return Outcome(FALSE, TRUE)

    def _assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        value = node.value
        if value is None:
            return
        cond = self.cond(value)
        if cond.constant is not None or cond.true is not None or cond.false is not None:
            for name in names:
                self.locals[name] = cond
                self.params.pop(name, None)
            return
        for name in names:
            self.locals.pop(name, None)
            self.params.pop(name, None)
            self.operators.pop(name, None)
        symbol = self._comparison_of(value)
        if symbol is not None:
            self.operators.update(dict.fromkeys(names, symbol))
            return
        self.names.run_binding(node)

    def _bind(self, node: ast.Assign | ast.AnnAssign | ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self._import(node)
        else:
            self._assign(node)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        """``import transformers`` inside the helper: bound for what it compares, and no
        longer a local boolean."""
        for alias in node.names:
            name = (alias.asname or alias.name).partition(".")[0]
            for table in (self.locals, self.params, self.operators):
                table.pop(name, None)
        self.names.run_binding(node)

    def _comparison_of(self, value: ast.expr) -> str | None:
        """``TABLE[key]`` of a dispatch table and a known key: the comparison's symbol."""
        if not isinstance(value, ast.Subscript):
            return None
        table = self.names.dispatch_table(value.value)
        key = self._constant(value.slice)
        return table.get(key) if table is not None and isinstance(key, str) else None

    def _merge(self, node: ast.If) -> None:
        """An ``if`` neither branch of which leaves: the locals it assigns, as chosen by
        its test."""
        test = self.cond(node.test)
        if test.constant is not None:
            self.block(node.body if test.constant else node.orelse)
            return
        saved = dict(self.locals)
        self.block(node.body)
        taken, self.locals = self.locals, dict(saved)
        self.block(node.orelse)
        other = self.locals
        merged = {}
        for name in taken.keys() | other.keys():
            first, second = taken.get(name), other.get(name)
            if first is None or second is None:
                continue  # bound on one path only: not known after it
            merged[name] = first if first == second else _choice(test, first, second)
        self.locals = merged

    def _branch(self, node: ast.If, rest: list[ast.stmt]) -> Outcome:
        test = self.cond(node.test)
        if test.constant is not None:
            return self.block([*(node.body if test.constant else node.orelse), *rest])
        saved = dict(self.locals)
        taken = self.block([*node.body, *rest])
        self.locals = saved
        other = self.block([*node.orelse, *rest])
        return Outcome(
            _choice(test, taken.value, other.value), _choice(test, taken.returns, other.returns)
        )

    def check(self, node: ast.Call) -> Cond | None:
        """Where a called check returns (None: it is no check)."""
        callee = self.names.callee_of(node)
        if callee is None:
            return None
        kind, what = callee
        if kind == "upstream" and what in REQUIRING and node.args:
            text = self.names.constant_of(node.args[0])
            window = requirement_window(text, self.upstream) if isinstance(text, str) else None
            return UNKNOWN if window is None else Cond(window, _negation(window))
        if kind == "helper":
            outcome = self.call(node)
            if outcome is None:
                return None
            self.unread = self.unread or outcome.unread
            return outcome.returns
        return None


_OPERATOR_NODES: dict[str, type[ast.cmpop]] = {
    ">": ast.Gt,
    ">=": ast.GtE,
    "<": ast.Lt,
    "<=": ast.LtE,
    "==": ast.Eq,
    "!=": ast.NotEq,
}


_EXITS = frozenset({"exit", "quit", "_exit", "abort"})  # sys.exit, os._exit, ...
_EVERYTHING = frozenset({"Exception", "BaseException"})


def may_stop(function: ast.AST, stops: Callable[[ast.Call], bool]) -> bool:
    """Whether calling ``function`` can end otherwise than by returning, by itself: a
    ``raise`` or ``assert``, an ``exit``, or a call ``stops`` says may (a check of the
    project's, ``require_version``), outside a ``try`` that catches everything. A check
    with none of them (unsloth's ``check_transformers_dependency_versions``, which warns)
    returns on every release: what follows it runs as if it were not there."""

    def visit(node: ast.AST) -> bool:
        if isinstance(node, (ast.Raise, ast.Assert)):
            return True
        if node is not function and isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            return False  # defined, not run
        if isinstance(node, ast.Try) and any(catches(h, _EVERYTHING) for h in node.handlers):
            rest = [*node.handlers, *node.orelse, *node.finalbody]
            return any(visit(n) for n in rest)
        if isinstance(node, ast.Call) and (called_name(node) in _EXITS or stops(node)):
            return True
        return any(visit(child) for child in ast.iter_child_nodes(node))

    return visit(function)


def _exits_within(node: ast.If) -> bool:
    return any(isinstance(n, (ast.Return, ast.Raise)) for n in ast.walk(node))


def _not_installed(handler: ast.ExceptHandler) -> bool:
    """``except PackageNotFoundError``: the package is not installed, which it is on every
    release a window is read for; the handler is never taken there."""
    kind = handler.type
    name = kind.attr if isinstance(kind, ast.Attribute) else getattr(kind, "id", None)
    return name == "PackageNotFoundError"


def _raises(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Raise)


def _negation(window: Window) -> Window | None:
    return window.negated()


def _all(parts: list[Cond]) -> Cond:
    """``a and b and ...``: true where every part is (its window no narrower than the
    known parts' together); false is one window only where one part is not constant."""
    if any(p.constant is False for p in parts):
        return FALSE
    live = [p for p in parts if p.constant is not True]
    if not live:
        return TRUE
    known = [p.true for p in live if p.true is not None]
    true = None
    if known:
        true = known[0]
        for window in known[1:]:
            true &= window
    false = live[0].false if len(live) == 1 else None
    return Cond(true, false)


def _choice(test: Cond, taken: Cond, other: Cond) -> Cond:
    """``taken if test else other`` where ``test`` is no constant."""
    if taken.constant is not None and taken.constant == other.constant:
        return taken
    if taken.constant is False:  # true only where the test fails and ``other`` holds
        return _all([test.negated(), other])
    if other.constant is False:
        return _all([test, taken])
    if taken.constant is True:  # false only where the test fails and ``other`` fails
        return _all([test.negated(), other.negated()]).negated()
    if other.constant is True:
        return _all([test, taken.negated()]).negated()
    return UNKNOWN


def bind_arguments(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    call: ast.Call,
    literal: Callable[[ast.expr], object],
    default: Callable[[ast.expr], object],
) -> dict[str, object] | None:
    """Each parameter of ``node`` bound to the call's literal argument (``literal``) or its
    literal default (``default``, read in the helper's module); ``_NOT_CONSTANT`` where
    neither is literal. None: the call passes ``*args``/``**kwargs``."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    args = node.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    bound: dict[str, object] = {}
    defaults = dict(
        zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    for kw, value in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if value is not None:
            defaults[kw.arg] = value
    for name in (*positional, *(a.arg for a in args.kwonlyargs)):
        bound[name] = default(defaults[name]) if name in defaults else _NOT_CONSTANT
    for name, value in zip(positional, call.args, strict=False):
        bound[name] = literal(value)
    for keyword in call.keywords:
        if keyword.arg in bound:
            bound[keyword.arg] = literal(keyword.value)
    return bound


NOT_CONSTANT = _NOT_CONSTANT
