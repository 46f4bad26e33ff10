"""The walker: one file walked in order, statement by statement, recording every use of
upstream; it extends, in order, its anchors, conditions, values and state (one module each)."""

from __future__ import annotations

import ast
import itertools
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from canary.surface import callers, fallbacks, guards, importers, probes, versiontests
from canary.surface.extract import domains, syntax
from canary.surface.extract.anchoring import Anchoring
from canary.surface.extract.domains import NOTHING_KNOWN
from canary.surface.extract.project import Project
from canary.surface.extract.scopes import (
    BINDERS,
    STDLIB,
    UNBOUND,
    Bound,
    Keys,
    Presence,
    ProjectFunction,
    ProjectModule,
    Scope,
    Stdlib,
    Upstream,
)
from canary.surface.model import Kind, model_requirement
from canary.surface.segments import Definition
from canary.surface.texts import Literals, Param, Text, Value, elements, union, unpack

_TRY = (ast.Try, ast.TryStar) if sys.version_info >= (3, 11) else (ast.Try,)


# Methods of lists, dicts, sets and loggers, cut from a chain whose owner is named like a
# module-level value (ALL_CAPS or a logger): upstream promises the value, not its type's API.
_VALUE_METHODS = frozenset(
    {"append", "extend", "insert", "remove", "pop", "clear", "copy", "get", "setdefault",
     "update", "items", "keys", "values", "add", "discard", "addFilter", "removeFilter",
     "addHandler", "removeHandler", "setLevel", "debug", "info", "warning", "warning_once",
     "error", "exception", "critical"}
)  # fmt: skip


_VALUE_NAME = re.compile(r"^_*[A-Z][A-Z0-9_]*$|logger$")


_DEDENTING_HELPER = re.compile(r"dedent|detab", re.IGNORECASE)


_IMPORT_STATEMENT = re.compile(
    r"(?m)^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n#;]*)"
    r"|import[ \t]+([^\n#;]+))"
)


