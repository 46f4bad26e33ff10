"""How a function tests the anchors it applies, read from its syntax alone: the spellings it
tries in turn, the texts whose absence triggers its patch, and the tests that make a miss silent.

An anchor is missed on a release only when the rewrite it drives was meant to apply there
and no alternative the project gives applies. What this module reads, and why each is sound:

- **Alternatives** (:attr:`Reading.partners`): ``A in t or B in t`` (and, in its body, the
  call applying A is B's alternative: it misses only where B is the spelling there), an ``if
  A in t: ... elif B in t: ...`` chain, a fallback tried where the first found nothing (``m
  = re.search(A, t); if m is None: m = re.search(B, t)``, ``if not matches: matches =
  q.findall(t)``), and the rest of a block after ``if <A applied>: return`` (``new =
  t.replace(A, x); if new != t: return new; return t.replace(B, y)``). Where a partner is
  there, the anchor's miss changes nothing: the project applies the other spelling, or (for
  the fallback and the rest) the anchor's code does not run at all. Members of one fallback
  region are not each other's alternatives: they apply together.
- **Triggers** (:attr:`Role.TRIGGER`): ``if A not in t: <patch that goes on>``: absent text
  is exactly where the patch applies, so A is never a miss (as ``if A in t: return`` is no
  anchor in the walker: A is what the patch would add).
- **Tested** (:attr:`Role.TESTED`, and :attr:`Reading.guarding`): an anchor whose presence the
  project asks (an ``in`` test, a search/findall/replace/subn result compared with ``None``,
  emptiness, the text it came from or zero), and the code under such a test or after ``if
  A not in t: return`` (for a result, both branches and the rest after either: the one
  where it found nothing is the code for the other shape, as the ``else`` of a version
  test in :mod:`canary.surface.guards`), is *guarded* as a ``hasattr`` test is
  (:mod:`canary.surface.findings`): on a release where the anchor never existed the project
  expects it absent (came later, not counted); where it existed and vanished the rewrite
  stops applying, a state the project's code provides for: a *possible* finding
  (:mod:`canary.surface.findings`), since whether upstream still needs the rewrite is a
  fact of its behaviour that neither side's source decides. An ``in`` test under
  ``assert``, or whose absence raises (alone or with other conditions: ``x and A not in
  t``), is no silent miss and is left alone. A find() index is no presence test (-1 is
  truthy), nor is a count compared with anything but zero.

Only a test the syntax shows is read; one through a helper or a flag set elsewhere is not,
and its anchors count as before (a miss is held: never hidden on a guess).
"""

from __future__ import annotations

import ast
import enum
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

# Calls whose result is empty, None or zero exactly where their anchor is not there.
_FOUND_BY_TRUTH = frozenset({"search", "match", "fullmatch", "findall", "count", "subn"})
# Calls whose result equals the text they were given exactly where their anchor is not there.
_FOUND_BY_CHANGE = frozenset({"replace", "sub"})
_RESULT_METHODS = _FOUND_BY_TRUTH | _FOUND_BY_CHANGE
# Calls that apply an anchor (extract.py's anchor methods and re functions/pattern methods).
_ANCHOR_METHODS = _RESULT_METHODS | {"find", "rfind", "index", "rindex", "split", "rsplit",
                                     "partition", "rpartition", "finditer"}  # fmt: skip
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_SILENT_EXITS = (ast.Return, ast.Continue, ast.Break)
_REPORTS = re.compile(r"warn|log|print|debug|info|error", re.IGNORECASE)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

Spot = tuple[int, int]
"""Where an anchor is applied in its file: (line, column) of the call or ``in`` test."""


class Role(str, enum.Enum):
    """What an anchor's test makes of its miss."""

    TRIGGER = "trigger"  # if A not in text: <patch>: absent is when the patch applies
    TESTED = "tested"  # the project asks whether it is there: a miss is silent
    RAISES = "raises"  # the project raises where it is not there: a miss breaks, loudly

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Branches:
    """Which parts of an ``if`` run only where an anchor its test asks about is there."""

    body: bool = False
    orelse: bool = False
    rest: bool = False  # the statements after it in its block (its body exits silently)
    # the nodes its test asks about: the walker counts the branches only where one of them
    # is applied to a source text (``name in ("a", "b")`` asks nothing of upstream)
    asks: tuple[ast.expr, ...] = field(default=(), compare=False)


