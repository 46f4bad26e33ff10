"""Where code runs, from the tests around it: version windows, the project's version
helpers evaluated, presence tests, selected methods; each use recorded with where it runs."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from canary.surface import anchortests, guards, probes, versiontests
from canary.surface.extract import domains, syntax
from canary.surface.extract.scopes import (
    VERSION_HELPER,
    Bound,
    Keys,
    Presence,
    ProjectFunction,
    ProjectModule,
    Scope,
    Stdlib,
    Upstream,
    may_mention,
)
from canary.surface.extract.uses import Use
from canary.surface.extract.values import NOT_LITERAL, Values
from canary.surface.model import Kind, Match, ReadFrom, model_requirement
from canary.surface.texts import Literals, elements

_ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
# the calls whose result's ``.version`` is a distribution's installed version
_DISTRIBUTIONS = (
    Stdlib("pkg_resources.get_distribution"),
    Stdlib("importlib.metadata.distribution"),
)
# a fact of a branch beside "+x" (there) and "-x" (not there): where x is not there, the
# branch runs, and where it is, it may too
ADMITS_ABSENT = "~"
_CHECKING = re.compile(r"check|require|ensure|assert|verify|validate|raise|fail", re.IGNORECASE)


class Conditions(Values):
    """The tests and checks around a site read as where it runs, and its use recorded so."""

    def helper_outcome(self, node: ast.Call) -> versiontests.Outcome | None:
        """A call of a project function, as a version test; None: no project function, or
        one whose text never speaks of versions (it cannot compare them)."""
        function = self._callee(node)
        if not isinstance(function, ProjectFunction):
            return None
        if VERSION_HELPER.search(function.name) is None and not may_mention(
            function, "version", "require"
        ):
            return None
        params = self._bound_arguments(function, node)
        if params is None:
            return None
        return self.project.helper_call(function, params, self.helper_depth + 1)

    def _bound_arguments(
        self, function: ProjectFunction, node: ast.Call
    ) -> Mapping[str, object] | None:
        """The call's arguments bound to ``function``'s parameters, each read as a constant
        here or, for a default, in the callee's module; None: the call passes *args or **kwargs."""
        helper = type(self)(self.project, self.project.path_of[function.module], emit=False)
        exports = self.project.exports(function.module)
        helper.module_scope = helper.scope = Scope(
            exports.names, exports.values, conditions=exports.conditions
        )
        return versiontests.bind_arguments(function.node, node, self._argument, helper.constant_of)

    def _argument(self, node: ast.expr) -> object:
        """An argument as a helper is given it: a constant, or an installed version
        (``compare_versions(parse(v), op, "4.57")``)."""
        fact = guards.version_fact(node, self)
        return fact if isinstance(fact, guards.InstalledVersion) else self.constant_of(node)

    def dispatch_table(self, node: ast.expr) -> dict[str, str] | None:
        """A module-level dict display of string keys to ``operator`` comparisons
        (``{">=": op.ge, ...}``), or ``D.keys()`` of one: key -> comparison symbol."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "keys"
            and not node.args
        ):
            node = node.func.value
        if not isinstance(node, ast.Name) or (
            self.scope is not self.module_scope and node.id in self.scope.names
        ):
            return None  # a local of the function: no module table
        return self.project.table(self.path, node.id)

    def module_table(self, name: str) -> dict[str, str] | None:
        """The dispatch table this module binds ``name`` to at its top level, once, to a
        dict display, or imports it as from another project module (accelerate's
        ``from .constants import STR_OPERATION_TO_FUNC``)."""
        exports = self.project.exports(self.module)
        self.module_scope = Scope(exports.names, exports.values, conditions=exports.conditions)
        self.scope = self.module_scope
        display = re.compile(rb"(?m)^" + re.escape(name.encode()) + rb"[ \t]*=[ \t]*\{")
        if display.search(self.project.text(self.path)) is None:
            return self._imported_table(name)  # read cheaply first: no line binds a display
        found: dict[str, str] | None = None
        for statement in self.project.naming(self.path, name):
            binds = [
                n
                for n in ast.walk(statement)
                if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
            ]
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and not binds:
                continue  # a function reading it
            if not binds:
                continue
            if found is not None or not (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and isinstance(statement.value, ast.Dict)
            ):
                return None  # bound more than once, or otherwise: not one table
            found = {}
            for key, value in zip(statement.value.keys, statement.value.values, strict=True):
                binding = self.binding(value)
                symbol = _COMPARISONS.get(binding.path) if isinstance(binding, Stdlib) else None
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or not symbol:
                    return None
                found[key.value] = symbol
        return found

    def _imported_table(self, name: str) -> dict[str, str] | None:
        """The table ``name`` is, where the module's one top-level binding of it is an
        import from another project module."""
        imports, others = [], 0
        for statement in self.project.naming(self.path, name):
            if isinstance(statement, ast.ImportFrom):
                imports += [(statement, a) for a in statement.names if (a.asname or a.name) == name]
            elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                others += any(
                    isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
                    for n in ast.walk(statement)
                )
        if len(imports) != 1 or others:
            return None  # bound more than once, or otherwise: not one table
        statement, alias = imports[0]
        module = syntax.absolute_module(self.module, self.is_package, statement)
        path = self.project.path_of.get(module or "")
        return None if path is None else self.project.table(path, alias.name)

    def returned_version(self, node: ast.Call) -> guards.InstalledVersion | None:
        """A project function that returns an upstream package's installed version
        (``_get_package_version("transformers")``), as called; None: it does not."""
        function = self._callee(node)
        if not isinstance(function, ProjectFunction) or self.helper_depth >= versiontests.DEPTH:
            return None
        if not may_mention(function, "version"):
            return None  # no installed version is read without naming one
        params = self._bound_arguments(function, node)
        if params is None:
            return None
        return self.project.installed_version(function, params, self.helper_depth + 1)

    def enter_helper(self, function: ProjectFunction, params: Mapping[str, object]) -> None:
        """Walk from ``function``'s own scope in its module, each parameter a string
        ``params`` binds to a literal."""
        exports = self.project.exports(self.module)
        self.module_scope = Scope(exports.names, exports.values, conditions=exports.conditions)
        self.scope = Scope(parent=self.module_scope)
        for arg in syntax.arguments(function.node.args):
            self.scope.names[arg] = None
        for name, value in params.items():
            if isinstance(value, str):
                self.scope.values[name] = Literals((value,))

    def version_returned(
        self, function: ProjectFunction, params: Mapping[str, object], depth: int
    ) -> guards.InstalledVersion | None:
        """What every ``return`` of ``function`` outside its exception handlers gives,
        when that is one package's installed version."""
        self.enter_helper(function, params)
        with self.entered(helper_depth=depth):
            handled = {
                id(n)
                for handler in ast.walk(function.node)
                if isinstance(handler, ast.ExceptHandler)
                for n in ast.walk(handler)
            }
            found: set[guards.InstalledVersion] = set()
            for node in ast.walk(function.node):
                if isinstance(node, ast.Return) and id(node) not in handled:
                    fact = None if node.value is None else guards.version_fact(node.value, self)
                    if not isinstance(fact, guards.InstalledVersion):
                        return None
                    found.add(fact)
                elif (
                    isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                    and node is not function.node
                ):
                    return None  # a nested function's returns are not its own
            return found.pop() if len(found) == 1 else None

    def call_gate(self, node: ast.Call) -> guards.VersionGate | None:
        outcome = self.helper_outcome(node)
        return None if outcome is None else outcome.value.gate

    def _undecided(self, node: ast.expr, *, check: bool = False) -> str:
        """Why a test or check decides where what follows runs and canary cannot say
        where: a call of a project function named for versions or requirements, or seen
        comparing an installed version (:attr:`versiontests.Outcome.unread`), that was not
        read as a window (""): none); ``check``: a call made as a statement, where
        what matters is whether it returns, not its value."""
        for part in ast.walk(node):
            if isinstance(part, ast.Compare) and (compared := self._compared_as_text(part)):
                return compared
            if not isinstance(part, ast.Call):
                continue
            function = self._callee(part)
            if not isinstance(function, ProjectFunction):
                if outside := self._outside_version_test(part, function):
                    return outside
                continue
            if self.version_parser(part.func):
                continue  # a parser declared as one orders versions: the comparison is read
            if check and not self.project.may_check(function):
                continue  # it returns wherever it is called: what follows runs
            outcome = self.helper_outcome(part)
            unread = "" if outcome is None else outcome.unread
            if VERSION_HELPER.search(function.name) is None and not unread:
                continue  # neither named for versions nor seen comparing one
            cond = None if outcome is None else outcome.returns if check else outcome.value
            readable = cond is not None and (cond.constant is not None or cond.gate is not None)
            if not readable:
                call = ast.unparse(part)
                call = call if len(call) <= 80 else f"{call[:77]}..."
                why = f" ({unread})" if unread else ""
                return f"runs only where {call} allows, which canary cannot evaluate{why}"
        return ""

    def _outside_version_test(self, node: ast.Call, callee: object) -> str:
        """Why a call of another package's function decides where what follows runs and
        canary cannot say where ("": it does not): named for versions or requirements,
        and naming an upstream package, in its name or a literal argument (optimum's
        ``is_transformers_version(">=", "4.53")``, read by optimum-onnx). Its source is
        not the project's, so it is not read."""
        if isinstance(callee, (Upstream, ProjectFunction, Stdlib)):
            return ""  # read as upstream's, the project's or a known library's
        if isinstance(guards.version_fact(node, self), guards.InstalledVersion):
            return ""  # an installed version, read as one
        name = guards.called_name(node)
        if VERSION_HELPER.search(name) is None:
            return ""
        literals = [
            a.value.lower()
            for a in (*node.args, *(k.value for k in node.keywords))
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        named = name.lower().replace("-", "_")
        if not any(
            package.replace("-", "_") in named
            or any(re.match(rf"{re.escape(package)}\b", text) for text in literals)
            for package in self.project.upstream
        ):
            return ""  # another package's version (torch's): no test of upstream's releases
        call = ast.unparse(node)
        call = call if len(call) <= 80 else f"{call[:77]}..."
        return f"runs only where {call} allows, a function of another package canary does not read"

    def call_may_stop(self, node: ast.Call, depth: int) -> bool:
        """Whether a call inside a check may stop it as a check: an upstream requirement
        check, or a callee whose name says it checks (``Version(...)`` parses, and a parse
        error is no verdict on the release) and, where it is the project's, that may stop
        (:meth:`Project.may_check`)."""
        callee = self.callee_of(node)
        if callee is not None and callee[0] == "upstream":
            return callee[1] in versiontests.REQUIRING
        if _CHECKING.search(guards.called_name(node)) is None:
            return False
        return callee is None or self.project.may_check(callee[1], depth)  # type: ignore[arg-type]

    def _compared_as_text(self, node: ast.Compare) -> str:
        """Why an ordering of an installed version's text (``transformers.__version__ >=
        "4.47.0"``, ipex-llm's choice of module) decides and canary cannot say where: as
        text, "4.100.0" < "4.47.0" and "10.0.0" < "4.0", so it is no window of releases."""
        if len(node.ops) != 1 or not isinstance(node.ops[0], _ORDERINGS):
            return ""
        for fact in guards.installed_operands(node, self):
            if isinstance(fact, guards.InstalledVersion) and not fact.parsed:
                test = ast.unparse(node)
                test = test if len(test) <= 80 else f"{test[:77]}..."
                return f"runs only where {test} holds, {fact.package}'s version compared as text"
        return ""

    def constant_of(self, node: ast.expr) -> object:
        value = self.literal(node)
        if value is NOT_LITERAL or isinstance(value, (tuple, list, dict)):
            return versiontests.NOT_CONSTANT
        return value

    def callee_of(self, node: ast.Call) -> tuple[str, object] | None:
        binding = self._callee(node)
        if isinstance(binding, ProjectFunction):
            return ("helper", binding)
        if isinstance(binding, Upstream):
            return ("upstream", binding.path)
        return None

    def _narrowed(self, test: ast.expr, *, positive: bool) -> frozenset[str] | None:
        """The methods selected where ``test`` is ``positive``, given those selected so far."""
        found = self._selection(test, positive=positive)
        if found is None:
            return self.selected
        return found if self.selected is None else self.selected & found

    def _selection(self, test: ast.expr, *, positive: bool) -> frozenset[str] | None:
        """The method names the selector parameter can have where ``test`` is ``positive``
        (None: the test does not say, or says only what it is not: "anything but x"
        selects nothing an anchor can be given)."""
        if not self.selector:
            return None
        said = domains.narrowing(test, positive=positive, strings=self._named_strings)
        domain = said.get(self.selector)
        return None if domain is None or domain.allowed is None else domain.allowed

    def _named_strings(self, node: ast.expr, many: bool) -> frozenset[str] | None:
        """The method names ``node`` spells (``many``: as a container's elements)."""
        value = self.value(node)
        if not isinstance(value, Literals) or value.fragments:
            return None
        if many:
            items = elements(value)
            value = items if items is not None else Literals(())
        return frozenset(value.strings()) or None

    def _narrowing(self, test: ast.expr, *, positive: bool) -> domains.Narrowing:
        """What the tests around say where ``test`` is ``positive`` too, of the function's
        names that keep one value all through it (nothing at a module's or class's level,
        whose names other code may rebind)."""
        said = domains.narrowing(test, positive=positive, strings=self._exact_strings)
        return self._narrowed_to(said)

    def _narrowed_to(self, said: domains.Narrowing) -> domains.Narrowing:
        """What the tests around say, and ``said`` of the names it may narrow."""
        node = self.function_node
        if not said or node is None or self.scope.is_class or self.function != id(node):
            return self.narrowing
        if id(node) not in self.single_valued:
            self.single_valued[id(node)] = domains.single_valued(node)
        return self.narrowing & said.only(self.single_valued[id(node)])

    def _exact_strings(self, node: ast.expr, many: bool) -> frozenset[str] | None:
        """Every value ``node`` may be, all strings (``many``: the elements of a literal
        display, or of a tuple constant: a list or set constant may grow); None: not all
        known."""
        if many and isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = self.literal(node)
        else:
            value = self.value(node)
            single = isinstance(value, Literals) and not value.fragments and len(value.values) == 1
            items = value.values[0] if single else NOT_LITERAL  # type: ignore[union-attr]
            if not many:
                items = (items,)
            elif not isinstance(items, tuple):
                return None
        if items is NOT_LITERAL or not all(isinstance(i, str) for i in items):  # type: ignore[union-attr]
            return None
        return frozenset(items)  # type: ignore[arg-type]

    def _held_here(self, name: str, narrowing: domains.Narrowing) -> bool:
        """The binding of ``name`` made where the tests said ``narrowing`` may be the one
        seen here: not where the tests around here rule that out, in the same function."""
        if not self.narrowing or self.scope.binder(name) is not self.scope:
            return True
        return not narrowing.disjoint(self.narrowing)

    def _window(self, test: ast.expr, *, positive: bool) -> guards.Window:
        """The releases where ``test`` is ``positive`` (every release: not readable)."""
        window = guards.version_window(test, self, positive=positive)
        return guards.EVERY_RELEASE if window is None else window

    def _window_after(self, failed: Sequence[ast.expr], test: ast.expr) -> guards.Window:
        """The releases an ``elif test`` holds on, from the chain's earlier tests, all false
        there: a failed ``a and t`` whose other parts ``test`` asserts (``if a and t: ...
        elif a:``, unsloth's ``is_distilbert and transformers4``) says ``t`` fails."""
        asserted = {ast.dump(part) for part in _conjuncts(test)}
        window = guards.EVERY_RELEASE
        for earlier in failed:
            rest = [part for part in _conjuncts(earlier) if ast.dump(part) not in asserted]
            if len(rest) == 1 and rest[0] is not earlier:
                window &= self._window(rest[0], positive=False)
        return window

    def _version_fact(self, value: ast.expr) -> guards.VersionFact | None:
        return guards.version_fact(value, self)

    def version_parser(self, func: ast.expr) -> str | None:
        """Which version parser ``func`` is, if any: packaging's ``Version``/``parse`` or
        one the project declares, its own or imported (:class:`guards.Names`)."""
        binding = self.binding(func)
        if isinstance(binding, Stdlib):
            path = binding.path
        elif isinstance(binding, ProjectFunction):
            path = f"{binding.module}.{binding.name}"
        else:
            return None
        return path if path in guards.PARSERS or path in self.project.parsers else None

    def version_of(self, node: ast.expr) -> guards.VersionFact | str | None:
        """What :mod:`canary.surface.guards` asks of a name or call (:class:`guards.Names`):
        a version fact bound to it, an upstream package's installed version, or a literal
        string."""
        if isinstance(node, ast.Name):
            value = self.scope.value(node.id)
            if isinstance(value, _VERSION_FACTS):
                return value
        if isinstance(node, ast.Call):
            if self._callee(node) == Stdlib("importlib.metadata.version") and len(node.args) == 1:
                package = self._literal_string(node.args[0])
                if package is not None and package in self.project.upstream:
                    return guards.InstalledVersion(package)
            return self.returned_version(node)
        if (package := self._distribution_version(node)) is not None:
            return guards.InstalledVersion(package)
        if isinstance(node, (ast.Name, ast.Attribute)):
            binding, _, complete = self.chain(node)
            if isinstance(binding, Upstream) and complete:
                package, _, name = binding.path.partition(".")
                if name == "__version__":
                    return guards.InstalledVersion(package)
        return self._literal_string(node)

    def _distribution_version(self, node: ast.expr) -> str | None:
        """The upstream package whose installed version ``node`` reads through its
        distribution (``pkg_resources.get_distribution("transformers").version``, older
        projects' spelling, or ``importlib.metadata.distribution(...).version``); None: none."""
        if not (isinstance(node, ast.Attribute) and node.attr == "version"):
            return None
        call = node.value
        if not (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords):
            return None
        if self._callee(call) not in _DISTRIBUTIONS:
            return None
        package = self._literal_string(call.args[0])
        return package if package is not None and package in self.project.upstream else None

    def _failed(self, test: ast.expr, *, positive: bool) -> tuple[str, ...]:
        """The upstream imports or reads one of which failed where ``test`` is
        ``positive``: the side of a flag a ``try`` sets after them that its handlers set
        (peft's ``if not is_transformers_dtensor_tp:``, unsloth_zoo's ``if
        old_transformers:``); (): it says no such thing."""
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, positive = test.operand, not positive
        flag, holds = self._flag(test, positive=positive)
        if flag is None or holds != flag.failed_if:
            return ()
        return flag.failed

    def _flag(self, test: ast.expr, *, positive: bool) -> tuple[Presence | None, bool]:
        """The presence test ``test`` reads, and whether it holds where ``test`` is
        ``positive``: a name bound to one (``if HAS_Y:``, ``if mod.HAS_Y:``), or a key a
        ``try`` sets after its imports tested for in its dict (``if "k" in REG:``, ``"k" not
        in mod.REG``)."""
        if isinstance(test, (ast.Name, ast.Attribute)):
            bound = self._value_of(test)
            return (bound if isinstance(bound, Presence) else None), positive
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.In, ast.NotIn))
            and isinstance(test.left, ast.Constant)
            and isinstance(test.left.value, str)
        ):
            keys = self._value_of(test.comparators[0])
            flag = keys.presence(test.left.value) if isinstance(keys, Keys) else None
            return flag, positive if isinstance(test.ops[0], ast.In) else not positive
        return None, positive

    def _value_of(self, node: ast.expr) -> object:
        """The value known of a name here (``REG``), or of a module-level name of a project
        module (``mod.REG``); None: none."""
        if isinstance(node, ast.Name):
            return self.scope.value(node.id)
        if isinstance(node, ast.Attribute):
            module = self.binding(node.value)
            if isinstance(module, ProjectModule):
                return self.project.exports(module.name).values.get(node.attr)
        return None

    def _present(self, test: ast.expr, *, positive: bool) -> frozenset[str]:
        """What holds about upstream attributes where ``test`` is ``positive``: "+x.y" (it is
        there), "-x.y" (it is not); of ``a and b`` holding (``a or b`` failing), what holds
        of each. And "~x.y" where ``test`` (or one of those parts) going the other way needs
        ``x.y`` there: it asked about ``x.y``, and its absence is a way into this branch
        (unsloth_zoo's ``if existing is not None and len(existing) > 0: return`` before it
        sets the name, ``if not isinstance(C.__dict__.get("n"), property):``)."""
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, positive = test.operand, not positive
        # an `and`'s parts are read below, with their own "~" facts: only the test's own here
        found = self._present_in(test, positive=positive)
        other_way = self._certain(test, positive=not positive)
        found |= {f"{ADMITS_ABSENT}{p[1:]}" for p in other_way if p[0] == "+"}
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == positive:
            for value in test.values:
                found |= self._present(value, positive=positive)
        return found

    def _certain(self, test: ast.expr, *, positive: bool) -> frozenset[str]:
        """ "+x.y" and "-x.y" of :meth:`_present`."""
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, positive = test.operand, not positive
        found = self._present_in(test, positive=positive)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == positive:
            for value in test.values:
                found |= self._certain(value, positive=positive)
        return found

    def _present_in(self, test: ast.expr, *, positive: bool) -> frozenset[str]:
        if isinstance(test, ast.NamedExpr):  # `if cp := probe():` tests what it binds
            return self._present_in(test.value, positive=positive)
        flag, holds = self._flag(test, positive=positive)
        if flag is not None:  # if added: ... (added = not hasattr(...)); if "k" in REG:
            return flag.true if holds else flag.false
        if (tested := _tested_for_none(test, positive=positive)) is not None:
            # reason is None / probe() is None: where a reason probe returned success
            if isinstance(tested, ast.Name):
                if (looked_up := self._absent_where_none(tested.id)) is not None:
                    return frozenset({f"-{looked_up}"})
                bound = self.scope.value(tested.id)
                return bound.false if isinstance(bound, Presence) else frozenset()
            test, positive = tested, False
        if isinstance(test, ast.Call):
            function = self._callee(test)
            if isinstance(function, ProjectFunction):
                # if _mistral4_available(): ... (true: success); if probe_reason(): return
                # (falsy: a reason probe's success, None)
                success = probes.Success.TRUTHY if positive else probes.Success.NONE
                required = self.project.probe_requires(function, success)
                return frozenset(f"+{target}" for target in required or ())
        found = set(self._model_types(test, positive=positive))
        tested = guards.presence_tested(test, positive=positive, name_of=self._literal_string)
        for obj, name, present in tested:
            binding, _, complete = self.chain(obj)
            if isinstance(binding, Upstream) and complete:
                found.add(f"{'+' if present else '-'}{binding.path}.{name}")
        for name in guards.names_not_none(test, positive=positive):
            binding = self.binding(name)
            if isinstance(binding, Upstream):  # None where its import failed
                found.add(f"+{binding.path}")
        return frozenset(found)

    def _absent_where_none(self, name: str) -> str | None:
        """The upstream attribute ``name`` is None without here (None: none is known). A
        module's name read in a function, only where no function declares it ``global``:
        one may set it to None anywhere."""
        if name in self.scope.names or self.scope is self.module_scope:
            return self.scope.absent_if_none.get(name)
        if name in self.project.declared_global(self.path):
            return None
        return self.scope.absent_where_none(name)

    def _model_types(self, test: ast.expr, *, positive: bool) -> Iterator[str]:
        """A branch only a model of the types ``test`` names reaches (``config.model_type in
        ("qwen3_5", "qwen3_5_moe")``): it runs where transformers has one of their model
        packages (findings.py), "+a|b" as :meth:`_present` says it."""
        if "transformers" not in self.project.upstream:
            return
        for types in guards.model_types_tested(test, positive=positive, strings=self._strings):
            yield "+" + model_requirement(types)

    def _bound_at(self, node: ast.AST) -> Bound:
        """Where a use runs: the branch's window and fallback, and those of the binding
        the name it goes through had (``H`` bound to ``trl.CPOTrainer`` under ``trl<0.29``
        is that object only there)."""
        here = Bound(self.window, self.fallback_of)
        root = syntax.root_name(node)
        if root is None:
            return here
        bound = self.scope.condition_of(root.id)
        if bound is None:
            return here
        return Bound(self.window & bound.window, self.fallback_of or bound.fallback_of)

    def use(
        self,
        kind: Kind,
        target: str,
        node: ast.AST,
        *,
        guarded: bool | None = None,
        anchor: str | None = None,
        match: Match | None = None,
        presence: bool = False,
        replaces: bool = False,
        aliases: str = "",
        exports: bool = False,
        function: bool = False,
        bound_object: str = "",
        stash: str | None = None,
        constant: bool = False,
        reads_self: frozenset[str] = frozenset(),
        spot: anchortests.Spot = (0, 0),
        partners: tuple[anchortests.Spot, ...] = (),
        read_from: ReadFrom | None = None,
        raises: bool = False,
        deletes: bool = False,
    ) -> None:
        if not self.emit:
            return
        if self.applying and kind is not Kind.ANCHOR:
            # the plain walk records the rest; what was given to the function is new
            through = kind in (Kind.SOURCE, Kind.PATCH) and any(
                target == p or target.startswith(f"{p}.") for p in self.passed
            )
            if not through:
                return
        bound = self._bound_at(node)
        if kind is Kind.IMPORT and 0 < self.guarded == self.reraising:
            raises = True  # every guard around it raises its ImportError again
        star = self.star_of(node, target)
        use = Use(
            kind=kind,
            target=target,
            path=self.path,
            line=getattr(node, "lineno", 0),
            guarded=(self.guarded > 0 if guarded is None else guarded) or presence,
            anchor=anchor,
            match=match,
            scope=self.function,
            presence=presence,
            unset=self._admits_absent(target),
            replaces=replaces,
            aliases=aliases,
            exports=exports,
            function=function,
            bound_object=bound_object,
            stash=stash,
            constant=constant,
            reads_self=reads_self,
            versions=bound.window.specifiers(),
            undecided=self.undecided,
            fallback_of=bound.fallback_of,
            requires=self._required(target, presence=presence),
            lacks=self._lacked(),
            spot=spot,
            partners=partners,
            read_from=read_from,
            star=star,
            raises=raises,
            deletes=deletes,
            within=self.within,
            after=tuple(sorted(self.imported - {target})),
            handled=self._handled_import(node) if kind is Kind.IMPORT else "",
        )
        if self._through_held(target, node):
            self.uses.append(use)
        for other, where, held in self._alternatives(target, node):
            self.uses.append(
                replace(
                    use,
                    target=other,
                    unset=self._admits_absent(other),
                    versions=where.window.specifiers(),
                    fallback_of=where.fallback_of,
                    # the name holds that object only where it is there (its import worked)
                    requires=tuple(sorted({*self._required(other, presence=presence), held})),
                    after=tuple(sorted(self.imported - {other})),
                )
            )

    def _alternatives(self, target: str, node: ast.AST) -> Iterator[tuple[str, Bound, str]]:
        """The same use through each other upstream object the name it goes through may
        hold (:class:`Alternative`: ``X`` imported from a new home in a ``try`` and from
        its old one in the ``except ImportError``), where that binding is made, and that
        object."""
        through = self._through(target, node)
        if through is None:
            return
        name, rest = through
        for alternative in self.scope.alternatives_of(name):
            if not self._held_here(name, alternative.narrowing):
                continue
            bound = alternative.bound or Bound()
            yield (
                alternative.path + rest,
                Bound(self.window & bound.window, self.fallback_of or bound.fallback_of),
                alternative.path,
            )

    def _through_held(self, target: str, node: ast.AST) -> bool:
        """The use of ``target`` is not made through a name whose binding to it the tests
        around here rule out (``kind == "t5"`` where it was bound under ``kind != "t5"``)."""
        through = self._through(target, node) if self.narrowing else None
        if through is None:
            return True
        name = through[0]
        return self._held_here(name, self.scope.narrowed.get(name, domains.NOTHING_KNOWN))

    def _through(self, target: str, node: ast.AST) -> tuple[str, str] | None:
        """The name ``node`` starts from, where the use of ``target`` goes through the
        upstream object it is bound to, and what the use reads past that object
        (``""`` or ``".m"``); None: it goes through no such name."""
        root = syntax.root_name(node)
        if root is None:
            return None
        primary = self.scope.lookup(root.id)
        if not isinstance(primary, Upstream):
            return None
        rest = target[len(primary.path) :]
        if not target.startswith(primary.path) or rest[:1] not in ("", "."):
            return None
        return root.id, rest

    def _admits_absent(self, target: str) -> bool:
        """The branch walked runs where ``target`` is not there: a test before it found it
        absent, or failed as it must where it is absent ("~")."""
        return f"-{target}" in self.present or f"{ADMITS_ABSENT}{target}" in self.present

    def _found(self) -> tuple[str, ...]:
        """The upstream things a test before here found there."""
        return tuple(sorted(p[1:] for p in self.present if p.startswith("+")))

    def _lacked(self) -> tuple[str, ...]:
        """The upstream things a test before here found absent."""
        return tuple(sorted(p[1:] for p in self.present if p.startswith("-")))

    def _required(self, target: str, *, presence: bool) -> tuple[str, ...]:
        """The upstream things found present before this use (``x.y`` for ``x.y.f``, or
        anything else a test found: mlflow's ``elif _is_conversational_pipeline(p):`` before
        ``transformers.Conversation()``), and the model packages a model-type test asked for
        (one of them); a presence test requires what it tests."""
        return tuple(sorted({*self._found(), target})) if presence else self._found()

    def _handled_import(self, node: ast.AST) -> str:
        position = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        return self.handled.get(position, "")


# what a name may be bound to that version tests read
_VERSION_FACTS = (
    guards.InstalledVersion,
    guards.InstalledNumber,
    guards.InstalledRelease,
    guards.VersionGate,
)


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    """The parts that all hold where ``test`` does (``a and b``: both; else itself)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in _conjuncts(value)]
    return [test]


def _tested_for_none(test: ast.expr, *, positive: bool) -> ast.expr | None:
    """The name or call ``test`` says is None where it is ``positive`` (``x is None``, or
    ``x is not None`` where it fails); None: it says no such thing."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.left, (ast.Name, ast.Call))
    ):
        return None
    return test.left if isinstance(test.ops[0], ast.Is) == positive else None


# operator's comparisons, as the symbols a version test is written with
_COMPARISONS = {
    "operator.gt": ">",
    "operator.ge": ">=",
    "operator.lt": "<",
    "operator.le": "<=",
    "operator.eq": "==",
    "operator.ne": "!=",
}
