"""The data-flow layer of the code index: where a local value comes from and where it goes,
inside one function.

Built lazily, like :mod:`canary.codeindex.body`, from the function's own text: for every
local name, its :class:`Binding` s (parameters, assignments, in-place changes such as
``kwargs["k"] = v`` or ``inputs.pop("labels")``) in source order, and at every call, use
and ``return`` which of them may reach it. A fix depends on a value *reaching* its use
unchanged, which "the expected line exists" cannot say: a second branch that also divides
the loss, ``num_items_in_batch = None`` before ``super().compute_loss(...)``, keyword
arguments built but never passed on.

Small and exact on purpose: straight-line code, ``if``/``else``, loops (``break``,
``continue``, ``else``), ``try`` (a handler sees every state between the try body's
statements), ``with``, ``match``, early ``return``/``raise``. Loops run twice, which is the
fixpoint for this kind of question on structured code. What cannot be decided is said,
never guessed: a name declared ``global``/``nonlocal`` is :attr:`Flow.undecided`, and so
is every name when the body calls ``locals()``, ``vars()``, ``exec`` or ``eval``.

Conditions: :attr:`Return.conditions` and :meth:`Flow.conditions` are the path to a
point, the ``if`` tests around it *and* the negated tests of earlier branches that always
leave (``if not ready: return None`` puts everything after it under ``ready``). A negation
reads as a person writes it (``not x``, ``not (a and b)``, ``x`` for ``not (not x)``), so
an ``if``/``else`` written either way round has the same conditions; the ``guards`` of a
:class:`Binding` or :class:`Return` stay as :attr:`Call.guards
<canary.codeindex.body.Call>` renders them, the ``if`` tests around it only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from canary.codeindex.equivalence import Scope, holds_under, negations_pushed
from canary.codeindex.expressions import Normaliser, SourceText, Span, bound_names, parse_block

# Binding kinds.
PARAMETER = "parameter"
ASSIGN = "assign"  # ``x = value`` (also an element of an unpacking target)
AUGMENTED = "augmented"  # ``x /= value``
MUTATION = "mutation"  # ``x[k] = v``, ``x.a = v``, ``x.update(...)``: changes x in place
LOOP = "loop"  # ``for x in value``
OTHER = "other"  # ``with ... as x``, ``except E as x``, import, def, class, ``del x``

# Methods that change their object in place: a call to one is a binding of that object.
MUTATING_METHODS = frozenset(
    {
        "update",
        "pop",
        "popitem",
        "setdefault",
        "clear",
        "append",
        "extend",
        "insert",
        "remove",
        "discard",
        "add",
        "__setitem__",
        "__delitem__",
    }
)
# Calls that read or write locals by name: no binding can be trusted after them.
_OPAQUE_CALLS = frozenset({"locals", "vars", "exec", "eval"})


@dataclass(frozen=True, slots=True)
class Binding:
    """One statement that gives a local name its value, or changes that value in place."""

    name: str
    kind: str  # PARAMETER, ASSIGN, AUGMENTED, MUTATION, LOOP or OTHER
    line: int
    target: str  # normalised target text: "loss", "kwargs['num_items_in_batch']"
    value: str | None  # normalised value text; None for a parameter, ``del`` or a definition
    op: str | None  # "/" for ``/=`` and for ``x = x / y``; None otherwise
    guards: tuple[str, ...]  # the enclosing ``if`` tests, as Call.guards has them
    reads: frozenset[str]  # the local and free names its value reads

    @property
    def derives(self) -> bool:
        """Whether the new value is made from the old one (``loss = loss / n``,
        ``loss /= n``, ``kwargs[k] = v``): the old value lives on in it."""
        return self.kind in (AUGMENTED, MUTATION) or self.name in self.reads

    @property
    def expression(self) -> str | None:
        """The new value as one expression: ``loss /= n`` reads ``loss / n``, as ``loss =
        loss / n`` does, so either spelling compares equal."""
        operator = _OPERATOR_NODES.get(self.op or "")
        if self.kind != AUGMENTED or self.value is None or operator is None:
            return self.value
        value = ast.parse(self.value, mode="eval").body
        return ast.unparse(ast.BinOp(left=ast.Name(id=self.target), op=operator(), right=value))

    def describe(self) -> str:
        """How messages show it: ``line 12: loss = loss / n under `not (x)```."""
        if self.kind == PARAMETER:
            text = f"parameter {self.name}"
        elif self.kind == MUTATION and self.value is not None and self.target == self.value:
            text = self.value  # a mutating call: ``inputs.pop('labels')``
        elif self.kind == AUGMENTED:
            text = f"{self.target} {self.op}= {self.value}"
        elif self.value is None:
            text = f"{self.kind} {self.target}"
        else:
            text = f"{self.target} = {self.value}"
        where = f"line {self.line}: {text}"
        if self.guards:
            where += " under " + " and ".join(f"`{g}`" for g in self.guards)
        return where


@dataclass(frozen=True, slots=True)
class Return:
    """One ``return`` and the path to it; a conditional expression returned (``a if t
    else b``) is one Return per branch, its test part of each one's path."""

    value: str | None  # normalised; None for a bare ``return``
    line: int
    guards: tuple[str, ...]  # the enclosing ``if`` tests
    conditions: tuple[str, ...]  # the path's tests, negations simplified, in order

    def requires(self, condition: str, scope: Callable[[], Scope] | None = None) -> bool:
        """Whether every path to this return passes ``condition`` (normalised): one of its
        conditions is it or has it as a part of an ``and`` (``scope``: the function's, for
        comparing modulo its renamed locals and its module's aliases and signatures)."""
        return requires(self.conditions, condition, scope)