class Walker(Anchoring):
    """Walks one file in order, keeping bindings, text values and the guard context."""

    def __init__(self, project: Project, path: str, *, emit: bool) -> None:
        super().__init__(project, path, emit=emit)
        self.returns: Value | None = None  # summarising: what its returns may give
        self.interesting: frozenset[str] | None = None
        self.checked: ast.stmt | None = None  # the definition _skippable passed last
        # the module's functions, its own and imported: the names worth resolving where a
        # bare name is read (callers.py), known once its bindings are
        self.functions: frozenset[str] = frozenset()
        # each module-level class walked -> its static methods, reached through the places
        # that name them as ``C.m`` or ``self.m`` (callers.py: ways in, as for functions)
        self.static_methods: dict[str, frozenset[str]] = {}

    def walk_module(self) -> None:
        exports = self.project.whole_exports(self.module)
        if exports is None:
            self.bind_module_level()
        else:  # the same binding pass, done already
            self.module_scope = Scope(
                dict(exports.names),
                dict(exports.values),
                conditions=dict(exports.conditions),
                alternatives=dict(exports.alternatives),
            )
            self.scope = self.module_scope
            self.upstream_stars = list(exports.upstream_stars)
        self.functions = frozenset(
            name
            for name, binding in self.module_scope.names.items()
            if isinstance(binding, ProjectFunction) and callers.carried(name)
        )
        self.interesting = self._interesting()
        if self.interesting is not None:
            self.interesting |= self._callers_way_in()
        self.block(self.project.body(self.path))

    def _interesting(self) -> frozenset[str] | None:
        """The names a module-level function or class must mention to reference upstream
        (None: any name may, under a ``from <upstream> import *``)."""
        if self.upstream_stars:
            return None
        return frozenset(
            {"__import__", "getsource", "import_module", *self._bound_upstream(self.module_scope)}
        )

    def _callers_way_in(self) -> frozenset[str]:
        """The module's own functions that reference upstream (not skippable by the names
        :meth:`_interesting` found): a function calling one is a way into it
        (:mod:`canary.surface.callers`), recorded only where it is walked (grimoire-rl's
        ``_register()``, called past a model-type test in a function naming nothing upstream
        itself). One step only: the callers of such a caller are walked where they name
        upstream (each step costs a walk of most of a large project's functions again)."""
        return frozenset(
            s.name
            for s in self.project.body(self.path)
            if isinstance(s, Definition)
            and s.kind == "def"
            and s.name in self.functions
            and not self._skippable(s)
        )

    def _bound_upstream(self, scope: Scope) -> Iterator[str]:
        """The names ``scope`` binds to something that may reach upstream: an upstream
        object, a project module that binds one, a helper that reads sources, a source."""
        for name, binding in scope.names.items():
            if (
                isinstance(binding, Upstream)
                or (isinstance(binding, ProjectModule) and self.project.reaches(binding.name))
                or (isinstance(binding, ProjectFunction) and self.project.takes_source(binding))
            ):
                yield name
        yield from (name for name, value in scope.values.items() if isinstance(value, Text))

    def _skippable(self, node: ast.stmt | Definition) -> bool:
        """A top-level function or class (or a member of a top-level class) that mentions
        nothing upstream-bound: walking it could find nothing (most of a large project's
        code). A member's body sees the module's names (a class body's are not visible in
        its methods); its decorators, defaults and annotations see the class's too."""
        member = (
            isinstance(node, Definition)
            and self.scope.is_class
            and self.scope.parent is self.module_scope
        )
        interesting = self.interesting
        if not (self.scope is self.module_scope or member) or interesting is None:
            return False
        if node is self.checked:
            return False  # its Definition was just found worth walking
        if not isinstance(node, Definition):
            # a function inside a module-level block (rare): walked unless it names nothing
            names = self.project.identifiers(self.path, node)
            return not (interesting & names) and "import" not in names
        if member:
            interesting = interesting | frozenset(self._bound_upstream(self.scope))
        if node.mentions(interesting):
            return False
        if not node.mentions(("import",)):
            return True
        return not any(self._import_reaches(m, names) for m, names in self._imported(node.text))

    def _imported(self, text: str) -> Iterator[tuple[str, tuple[str, ...] | None]]:
        """The modules a function's import statements name, made absolute, with the names
        taken from each (None: the module itself, or names not read: a star, a line
        continued with a backslash)."""
        for match in _IMPORT_STATEMENT.finditer(text):
            if match.group(4) is not None:  # import a.b, c as d
                for piece in match.group(4).split(","):
                    if piece.split():
                        yield piece.split()[0], None
                continue
            relative, dotted, taken = match.group(1), match.group(2), match.group(3).strip()
            names = None
            if "*" not in taken and not taken.endswith("\\"):
                names = tuple(p.split()[0] for p in taken.strip("()").split(",") if p.split())
            if not relative:
                yield dotted, names
                continue
            package = self.module.split(".")
            if not self.is_package:
                package = package[:-1]
            package = (
                package[: len(package) - (len(relative) - 1)] if len(relative) > 1 else package
            )
            yield ".".join([*package, *([dotted] if dotted else [])]), names

    def _import_reaches(self, module: str, names: tuple[str, ...] | None) -> bool:
        """An import that can bind something upstream-bound (an upstream module, or names of
        a project module that are bound to upstream: a module that reaches it, a helper
        that reads sources), or that loads a project module that reaches upstream: where
        that import runs decides where the module's own sites run (:mod:`importers`)."""
        project = self.project
        if project.is_upstream(module):
            return True
        if names is None or module not in project.path_of or project.reaches(module):
            return project.reaches(module)
        for name in names:
            binding = project.member(module, name)
            if (
                isinstance(binding, Upstream)
                or (isinstance(binding, ProjectModule) and project.reaches(binding.name))
                or (isinstance(binding, ProjectFunction) and project.takes_source(binding))
            ):
                return True
        return False

    def bind_module_level(self) -> None:
        """Module-level bindings only (imports, aliases, constants, functions), so a
        function sees names bound after it, as Python does at call time."""
        with self.entered(emit=False):
            for node in self.project.body(self.path):
                self.statement(node, nested=False)

    def apply(
        self,
        function: ProjectFunction,
        values: Mapping[int, Value | Upstream],
        *,
        selector: int | None,
        selected: frozenset[str] | None,
        depth: int,
    ) -> None:
        exports = self.project.exports(self.module)
        self.module_scope = Scope(exports.names, exports.values, conditions=exports.conditions)
        self.upstream_stars = exports.upstream_stars
        node = function.node
        names = syntax.positional(node)
        self.scope = Scope(parent=self.module_scope)
        for arg in syntax.arguments(node.args):
            self.scope.names[arg] = None
        for index, value in values.items():
            if index >= len(names):
                continue
            if isinstance(value, Upstream):
                self.scope.names[names[index]] = value
                self.passed.add(value.path)
            else:
                self.scope.values[names[index]] = value
        with self.entered(
            selector=names[selector] if selector is not None and selector < len(names) else None,
            selected=selected,
            applying=True,
            depth=depth,
            function=id(node),
            function_node=node,
            narrowing=NOTHING_KNOWN,
            within=function.name if self._module_level(function) else "",
        ):
            self.block(node.body)

    def _module_level(self, function: ProjectFunction) -> bool:
        """``function`` is the module-level function of its name (callers.py carries the
        conditions of the places that name it into its body), not a nested one."""
        bound = self.project.exports(function.module).names.get(function.name)
        return isinstance(bound, ProjectFunction) and bound.node.lineno == function.node.lineno

    def run_binding(self, node: ast.stmt) -> None:
        self.statement(node)

    def evaluate(
        self, function: ProjectFunction, params: Mapping[str, object], depth: int
    ) -> versiontests.Outcome:
        """``function``'s body run as a version test with ``params`` bound."""
        self.enter_helper(function, params)
        self.upstream_stars = self.project.exports(self.module).upstream_stars
        for name, value in params.items():
            if isinstance(value, guards.InstalledVersion):
                self.scope.values[name] = value  # type: ignore[assignment]
        constants = {
            name: versiontests.NOT_CONSTANT if isinstance(value, guards.InstalledVersion) else value
            for name, value in params.items()
        }
        with self.entered(helper_depth=depth):
            upstream = self.project.upstream
            evaluator = versiontests.Evaluator(self, constants, upstream, self.helper_outcome)
            return evaluator.outcome(function.node.body)

    def returns_where(self, node: ast.Call) -> guards.Window | None:
        """Where a called check returns instead of raising (None: everywhere, or unread).
        A project function is read as a check only where it can raise by itself or is
        named for versions: most calls made as statements are no checks."""
        function = self._callee(node)
        if isinstance(function, ProjectFunction) and not self.project.may_check(function):
            return None
        evaluator = versiontests.Evaluator(self, {}, self.project.upstream, self.helper_outcome)
        returns = evaluator.check(node)
        return None if returns is None else returns.true

    def probe(self, function: ProjectFunction, success: probes.Success) -> frozenset[str] | None:
        """What ``function`` (a presence probe, :mod:`canary.surface.probes`) requires of
        upstream for returning ``success``; None: it is no probe."""
        exports = self.project.exports(function.module)
        self.module_scope = self.scope = Scope(
            exports.names, exports.values, conditions=exports.conditions
        )
        return probes.requirements(
            function.node,
            self._imports_only,
            self.upstream_path,
            success,
            lambda test: frozenset(
                p[1:] for p in self._present(test, positive=True) if p.startswith("+")
            ),
        )

    def summarise(self, function: ProjectFunction) -> tuple[Value | None, tuple[str, ...]]:
        exports = self.project.exports(self.module)
        self.module_scope = Scope(exports.names, exports.values, conditions=exports.conditions)
        self.upstream_stars = exports.upstream_stars
        node = function.node
        names = tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args))
        self.scope = Scope(parent=self.module_scope)
        for arg in syntax.arguments(node.args):
            self.scope.names[arg] = None
        for index, name in enumerate(names):
            self.scope.values[name] = Param(index)
        with self.entered(summarising=True):
            self.block(node.body)
        result = self.returns
        if _DEDENTING_HELPER.search(node.name):
            if isinstance(result, Text):
                result = replace(result, dedented=True)
            elif isinstance(result, Param):
                result = Param(result.index, result.source, True)
        return result, names

    def block(self, statements: list[ast.stmt]) -> None:
        # each statement narrows where the ones after it in this block run
        with self.restored(
            "guarded",
            "present",
            "selected",
            "narrowing",
            "window",
            "undecided",
            "tested",
            "imported",
            "fallback_of",
        ):
            for node in statements:
                self.statement(node)
                self._narrow_past(node)

    def _narrow_past(self, node: ast.stmt) -> None:
        """What running ``node`` and going on past it says of where the statements after
        it in its block run."""
        catching = self.catching == self.function
        if isinstance(node, (ast.Import, ast.ImportFrom)) and (self.function or catching):
            targets = self._imports_only([node])
            if self.function:
                self.imported |= set(targets)
            if catching:
                # in a try body whose handler catches its ImportError, what follows an
                # import runs only where it imported: a failure leaves the body there
                self.present |= {f"+{target}" for target in targets}
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self._past_check(node.value)
        if isinstance(node, ast.Try):
            self._past_try(node)
        if isinstance(node, ast.If) and guards.exits(node.body):
            self._past_exit(node)

    def _past_check(self, call: ast.Call) -> None:
        """check_version("trl>=0.9"): what follows runs only where it returned."""
        returns = self.returns_where(call)
        if returns is not None:
            self.window &= returns
        else:
            self.undecided = self.undecided or self._undecided(call, check=True)

    def _past_try(self, node: ast.Try) -> None:
        if imports := self._upstream_imported(node.body):
            leaving = [h for h in node.handlers if fallbacks.catches_import_error(h)]
            # another handler that goes on may come from a statement before an import
            others = all(guards.exits(h.body, silently=True) for h in node.handlers)
            if (
                leaving
                and all(guards.exits(h.body, silently=True) for h in leaving)
                and (others or self._imports_only(node.body))
            ):
                # except ImportError: return: what follows runs where they imported
                self.present |= {f"+{target}" for target in imports}
            if not self.fallback_of and (tried := self._returned_from(node)):
                # try: import new; return new / except ImportError: pass: what
                # follows is the fallback, run only where one of them failed
                self.fallback_of = tried
        if all(guards.exits(h.body) for h in node.handlers):
            # every handler leaves: past the try its body ran to its end, so each of its
            # `if test: return` failed and each version check returned (unsloth_zoo's
            # `try: if Version(transformers.__version__) < Version("5"): return`)
            for inner in node.body:
                if isinstance(inner, (ast.If, ast.Expr)):
                    self._narrow_past(inner)

    def _past_exit(self, node: ast.If) -> None:
        """``if test: return``: what follows runs only where the test failed."""
        self.tested += self.anchor_branches(node).rest
        self.undecided = self.undecided or self._undecided(node.test)
        if guards.exits(node.body, silently=True) and guards.is_guard_test(node.test):
            self.guarded += 1
        self.present |= self._present(node.test, positive=False)
        self.selected = self._narrowed(node.test, positive=False)
        self.narrowing = self._narrowing(node.test, positive=False)
        self.window &= self._window(node.test, positive=False)

    def statement(self, node: ast.stmt, *, nested: bool = True) -> None:
        """One statement; ``nested`` False: the module-level binding pass, which enters
        blocks but evaluates no expression and no function or class body."""
        if isinstance(node, Definition):
            self.definition(node, nested)
            return
        handler = _STATEMENTS.get(type(node))
        if handler is not None:
            handler(self, node, nested)
        elif nested:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def definition(self, definition: Definition, nested: bool) -> None:
        """A top-level function or class, or a member of a top-level class, not parsed yet:
        bound by name, parsed only to be walked (a class with its members still unparsed)."""
        if nested and not self._skippable(definition):
            node = definition.outline() or definition.node
            self.checked = node
            self.statement(node, nested=nested)
        elif definition.kind == "def":
            self.bind(definition.name, ProjectFunction(self.module, definition.name, definition))
        else:
            self.bind(definition.name, None)

    def s_import(self, node: ast.Import | ast.ImportFrom, nested: bool) -> None:
        if isinstance(node, ast.Import):
            self.import_modules(node)
        else:
            self.import_from(node)

    def s_assign(self, node: ast.Assign, nested: bool) -> None:
        if nested:
            self.expr(node.value)
        for target in node.targets:
            self.assign(target, node.value)
            if isinstance(target, ast.Name) and target.id == "__all__":
                self.exported(node.value)

    def exported(self, value: ast.expr) -> None:
        """Record the module's functions its ``__all__`` lists: an export, no way in (code
        outside the project calling a public function is the public way in already)."""
        if self.scope is not self.module_scope or not isinstance(value, (ast.List, ast.Tuple)):
            return
        for item in value.elts:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                binding = self.module_scope.names.get(item.value)
                self.mention(item, binding, item.value, callers.Role.EXPORTS)

    def s_annotated(self, node: ast.AnnAssign, nested: bool) -> None:
        if nested:
            with self.entered(annotating=True):
                self.expr(node.annotation)
        if node.value is not None:
            if nested:
                self.expr(node.value)
            self.assign(node.target, node.value)

    def s_augmented(self, node: ast.AugAssign, nested: bool) -> None:
        if nested:
            self.expr(node.value)
        self.assign(node.target, None, augmented=node)

    def s_with(self, node: ast.With | ast.AsyncWith, nested: bool) -> None:
        suppresses = False
        for item in node.items:
            if nested:
                self.expr(item.context_expr)
            suppresses |= self._callee(item.context_expr) == Stdlib("contextlib.suppress")
            if item.optional_vars is not None:
                self.assign(item.optional_vars, None)
        with self.entered(guarded=self.guarded + suppresses):
            self.body(node.body, nested)

    def s_for(self, node: ast.For | ast.AsyncFor, nested: bool) -> None:
        if nested:
            self.expr(node.iter)
        self.bind_loop(node.target, node.iter)
        with self.entered(conditional=self.conditional + 1):
            with self.branched():
                self.body(node.body, nested)
            with self.branched():
                self.body(node.orelse, nested)

    def s_while(self, node: ast.While, nested: bool) -> None:
        if nested:
            self.expr(node.test)
        guard = guards.is_guard_test(node.test)
        with self.entered(conditional=self.conditional + 1):
            with self.entered(guarded=self.guarded + guard), self.branched():
                self.body(node.body, nested)
            with self.branched():
                self.body(node.orelse, nested)

    def s_return(self, node: ast.Return, nested: bool) -> None:
        if node.value is None or not nested:
            return
        self.expr(node.value)
        if self.summarising:
            returned = node.value
            if isinstance(returned, ast.Tuple) and returned.elts:
                returned = returned.elts[0]  # (text, extra): the text is first
            self.returns = union(self.returns, self.value(returned))

    def s_match(self, node: ast.Match, nested: bool) -> None:
        if nested:
            self.expr(node.subject)
        earlier: frozenset[str] = frozenset()  # the strings an earlier case took
        with self.entered(conditional=self.conditional + 1):
            for case in node.cases:
                said, taken = domains.matched(node.subject, case.pattern, earlier)
                if case.guard is None:
                    earlier |= taken
                with self.entered(narrowing=self._narrowed_to(said)), self.branched():
                    self.body(case.body, nested)

    def body(self, statements: list[ast.stmt], nested: bool) -> None:
        if nested:
            self.block(statements)
        else:
            for node in statements:
                self.statement(node, nested=False)

    def s_if(self, node: ast.If, nested: bool) -> None:
        if guards.is_type_checking(node.test):
            self.body(node.orelse, nested)
            return
        if nested:
            # if "x" in text: return: x is the edit already made (or a shape it leaves
            # alone); without it the patch goes on, so it is no anchor
            with self.entered(done_test=guards.exits(node.body, silently=True)):
                self.expr(node.test)
        guard = guards.is_guard_test(node.test)
        branches = self.anchor_branches(node)
        failed, elif_ = self.failed, len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)
        with self.entered(
            undecided=self.undecided or self._undecided(node.test),
            guarded=self.guarded + guard,
            conditional=self.conditional + 1,
        ):
            for positive, body, tested in (
                (True, node.body, branches.body),
                (False, node.orelse, branches.orelse),
            ):
                window = self.window & self._window(node.test, positive=positive)
                if positive:
                    window &= self._window_after(failed, node.test)
                with (
                    self.entered(
                        failed=(*failed, node.test) if not positive and elif_ else (),
                        present=self.present | self._present(node.test, positive=positive),
                        selected=self._narrowed(node.test, positive=positive),
                        narrowing=self._narrowing(node.test, positive=positive),
                        window=window,
                        tested=self.tested + tested,
                        fallback_of=self.fallback_of or self._failed(node.test, positive=positive),
                    ),
                    self.branched(),
                ):
                    self.body(body, nested)

    def s_try(self, node: ast.Try, nested: bool) -> None:
        caught = bool(node.handlers)
        imports = self._imports_only(node.body)
        reads = self._reads_only(node.body) if nested and not imports else ()
        handled: dict[tuple[int, int], str] = {}
        # only a walk that records uses reads it, and only of a try that imports upstream
        # or a module of the project (whose own imports fail into this handler)
        if (
            nested
            and self.emit
            and (self._upstream_imported(node.body) or self._project_imported(node.body))
        ):
            key = (self.path, node.lineno, node.col_offset)
            if key not in self.project.handled:  # a function may be walked more than once
                found = fallbacks.handled_imports(
                    node,
                    lambda name: self._none_harmless(node, name),
                    lambda name, kept: self._unbound_harmless(node, name, kept=kept),
                    self._flag_harmless,
                    self._temporary,
                )
                self.project.handled[key] = {
                    (n.lineno, n.col_offset): found[id(n)] for n in node.body if id(n) in found
                }
            handled = self.project.handled[key]
        catches = any(fallbacks.catches_import_error(h) for h in node.handlers)
        # except ImportError: raise ImportError("install x>=2"): its failure still breaks
        reraises = catches and all(
            h.body and isinstance(h.body[-1], ast.Raise)
            for h in node.handlers
            if fallbacks.catches_import_error(h)
        )
        trying = (*self.branch, next(self.branches))  # its else runs after it: the same branch
        with self.entered(
            branch=trying,
            guarded=self.guarded + caught,
            handled={**self.handled, **handled} if handled else self.handled,
            catching=self.function if catches else self.catching,
            reraising=self.reraising + reraises,
            swallowing=self.swallowing + fallbacks.swallows_any(node),
        ):
            self.body(node.body, nested)
        with self.entered(conditional=self.conditional + 1):
            for handler in node.handlers:
                if self._never_taken(handler, node.body):
                    continue
                if nested and handler.type is not None:
                    self.expr(handler.type)
                if handler.name:
                    self.scope.names[handler.name] = None
                # in the handler of imports, or of reads, that it catches the failure of:
                # it runs only where one of them is missing
                tried = imports if fallbacks.catches_import_error(handler) else ()
                if not tried and fallbacks.catches_attribute_error(handler):
                    tried = reads
                with (
                    self.entered(fallback_of=self.fallback_of or tried),
                    self.branched(),
                ):
                    self.body(handler.body, nested)
            with self.entered(branch=trying):
                self.body(node.orelse, nested)
        self.body(node.finalbody, nested)
        self.scope.absent_if_none.update(self._none_fallbacks(node))
        attempts = self._attempts(node)
        if not attempts:
            return
        # what the body sets after its imports or reads (HAS_Y = True, REG["k"] = ...) holds
        # exactly where they all succeeded: a presence test of them
        attempted = tuple(sorted({t for targets in attempts.values() for t in targets}))
        found = frozenset(f"+{target}" for target in attempted)
        flag = fallbacks.presence_flag(node, lambda statement: id(statement) in attempts)
        if flag is not None:
            name, where_succeeded = flag
            if where_succeeded:
                presence = Presence(found, frozenset(), attempted)
            else:  # old = False after the reads, old = True in the handler
                presence = Presence(frozenset(), found, attempted, failed_if=True)
            self.scope.values[name] = presence  # type: ignore[assignment]
        imported = self._upstream_imported(node.body)
        if imported and self.scope is self.module_scope and not self.function:
            succeeded = frozenset(f"+{target}" for target in imported)
            self._key_flags(node, Presence(succeeded, frozenset(), tuple(sorted(imported))))

    def _attempts(self, node: ast.Try) -> dict[int, tuple[str, ...]]:
        """The statements of a ``try`` body whose failure every handler catches, by ``id``,
        each with the upstream things it needs: its upstream imports (the handlers catch
        ImportError), its reads of upstream attributes (they catch AttributeError: a bare
        ``m.Qwen3MoeExperts``, or one read into names)."""
        handlers = node.handlers
        if not handlers:
            return {}
        imports = all(fallbacks.catches_import_error(h) for h in handlers)
        reads = all(fallbacks.catches_attribute_error(h) for h in handlers)
        found: dict[int, tuple[str, ...]] = {}
        for statement in node.body:
            if imports and isinstance(statement, (ast.Import, ast.ImportFrom)):
                targets = self._upstream_imported([statement])
            elif reads and (path := self._read_alone(statement)) is not None:
                targets = (path,)
            else:
                continue
            if targets:
                found[id(statement)] = targets
        return found

    def _read_alone(self, statement: ast.stmt) -> str | None:
        """The upstream attribute a statement only reads (``m.X``, ``cls = m.X``), if any."""
        named = isinstance(statement, ast.Assign) and all(
            isinstance(t, ast.Name) for t in statement.targets
        )
        if not (isinstance(statement, ast.Expr) or named):
            return None
        value = statement.value  # type: ignore[attr-defined]
        return self.upstream_path(value) if isinstance(value, ast.Attribute) else None

    def _none_fallbacks(self, node: ast.Try) -> dict[str, str]:
        """The names a ``try`` binds to one upstream object, past imports of that object or
        its modules only, and a handler of their ImportError binds to None: where such a
        name is None, the object is not there (unsloth_zoo's ``core = import_module(m);
        original = getattr(core, "f", None)`` / ``except ImportError: core, original = None,
        None``; ``from m import f`` / ``except ImportError: f = None``), as the name of a
        lookup with a None default is (``Scope.absent_if_none``). A name the body binds
        after another import, which may be what failed, is not one."""
        if node.orelse or node.finalbody or not node.handlers:
            return {}
        if not all(fallbacks.catches_import_error(h) for h in node.handlers):
            return {}
        imported: list[str] = []
        objects: dict[str, str] = {}  # name: the upstream object the body binds it to
        for statement in node.body:
            if isinstance(statement, ast.Pass):
                continue
            targets = self._imports_only([statement])
            if targets:
                imported += targets
                objects.update(self._imported_names(statement))
            elif (lookup := self._none_default_lookup(statement, objects)) is not None:
                objects[lookup[0]] = lookup[1]
            else:
                return {}
        return {
            name: path
            for name, path in objects.items()
            if all(path == t or path.startswith(f"{t}.") for t in imported)
            and _none_where_handled(node.handlers, name)
        }

    def _imported_names(self, node: ast.stmt) -> dict[str, str]:
        """The names an upstream import statement binds, each to the object it imports."""
        if isinstance(node, ast.Import):
            return {
                alias.asname or alias.name.partition(".")[0]: (
                    alias.name if alias.asname else alias.name.partition(".")[0]
                )
                for alias in node.names
            }
        if isinstance(node, ast.ImportFrom):
            base = self._absolute(node)
            return {alias.asname or alias.name: f"{base}.{alias.name}" for alias in node.names}
        module = self._module_bound(node)
        if not isinstance(node, ast.Assign) or module is None:
            return {}
        return {t.id: module for t in node.targets if isinstance(t, ast.Name)}

    def _none_default_lookup(
        self, node: ast.stmt, objects: Mapping[str, str]
    ) -> tuple[str, str] | None:
        """``name = getattr(x, "n", None)`` of an upstream ``x`` (one ``objects`` names, or
        bound before): the name, and the attribute it is None without."""
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and _defaults_to_none(node.value)
        ):
            return None
        call = node.value
        owner = call.args[0] if self._builtin(call.func, "getattr") and call.args else None
        if isinstance(owner, ast.Name) and owner.id in objects:
            name = self._literal_string(call.args[1]) if len(call.args) > 1 else None
            path = f"{objects[owner.id]}.{name}" if name is not None else None
        else:
            path = self._looked_up(call)
        return None if path is None else (node.targets[0].id, path)

    def _key_flags(self, node: ast.Try, succeeded: Presence) -> None:
        """Record the dict keys a module-level ``try`` sets after its upstream imports as
        presence tests of them (:class:`Keys`), when nothing else in the module sets them."""
        for registry, key in fallbacks.presence_keys(node):
            if not self._only_set_in(node, registry, key):
                continue
            known = self.scope.values.get(registry)
            flags = dict(known.flags) if isinstance(known, Keys) else {}
            displayed = isinstance(known, Literals) and all(
                isinstance(v, dict) for v in known.values
            )  # REG = {}: a display the try body adds keys to, stale from then on
            if known is not None and not isinstance(known, Keys) and not displayed:
                continue  # a value of another kind: not a registry canary reads
            flags[key] = succeeded
            self.scope.values[registry] = Keys(tuple(sorted(flags.items())))  # type: ignore[assignment]

    def _only_set_in(self, node: ast.Try, registry: str, key: str) -> bool:
        """Nothing in the module but ``node`` puts ``key`` in ``registry``: no other
        ``registry[key] = ...``, no ``update``/``setdefault``/``|=`` of it, and no display
        naming the key bound to it; nor does another file (``mod.registry[key] = ...``)."""
        name, spelled = re.escape(registry.encode()), re.escape(key.encode())
        store = re.compile(
            rb"(?<![\w])" + name + rb"\s*\[\s*[\"']" + spelled + rb"[\"']\s*\]\s*=(?!=)"
        )
        for other in self.project.files:
            if other != self.path and store.search(self.project.text(other)):
                return False
        end = node.end_lineno or node.lineno
        for statement in self.project.naming(self.path, registry):
            for child in ast.walk(statement):
                inside = node.lineno <= getattr(child, "lineno", 0) <= end
                if fallbacks.set_key(child) == (registry, key) and not inside:
                    return False
                if isinstance(child, ast.AugAssign) and _names(child.target, registry):
                    return False
                if (
                    isinstance(child, ast.Attribute)
                    and _names(child.value, registry)
                    and child.attr in ("update", "setdefault", "__setitem__")
                ):
                    return False
                if (
                    isinstance(child, ast.Assign)
                    and any(_names(t, registry) for t in child.targets)
                    and isinstance(child.value, ast.Dict)
                    and any(
                        (isinstance(k, ast.Constant) and k.value == key) or k is None
                        for k in child.value.keys
                    )
                ):
                    return False
        return True

    def _never_taken(self, handler: ast.ExceptHandler, body: list[ast.stmt]) -> bool:
        """``except PackageNotFoundError`` around reads of upstream packages' installed
        versions only: each is installed on every release checked, so nothing there runs
        (optimum-intel's ``_transformers_available = False``), as
        :mod:`canary.surface.versiontests` reads it in a helper."""
        kind = handler.type
        name = kind.attr if isinstance(kind, ast.Attribute) else getattr(kind, "id", None)
        if name != "PackageNotFoundError" or not body:
            return False
        return all(
            isinstance(statement, ast.Assign)
            and isinstance(self._version_fact(statement.value), guards.InstalledVersion)
            for statement in body
        )

    def _none_harmless(self, node: ast.Try, name: str) -> bool:
        """Whether ``name``, set to None where the imports of ``node`` fail, is read
        nowhere a None can break: in the module, or, in a function, in that function (a
        local name: nothing else reads it, unless it is declared ``global``/``nonlocal``)."""
        if self.scope is self.module_scope and not self.function:
            return self.project.none_harmless(self.path, node, name)
        function = self.function_node
        if function is None or self.scope.is_class:
            return False
        return fallbacks.none_is_local_and_harmless(function, name)

    def _unbound_harmless(self, node: ast.Try, name: str, *, kept: bool) -> str:
        """Why ``name``, left as it was where the body of ``node`` stops at a failed
        import, breaks nothing (""): it may). In a function, its body is the block; at
        module level the module, and no other file may name it (it may import it)."""
        if self.function_node is not None:
            function = self.function_node
            if fallbacks.declared_outside(function, name):
                return ""  # a global: read wherever the module is
            body = function.body
            block = fallbacks.Block(
                self.project.lines(self.path),
                body[0].lineno,
                function.end_lineno or body[-1].lineno,
                lambda: body,
            )
            return fallbacks.unbound_is_harmless(block, name, node, kept=kept)
        if self.scope is not self.module_scope:
            return ""  # a class body: its names are read as attributes, anywhere
        return self.project.unbound_harmless(self.path, node, name, kept=kept)

    def _temporary(self, name: str, handler: ast.ExceptHandler) -> bool:
        """Whether ``name`` is a local of the function ``handler`` lies in that nothing
        outside the handler reads: what it builds its fallback from, never a flag."""
        function = self.function_node
        if function is None or self.scope.is_class or fallbacks.declared_outside(function, name):
            return False
        return fallbacks.read_only_in(function, handler, name)

    def _flag_harmless(self, name: str) -> bool:
        """Whether no read of the flag ``name`` raises where it is false: in its function
        (a local name), or in every file that names it (a module's, or a global)."""
        function = self.function_node
        if function is not None and not fallbacks.declared_outside(function, name):
            return not self.scope.is_class and fallbacks.flag_never_raises(function, name)
        if function is None and self.scope is not self.module_scope:
            return False  # a class attribute: read as an attribute, anywhere
        return self.project.flag_harmless(self.path, name)

    def _upstream_imported(self, body: list[ast.stmt]) -> tuple[str, ...]:
        """The upstream targets a block's own import statements import (other imports and
        statements beside them): all imported wherever the block ran to its end."""
        return tuple(
            target
            for node in body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for target in self._imports_only([node])
        )

    def _project_imported(self, body: list[ast.stmt]) -> bool:
        """Whether a block's own import statements load a module of the project."""
        for node in body:
            if isinstance(node, ast.Import):
                bases = [(alias.name, ()) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (base := self._absolute(node)) is not None:
                bases = [(base, [alias.name for alias in node.names])]
            else:
                continue
            if any(importers.loaded_by(b, n, self.project.modules) for b, n in bases):
                return True
        return False

    def _returned_from(self, node: ast.Try) -> tuple[str, ...]:
        """The upstream imports of a ``try`` body that returns once they succeed, when every
        handler catches their ImportError and goes on (soup-cli's ``try: from
        trl.experimental.ppo import PPOTrainer; return PPOTrainer except ImportError:
        pass``): what follows runs only where one of them failed. () otherwise."""
        *imports, last = node.body
        if (
            not isinstance(last, ast.Return)
            or node.orelse
            or node.finalbody
            or not node.handlers
            or not all(fallbacks.catches_import_error(h) for h in node.handlers)
            or any(guards.exits(h.body) for h in node.handlers)
            or not all(isinstance(n, (ast.Name, ast.Constant)) for n in fallbacks.returned(last))
        ):
            return ()
        return self._imports_only(imports)

    def _imports_only(self, body: list[ast.stmt]) -> tuple[str, ...]:
        """The upstream targets a ``try`` body imports, when it does nothing else (only
        their failure can raise ImportError there); () otherwise."""
        targets: list[str] = []
        for node in body:
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(node)
                if base is None or any(alias.name == "*" for alias in node.names):
                    return ()
                names = [f"{base}.{alias.name}" for alias in node.names]
            elif (module := self._module_bound(node)) is not None:
                names = [module]
            elif fallbacks.harmless(node):
                continue
            else:
                return ()
            if not all(self.project.is_upstream(name) for name in names):
                return ()
            targets += names
        return tuple(targets)

    def _reads_only(self, body: list[ast.stmt]) -> tuple[str, ...]:
        """The upstream attributes a ``try`` body reads into names, when it does nothing
        else (``cls = transformers.AutoModelForImageTextToText``: only their absence can
        raise AttributeError there); () otherwise."""
        targets: list[str] = []
        for node in body:
            if (
                isinstance(node, ast.Assign)
                and all(isinstance(t, ast.Name) for t in node.targets)
                and isinstance(node.value, ast.Attribute)
                and (path := self.upstream_path(node.value)) is not None
            ):
                targets.append(path)
            elif not fallbacks.harmless(node):
                return ()
        return tuple(targets)

    def _module_bound(self, node: ast.stmt) -> str | None:
        """The module a statement imports and binds to a name, ``mod =
        importlib.import_module("x")`` or ``__import__("x", fromlist=[...])``: an import,
        as ``import x`` is (None: it is no such statement)."""
        if not (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and all(isinstance(t, ast.Name) for t in node.targets)
        ):
            return None
        return self._imported_module(node.value)

    def s_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, nested: bool) -> None:
        self.scope.names[node.name] = ProjectFunction(self.module, node.name, node)
        self.scope.values.pop(node.name, None)
        if not nested:
            return
        for child in (*node.decorator_list, *syntax.defaults(node.args)):
            self.expr(child)
        with self.entered(annotating=True):
            for annotation in syntax.annotations(node):
                self.expr(annotation)
        if self.summarising or self._skippable(node):
            return  # a helper's nested functions are not its return value
        self.registration(node)
        parent = self.scope
        while parent.is_class and parent.parent is not None:
            parent = parent.parent
        within = node.name if self.scope is self.module_scope else self.within
        if self.scope.is_class and node.name in self.static_methods.get(self.class_name, ()):
            within = f"{self.class_name}.{node.name}"
        with self.entered(
            scope=Scope(parent=parent),
            conditional=0,
            function=id(node),
            imported=frozenset(),
            function_node=node,
            narrowing=NOTHING_KNOWN,
            within=within,
            swallowing=0,
        ):
            for arg in syntax.arguments(node.args):
                self.scope.names[arg] = None
            self.block(node.body)

    def s_class(self, node: ast.ClassDef, nested: bool) -> None:
        self.scope.names[node.name] = None
        self.scope.values.pop(node.name, None)
        if not nested or self._skippable(node):
            return
        for child in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.expr(child)
        class_name = node.name if self.scope is self.module_scope else ""
        with self.entered(scope=Scope(parent=self.scope, is_class=True), class_name=class_name):
            if class_name:
                static = [m for m in node.body if _static_method(m)]
                self.static_methods[class_name] = frozenset(m.name for m in static)  # type: ignore[union-attr]
                if self.interesting is not None:
                    # a member naming one that references upstream is a way into it: walked
                    self.interesting |= {m.name for m in static if not self._skippable(m)}  # type: ignore[union-attr]
            self.block(node.body)

    def import_modules(self, node: ast.Import) -> None:
        for alias in node.names:
            self.load(node, alias.name, ())
            if self.project.is_upstream(alias.name):
                self.use(Kind.IMPORT, alias.name, node)
            if alias.asname:
                self.bind(alias.asname, self.project.module_binding(alias.name))
            else:
                top = alias.name.split(".", 1)[0]
                self.bind(top, self.project.module_binding(top))

    def import_from(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node)
        if base is None:
            return
        star = any(alias.name == "*" for alias in node.names)
        self.load(node, base, None if star else [alias.name for alias in node.names])
        for alias in node.names:
            if self.project.is_upstream(base):
                self.import_upstream(node, base, alias)
            elif base in self.project.path_of:
                self.import_project(base, alias)
            elif alias.name != "*":
                dotted = f"{base}.{alias.name}"
                known = base.split(".", 1)[0] in STDLIB or self.project.outside_parser(dotted)
                self.bind(alias.asname or alias.name, Stdlib(dotted) if known else None)

    def import_upstream(self, node: ast.ImportFrom, base: str, alias: ast.alias) -> None:
        target = base if alias.name == "*" else f"{base}.{alias.name}"
        self.use(Kind.IMPORT, target, node)
        if alias.name != "*":
            self.bind(alias.asname or alias.name, Upstream(target))
        elif self.scope is self.module_scope and base not in self.upstream_stars:
            self.upstream_stars.append(base)

    def import_project(self, base: str, alias: ast.alias) -> None:
        if alias.name != "*":
            name = alias.asname or alias.name
            member = self.project.member(base, alias.name)
            self.bind(name, member)
            if isinstance(member, ProjectFunction):
                role = callers.Role.RENAMES if alias.asname else callers.Role.BINDS
                self.mention(alias, member, alias.name, role)
            bound = self.project.exports(base).conditions.get(alias.name)
            if bound is not None:  # bound there under a condition: so is it here
                self.scope.conditions[name] = Bound(
                    self.window & bound.window, self.fallback_of or bound.fallback_of
                )
            alternatives = self.project.exports(base).alternatives.get(alias.name)
            if alternatives:  # and so are the other objects it may be there
                self.scope.alternatives[name] = alternatives
            value = self.project.exports(base).values.get(alias.name)
            if value is not None:
                self.scope.values[name] = value
            return
        exports = self.project.exports(base)
        public = [n for n in exports.names if not n.startswith("_")]
        for name in public:
            self.bind(name, exports.names[name])
        if self.scope is self.module_scope:
            # what its own upstream star imports gave it, a star import of it gives on
            for star in exports.upstream_stars:
                if star not in self.upstream_stars:
                    self.upstream_stars.append(star)
        for name, value in exports.values.items():
            if not name.startswith("_"):
                self.scope.values[name] = value

    def load(self, node: ast.stmt, base: str, names: list[str] | tuple[()] | None) -> None:
        """Record the project modules an import loads, with where it runs."""
        if not self.emit or self.applying or self.summarising:
            return
        modules = importers.loaded_by(base, names, self.project.modules)
        if not modules:
            return
        bound = self._bound_at(node)
        requires = self._found()
        for module in sorted(modules):
            self.loads.append(
                importers.Load(
                    module,
                    self.path,
                    node.lineno,
                    at_import=self.function == 0,
                    versions=bound.window.specifiers(),
                    after=tuple(sorted(self.imported)),
                    requires=requires,
                    fallback_of=bound.fallback_of,
                    undecided=self.undecided,
                    handled=self._handled_import(node),
                    lacks=self._lacked(),
                    within=self.within,
                )
            )

    def registration(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Record a module-level function registered only under model types (every
        decorator a registration: ``@register_loader("qwen3_5_moe", ...)``) as a way into
        it, with where the registration runs and those types (:mod:`canary.surface.callers`);
        recorded at the name it defines, so the definition is accounted for."""
        if (
            not self.emit
            or self.applying
            or self.scope is not self.module_scope
            or not node.decorator_list
            or "transformers" not in self.project.upstream
        ):
            return
        keys = [guards.registered_under(d, strings=self._strings) for d in node.decorator_list]
        if not all(keys):
            return  # another decorator may register it under anything, or call it
        line = self.project.lines(self.path)[node.lineno - 1]
        defined = callers.DEFINITION.match(line, node.col_offset)
        if defined is None or defined.group(1) != node.name.encode():
            return  # spelled across lines: the text scan would not find it here
        self.mentions.append(
            callers.Mention(
                (self.module, node.name),
                callers.Role.NAMES,
                self.path,
                node.lineno,
                defined.start(1),
                versions=self.window.specifiers(),
                requires=self._found(),
                undecided=self.undecided,
                fallback_of=self.fallback_of,
                lacks=self._lacked(),
                registered=tuple(sorted({model_requirement(types) for types in keys})),
            )
        )

    def mention(
        self,
        node: ast.Name | ast.Attribute | ast.alias | ast.Constant,
        binding: object,
        name: str,
        role: callers.Role = callers.Role.NAMES,
    ) -> None:
        """Record a place that names a module-level function of the project, with where it
        runs (a nested function of the same name is another one: not recorded)."""
        if not self.emit or self.applying or self.summarising:
            return
        if not isinstance(binding, ProjectFunction) or binding.name != name:
            return
        if binding.module == self.module and self.module_scope.names.get(name) is not binding:
            return
        self._mentioned((binding.module, name), node, name, role)

    def _static_owner(self, name: str) -> str:
        """The module-level class ``name`` is here, whose static methods ``name.m`` reads:
        the class by its name, or ``self``/``cls`` in one of its methods ("": none)."""
        if name in ("self", "cls") and self.function and self.class_name:
            return self.class_name
        if name in self.static_methods and self.scope.lookup(name) is None:
            return name
        return ""

    def _mentioned(
        self,
        function: callers.Function,
        node: ast.Name | ast.Attribute | ast.alias | ast.Constant,
        name: str,
        role: callers.Role = callers.Role.NAMES,
    ) -> None:
        """Record a place that names ``function`` (its last part ``name``) as it runs."""
        if not self.emit or self.applying or self.summarising:
            return
        if isinstance(node, ast.Attribute):  # the name ends the chain
            line, offset = node.end_lineno, (node.end_col_offset or 0) - len(name)
        elif isinstance(node, ast.Constant):  # "name": the text starts past the quote
            line, offset = node.lineno, node.col_offset + 1
        else:
            line, offset = node.lineno, node.col_offset
        bound = self._bound_at(node) if isinstance(node, ast.expr) else Bound(self.window)
        self.mentions.append(
            callers.Mention(
                function,
                role,
                self.path,
                line or 0,
                offset,
                within=self.within,
                versions=bound.window.specifiers(),
                after=tuple(sorted(self.imported)),
                requires=self._found(),
                undecided=self.undecided,
                fallback_of=bound.fallback_of,
                lacks=self._lacked(),
                caught=bool(self.swallowing) and self.called is node,
            )
        )

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        return syntax.absolute_module(self.module, self.is_package, node)

    def assign(
        self, target: ast.expr, value: ast.expr | None, *, augmented: ast.AugAssign | None = None
    ) -> None:
        if isinstance(target, ast.Name):
            if augmented is None:  # x += ...: a text stays text, a binding what it was
                self.assign_name(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.assign_unpacking(target, value)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, None)
        elif isinstance(target, ast.Attribute):
            binding, steps, complete = self.chain(target)
            if isinstance(binding, Upstream) and steps:
                kind = Kind.PATCH if complete else Kind.ATTRIBUTE
                stash = self._stash(binding.path, value)
                constant = isinstance(value, ast.Constant)
                # x.y += 1 reads x.y first: it replaces nothing upstream lacks, it raises
                binds = complete and augmented is None
                bound = self.binding(value) if binds else None
                aliases = bound.path if isinstance(bound, Upstream) else ""
                self.use(
                    kind,
                    binding.path,
                    target,
                    replaces=binds,
                    aliases=aliases,
                    exports=binds and not aliases and self._own_name(value, target.attr),
                    function=isinstance(bound, ProjectFunction),
                    bound_object=ast.unparse(value) if binds and _named(value) else "",
                    stash=stash,
                    constant=constant,
                    reads_self=(
                        syntax.read_on_self(bound.node)
                        if isinstance(bound, ProjectFunction)
                        else frozenset()
                    ),
                )
                if augmented is not None and complete:
                    self.use(Kind.ATTRIBUTE, binding.path, target)
            self.chain_root(target)
        elif isinstance(target, ast.Subscript):
            self.expr(target.slice)
            binding, _, complete = self.chain(target.value)
            if isinstance(binding, Upstream) and complete:
                self.use(Kind.PATCH, binding.path, target)
            if isinstance(target.value, ast.Attribute):
                self.chain_root(target.value)
            elif not isinstance(target.value, ast.Name):
                self.expr(target.value)

    def _stash(self, target: str, value: ast.expr | None) -> str | None:
        """The upstream original that ``target = value`` keeps beside it, under a private
        name of its own on the same object: ``X._orig_f = X.f``, or its source text,
        ``X._orig_f = inspect.getsource(X.f)`` (kept to read back, or to patch again from).
        ``X.f = saved_f`` (saved_f = X.f) and ``X.f = X._orig_f`` restore, they keep nothing;
        so does ``X._a = X._b``, a stash made the other way put back. A text is never a
        restore: no upstream attribute holds its own object's source."""
        owner, _, name = target.rpartition(".")
        if value is None or not name.startswith("_"):
            return None
        original = self.binding(value)
        if isinstance(original, Upstream):
            kept = original.path
            sibling = kept != target and kept.rpartition(".")[0] == owner
            return kept if sibling and not kept.rpartition(".")[2].startswith("_") else None
        text = self.value(value)
        if not isinstance(text, Text) or not text.origins:
            return None
        siblings = all(o != target and o.rpartition(".")[0] == owner for o in text.origins)
        return min(text.origins) if siblings else None

    def assign_name(self, name: str, value: ast.expr | None) -> None:
        binding = self.binding(value)
        text = self.value(value)
        # a version test or an installed version is kept like a constant (imported with it
        # too): IS_V5 = Version(transformers.__version__) >= ... gates where it is tested
        fact = None if text is not None or value is None else self._version_fact(value)
        presence = None
        if text is None and fact is None and binding is None and value is not None:
            true, false = self._present(value, positive=True), self._present(value, positive=False)
            presence = Presence(true, false) if true or false else None
        # old = getattr(x, "y", None): where old is None, x.y is not there (vllm's
        # `if old is None: x.y = new` adds the name only where upstream lacks it)
        looked_up = self._looked_up(value) if isinstance(value, ast.Call) else None
        if looked_up is not None and _defaults_to_none(value):
            self.scope.absent_if_none[name] = looked_up
        else:
            self.scope.absent_if_none.pop(name, None)
        if text is None and value is not None and self._finds_upstream(value):
            text = Literals((True,))  # find_spec("transformers") is not None: installed
        if self.conditional and _a_flag(text):
            # a flag set in a branch or handler (`except PackageNotFoundError: available =
            # False`) is one value among others: no constant, unless every one is known
            known = self.scope.values.get(name)
            bound = name in self.scope.names
            text = union(known, text) if isinstance(known, Literals) else None if bound else text
        self.bind(name, binding)
        if text is not None:
            self.scope.values[name] = text
        elif fact is not None:
            self.scope.values[name] = fact  # type: ignore[assignment]
        elif presence is not None:
            self.scope.values[name] = presence  # type: ignore[assignment]
        elif not self.conditional or _a_flag(self.scope.values.get(name)):
            self.scope.values.pop(name, None)  # unknown now (a flag: one of several values)

    def _finds_upstream(self, value: ast.expr) -> bool:
        """``importlib.util.find_spec("<upstream>") is not None``: true on every release
        checked, where the package is installed."""
        if not (
            isinstance(value, ast.Compare)
            and len(value.ops) == 1
            and isinstance(value.ops[0], ast.IsNot)
            and isinstance(value.comparators[0], ast.Constant)
            and value.comparators[0].value is None
            and isinstance(value.left, ast.Call)
            and len(value.left.args) == 1
        ):
            return False
        if self._callee(value.left) != Stdlib("importlib.util.find_spec"):
            return False
        package = self._literal_string(value.left.args[0])
        return package is not None and self.project.is_upstream(package)

    def assign_unpacking(self, target: ast.Tuple | ast.List, value: ast.expr | None) -> None:
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            for element, element_value in zip(target.elts, value.elts, strict=True):
                self.assign(element, element_value)
            return
        whole = self.value(value)
        # major, minor = map(int, transformers.__version__.split(".")[:2]): the numbers
        numbers = None if value is None else guards.release_numbers(value, self)
        if numbers is not None and numbers.length not in (None, len(target.elts)):
            numbers = None  # unpacking raises: nothing after it runs
        for index, element in enumerate(target.elts):
            if isinstance(element, ast.Name):
                self.bind(element.id, None)
                if index == 0 and isinstance(whole, (Text, Param)):
                    self.scope.values[element.id] = whole  # text, extra = helper(text)
                elif numbers is not None:
                    number = guards.InstalledNumber(numbers.package, index)
                    self.scope.values[element.id] = number  # type: ignore[assignment]
            else:
                self.assign(element, None)

    def bind_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        value = self.value(iterable)
        items = elements(value) if isinstance(value, Literals) else None
        self._bind_items(target, items)

    def _bind_items(self, target: ast.expr, items: Literals | None) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, None)
            if items is not None:
                self.scope.values[target.id] = items
            else:
                self.scope.values.pop(target.id, None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            columns = unpack(items, len(target.elts)) if items else [None] * len(target.elts)
            for element, column in zip(target.elts, columns, strict=True):
                self._bind_items(element, column)
        else:
            self.assign(target, None)

    def expr(self, node: ast.expr) -> None:
        kind = type(node)
        if kind is ast.Name:
            if node.id in self.functions:  # type: ignore[attr-defined]
                self.mention(node, self.root(node), node.id)  # type: ignore[arg-type]
            elif (
                not self.annotating
                and type(node.ctx) is ast.Load  # type: ignore[attr-defined]
                and (star := self.star_of(node)) is not None
            ):
                # bound by no statement to see: its star import is read where it is used
                self.use(Kind.ATTRIBUTE, f"{star}.{node.id}", node)  # type: ignore[attr-defined]
            return  # most expressions: a bare name is its binding's reference, made there
        if kind is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            if type(value) is str:
                if value.partition(".")[0] in self.project.tops:
                    self.strings.add(value)  # a module a lazy registry names (importers.py)
                elif value[:1] == "." and (
                    named := importers.relative_name(self.module, self.is_package, value)
                ):
                    self.strings.add(named)  # import_module(".x", package): relative to here
            return
        handler = _EXPRESSIONS.get(kind)
        if handler is not None:
            handler(self, node)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
            elif isinstance(child, ast.keyword):
                self.expr(child.value)

    def e_attribute(self, node: ast.Attribute) -> None:
        binding, steps, complete = self.chain(node)
        if complete and isinstance(binding, ProjectFunction):
            self.mention(node, binding, node.attr)
        elif isinstance(node.value, ast.Name) and node.attr in self.static_methods.get(
            owner := self._static_owner(node.value.id), ()
        ):
            self._mentioned((self.module, f"{owner}.{node.attr}"), node, node.attr)
        if isinstance(binding, Upstream) and steps:
            owner, _, name = binding.path.rpartition(".")
            if name in _VALUE_METHODS and _VALUE_NAME.search(owner.rpartition(".")[2]):
                # MAPPING.append(...), logger.addFilter(...): a method of a value, not
                # upstream API; the value itself is the reference
                binding, steps = Upstream(owner), steps - 1
            if steps:
                self.use(Kind.ATTRIBUTE, binding.path, node)
        self.chain_root(node)

    def e_boolean(self, node: ast.BoolOp) -> None:
        # a and b: b runs where a held; a or b: where a did not
        positive = isinstance(node.op, ast.And)
        with self.restored("guarded", "present", "window"):
            for value in node.values:
                self.expr(value)
                self.guarded += guards.is_guard_test(value)
                self.present |= self._present(value, positive=positive)
                self.window &= self._window(value, positive=positive)

    def e_conditional(self, node: ast.IfExp) -> None:
        self.expr(node.test)
        guard = guards.is_guard_test(node.test)
        with self.entered(guarded=self.guarded + guard):
            for positive, branch in ((True, node.body), (False, node.orelse)):
                with self.entered(
                    present=self.present | self._present(node.test, positive=positive),
                    window=self.window & self._window(node.test, positive=positive),
                ):
                    self.expr(branch)

    def e_lambda(self, node: ast.Lambda) -> None:
        for child in syntax.defaults(node.args):
            self.expr(child)
        with self.entered(scope=Scope(parent=self.scope)):
            for arg in syntax.arguments(node.args):
                self.scope.names[arg] = None
            self.expr(node.body)

    def e_walrus(self, node: ast.NamedExpr) -> None:
        self.expr(node.value)
        self.assign(node.target, node.value)

    def chain_root(self, node: ast.Attribute) -> None:
        root: ast.expr = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            self.expr(root)

    def e_comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        with self.entered(scope=Scope(parent=self.scope), conditional=self.conditional + 1):
            for generator in node.generators:
                self.expr(generator.iter)
                self.bind_loop(generator.target, generator.iter)
                for test in generator.ifs:
                    self.expr(test)
            if isinstance(node, ast.DictComp):
                self.expr(node.key)
                self.expr(node.value)
            else:
                self.expr(node.elt)

    def _own_name(self, value: ast.expr | None, name: str) -> bool:
        """``value`` is the project's own name ``name`` (``m.Version = Version``): a name a
        scope binds, to anything but upstream's."""
        return (
            isinstance(value, ast.Name)
            and value.id == name
            and self.scope.lookup(name) is not UNBOUND
            and not isinstance(self.binding(value), Upstream)
        )

    def e_call(self, node: ast.Call) -> None:
        func = node.func
        args = node.args
        if self._builtin(func, "hasattr"):
            self._attribute_by_name(node, presence=True)
        elif (target := self._looked_up(node)) is not None:
            self.use(Kind.ATTRIBUTE, target, node, presence=guards.is_presence_call(node))
        elif len(args) >= 2 and (self._builtin(func, "setattr") or self._binder(node)):
            binding, _, complete = self.chain(args[0])
            name = self._literal_string(args[1])
            if isinstance(binding, Upstream) and complete and name is not None:
                value = args[2] if len(args) > 2 else None
                bound = self.binding(value)
                aliases = bound.path if isinstance(bound, Upstream) else ""
                exports = not aliases and self._own_name(value, name)
                self.use(
                    Kind.PATCH,
                    f"{binding.path}.{name}",
                    node,
                    replaces=True,
                    aliases=aliases,
                    exports=exports,
                    function=isinstance(bound, ProjectFunction),
                    bound_object=ast.unparse(value) if _named(value) else "",
                )
        if (module := self._imported_module(node)) is not None and self.project.is_upstream(module):
            self.use(Kind.IMPORT, module, node)
        callee = self.binding(func)
        if callee == Stdlib("inspect.getsource") and args:
            self._source(args[0], node)
        elif isinstance(callee, ProjectFunction) and self.emit:
            self._apply(callee, node)
            if self.project.takes_source(callee):
                summary, names = self.project.summary(callee)
                if isinstance(summary, Param) and summary.source:
                    argument = syntax.argument(node, summary.index, names)
                    if argument is not None:
                        self._source(argument, node)
        self.anchors_of_call(node, callee)
        self.called = func
        self.expr(func)
        for child in (*args, *(k.value for k in node.keywords)):
            self.expr(child)

    def _binder(self, node: ast.Call) -> bool:
        """A call that binds an attribute by name, as ``setattr`` does (:data:`BINDERS`)."""
        callee = self._callee(node)
        return isinstance(callee, Stdlib) and callee.path in BINDERS

    def _attribute_by_name(self, node: ast.Call, *, presence: bool) -> None:
        if len(node.args) < 2:
            return
        binding, _, complete = self.chain(node.args[0])
        name = self._literal_string(node.args[1])
        if isinstance(binding, Upstream) and complete and name is not None:
            self.use(Kind.ATTRIBUTE, f"{binding.path}.{name}", node, presence=presence)

    def _source(self, argument: ast.expr, node: ast.Call) -> None:
        for path in self.upstream_objects(argument):
            self.use(Kind.SOURCE, path, node)

    def _apply(self, callee: ProjectFunction, node: ast.Call) -> None:
        """A project function given a source text or an upstream object: what it does with
        them is the caller's (anchors on the text, a source read or a patch made through the
        object)."""
        positional = list(itertools.takewhile(lambda a: not isinstance(a, ast.Starred), node.args))
        given = {id(a): self._given(a) for a in (*positional, *(k.value for k in node.keywords))}
        if not self._worth_applying(callee, given.values()):
            # most calls: decided before the callee is parsed for its parameter names
            return
        names = syntax.positional(callee.node)
        arguments = dict(enumerate(positional))
        arguments.update((names.index(k.arg), k.value) for k in node.keywords if k.arg in names)
        values: dict[int, Value | Upstream] = {}
        selector = None
        for index, argument in arguments.items():
            if self.selector is not None and syntax.is_name(argument, self.selector):
                selector = index
            value = given[id(argument)]
            if value is not None:
                values[index] = value
        if self._worth_applying(callee, values.values()):
            self.project.apply(
                callee,
                values,
                selector=selector,
                selected=self.selected if selector is not None else None,
                depth=self.depth + 1 if self.applying else 0,
            )

    def _given(self, argument: ast.expr) -> Value | Upstream | None:
        """What an argument hands a project function: an upstream object or a value."""
        binding, _, complete = self.chain(argument)
        return binding if isinstance(binding, Upstream) and complete else self.value(argument)

    def _worth_applying(
        self, callee: ProjectFunction, given: Iterable[Value | Upstream | None]
    ) -> bool:
        kinds = {type(v) for v in given}
        return Text in kinds or (Upstream in kinds and self.project.acts_on_objects(callee))

    def e_compare(self, node: ast.Compare) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, (ast.In, ast.NotIn)):
                text = self.value(right)
                if isinstance(text, Text) and self.done_test and isinstance(op, ast.In):
                    self.skip("'if x in source: return' (x is what the patch would add)", node)
                elif isinstance(text, Text):
                    self.anchors(text, self.value(left), node, regex=False)
            left = right
        for child in (node.left, *node.comparators):
            self.expr(child)


