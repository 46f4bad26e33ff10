"""Equivalent expressions: normalised text that differs where no caller can tell.

Normalisation (:mod:`canary.codeindex.expressions`) removes layout; two rewrites remain that
change the text but not what the code does for anyone outside the function:

* **Operand order of** ``and``/``or`` when the operands are *pure and independent*. Pure:
  names, constants, attribute and item reads, comparisons, ``not``, literal displays and the
  builtins ``isinstance``/``hasattr``/``callable`` of such operands; no other call, no
  arithmetic (it can raise), no ``:=``/``await``/``yield``/lambda/comprehension. Reading an
  attribute, an item or comparing is assumed to have no side effect (properties and
  ``__eq__`` that mutate are not code the fixes meet). Independent: two operands that read
  the same object, or one reads an attribute or item of what the other reads, keep their
  order, because the first may guard the second (``x is not None and x.y``,
  ``k in d and d[k]``, ``hasattr(m, 'a') and m.a``). Where the value of the ``and``/``or``
  is used (an assignment, an argument, a return) rather than only its truth (an ``if``
  test, ``not``, a comprehension's ``if``), the operands commute only when each is a bool
  (``is``/``in`` comparisons, ``not``, ``isinstance``...): ``0 and None`` is 0 but
  ``None and 0`` is None. ``a and f()`` never equals ``f() and a``.
* **Consistent renaming of a function's locals** (:class:`Scope`): a name the check expects
  that the function no longer has at all may stand for one of the function's locals that
  the expectation does not name, one to one. Parameters (callers pass them by name),
  attributes, globals and ``global``/``nonlocal`` names are never renamed. Names bound
  inside the expression (comprehension variables, lambda parameters) are renamed freely.

:func:`renaming` returns the renaming under which two expressions are equivalent, so an
expectation that compares several expressions of one statement (a target and its value)
can hold the renaming consistent across them.
"""

from __future__ import annotations

import ast
import copy
import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from canary.codeindex.expressions import SourceText, Span, bound_names, parse_block

# At most this many names renamed at once: permutations grow fast, and a real rename
# touches one or two names of one expression.
_MOST_RENAMED = 4

# A character that can continue but not start an identifier: a placeholder for a name bound
# inside the expression can never clash with a real name.
_BOUND = "\u00b7"

_PURE_BUILTINS = frozenset({"isinstance", "hasattr", "callable"})
_BOOL_COMPARISONS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


@dataclass(frozen=True, slots=True)
class Scope:
    """The names of one function that renaming must respect.

    ``locals``: bound in the function's own body (assignment, ``for``/``with``/``except``
    targets, imports, nested ``def``/``class`` names, ``:=``), minus its parameters and its
    ``global``/``nonlocal`` names: nothing outside the function can depend on them.
    ``known``: every name the function binds or reads, parameters included: an expected
    name among them means that very name, never a renamed one.
    """

    locals: frozenset[str] = frozenset()
    known: frozenset[str] = frozenset()
    context: Context | None = None


@dataclass(frozen=True, slots=True)
class Callee:
    """What a call to a function of the module binds by position: its positional parameter
    names (after ``self`` for a method) and how many of them are positional-only."""

    positional: tuple[str, ...]
    positional_only: int


@dataclass(frozen=True, slots=True)
class Context:
    """What the function's module says about names an expression uses: ``import x as y``
    makes ``y`` the module ``x`` (``aliases``: ``y`` -> ``"x"``), and a call to a function
    the module defines binds its arguments by that function's signature (``callees``;
    ``self.name`` for a method one signature across the module's classes has)."""

    aliases: Mapping[str, str]
    callees: Mapping[str, Callee]


@dataclass(frozen=True, slots=True)
class DeferredScope:
    """A function's :class:`Scope` when called (parsed on demand), and its module's
    :class:`Context` without it: most comparisons need the context only."""

    text: SourceText
    span: Span

    def __call__(self) -> Scope:
        return function_scope(self.text, self.span)

    @property
    def context(self) -> Context:
        return module_context(self.text)


#: Module level: nothing is local, so nothing is renamed.
MODULE_SCOPE = Scope()