@dataclass(frozen=True, slots=True)
class _Site:
    line: int
    conditions: tuple[str, ...]
    state: dict[str, frozenset[int]] = field(repr=False)


Point = tuple[int, int] | Return | Binding  # a call's or use's position, a return, a binding


@dataclass(frozen=True, slots=True)
class Flow:
    """A function's data flow: its bindings and what reaches each call, use and return.

    ``at`` arguments name a point of the function: a call's or use's start position, as
    the body summary's :class:`~canary.codeindex.body.Call` has it (``call.position``), a
    :class:`Return`, or a :class:`Binding` (just before its statement runs).
    """

    bindings: tuple[Binding, ...]  # source order (parameters first)
    returns: tuple[Return, ...]  # source order
    undecided: frozenset[str]  # names whose flow cannot be read from this function alone
    opaque: bool  # the body calls locals()/vars()/exec/eval: nothing is decided
    _sites: dict[tuple[int, int], _Site] = field(repr=False)
    _before: dict[int, dict[str, frozenset[int]]] = field(repr=False)  # binding -> state
    _uses: dict[str, tuple[tuple[int, int], ...]] = field(repr=False)

    def of(self, name: str) -> tuple[Binding, ...]:
        """Every binding of ``name``, in source order."""
        return tuple(b for b in self.bindings if b.name == name)

    def uses(self, name: str) -> tuple[tuple[int, int], ...]:
        """Where the body reads ``name``: (line, column) positions, in source order."""
        return self._uses.get(name, ())

    def decided(self, name: str) -> bool:
        """Whether this function alone says where ``name``'s value comes from."""
        return not self.opaque and name not in self.undecided

    def reaching(self, name: str, at: Point) -> tuple[Binding, ...]:
        """The bindings of ``name`` that may hold when the point ``at`` runs, in source
        order; none for a name the function never binds (a global, a builtin)."""
        return self._bindings(self._site(at).state.get(name, frozenset()))

    def conditions(self, at: Point) -> tuple[str, ...]:
        """The path to ``at``: its ``if`` guards and the negated tests of earlier exits."""
        return self._site(at).conditions

    def history(self, name: str, at: Point) -> tuple[Binding, ...]:
        """The bindings that build the value of ``name`` reaching ``at``: those reaching it
        and, for each one made from the previous value (:attr:`Binding.derives`), those
        reaching that one, and so on; in source order. ``loss`` at ``backward(loss)`` is
        ``loss = compute_loss(...)`` and every ``loss = loss / n`` on a path to it."""
        return self._closure(self._site(at).state, lambda b: (name,) if b.derives else (), name)

    def sources(self, name: str, at: Point) -> tuple[Binding, ...]:
        """Every binding the value of ``name`` at ``at`` is made from, following every
        local it reads (``inputs = {**inputs, **kwargs}`` brings in ``kwargs``' bindings)."""
        return self._closure(self._site(at).state, lambda b: tuple(b.reads), name)

    def _closure(self, state, follows, name: str) -> tuple[Binding, ...]:
        seen: set[int] = set()
        pending = [(state, name)]
        while pending:
            current, wanted = pending.pop()
            for index in current.get(wanted, frozenset()):
                if index in seen:
                    continue
                seen.add(index)
                binding = self.bindings[index]
                before = self._before.get(index, {})
                pending.extend((before, read) for read in follows(binding))
        return self._bindings(seen)

    def _bindings(self, indexes: Iterable[int]) -> tuple[Binding, ...]:
        return tuple(self.bindings[i] for i in sorted(indexes))

    def _site(self, at: tuple[int, int] | Return | Binding) -> _Site:
        if isinstance(at, Binding):  # just before that binding's statement
            for index, binding in enumerate(self.bindings):
                if binding is at:
                    return _Site(at.line, (), self._before[index])
            raise ValueError(f"{at.describe()} is not a binding of this function")
        key = (at.line, -1) if isinstance(at, Return) else at
        try:
            return self._sites[key]
        except KeyError:
            raise ValueError(f"no call, use or return of this function starts at {key}") from None