_EXPRESSIONS: dict[type, Callable[[Walker, Any], None]] = {
    ast.Attribute: Walker.e_attribute,
    ast.Call: Walker.e_call,
    ast.Compare: Walker.e_compare,
    ast.BoolOp: Walker.e_boolean,
    ast.IfExp: Walker.e_conditional,
    ast.ListComp: Walker.e_comprehension,
    ast.SetComp: Walker.e_comprehension,
    ast.GeneratorExp: Walker.e_comprehension,
    ast.DictComp: Walker.e_comprehension,
    ast.Lambda: Walker.e_lambda,
    ast.NamedExpr: Walker.e_walrus,
}


_STATEMENTS: dict[type, Callable[[Walker, Any, bool], None]] = {
    ast.Import: Walker.s_import,
    ast.ImportFrom: Walker.s_import,
    ast.FunctionDef: Walker.s_function,
    ast.AsyncFunctionDef: Walker.s_function,
    ast.ClassDef: Walker.s_class,
    ast.Assign: Walker.s_assign,
    ast.AnnAssign: Walker.s_annotated,
    ast.AugAssign: Walker.s_augmented,
    ast.If: Walker.s_if,
    **dict.fromkeys(_TRY, Walker.s_try),
    ast.With: Walker.s_with,
    ast.AsyncWith: Walker.s_with,
    ast.For: Walker.s_for,
    ast.AsyncFor: Walker.s_for,
    ast.While: Walker.s_while,
    ast.Return: Walker.s_return,
    ast.Match: Walker.s_match,
}