@functools.lru_cache(maxsize=64)
def function_scope(text: SourceText, span: Span) -> Scope:
    """The :class:`Scope` of the function defined at ``span`` of ``text``. Parsed on demand
    and cached: only a comparison that fails as text asks for it."""
    node, _ = parse_block(text, span)
    args = node.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    params.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    bound: set[str] = set()
    declared: set[str] = set()
    read: set[str] = set()
    own_targets: set[int] = set()  # comprehension variables: the comprehension's own scope
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            bound.add(current.name)
            stack.extend(_evaluated_outside(current))
            continue
        if kind is ast.Lambda:
            stack.extend(_evaluated_outside(current))
            continue
        if kind in (ast.Global, ast.Nonlocal):
            declared.update(current.names)
            continue
        if kind is ast.Name:
            read.add(current.id)
            if not isinstance(current.ctx, ast.Load) and id(current) not in own_targets:
                bound.add(current.id)
            continue
        if kind is ast.comprehension:
            own_targets.update(id(n) for n in ast.walk(current.target) if isinstance(n, ast.Name))
        elif kind is ast.ExceptHandler and current.name:
            bound.add(current.name)
        elif kind in (ast.Import, ast.ImportFrom):
            bound.update(
                alias.asname or alias.name.split(".")[0]
                for alias in current.names
                if alias.name != "*"
            )
        elif kind in (ast.MatchAs, ast.MatchStar) and current.name:
            bound.add(current.name)
        elif kind is ast.MatchMapping and current.rest:
            bound.add(current.rest)
        stack.extend(ast.iter_child_nodes(current))
    return Scope(
        locals=frozenset(bound - params - declared),
        known=frozenset(bound | params | read | declared),
        context=module_context(text),
    )


@functools.lru_cache(maxsize=64)
def module_context(text: SourceText) -> Context:
    """The :class:`Context` of a module's text, from its module-level lines alone (parsing
    a 5,000-line trainer.py whole for this is most of a warm run): ``import x as y`` lines,
    the headers of module-level functions and of methods of module-level classes (parsed
    when a call asks), and module-level assignments (a name assigned there is no known
    function or module). A decorated function binds nothing known."""
    lines = text.text.splitlines()
    aliases: dict[str, str] = {}
    headers: dict[str, list[int]] = {}  # callee name -> the lines its defs start on
    rebound: set[str] = set()
    block = ""  # what the current module-level statement opened: "class", "def", ...
    for index, line in enumerate(lines):
        if (start := _WORD.match(line)) is not None:
            block = start.group(1)
            if (imported := _IMPORT_AS.match(line)) is not None:
                aliases.update(_aliases(imported.group(1)))
            elif (assigned := _ASSIGNED.match(line)) is not None:
                rebound.add(assigned.group(1))
        header = _DEF.match(line)
        if header is None or (header.group(1) and block != "class"):
            continue
        name = f"self.{header.group(2)}" if header.group(1) else header.group(2)
        headers.setdefault(name, []).append(index)
    for name in rebound:
        headers.pop(name, None)
        aliases.pop(name, None)
    return Context(aliases, _Callees(lines, headers))


class _Callees(Mapping[str, Callee]):
    """Callee name -> :class:`Callee`, each header parsed on first lookup; a name whose defs
    differ (a method of two classes), or that is decorated, is not there."""

    def __init__(self, lines: list[str], headers: dict[str, list[int]]) -> None:
        self._lines, self._headers = lines, headers
        self._parsed: dict[str, Callee | None] = {}

    def __getitem__(self, name: str) -> Callee:
        if name not in self._parsed:
            found = {self._parse(index, name.startswith("self.")) for index in self._headers[name]}
            self._parsed[name] = found.pop() if len(found) == 1 else None
        callee = self._parsed[name]
        if callee is None:
            raise KeyError(name)
        return callee

    def __contains__(self, name: object) -> bool:
        return name in self._headers

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def _parse(self, index: int, method: bool) -> Callee | None:
        lines = self._lines
        indent = len(lines[index]) - len(lines[index].lstrip())
        if _decorated(lines, index, indent):
            return None
        return _header_callee(lines, index, method=method)


_WORD = re.compile(r"^(\w+)")
_IMPORT_AS = re.compile(r"^import\s+([\w., ]+?)\s*(?:#.*)?$")
_ASSIGNED = re.compile(r"^(\w+)\s*(?::[^=]*)?=(?!=)")
_DEF = re.compile(r"^((?:    )?)(?:async\s+)?def\s+(\w+)\s*\(")


def _aliases(names: str) -> Iterator[tuple[str, str]]:
    for part in names.split(","):
        module, _, alias = part.strip().partition(" as ")
        if alias.strip():
            yield alias.strip(), module.strip()


