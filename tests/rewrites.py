"""Behaviour-preserving rewrites of upstream Python source, for the metamorphic test of the
catalog: a rewrite the fixes cannot tell from the original must never change a check's outcome.

Each :class:`Rewrite` kind takes a package's files (path -> source text) and returns them
rewritten, new modules included; :func:`rewrite_tree` applies kinds in order. Every kind
is applied everywhere it applies and is conservative: where it cannot show that a site's
behaviour is kept (an operand guarding another, a decorated callee, a closure over a local)
it leaves the site alone. Why each kind preserves what the fixes rely on: docs/metamorphic.md.
"""

from __future__ import annotations

import ast
import copy
import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from canary.checks.contracts import TRAINER_COMPUTE_LOSS

Files = dict[str, str]

# A name for whatever the rewrites introduce: never an upstream name.
MARK = "mm"


class Rewrite(enum.Enum):
    """One kind of rewrite; ``ALL`` (in :data:`KINDS` order) is :func:`rewrite_tree` of all."""

    REFORMAT = "reformat"  # ast.unparse, comments and docstrings gone
    RENAME_LOCALS = "rename-locals"
    SWAP_OPERANDS = "swap-operands"
    SWAP_BRANCHES = "swap-branches"
    ARGUMENTS = "arguments"  # keyword <-> positional where the callee binds the same
    ANNOTATIONS = "annotations"
    IMPORTS = "imports"  # reorder independent imports, a module under an alias
    EXTRACT_HELPER = "extract-helper"
    MIXIN = "mixin"


def rewrite_tree(
    files: Mapping[str, str], kinds: tuple[Rewrite, ...], *, followed: frozenset[str] = frozenset()
) -> Files:
    """``files`` (package-relative paths, e.g. ``trl/trainer/sft_trainer.py``) after each of
    ``kinds`` in turn; the new modules a kind writes are added. ``followed``: the attributes
    (``model_accepts_loss_kwargs``) whose assignments the catalog follows into module-level
    helpers (its ``helpers=`` reach): the only statements ``EXTRACT_HELPER`` moves."""
    out = dict(files)
    for kind in kinds:
        if kind is Rewrite.EXTRACT_HELPER:
            out = _each_module(out, lambda tree, _path: _extract_in(tree, followed))
        else:
            out = _APPLY[kind](out)
    return out


def _each_module(files: Files, transform: Callable[[ast.Module, str], ast.Module | None]) -> Files:
    out = dict(files)
    for path, text in files.items():
        tree = ast.parse(text)
        changed = transform(tree, path)
        out[path] = ast.unparse(ast.fix_missing_locations(changed or tree))
    return out


# -- reformat -------------------------------------------------------------------------------


def _reformat(files: Files) -> Files:
    return _each_module(files, _strip_docstrings)


def _strip_docstrings(tree: ast.Module, _path: str) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and _is_docstring(body[0]):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