def _a_flag(value: object) -> bool:
    """Literal values none of which is a string (a flag, a number, None): read as constants
    by version helpers, so never taken from one branch alone."""
    return isinstance(value, Literals) and not any(isinstance(v, str) for v in value.values)


def _named(value: ast.expr | None) -> bool:
    """``value`` names an object (``f``, ``m.f``): one object bound under two names is one
    patch (a literal such as ``None`` is a stub per name)."""
    while isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, ast.Name)


def _names(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _none_where_handled(handlers: Iterable[ast.ExceptHandler], name: str) -> bool:
    """Some handler binds ``name`` to None, and every other one leaves: past the ``try``,
    the name is None exactly where a handler ran."""
    handlers = list(handlers)
    binds = [fallbacks.binds_none(h.body, name) for h in handlers]
    return any(binds) and all(
        bound or guards.exits(h.body) for bound, h in zip(binds, handlers, strict=True)
    )


def _defaults_to_none(lookup: ast.Call) -> bool:
    """``getattr(x, "y", None)`` or ``x.__dict__.get("y")``: None where ``x.y`` is not there
    (a plain ``getattr(x, "y")`` raises there instead)."""
    if isinstance(lookup.func, ast.Name) and lookup.func.id == "getattr":
        default = lookup.args[2] if len(lookup.args) == 3 else None
        return isinstance(default, ast.Constant) and default.value is None
    return len(lookup.args) == 1 and not lookup.keywords  # a namespace's .get("y")


def _static_method(member: ast.stmt | Definition) -> bool:
    """A ``def`` whose one decorator is ``@staticmethod`` (not a dunder): a function kept on
    its class, called as ``C.m(...)`` or ``self.m(...)``, never bound to an instance. A
    member not parsed yet is read from its text: its first line is its decorator's."""
    if isinstance(member, Definition):
        lines = member.text.lstrip().splitlines()
        static = member.kind == "def" and len(lines) > 1 and lines[0].strip() == "@staticmethod"
        static = static and not lines[1].lstrip().startswith("@")
    else:
        static = (
            isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef))
            and len(member.decorator_list) == 1
            and syntax.is_name(member.decorator_list[0], "staticmethod")
        )
    return static and callers.carried(member.name)  # type: ignore[union-attr]