State = dict[str, frozenset[int]] | None  # None: this path left the block


class _Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self) -> None:
        self.breaks: list[dict[str, frozenset[int]]] = []
        self.continues: list[dict[str, frozenset[int]]] = []


class FlowWalker(Normaliser):
    """Reaching bindings over one function's own body (:meth:`walk`).

    ``guards`` and ``path`` are those of the statement being walked: a block restores the
    path it started with, so an early exit's negated test holds for the rest of its block.
    """

    def __init__(self, text: SourceText, line_offset: int = 0) -> None:
        super().__init__(text, line_offset)
        self.bindings: list[Binding] = []
        self.ids: dict[tuple[int, str], int] = {}  # (node, name) -> binding, stable per pass
        self.before: dict[int, dict[str, frozenset[int]]] = {}
        self.sites: dict[tuple[int, int], _Site] = {}
        self.returns: dict[tuple[int, int, int], Return] = {}
        self.uses: dict[str, set[tuple[int, int]]] = {}
        self.undecided: set[str] = set()
        self.opaque = False
        self.loops: list[_Loop] = []
        self.exits: list[list[dict[str, frozenset[int]]]] = []  # the open try bodies' states
        self.guards: tuple[str, ...] = ()
        self.path: tuple[str, ...] = ()
        self.handlers = {
            ast.If: self.branch,
            ast.For: self.loop,
            ast.AsyncFor: self.loop,
            ast.While: self.loop,
            ast.Try: self.attempt,
            ast.With: self.context,
            ast.AsyncWith: self.context,
            ast.Match: self.match,
            ast.Return: self.leave,
            ast.Raise: self.leave,
            ast.Break: self.jump,
            ast.Continue: self.jump,
            ast.Global: self.declare,
            ast.Nonlocal: self.declare,
            ast.FunctionDef: self.define,
            ast.AsyncFunctionDef: self.define,
            ast.ClassDef: self.define,
            ast.Import: self.imports,
            ast.ImportFrom: self.imports,
            ast.Delete: self.delete,
        }
        if hasattr(ast, "TryStar"):
            self.handlers[ast.TryStar] = self.attempt
        self.texts: dict[int, str] = {}  # node -> normalised text: loops walk twice

    def unparse(self, node: ast.AST) -> str:
        text = self.texts.get(id(node))
        if text is None:
            text = self.texts[id(node)] = super().unparse(node)
        return text

    def walk(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Flow:
        state: dict[str, frozenset[int]] = {}
        arguments = node.args
        for arg in (
            *arguments.posonlyargs,
            *arguments.args,
            *([arguments.vararg] if arguments.vararg else []),
            *arguments.kwonlyargs,
            *([arguments.kwarg] if arguments.kwarg else []),
        ):
            state = self.bind(state, arg, arg.arg, PARAMETER)
        self.block(node.body, state)
        return Flow(
            bindings=tuple(self.bindings),
            returns=tuple(self.returns[key] for key in sorted(self.returns)),
            undecided=frozenset(self.undecided),
            opaque=self.opaque,
            _sites=self.sites,
            _before=self.before,
            _uses={name: tuple(sorted(places)) for name, places in self.uses.items()},
        )

    # -- statements -----------------------------------------------------------------------

    def block(self, body: list[ast.stmt], state: State) -> State:
        """The state after ``body``; None when every path left it."""
        path = self.path
        for stmt in body:
            if state is None:
                break
            handler = self.handlers.get(type(stmt), self.simple)
            state = handler(stmt, state)
            if self.exits and state is not None:
                self.exits[-1].append(state)
        self.path = path
        return state

    def nested(self, body: list[ast.stmt], state: State, test: str | None = None) -> State:
        """A block under ``test`` (one more guard and condition), or under the same ones."""
        if test is None:
            return self.block(body, state)
        guards, path = self.guards, self.path
        self.guards = (*guards, test)
        self.path = (*path, test)
        try:
            return self.block(body, state)
        finally:
            self.guards, self.path = guards, path

    def branch(self, stmt: ast.If, state: dict) -> State:
        self.expression(stmt.test, state)
        body = self.nested(stmt.body, state, self.unparse(stmt.test))
        guards, path = self.guards, self.path
        # The else side: guarded as Call.guards renders it, its condition as people write it.
        self.guards = (*guards, f"not ({self.unparse(stmt.test)})")
        self.path = (*path, _negation(stmt.test))
        try:
            orelse = self.block(stmt.orelse, state)
        finally:
            self.guards, self.path = guards, path
        if body is None and orelse is not None:
            self.path = (*self.path, _negation(stmt.test))
        elif orelse is None and body is not None and stmt.orelse:
            self.path = (*self.path, self.unparse(stmt.test))
        return _merge(body, orelse)

    def loop(self, stmt: ast.For | ast.AsyncFor | ast.While, state: dict) -> State:
        is_for = type(stmt) is not ast.While
        loop = _Loop()
        self.loops.append(loop)
        head = state
        # Twice: the second pass sees what the first one's end and continues bring back to
        # the head, which is every binding that can reach it (bindings are per statement).
        for _ in range(2):
            if is_for:
                self.expression(stmt.iter, state)
                entry = self.targets(head, stmt, [stmt.target], stmt.iter, kind=LOOP)
            else:
                entry = self.expression(stmt.test, head)
            end = self.block(stmt.body, entry)
            head = _merge(state, end, *loop.continues)
        self.loops.pop()
        after = self.block(stmt.orelse, head)
        return _merge(after, *loop.breaks)

    def attempt(self, stmt: ast.Try, state: dict) -> State:
        self.exits.append([state])
        body = self.block(stmt.body, state)
        during = _merge(*self.exits.pop())
        ends = [self.block(stmt.orelse, body) if body is not None else None]
        for handler in stmt.handlers:
            entry = during
            if handler.type is not None:
                self.expression(handler.type, during)
            if handler.name:
                entry = self.bind(entry, handler, handler.name, OTHER)
            ends.append(self.block(handler.body, entry))
        after = _merge(*ends)
        if not stmt.finalbody:
            return after
        # The final block runs on every way out: walked once with every state that can
        # enter it (what its calls and uses see), then with the normal way's alone (what
        # holds after the statement; the other ways leave by re-raising).
        self.block(stmt.finalbody, _merge(after, during))
        return None if after is None else self.block(stmt.finalbody, after)

    def context(self, stmt: ast.With | ast.AsyncWith, state: dict) -> State:
        for item in stmt.items:
            state = self.expression(item.context_expr, state)
            if item.optional_vars is not None:
                state = self.targets(
                    state, stmt, [item.optional_vars], item.context_expr, kind=OTHER
                )
        return self.block(stmt.body, state)

    def match(self, stmt: ast.Match, state: dict) -> State:
        state = self.expression(stmt.subject, state)
        ends: list[State] = [state]  # no case may match
        for case in stmt.cases:
            bound = state
            for name in _pattern_names(case.pattern):
                bound = self.bind(bound, case, name, OTHER)
            ends.append(self.block(case.body, bound))
        return _merge(*ends)

    def leave(self, stmt: ast.Return | ast.Raise, state: dict) -> State:
        for part in (getattr(stmt, "value", None), getattr(stmt, "exc", None)):
            if part is not None:
                self.expression(part, state)
        if isinstance(stmt, ast.Return):
            line = stmt.lineno + self.line_offset
            self.record((line, -1), state)
            # Keyed by statement and branch: a loop's second pass walks the same returns.
            for index, (guards, conditions, value) in enumerate(self.branches(stmt.value)):
                self.returns[(line, stmt.col_offset, index)] = Return(
                    value, line, (*self.guards, *guards), (*self.path, *conditions)
                )
        return None

    def record(self, position: tuple[int, int], state: dict) -> None:
        """What reaches the point at ``position``: everything that does on any walk of it
        (a loop's passes, a final block's)."""
        site = self.sites.get(position)
        if site is not None:
            state = _merge(site.state, state)
        self.sites[position] = _Site(position[0], self.path, state)

    def branches(self, value: ast.expr | None):
        """A returned value per branch: ``a if t else b`` is ``a`` under ``t`` and ``b``
        under its negation (nested ones too), guarded as Call.guards renders it."""
        if not isinstance(value, ast.IfExp):
            yield (), (), (self.unparse(value) if value is not None else None)
            return
        test = self.unparse(value.test)
        for guards, conditions, text in self.branches(value.body):
            yield (test, *guards), (test, *conditions), text
        for guards, conditions, text in self.branches(value.orelse):
            yield (f"not ({test})", *guards), (_negation(value.test), *conditions), text

    def jump(self, stmt: ast.Break | ast.Continue, state: dict) -> State:
        if self.loops:
            loop = self.loops[-1]
            (loop.breaks if isinstance(stmt, ast.Break) else loop.continues).append(state)
        return None

    def declare(self, stmt: ast.Global | ast.Nonlocal, state: dict) -> State:
        self.undecided.update(stmt.names)
        return state

    def define(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, state):
        for part in _evaluated_outside(stmt):
            self.expression(part, state)
        return self.bind(state, stmt, stmt.name, OTHER)

    def imports(self, stmt: ast.Import | ast.ImportFrom, state: dict) -> State:
        for alias in stmt.names:
            state = self.bind(state, stmt, (alias.asname or alias.name).split(".")[0], OTHER)
        return state

    def delete(self, stmt: ast.Delete, state: dict) -> State:
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                state = self.bind(state, target, target.id, OTHER, target=f"del {target.id}")
            else:
                self.expression(target, state)
                state = self.mutate(state, target)
        return state

    def simple(self, stmt: ast.stmt, state: dict) -> State:
        """Assignments and every other simple statement: its expressions, then its
        bindings."""
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                state = self.expression(child, state)  # a target's reads too: x[i] = ...
        if isinstance(stmt, ast.Assign):
            return self.targets(state, stmt, stmt.targets, stmt.value, kind=ASSIGN)
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            return self.targets(state, stmt, [stmt.target], stmt.value, kind=ASSIGN)
        if isinstance(stmt, ast.AugAssign):
            op = _OPERATORS.get(type(stmt.op))
            return self.targets(state, stmt, [stmt.target], stmt.value, kind=AUGMENTED, op=op)
        return state

    # -- expressions ----------------------------------------------------------------------

    def expression(self, node: ast.AST, state: dict) -> dict:
        """Records the calls and uses inside ``node`` (not inside nested scopes) with the
        state they see; returns the state after it (walrus and mutating calls bind)."""
        after = state
        for child in _own_nodes(node):
            kind = type(child)
            if kind is ast.Name and isinstance(child.ctx, ast.Load):
                position = (child.lineno + self.line_offset, child.col_offset)
                self.uses.setdefault(child.id, set()).add(position)
                self.record(position, state)
            elif kind is ast.Call:
                position = (child.lineno + self.line_offset, child.col_offset)
                self.record(position, state)
                func = child.func
                if isinstance(func, ast.Name) and func.id in _OPAQUE_CALLS:
                    self.opaque = True
                elif isinstance(func, ast.Attribute) and func.attr in MUTATING_METHODS:
                    after = self.mutate(after, func.value, call=child)
            elif kind is ast.NamedExpr:
                after = self.targets(after, child, [child.target], child.value, kind=ASSIGN)
        return after

    # -- bindings -------------------------------------------------------------------------

    def targets(self, state, node, targets, value, *, kind: str, op: str | None = None):
        text = self.unparse(value)
        reads = _reads(value)
        for target in targets:
            leaves = bound_names(target) if isinstance(target, (ast.Tuple, ast.List)) else [target]
            for leaf in leaves:
                if not isinstance(leaf, ast.Name):
                    state = self.mutate(state, leaf, value=value, op=op)
                    continue
                binding_op = op
                if kind == ASSIGN and leaf is target and _is_update_of(value, leaf.id):
                    binding_op = _OPERATORS.get(type(value.op))
                state = self.bind(
                    state, node, leaf.id, kind, value=text, op=binding_op, reads=reads
                )
        return state

    def mutate(self, state, target, *, value=None, call=None, op=None):
        """``x[k] = v``, ``x.a = v``, ``x.update(v)`` (``call``): a binding of ``x`` that
        keeps what ``x`` held (gen without kill)."""
        root = target
        while isinstance(root, (ast.Subscript, ast.Attribute, ast.Starred)):
            root = root.value
        if not isinstance(root, ast.Name):
            return state
        if call is not None:  # a mutating call is its own target and value
            node, shown = call, self.unparse(call)
            text, reads = shown, _reads(call)
        else:
            node, shown = target, self.unparse(target)
            text = self.unparse(value) if value is not None else None
            reads = _reads(value) if value is not None else frozenset()
        return self.bind(state, node, root.id, MUTATION, target=shown, value=text, op=op,
                         reads=reads | {root.id}, keep=True)  # fmt: skip

    def bind(self, state, node, name, kind, *, target=None, value=None, op=None,
             reads=frozenset(), keep=False):  # fmt: skip
        key = (id(node), name)
        index = self.ids.get(key)
        if index is None:
            index = len(self.bindings)
            self.ids[key] = index
            line = getattr(node, "lineno", 0) + self.line_offset
            binding = Binding(
                name, kind, line, target or name, value, op, self.guards, frozenset(reads)
            )
            self.bindings.append(binding)
            self.before[index] = state
        else:  # a loop's second pass: more may reach it now
            self.before[index] = _merge(self.before[index], state)
        ids = state.get(name, frozenset()) | {index} if keep else frozenset({index})
        return {**state, name: ids}


_OPERATORS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}

