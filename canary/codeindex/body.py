"""The body layer of the code index: what a function's own body does.

A function's calls, assignments (with the ``if`` guards around them), returns and the
names it mentions, as normalised text. Built lazily, on a check's first question, from
the function's own text: a parse indexes only definitions, signatures and bindings.

Scope rules: a body is the function's *own* body: calls, assignments and names inside
nested ``def``/``class``/``lambda`` bodies are left out, but their decorators, default
values and bases are kept, because those run in the enclosing body. Comprehensions are
part of the enclosing body. A guard is the test of an enclosing ``if`` statement or
conditional expression (``a if test else b``), outermost first; the ``else`` side is
rendered ``not (<test>)``, so ``elif b:`` under ``if a:`` is guarded by ``("not (a)", "b")``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from canary.codeindex.expressions import (
    AUG_OPS,
    Normaliser,
    SourceText,
    Span,
    bound_names,
    literal_of_text,
    literal_value,
    parse_block,
)
from canary.codeindex.pickling import by_fields


@by_fields
@dataclass(frozen=True, slots=True)
class Call:
    """One call expression inside a function body."""

    func: str  # normalised callee: "hasattr", "self.accelerator.backward", "super().__init__"
    args: tuple[str, ...]  # normalised positional args; a starred one reads "*args"
    keywords: tuple[tuple[str | None, str], ...]  # (name, value); name None for ``**value``
    line: int
    guards: tuple[str, ...]
    _text: SourceText = field(repr=False)
    _span: Span = field(repr=False)
    name: str | None = None  # last component of the callee (Name id / Attribute attr)

    @property
    def source(self) -> str:
        """The exact text of the whole call."""
        return self._text.segment(self._span)

    @property
    def position(self) -> tuple[int, int]:
        """(line, column) where the call starts: how :class:`~canary.codeindex.flow.Flow`
        names the point of the function it asks about."""
        return (self.line, self._span[1])

    def arg(self, index: int) -> str | None:
        return self.args[index] if -len(self.args) <= index < len(self.args) else None

    def keyword(self, name: str) -> str | None:
        for key, value in self.keywords:
            if key == name:
                return value
        return None

    @property
    def literal_args(self) -> tuple[object, ...]:
        """``ast.literal_eval`` of each positional arg, ``None`` where it is not a literal."""
        # Evaluated on demand from the normalised text rather than stored: almost no check
        # asks, and storing a value per argument would bloat every cached summary.
        return tuple(literal_of_text(a) for a in self.args)


@by_fields
@dataclass(frozen=True, slots=True)
class Assignment:
    """``=``, augmented (``op`` "/" for "/=") or annotated assignment with a value; ``:=`` too."""

    targets: tuple[str, ...]  # normalised, one per ``=``: ``a = b = 0`` -> ("a", "b")
    # None for "=", ":=" for a walrus, "/" for "/=", ...; at module level also "type" for
    # ``type X = v``, "for" for a loop's target and "with" for ``with v as X`` (no literal).
    op: str | None
    value: str
    literal: object  # ast.literal_eval(value), else NOT_LITERAL
    line: int
    guards: tuple[str, ...]
    unpacked: tuple[str, ...] = ()  # elements of tuple/list targets: ``a, (b, *c) = x`` -> a, b, c

    def assigns(self, target: str) -> bool:
        return target in self.targets or target in self.unpacked


@dataclass(frozen=True, slots=True)
class Body:
    """A function body's summary, in source order (by start position; an outer call before
    the calls inside it)."""

    calls: tuple[Call, ...]
    assignments: tuple[Assignment, ...]
    returns: tuple[str, ...]  # normalised value of each ``return <expr>``; bare returns skipped
    names: frozenset[str]  # every Name id and Attribute attr
    # The function's data flow (canary.codeindex.flow.Flow), built on first use only: few
    # checks ask. Typed loosely because the flow layer builds on this one.
    _flow: object = field(default=None, repr=False, compare=False)


class BodyWalker(Normaliser):
    """Summarises one function's own body (:meth:`walk`). The parser builds module-level
    assignments with the same :meth:`assignment`, so both kinds read alike."""

    def assignment(
        self,
        stmt: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.NamedExpr,
        guards: tuple[str, ...],
    ) -> Assignment | None:
        if isinstance(stmt, ast.Assign):
            targets, op = stmt.targets, None
        elif isinstance(stmt, ast.AugAssign):
            targets, op = [stmt.target], AUG_OPS[type(stmt.op)]
        elif isinstance(stmt, ast.NamedExpr):
            targets, op = [stmt.target], ":="
        elif stmt.value is None:
            return None  # a bare annotation assigns nothing
        else:
            targets, op = [stmt.target], None
        unpacked = tuple(
            self.unparse(leaf)
            for t in targets
            if isinstance(t, (ast.Tuple, ast.List))
            for leaf in bound_names(t)
        )
        return Assignment(
            targets=tuple(self.unparse(t) for t in targets),
            op=op,
            value=self.unparse(stmt.value),
            literal=literal_value(stmt.value),
            line=stmt.lineno + self.line_offset,
            guards=guards,
            unpacked=unpacked,
        )

    def walk(self, body: list[ast.stmt]) -> Body:
        """One iterative pass over a function's own body.

        Iterative rather than a recursive NodeVisitor: no recursion-limit trouble on deeply
        nested expressions, and no per-node method dispatch. Parents are visited before
        their children, so the sequence number breaks ties between calls that start at the
        same position (``a.b().c()``) outer-first.
        """
        calls: list[tuple[int, int, int, Call]] = []
        assignments: list[tuple[int, int, int, Assignment]] = []
        returns: list[tuple[int, int, int, str]] = []
        names: set[str] = set()
        stack: list[tuple[ast.AST, tuple[str, ...]]] = [(s, ()) for s in reversed(body)]
        seq = 0
        while stack:
            node, guards = stack.pop()
            seq += 1
            kind = type(node)
            if kind is ast.Name:
                names.add(node.id)
                continue
            if kind is ast.Attribute:
                names.add(node.attr)
                stack.append((node.value, guards))
                continue
            if kind is ast.Call:
                calls.append((node.lineno, node.col_offset, seq, self.call(node, guards)))
            elif kind is ast.If or kind is ast.IfExp:
                test = self.unparse(node.test)
                negated = (*guards, f"not ({test})")
                orelse = node.orelse if kind is ast.If else [node.orelse]
                stack.extend((child, negated) for child in reversed(orelse))
                guarded = (*guards, test)
                body_nodes = node.body if kind is ast.If else [node.body]
                stack.extend((child, guarded) for child in reversed(body_nodes))
                stack.append((node.test, guards))
                continue
            elif kind in _NESTED_SCOPES:
                # Only what the enclosing body evaluates: decorators, defaults, bases.
                stack.extend((child, guards) for child in _evaluated_outside(node))
                continue
            elif kind in _ASSIGNMENTS:
                assignment = self.assignment(node, guards)
                if assignment is not None:
                    assignments.append((node.lineno, node.col_offset, seq, assignment))
            elif kind is ast.Return and node.value is not None:
                returns.append((node.lineno, node.col_offset, seq, self.unparse(node.value)))
            for name in node._fields:
                value = getattr(node, name, None)
                if type(value) is list:
                    stack.extend((item, guards) for item in reversed(value) if _is_node(item))
                elif value is not None and _is_node(value):
                    stack.append((value, guards))
        calls.sort(key=_position)
        assignments.sort(key=_position)
        returns.sort(key=_position)
        return Body(
            calls=tuple(c[3] for c in calls),
            assignments=tuple(a[3] for a in assignments),
            returns=tuple(r[3] for r in returns),
            names=frozenset(names),
        )

    def call(self, node: ast.Call, guards: tuple[str, ...]) -> Call:
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute):
            name = func.attr
        else:
            name = None
        return Call(
            func=self.unparse(func),
            args=tuple(self.unparse(a) for a in node.args),
            keywords=tuple((k.arg, self.unparse(k.value)) for k in node.keywords),
            line=node.lineno + self.line_offset,
            guards=guards,
            _text=self.text,
            _span=self.span(node),
            name=name,
        )


_NESTED_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})
_ASSIGNMENTS = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr})


def _is_node(value: object) -> bool:
    # Expression contexts (Load/Store/Del) are shared singletons with nothing inside.
    return isinstance(value, ast.AST) and not isinstance(value, ast.expr_context)


def _position(entry: tuple) -> tuple:
    return entry[:3]


def _evaluated_outside(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, ast.Lambda):
        return defaults
    return [*node.decorator_list, *defaults]


def walk_function(text: SourceText, span: Span) -> Body:
    """A function's body summary, from its own text (see :func:`parse_block`)."""
    node, line_offset = parse_block(text, span)
    return BodyWalker(text, line_offset=line_offset).walk(node.body)
