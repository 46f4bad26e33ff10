"""What the tests on a path say about the literal values of names (``kind == "t5"``,
``name in ("a", "b")``), and which of a function's names keep one value all through it."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Strings = Callable[[ast.expr, bool], "frozenset[str] | None"]
"""The strings an expression may be (``True``: the elements of the container it is), None:
not all known."""


@dataclass(frozen=True)
class Domain:
    """The strings a name may be on a path: one of ``allowed`` (None: any) and none of
    ``excluded``. Read from ``==``, ``!=``, ``in`` and ``not in`` tests, so it assumes the
    name's ``__eq__`` is a plain one (a str, or a str enum)."""

    allowed: frozenset[str] | None = None
    excluded: frozenset[str] = frozenset()

    def __and__(self, other: Domain) -> Domain:
        """Where both hold."""
        if self.allowed is None or other.allowed is None:
            allowed = self.allowed if other.allowed is None else other.allowed
        else:
            allowed = self.allowed & other.allowed
        return Domain(allowed, self.excluded | other.excluded)

    def __or__(self, other: Domain) -> Domain:
        """Where one or the other holds."""
        if self.allowed is None or other.allowed is None:
            allowed = None
        else:
            allowed = (self.allowed - self.excluded) | (other.allowed - other.excluded)
        excluded = self.excluded & other.excluded if allowed is None else frozenset()
        return Domain(allowed, excluded)

    @property
    def empty(self) -> bool:
        """No value is left: no path has both the tests this was read from true."""
        return self.allowed is not None and not self.allowed - self.excluded


@dataclass(frozen=True)
class Narrowing:
    """What the tests on a path say about names: name -> :class:`Domain` (absent: nothing)."""

    domains: tuple[tuple[str, Domain], ...] = ()

    @classmethod
    def of(cls, domains: Mapping[str, Domain]) -> Narrowing:
        return cls(tuple(sorted(domains.items())))

    def __bool__(self) -> bool:
        return bool(self.domains)

    def __and__(self, other: Narrowing) -> Narrowing:
        """What holds where both hold."""
        if not other.domains:
            return self
        merged = dict(self.domains)
        for name, domain in other.domains:
            merged[name] = merged[name] & domain if name in merged else domain
        return Narrowing.of(merged)

    def disjoint(self, other: Narrowing) -> bool:
        """No path has both: some name is what one says and the other rules out."""
        theirs = dict(other.domains)
        return any(name in theirs and (d & theirs[name]).empty for name, d in self.domains)

    def only(self, names: frozenset[str]) -> Narrowing:
        return Narrowing(tuple(item for item in self.domains if item[0] in names))

    def get(self, name: str) -> Domain | None:
        return dict(self.domains).get(name)


NOTHING_KNOWN = Narrowing()