def _decorated(lines: list[str], index: int, indent: int) -> bool:
    """The statement just above the ``def`` at its indentation is a decorator (``@...``,
    or the ``)`` closing a decorator's arguments)."""
    for above in range(index - 1, -1, -1):
        line = lines[above]
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        depth = len(line) - len(stripped)
        if depth == indent:
            return stripped.startswith(("@", ")"))
        if depth < indent:
            return False
    return False


def _header_callee(lines: list[str], index: int, *, method: bool) -> Callee | None:
    """The :class:`Callee` of the ``def`` header starting at ``lines[index]``."""
    header, depth = [], 0
    for line in lines[index : index + 80]:
        header.append(line.strip())
        depth += line.count("(") - line.count(")")
        if depth <= 0:
            break
    text = " ".join(header)
    text = text[text.index("def") :].rsplit(":", 1)[0] if ":" in text else text
    try:
        node = ast.parse(f"{text}: pass").body[0]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return _callee(node, method=method) if isinstance(node, _FUNCTIONS) else None


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _callee(function: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool) -> Callee | None:
    """A decorator may change the signature: a decorated function binds nothing known
    (``staticmethod``/``classmethod`` included: their first parameter is not ``self``)."""
    if function.decorator_list:
        return None
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    skip = 1 if method else 0
    if len(names) < skip:
        return None
    return Callee(tuple(names[skip:]), max(len(args.posonlyargs) - skip, 0))


def _context_of(scope: Callable[[], Scope] | None) -> Context | None:
    if scope is None:
        return None
    return scope.context if isinstance(scope, DeferredScope) else scope().context


def _touches(tree: ast.expr, context: Context, *, aliases: bool) -> bool:
    """Whether :func:`_in_context` could change ``tree``: it calls a known function or (with
    ``aliases``) names an alias."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.keywords:
            func = node.func
            if isinstance(func, ast.Name) and func.id in context.callees:
                return True
            if isinstance(func, ast.Attribute) and f"self.{func.attr}" in context.callees:
                return True
        elif aliases and isinstance(node, ast.Name) and node.id in context.aliases:
            return True
    return False


def _in_context(
    tree: ast.expr, context: Context, local: frozenset[str], *, aliases: bool
) -> ast.expr:
    """``tree`` (a copy) with module aliases spelled as the module (``np_mm.x`` ->
    ``numpy.x``) and each call to a known function passing by position what its signature
    binds by position (``f(a, b=1)`` -> ``f(a, 1)`` when ``b`` is the next positional
    parameter): the same call, whichever way it is written. Names ``local`` to the function
    shadow the module's."""

    class Canonical(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            target = context.aliases.get(node.id) if aliases else None
            if target is None or node.id in local or not isinstance(node.ctx, ast.Load):
                return node
            return ast.parse(target, mode="eval").body

        def visit_Call(self, node: ast.Call) -> ast.Call:
            self.generic_visit(node)
            func = node.func
            name = func.id if isinstance(func, ast.Name) and func.id not in local else None
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                name = f"self.{func.attr}" if func.value.id == "self" else None
            callee = context.callees.get(name) if name else None
            if callee is not None and not any(isinstance(a, ast.Starred) for a in node.args):
                _bind_by_position(node, callee)
            return node

    return Canonical().visit(tree)


def _bind_by_position(call: ast.Call, callee: Callee) -> None:
    while call.keywords:
        index, first = len(call.args), call.keywords[0]
        if first.arg is None or index >= len(callee.positional):
            return
        if callee.positional[index] != first.arg:
            # a later keyword may name the next positional parameter: keywords are
            # evaluated in order, so only pure ones may move past each other
            match = next((k for k in call.keywords if k.arg == callee.positional[index]), None)
            if match is None or not all(_pure(k.value) for k in call.keywords):
                return
            call.keywords.remove(match)
            call.args.append(match.value)
            continue
        call.args.append(call.keywords.pop(0).value)


def _evaluated_outside(node: ast.AST) -> list[ast.AST]:
    # What a nested definition evaluates in the enclosing body: decorators, defaults, bases.
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, ast.Lambda):
        return defaults
    return [*node.decorator_list, *defaults]


def equivalent(
    expected: str,
    actual: str,
    scope: Callable[[], Scope] | None = None,
    *,
    boolean: bool = False,
) -> bool:
    """Whether normalised ``actual`` does what ``expected`` does (see the module doc).
    ``scope`` gives the function's :class:`Scope` (asked only when renaming could help;
    None: module level); ``boolean`` when only the truth of the value is used."""
    return renaming(expected, actual, scope, boolean=boolean) is not None