@dataclass
class Reading:
    """One function's anchor tests, keyed by ``id`` of its nodes (valid while it lives)."""

    roles: dict[int, Role] = field(default_factory=dict)
    partners: dict[int, set[Spot]] = field(default_factory=dict)
    guarding: dict[int, Branches] = field(default_factory=dict)  # id(ast.If) -> branches

    def role(self, node: ast.AST) -> Role | None:
        return self.roles.get(id(node))

    def alternatives(self, node: ast.AST) -> tuple[Spot, ...]:
        return tuple(sorted(self.partners.get(id(node), ())))

    def branches(self, node: ast.If) -> Branches:
        return self.guarding.get(id(node), _NONE)


_NONE = Branches()
EMPTY = Reading()


def spot(node: ast.AST) -> Spot:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


@functools.lru_cache(maxsize=4096)  # a helper is walked once per call that gives it a text
def read(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Reading:
    """The anchor tests of ``function``'s own body (nested definitions are read on their own)."""
    reader = _Reader()
    reader.block(function.body)
    return reader.reading


class _Reader:
    def __init__(self) -> None:
        self.reading = Reading()
        self.results: dict[str, list[ast.expr]] = {}  # name -> the anchor nodes it holds
        self.order: dict[str, int] = {}  # name -> when it was last bound
        self.bound = 0  # bindings of results so far

    def block(self, statements: Sequence[ast.stmt]) -> None:
        for index, node in enumerate(statements):
            self.statement(node)
            if not isinstance(node, ast.If) or not _exits(node.body):
                continue
            rest = statements[index + 1 :]
            found = self.found(node.test, when=True)
            if found:  # if <A applied>: return: the rest runs only where A is missing
                self.pair(found, _anchor_nodes(rest))
            # the rest runs where the test failed: where A is there, or (a result) where
            # it is not, which is code for the other shape, as after a version test
            other = self.found(node.test, when=False) or _results(found)
            if _exits(node.body, silently=True) and other:
                branches = self.reading.branches(node)
                self.reading.guarding[id(node)] = replace(branches, rest=True)

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, _NESTED):
            return
        if isinstance(node, ast.Assert):
            for raising in self.missing(node.test, when=False):  # absent raises
                self.reading.roles[id(raising)] = Role.RAISES
            return
        if isinstance(node, ast.If):
            self.conditional(node)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.mark_tested(child, test=isinstance(node, ast.While) and child is node.test)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            self.bind(targets, node.value)
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                self.block(inner)
        for handler in getattr(node, "handlers", ()):
            self.block(handler.body)
        for case in getattr(node, "cases", ()):
            self.block(case.body)

    def conditional(self, node: ast.If) -> None:
        test = node.test
        self.mark_tested(test, test=True)
        single = _in_test(test)
        if single is not None and single[1] and _patches(node.body):
            self.reading.roles[id(single[0])] = Role.TRIGGER  # if A not in t: <patch>
        for when, branch in ((True, node.body), (False, node.orelse)):
            if _exits(branch) and not _exits(branch, silently=True):
                for raising in self.missing(test, when=when):  # absent raises: no silent miss
                    self.reading.roles[id(raising)] = Role.RAISES
        spellings = _alternatives_of(test)
        self.pair_all(spellings)
        for member in spellings:  # the body applies each spelling where it is the one there
            others = [m for m in spellings if m is not member]
            self.pair(others, _applying(member, node.body))
        chain = self.chain(node)
        if len(chain) > 1:
            self.pair_all(chain)
        present, absent = self.found(test, when=True), self.found(test, when=False)
        # both branches of a test of a result are guarded (the one where it found nothing
        # is the code for the other shape, as the else of a version test); of an ``in``
        # test only where it holds: ``if A not in t: <patch>`` is no shape test (a trigger)
        # ``if A in t or B in t``: its body runs only where one spelling is there
        self.reading.guarding[id(node)] = Branches(
            body=bool(present or _results(absent) or spellings),
            orelse=bool(absent or _results(present)),
            asks=(*present, *absent, *spellings),
        )
        self.block(node.body)
        if absent:  # if <A found nothing>: <another spelling>
            self.pair(absent, _anchor_nodes(node.body))
            for name in _names(test):
                if name in self.results:
                    self.results[name] = [*absent, *self.results[name]]
        self.block(node.orelse)

    def chain(self, node: ast.If) -> list[ast.expr]:
        """The ``in`` tests of an ``if A in t: ... elif B in t: ...`` chain."""
        tests = []
        while True:
            single = _in_test(node.test)
            if single is None or single[1]:
                return tests
            tests.append(single[0])
            if len(node.orelse) != 1 or not isinstance(node.orelse[0], ast.If):
                return tests
            node = node.orelse[0]

    def bind(self, targets: list[ast.expr], value: ast.expr) -> None:
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        held = _result_nodes(value)
        for name in names:
            if held:
                self.bound += 1
                self.results[name], self.order[name] = held, self.bound
            else:
                self.results.pop(name, None)

    def mark_tested(self, expression: ast.expr, *, test: bool) -> None:
        """Mark the anchors ``expression`` asks about: every ``in`` test, every result
        compared (with None, zero, its text), and, where it is a test, a result taken as one."""
        tests = [expression] if test else []
        for node in _walk(expression):
            single = _in_test(node)
            if single is not None:
                self.reading.roles.setdefault(id(single[0]), Role.TESTED)
            elif isinstance(node, ast.Compare) or (isinstance(node, ast.IfExp) and not test):
                tests.append(node.test if isinstance(node, ast.IfExp) else node)
        for part in tests:
            for when in (True, False):
                for node in self.found(part, when=when):
                    self.reading.roles.setdefault(id(node), Role.TESTED)

    def found(self, test: ast.expr, *, when: bool) -> list[ast.expr]:
        """The anchor nodes ``test`` being ``when`` shows were found (their text is there)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.found(test.operand, when=not when)
        if isinstance(test, ast.BoolOp):
            # a and b true: both held; a or b false: neither held
            if isinstance(test.op, ast.And) == when:
                return [n for value in test.values for n in self.found(value, when=when)]
            return []
        single = _in_test(test)
        if single is not None:
            return [single[0]] if single[1] != when else []
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return self.compared(test, when=when)
        held = self.held(test)
        return held if when else []

    def missing(self, test: ast.expr, *, when: bool) -> list[ast.expr]:
        """The anchor nodes whose absence takes ``test`` towards ``when``: alone (``x or A
        not in t``) or with the rest (``x and A not in t``), a branch that raises there is
        how the project reports the text gone, not a silent miss."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.missing(test.operand, when=not when)
        if isinstance(test, ast.BoolOp):
            return [n for value in test.values for n in self.missing(value, when=when)]
        return self.found(test, when=not when)

    def compared(self, test: ast.Compare, *, when: bool) -> list[ast.expr]:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, (ast.Is, ast.IsNot)) and _is_none(right):
            return self.held(left) if isinstance(op, ast.IsNot) == when else []
        if isinstance(right, ast.Constant):
            # n == 0: subn/count found nothing; n > 0, n != 0: it found some
            if right.value != 0 or isinstance(right.value, bool):
                return []
            if not isinstance(op, (ast.Eq, ast.NotEq, ast.Gt)):
                return []
            return self.held(left) if isinstance(op, (ast.NotEq, ast.Gt)) == when else []
        if isinstance(op, (ast.Eq, ast.NotEq)):
            # new != text: the replace changed it
            return self.latest(left, right) if isinstance(op, ast.NotEq) == when else []
        return []

    def latest(self, *operands: ast.expr) -> list[ast.expr]:
        """The replace/sub nodes of the operand bound last (``new != function``: new)."""
        named = [o for o in operands if isinstance(o, ast.Name) and o.id in self.results]
        if not named:
            return []
        last = max(named, key=lambda o: self.order.get(o.id, 0))
        return [n for n in self.results[last.id] if _by(n, _FOUND_BY_CHANGE)]

    def held(self, node: ast.expr) -> list[ast.expr]:
        """The anchor nodes ``node`` holds as a value that is falsy where they are not
        there (a match, a list of matches, a count, an ``in`` test)."""
        if isinstance(node, ast.Call) and _callee(node) == "len" and node.args:
            node = node.args[0]
        if isinstance(node, ast.Name):
            held = self.results.get(node.id, ())
        elif isinstance(node, ast.Call):
            held = _result_nodes(node)
        else:
            return []
        return [n for n in held if isinstance(n, ast.Compare) or _by(n, _FOUND_BY_TRUTH)]

    def pair(self, first: Iterable[ast.expr], second: Iterable[ast.expr]) -> None:
        second = list(second)
        for a in first:
            for b in second:
                if a is not b:
                    self.reading.partners.setdefault(id(a), set()).add(spot(b))
                    self.reading.partners.setdefault(id(b), set()).add(spot(a))

    def pair_all(self, members: Sequence[ast.expr]) -> None:
        for index, member in enumerate(members):
            self.pair([member], members[index + 1 :])