def narrowing(test: ast.expr, *, positive: bool, strings: Strings) -> Narrowing:
    """What ``test`` being ``positive`` says about the names it compares with strings:
    ``==``, ``!=``, ``in``, ``not in``, and ``not``, ``and`` and ``or`` of those."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return narrowing(test.operand, positive=not positive, strings=strings)
    if isinstance(test, ast.BoolOp):
        parts = [narrowing(value, positive=positive, strings=strings) for value in test.values]
        if isinstance(test.op, ast.And) == positive:  # every part holds
            merged = NOTHING_KNOWN
            for part in parts:
                merged &= part
            return merged
        # one part holds: a name says something only where every part says something
        said = [dict(part.domains) for part in parts]
        either: dict[str, Domain] = {}
        for name in set(said[0]).intersection(*said[1:]):
            domain = said[0][name]
            for other in said[1:]:
                domain = domain | other[name]
            either[name] = domain
        return Narrowing.of(either)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return _compared(test.left, test.ops[0], test.comparators[0], positive, strings)
    return NOTHING_KNOWN


def matched(
    subject: ast.expr, pattern: ast.pattern, earlier: frozenset[str]
) -> tuple[Narrowing, frozenset[str]]:
    """What a ``case`` of ``match subject`` says about it where its body runs, after cases
    that took the strings ``earlier`` (and had no guard), and the strings this one takes:
    ``case "a" | "b":``; a wildcard or a capture takes what is left."""
    if not isinstance(subject, ast.Name):
        return NOTHING_KNOWN, frozenset()
    taken = _pattern_strings(pattern)
    if taken is None and not earlier:
        return NOTHING_KNOWN, frozenset()
    return Narrowing(((subject.id, Domain(taken, earlier)),)), taken or frozenset()


def _pattern_strings(pattern: ast.pattern) -> frozenset[str] | None:
    """The strings a pattern matches, where it matches only literal strings (None: not)."""
    if isinstance(pattern, ast.MatchValue):
        value = pattern.value
        is_string = isinstance(value, ast.Constant) and isinstance(value.value, str)
        return frozenset({value.value}) if is_string else None  # type: ignore[union-attr]
    if isinstance(pattern, ast.MatchOr):
        parts = [_pattern_strings(part) for part in pattern.patterns]
        return None if any(p is None for p in parts) else frozenset().union(*parts)  # type: ignore[arg-type]
    return None


def _compared(
    left: ast.expr, op: ast.cmpop, right: ast.expr, positive: bool, strings: Strings
) -> Narrowing:
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Name):
        left, right = right, left  # "t5" == kind
    if not isinstance(left, ast.Name):
        return NOTHING_KNOWN
    if isinstance(op, (ast.Eq, ast.NotEq)):
        values, holds = strings(right, False), isinstance(op, ast.Eq)
    elif isinstance(op, (ast.In, ast.NotIn)):
        values, holds = strings(right, True), isinstance(op, ast.In)
    else:
        return NOTHING_KNOWN
    if values is None:
        return NOTHING_KNOWN
    if holds == positive:
        return Narrowing(((left.id, Domain(allowed=values)),))
    if isinstance(op, (ast.Eq, ast.NotEq)) and len(values) != 1:
        return NOTHING_KNOWN  # not equal to one of several: which is not known
    return Narrowing(((left.id, Domain(excluded=values)),))


_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.comprehension)


def single_valued(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The names bound once in ``function`` (a parameter, or one binding), outside any
    loop, and nowhere declared ``global`` or ``nonlocal``: a test of one holds wherever
    its value is seen after it. A nested scope's binding of the same name counts too,
    which can only leave a name out."""
    counts: dict[str, int] = {}
    out: set[str] = set()

    def visit(node: ast.AST, looped: bool) -> None:
        name = _bound_name(node)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif name is not None:
            counts[name] = counts.get(name, 0) + 1
            if looped:
                out.add(name)
        for child in ast.iter_child_nodes(node):
            # a loop's iterable is evaluated once; the rest of it may run again
            visit(child, looped or (isinstance(node, _LOOPS) and child is not _once(node)))

    visit(function.args, False)
    for statement in function.body:
        visit(statement, False)
    return frozenset(name for name, count in counts.items() if count == 1 and name not in out)


def _once(loop: ast.AST) -> ast.AST | None:
    return getattr(loop, "iter", None) if isinstance(loop, (ast.For, ast.AsyncFor)) else None


# the attribute holding the name each kind of node binds (None where it binds none)
_BINDING_ATTRIBUTE: dict[type, str] = {
    ast.arg: "arg",
    ast.FunctionDef: "name",
    ast.AsyncFunctionDef: "name",
    ast.ClassDef: "name",
    ast.ExceptHandler: "name",
    ast.MatchAs: "name",
    ast.MatchStar: "name",
    ast.MatchMapping: "rest",
}


def _bound_name(node: ast.AST) -> str | None:
    """The name ``node`` binds in the scope it is in (None: none)."""
    if isinstance(node, ast.Name):
        return None if isinstance(node.ctx, ast.Load) else node.id
    if isinstance(node, ast.alias):
        return (node.asname or node.name).partition(".")[0]
    attribute = _BINDING_ATTRIBUTE.get(type(node))
    return getattr(node, attribute) if attribute is not None else None