def renaming(
    expected: str,
    actual: str,
    scope: Callable[[], Scope] | None = None,
    *,
    boolean: bool = False,
    given: Mapping[str, str] | None = None,
) -> dict[str, str] | None:
    """The renaming of ``expected``'s names to ``actual``'s locals (``{}`` for none) under
    which the two expressions are equivalent, extending ``given``; None when there is none.
    Text that does not parse as an expression is compared as text."""
    given = dict(given or {})
    if expected == actual and not given:
        return {}
    left, right = _alpha(expected), _alpha(actual)
    if left is None or right is None:  # not expressions: compared as text
        return given if expected == actual else None
    right_key = _key(actual, boolean)
    if not given and _key(expected, boolean) == right_key:
        return {}
    context = _context_of(scope)
    if context is not None and scope is not None:
        # The module's aliases and call bindings. Only the function's own text spells a
        # module by an alias: the expectation names modules as they are (inspect.Parameter).
        if _touches(right, context, aliases=True):
            right = _in_context(_copy(right), context, scope().locals, aliases=True)
            right_key = _tree_key(right, boolean)
        if _touches(left, context, aliases=False):
            left = _in_context(_copy(left), context, scope().locals, aliases=False)
    left_free, right_free = _free_names(left), _free_names(right)
    if not set(left_free) - given.keys() - set(right_free):
        # Every name the expectation uses is there: only ``given`` can make a difference.
        candidates: list[dict[str, str]] = [given]
    else:
        found = (scope or (lambda: MODULE_SCOPE))()
        # a module the function imports under an alias is known by its own name too
        modules = {m.split(".")[0] for m in context.aliases.values()} if context else set()
        open_left = [
            n for n in left_free if n not in given and n not in found.known and n not in modules
        ]
        taken = set(left_free) | set(given.values())
        open_right = [n for n in right_free if n in found.locals and n not in taken]
        if len(open_left) != len(open_right) or len(open_left) > _MOST_RENAMED:
            return None
        candidates = [
            {**given, **dict(zip(open_left, chosen, strict=True))}
            for chosen in itertools.permutations(open_right)
        ]
    for mapping in candidates:
        renamed = negations_pushed(_renamed(left, mapping), boolean=boolean)
        if _dump(_normalised(renamed, boolean)) == right_key:
            return mapping
    return None


def holds_under(
    condition: str, guards: Iterable[str], scope: Callable[[], Scope] | None = None
) -> bool:
    """Whether ``condition`` is true wherever code under ``guards`` (the enclosing ``if``
    tests, as :class:`~canary.codeindex.Call` and ``Assignment`` keep them) runs: it is one
    of the guards, or one operand of a guard's top-level ``and``, modulo equivalence. The
    ``else`` side of ``if condition`` (guard ``not (condition)``) does not count."""
    return any(
        equivalent(condition, part, scope, boolean=True)
        for guard in guards
        for part in _conjuncts(guard)
    )