# -- scopes ---------------------------------------------------------------------------------

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``scope``'s own body: not inside a nested function, lambda, class or
    comprehension (their decorators, defaults and first iterables are the scope's own)."""
    stack = list(_children(scope))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(node.decorator_list)
            stack.extend(d for d in (*node.args.defaults, *node.args.kw_defaults) if d)
        elif isinstance(node, ast.ClassDef):
            stack.extend((*node.decorator_list, *node.bases, *node.keywords))
        elif isinstance(node, ast.Lambda):
            stack.extend(d for d in (*node.args.defaults, *node.args.kw_defaults) if d)
        elif isinstance(node, _COMPREHENSIONS):
            stack.append(node.generators[0].iter)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _children(scope: ast.AST) -> list[ast.AST]:
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return list(scope.body)
    return list(ast.iter_child_nodes(scope))


def _nested_scopes(scope: ast.AST) -> Iterator[ast.AST]:
    for node in _own_nodes(scope):
        if isinstance(node, (*_SCOPES, *_COMPREHENSIONS)):
            yield node


def _params(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in every if a is not None}


def _all_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


# -- rename locals --------------------------------------------------------------------------


def _rename_locals(files: Files) -> Files:
    return _each_module(files, _rename_locals_in)


def _rename_locals_in(tree: ast.Module, _path: str) -> ast.Module:
    taken = _all_names(tree)
    for function in list(_functions(tree)):
        _rename_function_locals(function, taken)
    return tree


def _locals_of(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str] | None:
    """The names ``function`` binds in its own scope (parameters excluded), or None when
    renaming them is not safe (``locals()``, ``vars()``, ``exec``, ``eval``)."""
    bound: set[str] = set()
    declared: set[str] = set()
    for node in _own_nodes(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname or "." not in alias.name:
                    bound.add(alias.asname or alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("locals", "vars", "exec", "eval")
        ):
            return None
    # a dotted ``import a.b`` binds ``a`` and cannot be aliased to a new name as itself
    for node in _own_nodes(function):
        if isinstance(node, ast.Import):
            bound.difference_update(a.name.split(".")[0] for a in node.names if "." in a.name)
    return bound - declared - _params(function.args) - {"__class__"}


def _rename_function_locals(function: ast.FunctionDef | ast.AsyncFunctionDef, taken: set[str]):
    names = _locals_of(function)
    if not names:
        return
    # A nested scope that binds the name again (or declares it nonlocal) keeps it as is.
    for nested in _nested_scopes(function):
        if isinstance(nested, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = _params(nested.args)
            if not isinstance(nested, ast.Lambda):
                inner |= _locals_of(nested) or _all_names(nested)
                inner |= {
                    n for s in ast.walk(nested) if isinstance(s, ast.Nonlocal) for n in s.names
                }
            names -= inner
        elif isinstance(nested, ast.ClassDef):
            names -= _all_names(nested)
        else:  # a comprehension's targets
            names -= {
                n.id
                for g in nested.generators
                for n in ast.walk(g.target)
                if isinstance(n, ast.Name)
            }
    mapping = {}
    for name in sorted(names):
        new = f"{name}_{MARK}"
        while new in taken:
            new += "_"
        taken.add(new)
        mapping[name] = new
    _Renamer(mapping).visit_body(function)


class _Renamer(ast.NodeTransformer):
    """Renames every occurrence of the mapped names (they are locals of one function and
    not rebound by any scope nested in it)."""

    def __init__(self, mapping: Mapping[str, str]) -> None:
        self.mapping = mapping

    def visit_body(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        function.body = [self.visit(s) for s in function.body]

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.ExceptHandler:
        if node.name:
            node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_MatchAs(self, node: ast.MatchAs) -> ast.MatchAs:
        if node.name:
            node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node

    visit_MatchStar = visit_MatchAs  # noqa: N815  (ast.NodeTransformer's naming)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> ast.MatchMapping:
        if node.rest:
            node.rest = self.mapping.get(node.rest, node.rest)
        self.generic_visit(node)
        return node

    def visit_alias(self, node: ast.alias) -> ast.alias:
        bound = node.asname or node.name
        if bound in self.mapping:
            node.asname = self.mapping[bound]
        return node

    def _def(self, node):
        node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _def  # noqa: N815


# -- swap operands of pure and/or -----------------------------------------------------------

_PURE_CALLS = {"isinstance", "hasattr", "callable", "len", "issubclass"}


def _swap_operands(files: Files) -> Files:
    return _each_module(files, _swap_in)


def _swap_in(tree: ast.Module, _path: str) -> ast.Module:
    for node in ast.walk(tree):
        for test in _boolean_contexts(node):
            _swap_boolop(test)
    return tree


def _boolean_contexts(node: ast.AST) -> list[ast.expr]:
    """Expressions whose value only matters as a truth value."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return [node.test]
    if isinstance(node, ast.comprehension):
        return list(node.ifs)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [node.operand]
    return []


def _swap_boolop(node: ast.expr) -> None:
    if not isinstance(node, ast.BoolOp):
        return
    for value in node.values:  # operands are in a boolean context too
        _swap_boolop(value)
    if all(_pure(v) for v in node.values) and _independent(node.values):
        node.values.reverse()


def _pure(node: ast.expr) -> bool:
    """Evaluating ``node`` has no effect and cannot raise where its operands stand: names,
    constants, attribute reads, identity and equality tests, ``not``, ``and``/``or`` and
    the builtins that only inspect (``isinstance``, ``hasattr``...)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Compare) and not all(
        isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops
    ):
        return False
    if isinstance(node, ast.Call) and not (
        isinstance(node.func, ast.Name) and node.func.id in _PURE_CALLS and not node.keywords
    ):
        return False
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        return False
    if isinstance(node, (ast.Attribute, ast.Compare, ast.UnaryOp, ast.BoolOp, ast.Call)):
        operands = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        if isinstance(node, ast.Call):
            operands = node.args
        return all(_pure(c) for c in operands)
    return False


def _chains(node: ast.expr) -> set[tuple[str, ...]]:
    """The attribute chains ``node`` reads (``hasattr(a, "b")`` reads ``a.b``)."""
    found: set[tuple[str, ...]] = set()
    for sub in ast.walk(node):
        chain = _chain(sub)
        if chain:
            found.add(chain)
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id == "hasattr"
            and len(sub.args) == 2
            and (head := _chain(sub.args[0]))
            and isinstance(sub.args[1], ast.Constant)
        ):
            found.add((*head, str(sub.args[1].value)))
    return found


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute) and (head := _chain(node.value)):
        return (*head, node.attr)
    return None


def _independent(operands: list[ast.expr]) -> bool:
    """No operand reads what another tests (``x is not None and x.y``: ``x`` guards ``x.y``;
    ``hasattr(m, "f") and m.f``): swapping those could raise where the original did not."""
    chains = [_chains(v) for v in operands]
    for i, mine in enumerate(chains):
        for j, theirs in enumerate(chains):
            if i == j:
                continue
            for a in mine:
                if len(a) == 1 and a[0] in ("self", "cls"):
                    continue
                if any(b[: len(a)] == a for b in theirs):
                    return False
    return True


# -- swap if/else with the condition negated ------------------------------------------------

_INVERSE = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


def _swap_branches(files: Files) -> Files:
    return _each_module(files, _swap_branches_in)


def _swap_branches_in(tree: ast.Module, _path: str) -> ast.Module:
    for node in ast.walk(tree):
        if (isinstance(node, ast.If) and node.orelse) or isinstance(node, ast.IfExp):
            node.test = negation(node.test)
            node.body, node.orelse = node.orelse, node.body
    return tree


def negation(test: ast.expr) -> ast.expr:
    """``not test``, written the ways a person would: a comparison inverted (``is`` ->
    ``is not``), De Morgan over ``and``/``or``, and ``not (not x)`` where ``test`` was
    negated already."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _INVERSE:
        return ast.Compare(test.left, [_INVERSE[type(test.ops[0])]()], test.comparators)
    if isinstance(test, ast.BoolOp):
        other = ast.Or() if isinstance(test.op, ast.And) else ast.And()
        return ast.BoolOp(other, [_not(v) for v in test.values])
    return ast.UnaryOp(ast.Not(), test)


def _not(value: ast.expr) -> ast.expr:
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return value.operand
    return ast.UnaryOp(ast.Not(), value)


# -- keyword <-> positional -----------------------------------------------------------------


@dataclass(frozen=True)
class _Callee:
    positional: tuple[str, ...]  # positional-or-keyword names, after self/cls
    positional_only: int  # how many of those are positional-only


def _arguments(files: Files) -> Files:
    outside = _outside_supers(files)
    return _each_module(files, lambda tree, path: _arguments_in(tree, path, outside))


#: Callees in another package whose order a check declares (canary/checks/contracts.py):
#: (the outside base, its method) -> what it binds.
OUTSIDE_CALLEES = {("transformers", "Trainer", "compute_loss"): _Callee(TRAINER_COMPUTE_LOSS, 0)}


def _outside_supers(files: Files) -> dict[tuple[str, str], _Callee]:
    """(class, method) -> the outside callee ``super().method`` of that class reaches: when
    no class of the package among its ancestors (every base, not only the first: the MRO
    may visit any) defines the method, and every base outside the package is one class of
    :data:`OUTSIDE_CALLEES`. A class name defined twice in the package is left alone."""
    classes: dict[str, list[tuple[ast.ClassDef, dict[str, str]]]] = {}
    for text in files.values():
        tree = ast.parse(text)
        imported = {
            alias.asname or alias.name: node.module.split(".")[0]
            for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            for alias in node.names
        }
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append((node, imported))

    def outside_of(name: str, method: str, seen: frozenset[str]) -> set[tuple[str, str]] | None:
        """The outside bases ``name``'s ancestors end in, None when one defines ``method``
        in the package or cannot be told."""
        found: set[tuple[str, str]] = set()
        node, imported = classes[name][0]
        for base in node.bases:
            chain = _chain(base)
            if chain is None or len(chain) != 1:
                return None
            (base_name,) = chain
            if base_name in imported and base_name not in classes:
                found.add((imported[base_name], base_name))
            elif len(classes.get(base_name, ())) == 1 and base_name not in seen:
                defines = {
                    f.name for f in classes[base_name][0][0].body if isinstance(f, ast.FunctionDef)
                }
                further = (
                    None if method in defines else outside_of(base_name, method, seen | {name})
                )
                if further is None:
                    return None
                found |= further
            else:
                return None
        return found

    supers: dict[tuple[str, str], _Callee] = {}
    for name, defined in classes.items():
        if len(defined) != 1:
            continue
        for (package, base, method), callee in OUTSIDE_CALLEES.items():
            if outside_of(name, method, frozenset()) == {(package, base)}:
                supers[name, method] = callee
    return supers


def _callee(function: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> _Callee | None:
    """What a call can bind by position: None for a decorated function (a decorator may
    change the signature), or a method that is static or a class method."""
    if function.decorator_list:
        return None
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    drop = 1 if method else 0
    if len(names) < drop:
        return None
    return _Callee(tuple(names[drop:]), max(len(args.posonlyargs) - drop, 0))


def _arguments_in(
    tree: ast.Module, _path: str, outside: Mapping[tuple[str, str], _Callee]
) -> ast.Module:
    functions = {
        f.name: c
        for f in tree.body
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and (c := _callee(f, False))
    }
    # Methods: one signature per name across the module's classes, or the name is left
    # alone (``self.m`` may dispatch to another class's override).
    methods: dict[str, _Callee | None] = {}
    own: dict[tuple[str, str], _Callee | None] = {}  # (class, method): for super().method
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for cls in classes:
        for f in cls.body:
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                callee = _callee(f, True)
                methods[f.name] = callee if methods.get(f.name, callee) == callee else None
                own[cls.name, f.name] = callee
    rebound = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            callee = functions.get(node.func.id) if node.func.id not in rebound else None
        elif isinstance(node, ast.Call) and _is_self(node.func):
            callee = methods.get(node.func.attr)
        else:
            continue
        if callee is not None:
            _rebind(node, callee)
    _rebind_supers(classes, own, outside)
    return tree


def _rebind_supers(
    classes: list[ast.ClassDef],
    own: Mapping[tuple[str, str], _Callee | None],
    outside: Mapping[tuple[str, str], _Callee],
) -> None:
    """``super().m(...)`` binds to ``m`` of the class's first base when this module defines
    it, else to the outside callee the class's ancestors reach (:func:`_outside_supers`)."""
    for cls in classes:
        first = _chain(cls.bases[0]) if cls.bases else None
        for node in ast.walk(cls):
            if not (isinstance(node, ast.Call) and _is_super(node.func) and first):
                continue
            callee = own.get((first[-1], node.func.attr)) or outside.get((cls.name, node.func.attr))
            if callee is not None:
                _rebind(node, callee)


def _is_self(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    )


def _is_super(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
        and not func.value.args
    )


def _rebind(call: ast.Call, callee: _Callee) -> None:
    """Leading keywords that name the next positional parameters become positional; else the
    trailing positional arguments become keywords. Source order (evaluation order) is kept."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return
    moved = False
    while call.keywords:
        index = len(call.args)
        first = call.keywords[0]
        if (
            first.arg is None
            or index >= len(callee.positional)
            or callee.positional[index] != first.arg
        ):
            break
        call.args.append(call.keywords.pop(0).value)
        moved = True
    if moved:
        return
    given = {k.arg for k in call.keywords}
    while call.args:
        index = len(call.args) - 1
        if index < callee.positional_only or index >= len(callee.positional):
            break
        name = callee.positional[index]
        if name in given:
            break
        call.keywords.insert(0, ast.keyword(arg=name, value=call.args.pop()))


# -- annotations ----------------------------------------------------------------------------


def _annotations(files: Files) -> Files:
    return _each_module(files, _annotations_in)


def _annotations_in(tree: ast.Module, _path: str) -> ast.Module:
    """Annotated parameters and returns lose their annotation, unannotated ones (but
    ``self``/``cls``) get ``"object"`` (a string, never evaluated); a function's own
    ``x: T = v`` becomes ``x = v`` (class- and module-level ones are fields: kept)."""
    for function in list(_functions(tree)):
        args = function.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        for i, arg in enumerate(a for a in every if a is not None):
            if arg.annotation is not None:
                arg.annotation = None
            elif not (i == 0 and arg.arg in ("self", "cls")):
                arg.annotation = ast.Constant("object")
        function.returns = None if function.returns is not None else ast.Constant("object")
        for node in _own_nodes(function):
            _drop_local_annotations(node)
    return tree


def _drop_local_annotations(node: ast.AST) -> None:
    for field in ("body", "orelse", "finalbody", "handlers"):
        body = getattr(node, field, None)
        if not isinstance(body, list):
            continue
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and stmt.simple:
                body[i] = ast.Assign([stmt.target], stmt.value, lineno=stmt.lineno)


# -- imports --------------------------------------------------------------------------------


def _imports(files: Files) -> Files:
    return _each_module(files, _imports_in)


def _imports_in(tree: ast.Module, _path: str) -> ast.Module:
    """Each run of consecutive module-level imports reversed (``__future__`` stays first);
    each ``import x`` (one plain name, bound nowhere else) becomes ``import x as x_mm``."""
    body = tree.body
    i = 0
    while i < len(body):
        j = i
        while j < len(body) and _plain_import(body[j]):
            j += 1
        if j - i > 1:
            body[i:j] = reversed(body[i:j])
        i = max(j, i + 1)
    binders: dict[str, int] = {}
    for node in ast.walk(tree):
        for name in _binds(node):
            binders[name] = binders.get(name, 0) + 1
    aliases = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import) and len(stmt.names) == 1:
            alias = stmt.names[0]
            if alias.asname is None and "." not in alias.name and binders[alias.name] == 1:
                alias.asname = aliases[alias.name] = f"{alias.name}_{MARK}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in aliases:
            node.id = aliases[node.id]
    return tree


def _plain_import(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.ImportFrom):
        return stmt.module != "__future__"
    return isinstance(stmt, ast.Import)


def _binds(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        yield node.id
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, ast.alias):
        yield (node.asname or node.name).split(".")[0]
    elif isinstance(node, (*_DEFINITIONS, ast.ExceptHandler)) and node.name:
        yield node.name
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from node.names


# -- extract a statement into a module-level helper -----------------------------------------


def _extract_in(tree: ast.Module, followed: frozenset[str]) -> ast.Module:
    """In each method, the statements that set a followed attribute of ``self``
    (``self.x = v``, no other binding, no ``super()``, no ``await``/``yield``) move, one
    each, into a module-level function the method calls with the names the statement reads."""
    module_names = _all_names(tree)
    helpers: list[ast.FunctionDef] = []
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        for method in cls.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                helpers.extend(_extract_from(method, module_names, followed))
    tree.body.extend(helpers)
    return tree


def _extract_from(
    method: ast.FunctionDef | ast.AsyncFunctionDef, taken: set[str], followed: frozenset[str]
) -> list:
    if not method.args.args or method.args.args[0].arg != "self":
        return []
    local = (_locals_of(method) or set()) | _params(method.args)
    helpers = []
    for block in _blocks(method):
        for i, stmt in enumerate(block):
            if not _extractable(stmt, followed):
                continue
            reads = sorted(
                {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id in local}
                | {"self"}
            )
            reads.remove("self")
            name = f"_{MARK}_{method.name.strip('_')}_{len(helpers)}"
            while name in taken:
                name += "_"
            taken.add(name)
            params = [ast.arg("self"), *(ast.arg(r) for r in reads)]
            helpers.append(
                ast.FunctionDef(
                    name=name,
                    args=ast.arguments([], params, None, [], [], None, []),
                    body=[stmt],
                    decorator_list=[],
                    returns=None,
                    type_params=[],
                    lineno=stmt.lineno,
                )
            )
            call = ast.Call(
                ast.Name(name, ast.Load()),
                [ast.Name(a, ast.Load()) for a in ("self", *reads)],
                [],
            )
            block[i] = ast.Expr(call, lineno=stmt.lineno)
    return helpers


def _blocks(function: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in _own_nodes(function):
        if isinstance(node, _SCOPES):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block
    yield function.body


def _extractable(stmt: ast.stmt, followed: frozenset[str]) -> bool:
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return False
    target = stmt.targets[0]
    if _chain(target) not in {("self", name) for name in followed}:
        return False
    unmovable = (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, *_SCOPES, *_COMPREHENSIONS)
    for node in ast.walk(stmt.value):
        if isinstance(node, unmovable):
            return False
        if isinstance(node, ast.Name) and node.id in ("super", "__class__"):
            return False
    # a name-mangled attribute mangles differently outside the class
    return not _mangles(stmt)


# -- methods into a mixin in a new module ---------------------------------------------------


def _mixin(files: Files) -> Files:
    out = dict(files)
    for path, text in files.items():
        tree = ast.parse(text)
        new_modules = _mixin_in(tree, path)
        out[path] = ast.unparse(ast.fix_missing_locations(tree))
        out.update(new_modules)
    return out


_SPECIAL_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "NamedTuple", "TypedDict", "Protocol"}


def _mixin_in(tree: ast.Module, path: str) -> Files:
    """Each top-level class (not decorated, no metaclass keyword, not an enum or a typed
    record) has its methods moved into ``_<Name>Mixin`` in a new module beside it, first
    among its bases. The new module imports what the methods read: the original module's
    imports and, from the original module, the names defined before the class (a class
    whose methods read a name defined after it is left alone)."""
    folder, _, filename = path.rpartition("/")
    stem = filename.removesuffix(".py")
    module_level = {n: i for i, s in enumerate(tree.body) for n in _defined_by(s)}
    imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    future = [s for s in imports if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    new: Files = {}
    position = 0
    while position < len(tree.body):
        cls = tree.body[position]
        position += 1
        if not isinstance(cls, ast.ClassDef) or not _movable(cls):
            continue
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not methods or any(_mangles(m) for m in methods):
            continue
        reads = {n.id for m in methods for n in ast.walk(m) if isinstance(n, ast.Name)}
        reads |= {d.id for m in methods for d in m.decorator_list if isinstance(d, ast.Name)}
        index = position - 1
        mine = sorted(
            n
            for n in reads
            if n in module_level
            and not isinstance(tree.body[module_level[n]], (ast.Import, ast.ImportFrom))
        )
        if any(module_level[n] >= index for n in mine):
            continue
        mixin = f"_{cls.name}Mixin"
        module = f"_{MARK}_{stem}_{cls.name.lower()}"
        body: list[ast.stmt] = [*future, *(s for s in imports if s not in future)]
        if mine:
            body.append(ast.ImportFrom(stem, [ast.alias(n) for n in mine], 1))
        body.append(ast.ClassDef(mixin, [], [], methods, [], type_params=[], lineno=cls.lineno))
        new[f"{folder}/{module}.py" if folder else f"{module}.py"] = ast.unparse(
            ast.fix_missing_locations(ast.Module(copy.deepcopy(body), []))
        )
        cls.body = [s for s in cls.body if s not in methods] or [ast.Pass()]
        cls.bases.insert(0, ast.Name(mixin, ast.Load()))
        tree.body.insert(index, ast.ImportFrom(module, [ast.alias(mixin)], 1))
        position += 1
    return new


def _defined_by(stmt: ast.stmt) -> Iterator[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield stmt.name
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            yield (alias.asname or alias.name).split(".")[0]
    else:  # an assignment, or imports and definitions under ``if``/``try``
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                yield node.id
            elif isinstance(node, ast.alias):
                yield (node.asname or node.name).split(".")[0]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield node.name


def _movable(cls: ast.ClassDef) -> bool:
    if cls.decorator_list or cls.keywords:
        return False
    names = {c[-1] for b in cls.bases if (c := _chain(b))}
    return not names & _SPECIAL_BASES and not any(isinstance(b, ast.Subscript) for b in cls.bases)


def _mangles(function: ast.AST) -> bool:
    """Reads a private name (``self.__x``), which mangles with the class's name."""
    for node in ast.walk(function):
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        if isinstance(name, str) and name.startswith("__") and not name.endswith("__"):
            return True
    return False


_APPLY: dict[Rewrite, Callable[[Files], Files]] = {
    Rewrite.REFORMAT: _reformat,
    Rewrite.RENAME_LOCALS: _rename_locals,
    Rewrite.SWAP_OPERANDS: _swap_operands,
    Rewrite.SWAP_BRANCHES: _swap_branches,
    Rewrite.ARGUMENTS: _arguments,
    Rewrite.ANNOTATIONS: _annotations,
    Rewrite.IMPORTS: _imports,
    Rewrite.MIXIN: _mixin,
}

KINDS: tuple[Rewrite, ...] = tuple(Rewrite)