_OPERATOR_NODES = {text: node for node, text in _OPERATORS.items()}


def _merge(*states: State) -> State:
    live = [s for s in states if s is not None]
    if not live:
        return None
    merged = dict(live[0])
    for other in live[1:]:
        for name, ids in other.items():
            merged[name] = merged.get(name, frozenset()) | ids
    return merged


def _negation(test: ast.expr) -> str:
    """``not <test>`` as a person writes it: ``x`` for ``not x``, ``not x.y`` and
    ``not (a and b)``, so an ``if``/``else`` written either way round reads the same."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.unparse(test.operand)
    return ast.unparse(ast.UnaryOp(op=ast.Not(), operand=test))


def conjuncts(condition: str) -> tuple[str, ...]:
    """The parts of a condition that must all hold: ``a and (b and c)`` -> a, b, c
    (normalised, negations pushed inward: ``not (a or b)`` -> not a, not b); anything else
    is its own only part."""
    try:
        node = negations_pushed(ast.parse(condition, mode="eval").body, boolean=True)
    except SyntaxError:
        return (condition,)
    parts: list[str] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.BoolOp) and isinstance(current.op, ast.And):
            pending.extend(reversed(current.values))
        else:
            parts.append(ast.unparse(current))
    return tuple(parts)


def requires(
    conditions: Iterable[str], condition: str, scope: Callable[[], Scope] | None = None
) -> bool:
    """Whether ``conditions`` (all of which hold) include ``condition``: each part of its
    top-level ``and`` holds under them (:func:`~canary.codeindex.equivalence.holds_under`:
    one of them, or an operand of one's ``and``, modulo equivalence). A negated or
    ``or``-ed condition does not count."""
    held = tuple(conditions)
    return all(holds_under(part, held, scope) for part in conjuncts(condition))


def _is_store(node: ast.AST) -> bool:
    return isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del))


def _is_update_of(value: ast.AST, name: str) -> bool:
    """``x = x / y``: a binary operation whose left operand is the name itself."""
    return (
        isinstance(value, ast.BinOp) and isinstance(value.left, ast.Name) and value.left.id == name
    )


def _callee_object(call: ast.Call) -> ast.AST | None:
    return call.func.value if isinstance(call.func, ast.Attribute) else None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what it evaluates in this scope, parents first: a lambda's body is left
    out, and so is every name a comprehension binds for itself (``batch`` in ``[b.x for b
    in batch]`` reads the outer ``batch``; ``b`` is not a local of the function)."""
    stack: list[tuple[ast.AST, frozenset[str]]] = [(node, frozenset())]
    while stack:
        current, local = stack.pop()
        kind = type(current)
        if kind is ast.Name:
            if current.id not in local:
                yield current
            continue
        if kind is ast.Lambda:
            stack.extend((n, local) for n in reversed(_evaluated_outside(current)))
            continue
        yield current
        if kind in _COMPREHENSIONS:
            local = local | {
                leaf.id
                for generator in current.generators
                for leaf in bound_names(generator.target)
                if type(leaf) is ast.Name
            }
        children = []
        for name in current._fields:
            value = getattr(current, name, None)
            if type(value) is list:
                children.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
                children.append(value)
        stack.extend((child, local) for child in reversed(children))


def reads_of(expression: str) -> frozenset[str]:
    """The names a normalised expression reads (``{**inputs, **kwargs}`` -> inputs,
    kwargs), its comprehensions' own variables left out."""
    try:
        return _reads(ast.parse(expression, mode="eval").body)
    except SyntaxError:
        return frozenset()


def mentions_of(expression: str) -> frozenset[str]:
    """Every name and attribute a normalised expression mentions (``loss / self.args.n``
    -> loss, self, args, n)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return frozenset(found)


def _reads(node: ast.AST) -> frozenset[str]:
    return frozenset(
        child.id
        for child in _own_nodes(node)
        if type(child) is ast.Name and type(child.ctx) is ast.Load
    )


def _evaluated_outside(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, ast.Lambda):
        return defaults
    return [*node.decorator_list, *defaults]


def _pattern_names(pattern: ast.AST) -> Iterator[str]:
    for child in ast.walk(pattern):
        name = getattr(child, "name", None) or getattr(child, "rest", None)
        if isinstance(name, str):
            yield name


def flow_of_function(text: SourceText, span: Span) -> Flow:
    """A function's data flow, from its own text (re-parsed like its body summary)."""
    node, line_offset = parse_block(text, span)
    return FlowWalker(text, line_offset=line_offset).walk(node)