@functools.lru_cache(maxsize=1024)
def _conjuncts(guard: str) -> tuple[str, ...]:
    try:
        tree = negations_pushed(ast.parse(guard, mode="eval").body, boolean=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return (guard,)
    parts: list[ast.expr] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            stack.extend(reversed(node.values))
        else:
            parts.append(node)
    return (guard, *(ast.unparse(p) for p in parts))


@functools.lru_cache(maxsize=4096)
def _key(text: str, boolean: bool) -> str | None:
    tree = _alpha(text)
    return None if tree is None else _tree_key(tree, boolean)


def _tree_key(tree: ast.expr, boolean: bool) -> str:
    return _dump(_normalised(negations_pushed(_copy(tree), boolean=boolean), boolean))


@functools.lru_cache(maxsize=4096)
def _alpha(text: str) -> ast.expr | None:
    """The expression with the names it binds itself replaced by placeholders numbered in
    binding order; None when ``text`` is not an expression. Shared: copy before changing."""
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    _rename_bound(tree, {}, itertools.count())
    return tree


def _rename_bound(node: ast.AST, names: dict[str, str], counter: itertools.count) -> None:
    if isinstance(node, ast.Name):
        node.id = names.get(node.id, node.id)
    elif isinstance(node, _COMPREHENSIONS):
        _rename_comprehension(node, names, counter)
    elif isinstance(node, ast.Lambda):
        _rename_lambda(node, names, counter)
    else:
        for child in ast.iter_child_nodes(node):
            _rename_bound(child, names, counter)


def _rename_comprehension(
    node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
    names: dict[str, str],
    counter: itertools.count,
) -> None:
    inner = dict(names)
    for i, generator in enumerate(node.generators):
        # The first iterable is evaluated outside the comprehension.
        _rename_bound(generator.iter, names if i == 0 else inner, counter)
        for leaf in bound_names(generator.target):
            if isinstance(leaf, ast.Name):
                inner[leaf.id] = f"{_BOUND}{next(counter)}"
        _rename_bound(generator.target, inner, counter)
        for condition in generator.ifs:
            _rename_bound(condition, inner, counter)
    parts = (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
    for part in parts:
        _rename_bound(part, inner, counter)


def _rename_lambda(node: ast.Lambda, names: dict[str, str], counter: itertools.count) -> None:
    arguments = node.args
    for default in (*arguments.defaults, *(d for d in arguments.kw_defaults if d)):
        _rename_bound(default, names, counter)
    inner = dict(names)
    every = (*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs)
    for arg in (*every, arguments.kwarg):
        if arg is not None:
            inner[arg.arg] = arg.arg = f"{_BOUND}{next(counter)}"
    _rename_bound(node.body, inner, counter)


def _free_names(tree: ast.AST) -> list[str]:
    """Names read from outside the expression, in order of first appearance."""
    names = (n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    return list(dict.fromkeys(n for n in names if not n.startswith(_BOUND)))


def _renamed(tree: ast.expr, mapping: Mapping[str, str]) -> ast.expr:
    renamed = _copy(tree)
    for node in ast.walk(renamed):
        if isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
    return renamed


def _copy(tree: ast.expr) -> ast.expr:
    # Not a re-parse of the unparsed text: the placeholders are not identifiers.
    return copy.deepcopy(tree)


_INVERSE = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


def negations_pushed(node: ast.expr, *, boolean: bool) -> ast.expr:
    """``node`` with every ``not`` pushed inward as far as it goes (changed in place, the
    result returned): ``not (a and b)`` is ``not a or not b`` (De Morgan: the same bool),
    ``not a == b`` is ``a != b`` (``is``/``in`` likewise), and where only the truth of the
    value is used (``boolean``: an ``if`` test, an operand of ``not``) ``not not x`` is
    ``x``; of ``a if c else b`` and ``b if not c else a`` one canonical form is kept. So
    an ``if``/``else`` written either way round, with its test negated as a person writes
    it, compares equal."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        negated = _negated(node.operand, boolean)
        if negated is not None:
            return negated
        node.operand = negations_pushed(node.operand, boolean=True)
        return node
    if isinstance(node, ast.BoolOp):
        node.values = [negations_pushed(v, boolean=boolean) for v in node.values]
        return node
    if isinstance(node, ast.IfExp):
        node.test = negations_pushed(node.test, boolean=True)
        node.body = negations_pushed(node.body, boolean=boolean)
        node.orelse = negations_pushed(node.orelse, boolean=boolean)
        # ``a if c else b`` is ``b if not c else a``: the one with the lesser test, always.
        negated = _negated(_copy(node.test), True) or ast.UnaryOp(ast.Not(), _copy(node.test))
        if _dump(negated) < _dump(node.test):
            node.test, node.body, node.orelse = negated, node.orelse, node.body
        return node
    _push_into_children(node)
    return node


def _push_into_children(node: ast.AST) -> None:
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.expr):
            truth = isinstance(node, ast.comprehension) and name == "ifs"
            setattr(node, name, negations_pushed(value, boolean=truth))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.expr):
                    truth = isinstance(node, ast.comprehension) and name == "ifs"
                    value[i] = negations_pushed(item, boolean=truth)
                elif isinstance(item, ast.AST):
                    _push_into_children(item)
        elif isinstance(value, ast.AST):
            _push_into_children(value)


def _negated(operand: ast.expr, boolean: bool) -> ast.expr | None:
    """An expression whose truth is ``not operand`` with no ``not`` on top, else None."""
    if isinstance(operand, ast.UnaryOp) and isinstance(operand.op, ast.Not):
        return negations_pushed(operand.operand, boolean=True) if boolean else None
    if isinstance(operand, ast.Compare) and len(operand.ops) == 1:
        inverse = _INVERSE.get(type(operand.ops[0]))
        if inverse is not None:
            operand.ops = [inverse()]
            _push_into_children(operand)
            return operand
    if isinstance(operand, ast.BoolOp):
        other = ast.Or() if isinstance(operand.op, ast.And) else ast.And()
        values = [
            negations_pushed(ast.UnaryOp(ast.Not(), v), boolean=boolean) for v in operand.values
        ]
        return ast.BoolOp(other, values)
    return None


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, annotate_fields=False)


def _normalised(node: ast.AST, boolean: bool) -> ast.AST:
    """``node`` with every ``and``/``or`` flattened and its operands in canonical order
    where the order cannot matter (changed in place; returned for convenience)."""
    if isinstance(node, ast.BoolOp):
        operands: list[ast.expr] = []
        for value in node.values:
            _normalised(value, boolean)
            # (a and b) and c is a and b and c: same evaluation, same result.
            same = isinstance(value, ast.BoolOp) and type(value.op) is type(node.op)
            operands.extend(value.values if same else [value])
        if boolean or all(_is_bool(v) for v in operands):
            operands = _canonical_order(operands)
        node.values = operands
        return node
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _normalised(node.operand, True)
        return node
    if isinstance(node, ast.IfExp):
        _normalised(node.test, True)
        _normalised(node.body, boolean)
        _normalised(node.orelse, boolean)
        return node
    if isinstance(node, ast.comprehension):
        _normalised(node.target, False)
        _normalised(node.iter, False)
        for condition in node.ifs:
            _normalised(condition, True)
        return node
    for child in ast.iter_child_nodes(node):
        _normalised(child, False)
    return node


def _canonical_order(operands: list[ast.expr]) -> list[ast.expr]:
    """The least order by text among those that keep every dependent pair in place: the
    same for every reordering of independent operands, so comparing it compares them."""
    keys = [_dump(o) for o in operands]
    facts = [_reads(o) if _pure(o) else None for o in operands]
    placed: list[int] = []
    left = list(range(len(operands)))
    while left:
        ready = [i for i in left if not any(j < i and _depend(facts[j], facts[i]) for j in left)]
        chosen = min(ready, key=lambda i: (keys[i], i))
        placed.append(chosen)
        left.remove(chosen)
    return [operands[i] for i in placed]


def _depend(first: set[tuple[str, ...]] | None, second: set[tuple[str, ...]] | None) -> bool:
    if first is None or second is None:
        return True
    return any(a[: len(b)] == b or b[: len(a)] == a for a in first for b in second)


def _pure(node: ast.AST) -> bool:
    """No side effect and no exception of its own (see the module doc)."""
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        # -100 is a unary minus on a constant; -x calls x.__neg__.
        return isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.Call):
        return (
            isinstance(node.func, ast.Name)
            and node.func.id in _PURE_BUILTINS
            and not node.keywords
            and all(_pure(a) for a in node.args)
        )
    return isinstance(node, _PURE_NODES) and all(_pure(c) for c in ast.iter_child_nodes(node))


# Pure when everything inside them is: reads, comparisons, ``not``, displays. Operators,
# contexts and comparison operators are leaves of the tree with nothing to evaluate.
_PURE_NODES = (
    ast.Name,
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.Compare,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.expr_context,
    ast.boolop,
    ast.cmpop,
    ast.unaryop,
)


def _is_bool(node: ast.AST) -> bool:
    """Always evaluates to True or False (so which operand an ``and`` returns is no matter)."""
    if isinstance(node, ast.Compare):
        return all(isinstance(op, _BOOL_COMPARISONS) for op in node.ops)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.Not)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.BoolOp):
        return all(_is_bool(v) for v in node.values)
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id in _PURE_BUILTINS
    return False


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    """``a.b[k]`` as ``("a", ".b", "[k]")``; None for anything not rooted at a name."""
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        head = _chain(node.value)
        return None if head is None else (*head, f".{node.attr}")
    if isinstance(node, ast.Subscript):
        head = _chain(node.value)
        return None if head is None else (*head, f"[{ast.unparse(node.slice)}]")
    return None


def _reads(node: ast.AST) -> set[tuple[str, ...]]:
    """The objects a pure operand reads, as the longest chains it reads them through."""
    found: set[tuple[str, ...]] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        chain = _chain(current)
        if chain is not None:
            found.add(chain)
            # An item's key is read too: d[k] reads k.
            stack.extend(n.slice for n in ast.walk(current) if isinstance(n, ast.Subscript))
            continue
        if isinstance(current, ast.Call):
            stack.extend(current.args)  # the callee is a pure builtin, not an object read
            continue
        stack.extend(ast.iter_child_nodes(current))
    return found