def _in_test(node: ast.AST) -> tuple[ast.Compare, bool] | None:
    """``A in t`` (False) or ``A not in t`` / ``not A in t`` (True: negated)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _in_test(node.operand)
        return (inner[0], not inner[1]) if inner else None
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        if isinstance(node.ops[0], ast.In):
            return node, False
        if isinstance(node.ops[0], ast.NotIn):
            return node, True
    return None


def _alternatives_of(test: ast.expr) -> list[ast.expr]:
    """The ``in`` tests of ``A in t or B in t``: either spelling will do."""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)):
        return []
    singles = [_in_test(value) for value in test.values]
    positive = [s[0] for s in singles if s is not None and not s[1]]
    return positive if len(positive) > 1 else []


def _patches(body: Sequence[ast.stmt]) -> bool:
    """Whether a block does more than exit or report (a warning alone is no patch)."""
    if _exits(body):
        return False
    return not all(
        isinstance(s, ast.Pass)
        or (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and _REPORTS.search(_callee(s.value) or "")
        )
        for s in body
    )


def _result_nodes(value: ast.expr) -> list[ast.expr]:
    """The anchor nodes whose outcome ``value`` holds: a result-bearing call, or ``in`` tests."""
    if isinstance(value, ast.Call) and _callee(value) in _RESULT_METHODS:
        return [value]
    return [single[0] for node in _walk(value) if (single := _in_test(node)) is not None]


def _applying(test: ast.expr, statements: Sequence[ast.stmt]) -> list[ast.expr]:
    """The anchor calls among ``statements`` that apply what ``A in t`` tests (the same A)."""
    if not isinstance(test, ast.Compare):
        return []
    anchor = ast.dump(test.left)
    return [
        n
        for n in _anchor_nodes(statements)
        if isinstance(n, ast.Call) and n.args and ast.dump(n.args[0]) == anchor
    ]


def _results(nodes: Iterable[ast.expr]) -> list[ast.expr]:
    """The calls among anchor nodes (not ``in`` tests)."""
    return [n for n in nodes if isinstance(n, ast.Call)]


def _by(node: ast.expr, methods: frozenset[str]) -> bool:
    return isinstance(node, ast.Call) and _callee(node) in methods


def _anchor_nodes(statements: Iterable[ast.stmt]) -> list[ast.expr]:
    found: list[ast.expr] = []
    for statement in statements:
        for node in _walk(statement):
            applies = isinstance(node, ast.Call) and _callee(node) in _ANCHOR_METHODS
            if applies or (isinstance(node, ast.Compare) and _in_test(node) is not None):
                found.append(node)
    return found


def _walk(node: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk`` that does not enter nested definitions (read on their own)."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        todo.extend(c for c in ast.iter_child_nodes(current) if not isinstance(c, _NESTED))


def _names(test: ast.expr) -> set[str]:
    return {n.id for n in _walk(test) if isinstance(n, ast.Name)}


def _callee(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _exits(body: Sequence[ast.stmt], *, silently: bool = False) -> bool:
    if not body:
        return False
    return isinstance(body[-1], _SILENT_EXITS if silently else _EXITS)
