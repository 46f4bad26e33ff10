"""The parsing layer of the code index: one file's text to a :class:`Module`.

:func:`parse_module` reads a file's text (never importing it). It indexes what every check
may ask of a file (definitions, signatures, decorators, bindings); function bodies are
summarised later, on demand (:mod:`canary.codeindex.body`).

Scope rules: module level (and class-body level) includes statements nested in
``if``/``try``/``with``/``for``/``while``/``match`` blocks (``if TYPE_CHECKING:``, ``try: ...
except ImportError:``), but never the bodies of functions or classes. A later statement
replaces an earlier binding of the same name, except across alternatives: the ``if`` branch
beats its ``else``/``elif`` branches and a ``try`` body (plus its ``else``) beats its
``except`` handlers, because the primary branch is the code that runs when the optional
dependency is installed, which is the case a check is about.

Beside the bindings, a module records its star imports and its *effects* (item and
attribute assignments, augmented assignments and call statements at module level, in
source order): how ``__all__`` and transformers' lazy ``_import_structure`` are built in
steps, which the last binding of a name cannot say.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize

from canary.codeindex.body import Assignment, BodyWalker
from canary.codeindex.expressions import (
    AUG_OPS,
    NOT_LITERAL,
    PYTHON,
    SourceText,
    bound_names,
    literal_value,
)
from canary.codeindex.model import (
    KEYWORD_ONLY,
    POSITIONAL_ONLY,
    POSITIONAL_OR_KEYWORD,
    VAR_KEYWORD,
    VAR_POSITIONAL,
    Class,
    ClassAttribute,
    Effect,
    Function,
    Import,
    Module,
    Param,
    Signature,
    located,
)
from canary.codeindex.statements import Binds, binds
from canary.errors import ParseError


def parse_module(source: bytes | str, *, path: str, origin: str = "") -> Module:
    """Summarise one Python file. Raises :class:`ParseError` when the running Python cannot
    parse it (newer syntax, bad encoding, null bytes)."""
    if isinstance(source, bytes):
        raw = source
        text = _decode(raw, path, origin)
    else:
        text = source
        try:
            raw = source.encode("utf-8")
        except UnicodeEncodeError as e:
            line = text.count("\n", 0, e.start) + 1
            raise _parse_error(path, origin, line, f"not encodable as UTF-8: {e.reason}") from e
    text = text.removeprefix("\ufeff")
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError) as e:
        # Null bytes raise ValueError on some Pythons and a SyntaxError without a line on
        # others; find the line ourselves then.
        line = getattr(e, "lineno", None)
        nul = text.find("\0")
        if line is None and nul >= 0:
            line = text.count("\n", 0, nul) + 1
        raise _parse_error(path, origin, line, getattr(e, "msg", None) or str(e)) from e
    except (RecursionError, MemoryError) as e:
        raise _parse_error(path, origin, None, f"nested too deeply ({type(e).__name__})") from e
    return _Builder(text, path, origin).module(tree, hashlib.sha256(raw).hexdigest())


def _declared_global(tree: ast.Module) -> dict[str, int]:
    """Each name a function declares ``global`` -> the first such line (module level, where
    ``global`` means nothing, is not a function)."""
    declared: dict[str, int] = {}
    pending: list[tuple[ast.AST, bool]] = [(tree, False)]  # (node, inside a function)
    while pending:  # one pass; a nested function's body is read once, not once per level
        node, in_function = pending.pop()
        if in_function and isinstance(node, ast.Global):
            for name in node.names:
                declared[name] = min(node.lineno, declared.get(name, node.lineno))
        in_function = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        pending.extend((child, in_function) for child in ast.iter_child_nodes(node))
    return declared


def _decode(raw: bytes, path: str, origin: str) -> str:
    # Honour PEP 263 cookies and a BOM exactly as the interpreter would.
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        return raw.decode(encoding)
    except SyntaxError as e:  # unknown or conflicting coding cookie
        raise _parse_error(path, origin, e.lineno or 1, e.msg) from e
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise _parse_error(path, origin, line, f"cannot decode as {e.encoding}: {e.reason}") from e


def _in_order(effects: list[Effect]) -> tuple[Effect, ...]:
    """Source order; a plain ``name = value`` is kept only where ``name`` is built in later
    steps (the root of another effect), so ordinary constants are not stored twice."""
    roots = {e.root for e in effects if e.op != "=" or not e.target.isidentifier()}
    kept = [e for e in effects if not e.target.isidentifier() or e.op != "=" or e.target in roots]
    return tuple(sorted(kept, key=lambda e: e.line))


def _parse_error(path: str, origin: str, line: int | None, why: str) -> ParseError:
    at = f", line {line}" if line else ""
    return ParseError(
        f"the running Python {PYTHON} cannot parse {located(path, origin)}{at}: {why} "
        "(if upstream adopted newer syntax, run canary under a newer Python)"
    )


_TRY = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_BLOCKS = (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)
_LOOPS = (ast.For, ast.AsyncFor)
_TYPE_ALIAS = getattr(ast, "TypeAlias", None)  # ``type X = ...``, 3.12+


class _Scope:
    """Bindings collected from one block of module or class-body statements."""

    __slots__ = ("assignments", "attributes", "classes", "effects", "functions", "imports", "stars")

    def __init__(self) -> None:
        self.classes: dict[str, Class] = {}
        self.functions: dict[str, Function] = {}
        self.assignments: dict[str, Assignment] = {}
        self.attributes: dict[str, ClassAttribute] = {}
        self.imports: dict[str, Import] = {}
        # Every alternative's, not only the winner's: sorted into source order at the end.
        self.stars: list[Import] = []
        self.effects: list[Effect] = []

    def absorb(self, other: _Scope) -> None:
        self.classes.update(other.classes)
        self.functions.update(other.functions)
        self.assignments.update(other.assignments)
        self.attributes.update(other.attributes)
        self.imports.update(other.imports)
        self.stars.extend(other.stars)
        self.effects.extend(other.effects)


class _Builder(BodyWalker):
    def __init__(self, text: str, path: str, origin: str) -> None:
        super().__init__(SourceText(text))
        self.path = path
        self.origin = origin
        self._handlers = 0  # how many ``except`` handlers enclose the statement being read

    # -- module and class bodies

    def module(self, tree: ast.Module, sha256: str) -> Module:
        scope = _Scope()
        self._collect(tree.body, scope, (), "", in_class=False)
        return Module(
            path=self.path,
            origin=self.origin,
            sha256=sha256,
            python=PYTHON,
            classes=scope.classes,
            functions=scope.functions,
            assignments=scope.assignments,
            imports=scope.imports,
            star_imports=tuple(sorted(scope.stars, key=lambda i: i.line)),
            effects=_in_order(scope.effects),
            run_time_globals=_declared_global(tree),
        )

    def _collect(
        self,
        body: list[ast.stmt],
        scope: _Scope,
        guards: tuple[str, ...],
        prefix: str,
        *,
        in_class: bool,
    ) -> None:
        for stmt in body:
            kind = binds(stmt)
            if kind is Binds.DEFINITION:
                if isinstance(stmt, ast.ClassDef):
                    scope.classes[stmt.name] = self._class(stmt, prefix)
                elif not (in_class and self._is_accessor(stmt, scope)):
                    scope.functions[stmt.name] = self._function(stmt, prefix)
            elif kind is Binds.ASSIGNMENT:
                self._assignment(stmt, scope, guards, in_class=in_class)
            elif kind is Binds.IMPORT:
                self._import(stmt, scope, guards)
            elif kind is Binds.CALL:
                if not in_class and isinstance(stmt.value, ast.Call):
                    call = stmt.value
                    scope.effects.append(
                        self._effect_of(self.unparse(call.func), "call", call, stmt, guards)
                    )
            elif kind is Binds.TARGETS:
                self._targets(stmt, scope, guards, in_class=in_class)
                self._collect_compound(stmt, scope, guards, prefix, in_class=in_class)
            elif kind is Binds.BLOCK:
                self._collect_compound(stmt, scope, guards, prefix, in_class=in_class)
            elif kind is None:
                raise ParseError(
                    f"{located(self.path, self.origin)}, line {stmt.lineno}: canary does not "
                    f"know what a {type(stmt).__name__} statement of Python {PYTHON} binds; "
                    "run canary under an older Python, or a newer canary"
                )

    def _collect_compound(
        self,
        stmt: ast.stmt,
        scope: _Scope,
        guards: tuple[str, ...],
        prefix: str,
        *,
        in_class: bool,
    ) -> None:
        """Bindings inside an if/try/with/loop/match block at module or class-body level."""
        if isinstance(stmt, ast.If):
            test = self.unparse(stmt.test)
            primary, alternative = _Scope(), _Scope()
            self._collect(stmt.body, primary, (*guards, test), prefix, in_class=in_class)
            self._collect(
                stmt.orelse, alternative, (*guards, f"not ({test})"), prefix, in_class=in_class
            )
            scope.absorb(alternative)
            scope.absorb(primary)
        elif isinstance(stmt, _TRY):
            primary, alternative = _Scope(), _Scope()
            self._handlers += 1
            for handler in stmt.handlers:
                self._collect(handler.body, alternative, guards, prefix, in_class=in_class)
            self._handlers -= 1
            self._collect(stmt.body, primary, guards, prefix, in_class=in_class)
            self._collect(stmt.orelse, primary, guards, prefix, in_class=in_class)
            scope.absorb(alternative)
            scope.absorb(primary)
            self._collect(stmt.finalbody, scope, guards, prefix, in_class=in_class)
        elif isinstance(stmt, _BLOCKS):
            self._collect(stmt.body, scope, guards, prefix, in_class=in_class)
            self._collect(getattr(stmt, "orelse", []), scope, guards, prefix, in_class=in_class)
        elif isinstance(stmt, ast.Match):
            # Cases are alternatives; the first one wins, like if/elif.
            cases = [_Scope() for _ in stmt.cases]
            for case, case_scope in zip(stmt.cases, cases, strict=True):
                self._collect(case.body, case_scope, guards, prefix, in_class=in_class)
            for case_scope in reversed(cases):
                scope.absorb(case_scope)

    @staticmethod
    def _is_accessor(node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> bool:
        # ``@x.setter def x`` would otherwise replace the property getter, which is the
        # definition checks care about.
        if node.name not in scope.functions:
            return False
        accessors = {f"{node.name}.setter", f"{node.name}.deleter", f"{node.name}.getter"}
        return any(
            isinstance(d, ast.Attribute) and ast.unparse(d) in accessors
            for d in node.decorator_list
        )

    def _binding(
        self,
        stmt: ast.Assign | ast.AugAssign | ast.AnnAssign,
        scope: _Scope,
        guards: tuple[str, ...],
        *,
        in_class: bool,
    ) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [leaf.id for t in targets for leaf in bound_names(t) if isinstance(leaf, ast.Name)]
        if not names:
            return  # ``obj.attr = ...`` / ``d[k] = ...`` bind no module or class name
        if in_class:
            annotation = None
            if isinstance(stmt, ast.AnnAssign):
                annotation = self.unparse(stmt.annotation)
                if stmt.value is None:
                    for name in names:
                        scope.attributes.setdefault(
                            name,
                            ClassAttribute(name, None, NOT_LITERAL, stmt.lineno, annotation),
                        )
                    return
            elif isinstance(stmt, ast.AugAssign):
                return
            value = self.unparse(stmt.value)
            literal = literal_value(stmt.value)
            for name in names:
                scope.attributes[name] = ClassAttribute(
                    name, value, literal, stmt.lineno, annotation
                )
            return
        assignment = self.assignment(stmt, guards)
        if assignment is not None:
            for name in names:
                scope.assignments[name] = assignment

    def _assignment(
        self, stmt: ast.stmt, scope: _Scope, guards: tuple[str, ...], *, in_class: bool
    ) -> None:
        if _TYPE_ALIAS is not None and isinstance(stmt, _TYPE_ALIAS):
            self._type_alias(stmt, scope, guards, in_class=in_class)
            return
        self._binding(stmt, scope, guards, in_class=in_class)  # type: ignore[arg-type]
        if not in_class and stmt.value is not None:  # type: ignore[attr-defined]
            self._effect(stmt, scope, guards)  # type: ignore[arg-type]

    def _type_alias(
        self, stmt: ast.stmt, scope: _Scope, guards: tuple[str, ...], *, in_class: bool
    ) -> None:
        """``type X = ...`` binds X to a TypeAliasType: never the literal its value reads."""
        name, value = stmt.name.id, self.unparse(stmt.value)  # type: ignore[attr-defined]
        if in_class:
            scope.attributes[name] = ClassAttribute(name, value, NOT_LITERAL, stmt.lineno)
        else:
            scope.assignments[name] = Assignment(
                (name,), "type", value, NOT_LITERAL, stmt.lineno, guards
            )

    def _targets(
        self,
        stmt: ast.For | ast.AsyncFor | ast.With | ast.AsyncWith,
        scope: _Scope,
        guards: tuple[str, ...],
        *,
        in_class: bool,
    ) -> None:
        """The names a ``for`` or ``with ... as`` binds, each to a value no index can know."""
        if isinstance(stmt, _LOOPS):
            pairs, op = [(stmt.target, stmt.iter)], "for"
        else:
            pairs, op = [(i.optional_vars, i.context_expr) for i in stmt.items], "with"
        for target, value in pairs:
            if target is None:
                continue
            names = [leaf.id for leaf in bound_names(target) if isinstance(leaf, ast.Name)]
            if in_class:
                for name in names:
                    scope.attributes[name] = ClassAttribute(name, None, NOT_LITERAL, stmt.lineno)
                continue
            assignment = Assignment(
                (self.unparse(target),),
                op,
                self.unparse(value),
                NOT_LITERAL,
                stmt.lineno,
                guards,
                tuple(names) if isinstance(target, (ast.Tuple, ast.List)) else (),
            )
            for name in names:
                scope.assignments[name] = assignment

    @staticmethod
    def _import(stmt: ast.Import | ast.ImportFrom, scope: _Scope, guards: tuple[str, ...]) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                # ``import a.b`` binds ``a``; ``import a.b as c`` binds ``c``.
                bound = alias.asname or alias.name.split(".", 1)[0]
                scope.imports[bound] = Import(bound, None, alias.name, stmt.lineno, guards)
            return
        module = "." * stmt.level + (stmt.module or "")
        for alias in stmt.names:
            if alias.name == "*":
                # Binds names only the imported module can say: kept apart, in order.
                scope.stars.append(Import("*", module, "*", stmt.lineno, guards))
                continue
            bound = alias.asname or alias.name
            scope.imports[bound] = Import(bound, module, alias.name, stmt.lineno, guards)

    def _effect(
        self,
        stmt: ast.Assign | ast.AugAssign | ast.AnnAssign,
        scope: _Scope,
        guards: tuple[str, ...],
    ) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        op = AUG_OPS[type(stmt.op)] if isinstance(stmt, ast.AugAssign) else "="
        for target in targets:
            if isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
                continue  # unpacking binds plain names only in practice
            scope.effects.append(
                self._effect_of(self.unparse(target), op, stmt.value, stmt, guards)
            )

    def _effect_of(
        self, target: str, op: str, value: ast.expr, stmt: ast.stmt, guards: tuple[str, ...]
    ) -> Effect:
        return Effect(target, op, self.unparse(value), stmt.lineno, guards, self._handlers > 0)

    def _class(self, node: ast.ClassDef, prefix: str) -> Class:
        qualname = prefix + node.name
        scope = _Scope()
        self._collect(node.body, scope, (), qualname + ".", in_class=True)
        return Class(
            name=node.name,
            qualname=qualname,
            bases=tuple(self.unparse(b) for b in node.bases),
            decorators=tuple(self.unparse(d) for d in node.decorator_list),
            line=node.lineno,
            end_line=node.end_lineno,
            _text=self.text,
            _span=self.block_span(node),
            attributes=scope.attributes,
            methods=scope.functions,
            classes=scope.classes,
            path=self.path,
            origin=self.origin,
            imports=scope.imports,
        )

    # -- functions

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str) -> Function:
        return Function(
            name=node.name,
            qualname=prefix + node.name,
            signature=self._signature(node.args),
            decorators=tuple(self.unparse(d) for d in node.decorator_list),
            is_async=isinstance(node, ast.AsyncFunctionDef),
            line=node.lineno,
            end_line=node.end_lineno,
            _text=self.text,
            _span=self.block_span(node),
        )

    def _signature(self, args: ast.arguments) -> Signature:
        def annotation(arg: ast.arg) -> str | None:
            return self.unparse(arg.annotation) if arg.annotation is not None else None

        params: list[Param] = []
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
        defaults += args.defaults
        for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
            kind = POSITIONAL_ONLY if i < len(args.posonlyargs) else POSITIONAL_OR_KEYWORD
            text = self.unparse(default) if default is not None else None
            params.append(Param(arg.arg, kind, text, annotation(arg)))
        if args.vararg is not None:
            params.append(Param(args.vararg.arg, VAR_POSITIONAL, None, annotation(args.vararg)))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            text = self.unparse(default) if default is not None else None
            params.append(Param(arg.arg, KEYWORD_ONLY, text, annotation(arg)))
        if args.kwarg is not None:
            params.append(Param(args.kwarg.arg, VAR_KEYWORD, None, annotation(args.kwarg)))
        return Signature(tuple(params))
