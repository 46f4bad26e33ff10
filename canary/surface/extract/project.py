"""The project index: its modules, their bindings and constants, helper summaries, version
helpers and source registries, each read once (by walking the file) and remembered."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

from canary.errors import ParseError
from canary.surface import fallbacks, guards, probes, versiontests
from canary.surface.config import SourceRegistry
from canary.surface.extract import syntax
from canary.surface.extract.scopes import (
    STDLIB,
    Alternative,
    Binding,
    Bound,
    ProjectFunction,
    ProjectModule,
    Scope,
    Stdlib,
    Upstream,
)
from canary.surface.extract.uses import Use
from canary.surface.segments import Definition, Statement, split_module
from canary.surface.texts import Text, Value


class FileWalker(Protocol):
    """What the index asks of a walk of one of its files (:class:`~.walker.Walker`, handed
    to it, as the walker reads the index): bindings, summaries and helpers are read so."""

    module_scope: Scope
    upstream_stars: list[str]
    uses: list[Use]

    def bind_module_level(self) -> None: ...

    def module_table(self, name: str) -> dict[str, str] | None: ...

    def summarise(self, function: ProjectFunction) -> tuple[Value | None, tuple[str, ...]]: ...

    def evaluate(
        self, function: ProjectFunction, params: Mapping[str, object], depth: int
    ) -> versiontests.Outcome: ...

    def version_returned(
        self, function: ProjectFunction, params: Mapping[str, object], depth: int
    ) -> guards.InstalledVersion | None: ...

    def probe(
        self, function: ProjectFunction, success: probes.Success
    ) -> frozenset[str] | None: ...

    def enter_helper(self, function: ProjectFunction, params: Mapping[str, object]) -> None: ...

    def call_may_stop(self, node: ast.Call, depth: int) -> bool: ...

    def apply(
        self,
        function: ProjectFunction,
        values: Mapping[int, Value | Upstream],
        *,
        selector: int | None,
        selected: frozenset[str] | None,
        depth: int,
    ) -> None: ...


@dataclass
class Exports:
    names: dict[str, Binding | None]
    values: dict[str, Value]
    upstream_stars: list[str]
    conditions: dict[str, Bound] = field(default_factory=dict)
    alternatives: dict[str, tuple[Alternative, ...]] = field(default_factory=dict)


# an unindented import statement's first line, and the module it starts from
_IMPORT_LINE = re.compile(rb"(?m)^(?:from|import)[ \t]+([\w.]*).*$")
_WORD = re.compile(rb"\w+")
_GLOBAL = re.compile(rb"\bglobal\b([^\n;]*)")


class Project:
    """A project's files and what walking them found out, each read once: module names,
    module-level bindings, helper summaries, version helpers evaluated per call."""

    def __init__(
        self,
        root: Path,
        files: tuple[str, ...],
        upstream: frozenset[str],
        parsers: frozenset[str] = frozenset(),
        *,
        walker: Callable[..., FileWalker],
    ) -> None:
        self.root = root
        self.walker = walker  # walker(project, path, emit=...): a walk of one file
        self.parsers = parsers  # the version parsers the project declares, dotted
        self.files = tuple(f for f in files if f.endswith(".py"))
        self.module_of: dict[str, str] = {}
        self.path_of: dict[str, str] = {}
        self._text: dict[str, bytes] = {}
        packages = {str(PurePosixPath(f).parent) for f in self.files if f.endswith("__init__.py")}
        packages |= self._namespaces(packages)
        for path in self.files:
            name = _module_name(path, packages)
            self.module_of[path] = name
            self.path_of.setdefault(name, path)
        self.own_tokens = _own_tokens(self.module_of.items())
        self.children: dict[str, list[str]] = {}  # package -> its direct submodules
        self.modules = frozenset(self.path_of)
        self.tops = frozenset(name.partition(".")[0] for name in self.modules)
        # An upstream package checked as a project (trl, a downstream of transformers):
        # what it imports of itself is its own code, the release installed with it.
        own = {top for top in self.tops if self.path_of.get(top, "").endswith("__init__.py")}
        self.upstream = upstream - own
        for name in self.path_of:
            if "." in name:
                self.children.setdefault(name.rpartition(".")[0], []).append(name)
        self._trees: dict[str, ast.Module] = {}
        self._eager: frozenset[str] | None = None  # the words of module-level import lines
        self._globals: dict[str, frozenset[str]] = {}  # path -> names its `global`s list
        self._exports: dict[str, Exports] = {}
        self._summaries: dict[int, tuple[Value | None, tuple[str, ...]]] = {}
        self._helper_calls: dict[tuple, versiontests.Outcome | None] = {}
        self._checks: dict[int, bool] = {}
        self._probes: dict[tuple[int, probes.Success], frozenset[str] | None] = {}
        self._versions_returned: dict[tuple, guards.InstalledVersion | None] = {}
        self._takes_source: dict[int, bool] = {}
        self._acts_on_objects: dict[int, bool] = {}
        self._lines: dict[str, list[bytes]] = {}
        self._bodies: dict[str, list[Statement]] = {}
        self._source_readers: dict[str, bool] = {}
        self._reaches: dict[str, bool] = {}
        self._reading: list[str] = []  # the modules whose exports are being read, in order
        self._cut_short: set[str] = set()  # read while a module they import was partial
        self._applied: set[tuple[object, ...]] = set()
        self.applied_uses: list[Use] = []  # anchors found in helpers given a source
        # (why, path, line): a set, so parallel walkers that meet the same site count it once
        self.skipped: set[tuple[str, str, int]] = set()
        self._none_harmless: dict[tuple[str, int, str], bool] = {}
        # (path, name) -> the module's dispatch table of comparisons bound to it, or None
        self.tables: dict[tuple[str, str], dict[str, str] | None] = {}
        self._unbound_harmless: dict[tuple[str, int, str, bool], str] = {}
        self._flag_harmless: dict[tuple[str, str], bool] = {}
        # (path, line, column) of a try -> its handled imports (line, column) -> why
        self.handled: dict[tuple[str, int, int], dict[tuple[int, int], str]] = {}

    def _namespaces(self, packages: set[str]) -> set[str]:
        """Top-level folders with no ``__init__.py`` that hold packages the project imports
        through them (``optimum/intel/...``, imported as ``optimum.intel``): namespace
        packages (PEP 420), part of every module name below them. Without an import that
        spells them, a folder above the packages is no part of a name (a checkout's folder)."""
        found: set[str] = set()
        for folder in {p.split("/", 1)[0] for p in packages if "/" in p}:
            if folder in packages or not folder.isidentifier() or folder in _GENERIC_FOLDERS:
                continue
            inner = {p.split("/")[1] for p in packages if p.startswith(f"{folder}/")}
            spelled = [f"{folder}.{name}".encode() for name in inner]
            prefix = f"{folder}.".encode()
            texts = (self.text(path) for path in self.files)
            if any(prefix in text and any(w in text for w in spelled) for text in texts):
                found.add(folder)
        # and each folder with no __init__.py between such a namespace and its packages
        # (optimum-onnx's optimum/exporters/onnx: imported as optimum.exporters.onnx)
        between = {
            str(parent)
            for p in packages
            if p.split("/", 1)[0] in found
            for parent in PurePosixPath(p).parents
            if "/" in str(parent) and str(parent) not in packages
        }
        return found | between

    def none_harmless(self, path: str, node: ast.Try, name: str) -> bool:
        """Whether ``name``, set to None by the handler of the module-level ``node`` of
        ``path``, is read nowhere there a None can break, and no other file names it (it
        may import it)."""
        key = (path, node.lineno, name)
        if key not in self._none_harmless:
            self._none_harmless[key] = fallbacks.none_is_harmless(
                self.naming(path, name), name, node
            ) and not self.named_elsewhere(path, name)
        return self._none_harmless[key]

    def unbound_harmless(self, path: str, node: ast.Try, name: str, *, kept: bool) -> str:
        """:func:`fallbacks.unbound_is_harmless` of the module-level ``node`` of ``path``;
        a name left unbound only where no other file names it ("": some may import it). A
        value kept from before the ``try`` is imported as it is read here: another value,
        as a handler's."""
        key = (path, node.lineno, name, kept)
        if key not in self._unbound_harmless:
            lines = self.lines(path)
            block = fallbacks.Block(
                lines,
                1,
                len(lines),
                lambda: self.naming(path, name),
            )
            why = fallbacks.unbound_is_harmless(block, name, node, kept=kept)
            if why == fallbacks.UNREAD and self.named_elsewhere(path, name):
                why = ""
            self._unbound_harmless[key] = why
        return self._unbound_harmless[key]

    def flag_harmless(self, path: str, name: str) -> bool:
        """:func:`fallbacks.flag_never_raises` in ``path`` and every other file that names
        ``name`` (it may import the flag, or read it as ``module.name``)."""
        key = (path, name)
        if key not in self._flag_harmless:
            word = name.encode()
            files = [f for f in self.files if f == path or word in self.text(f)]
            self._flag_harmless[key] = all(
                fallbacks.flag_never_raises(self.tree(f), name) for f in files
            )
        return self._flag_harmless[key]

    def named_elsewhere(self, path: str, name: str) -> bool:
        """Whether a file other than ``path`` has ``name`` in its text (it may import it):
        asked only of a name its module leaves harmless, so seldom."""
        word = name.encode()
        return any(word in self.text(other) for other in self.files if other != path)

    def declared_global(self, path: str) -> frozenset[str]:
        """The names a ``global`` statement of ``path`` lists (any word after ``global`` on
        its line, up to a ``;``), read from the text once per file."""
        if path not in self._globals:
            self._globals[path] = frozenset(
                word.decode()
                for found in _GLOBAL.finditer(self.text(path))
                for word in _WORD.findall(found.group(1))
            )
        return self._globals[path]

    def imported_eagerly(self, name: str) -> bool:
        """Whether some file imports a module of that last name at its own module level: an
        unindented import line of its text naming it (``from .qwen25_vl import Trainer``),
        not one of upstream's modules. Read from the text, so a file the walk skipped counts
        too; every file's import lines are read once, for every name."""
        if self._eager is None:
            words: set[str] = set()
            for path in self.files:
                for found in _IMPORT_LINE.finditer(self.text(path)):
                    if not self.is_upstream(found.group(1).decode()):
                        words.update(w.decode() for w in _WORD.findall(found.group(0)))
            self._eager = frozenset(words)
        return name in self._eager

    def text(self, path: str) -> bytes:
        if path not in self._text:
            self._text[path] = (self.root / path).read_bytes()
        return self._text[path]

    def source(self, path: str) -> str:
        return self.text(path).decode("utf-8", "replace")

    def tree(self, path: str) -> ast.Module:
        if path not in self._trees:
            try:
                self._trees[path] = ast.parse(self.text(path), filename=path)
            except (SyntaxError, ValueError) as exc:
                line = getattr(exc, "lineno", None)
                where = f"{path}, line {line}" if line else path
                major, minor = sys.version_info[:2]
                raise ParseError(
                    f"{self.root / path}: the running Python {major}.{minor} cannot parse it "
                    f"({where}: {exc.__class__.__name__}: {getattr(exc, 'msg', exc)}): if the "
                    f"target adopted newer syntax, run canary under Python {major}.{minor + 1} "
                    f"or later; if the file is not meant to be Python, leave it out with "
                    f"exclude = [...] in [tool.canary.surface]",
                    cause="a file of the target does not parse",
                ) from None
        return self._trees[path]

    def body(self, path: str) -> list[Statement]:
        """The module's top-level statements, functions and classes parsed lazily."""
        if path not in self._bodies:
            statements = None
            try:
                text = self.text(path).decode("utf-8").removeprefix("\ufeff")
            except UnicodeDecodeError:
                text = None  # another encoding (a coding cookie): the parser knows
            if text is not None and "\x00" not in text:
                statements = split_module(text, path, self._definition_node)
            self._bodies[path] = statements if statements is not None else self.tree(path).body
        return self._bodies[path]

    def in_prose(self, path: str, line: int, column: int) -> bool:
        """Whether a place in a file (``column`` in bytes) is prose: a comment (outside every
        expression of the statement it is in, or between statements) or a docstring. Only
        the one top-level statement around it is parsed, when the walk has not already; a
        definition's own line is never prose (its name is there)."""
        statement = self._statement_at(path, line)
        if statement is None:
            return True  # between top-level statements: a comment or a blank line
        node = statement.node if isinstance(statement, Definition) else statement
        # the module's docstring is its first statement; a definition's, the first of its
        # body, met before it (``ast.walk`` goes down a level at a time)
        docstrings = {id(node.value)} if statement is self.body(path)[0] and _said(node) else set()
        for child in ast.walk(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if child.lineno == line:
                    return False
                if child.body and _said(child.body[0]):
                    docstrings.add(id(child.body[0].value))  # type: ignore[attr-defined]
            elif isinstance(child, (ast.expr, ast.alias)) and _covers(child, line, column):
                return id(child) in docstrings
        return True

    def _statement_at(self, path: str, line: int) -> Statement | None:
        for statement in self.body(path):
            if isinstance(statement, Definition):
                first = statement.first_line
                last = first + len(statement.text.splitlines()) - 1
            else:
                decorators = getattr(statement, "decorator_list", ())
                first = min([statement.lineno, *(d.lineno for d in decorators)])
                last = statement.end_lineno or statement.lineno
            if first <= line <= last:
                return statement
        return None

    def _definition_node(self, path: str, definition: Definition) -> ast.stmt:
        """A cut that does not parse on its own: the file's own parse decides (and names
        the real syntax error if there is one)."""
        nodes = self.tree(path).body
        if definition.indent:  # a member of a top-level class
            nodes = [m for n in nodes if isinstance(n, ast.ClassDef) for m in n.body]
        for node in nodes:
            lines = [node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))]
            if min(lines) == definition.first_line:
                return node
        raise ParseError(
            f"{self.root / path}: cannot find the definition of {definition.name} at line "
            f"{definition.first_line} in its own parse",
            cause="a file of the target does not parse",
        )

    def reaches(self, module: str) -> bool:
        """A project module binds something to upstream (or is a package one of whose
        modules does): reading its names may reach upstream."""
        if module not in self._reaches:
            self._reaches[module] = False  # a cycle: what is known so far
            exports = self.exports(module) if module in self.path_of else None
            found = exports is not None and (
                bool(exports.upstream_stars)
                or any(isinstance(b, Upstream) for b in exports.names.values())
            )
            self._reaches[module] = found or any(
                self.reaches(child) for child in self.children.get(module, ())
            )
        return self._reaches[module]

    def lines(self, path: str) -> list[bytes]:
        if path not in self._lines:
            self._lines[path] = self.text(path).splitlines()
        return self._lines[path]

    def naming(self, path: str, name: str) -> list[ast.stmt]:
        """The module's top-level statements whose text names ``name``, only those parsed
        (one that does not name it can neither read nor bind it)."""
        lines, word = self.lines(path), name.encode()
        found = []
        for statement in self.body(path):
            if isinstance(statement, Definition):
                first = statement.first_line
                last = first + statement.text.count("\n")
            else:
                first, last = statement.lineno, statement.end_lineno or statement.lineno
            if any(word in line for line in lines[first - 1 : last]):
                found.append(statement.node if isinstance(statement, Definition) else statement)
        return found

    def identifiers(self, path: str, node: ast.stmt) -> set[str]:
        """The identifiers written in a statement's lines (a cheap look before walking it)."""
        if path not in self._lines:
            self._lines[path] = self.text(path).splitlines()
        lines = self._lines[path][node.lineno - 1 : node.end_lineno]
        return {i.decode() for i in _IDENTIFIER.findall(b"\n".join(lines))}

    def is_upstream(self, dotted: str) -> bool:
        return dotted.split(".", 1)[0] in self.upstream

    def module_binding(self, dotted: str) -> Binding | None:
        if self.is_upstream(dotted):
            return Upstream(dotted)
        if dotted in self.path_of:
            return ProjectModule(dotted)
        if dotted.split(".", 1)[0] in STDLIB or self.outside_parser(dotted):
            return Stdlib(dotted)
        return None

    def outside_parser(self, dotted: str) -> bool:
        """Whether ``dotted`` is a declared version parser, or a module holding one, that
        is neither the project's nor upstream's (unsloth's ``unsloth_zoo.utils.Version``)."""
        return any(p == dotted or p.startswith(f"{dotted}.") for p in self.parsers)

    def exports(self, module: str) -> Exports:
        """The module-level bindings of a project module (lazily; a cycle sees what is
        known so far, as Python would see a partly initialised module)."""
        if module not in self._exports:
            self._exports[module] = Exports({}, {}, [])
            path = self.path_of.get(module)
            if path is not None:
                self._reading.append(module)
                try:
                    walker = self.walker(self, path, emit=False)
                    walker.bind_module_level()
                finally:
                    self._reading.pop()
                scope = walker.module_scope
                self._exports[module] = Exports(
                    scope.names,
                    scope.values,
                    walker.upstream_stars,
                    scope.conditions,
                    scope.alternatives,
                )
        elif module in self._reading:
            # a cycle: the modules read since saw this one partly initialised
            self._cut_short.update(self._reading[self._reading.index(module) + 1 :])
        return self._exports[module]

    def whole_exports(self, module: str) -> Exports | None:
        """The module's bindings, where no import cycle cut them short (None: read again,
        every module it imports is whole now)."""
        exports = self.exports(module)
        return None if module in self._cut_short else exports

    def member(self, module: str, name: str) -> Binding | None:
        exports = self.exports(module)
        if name in exports.names:
            return exports.names[name]
        if f"{module}.{name}" in self.path_of:
            return ProjectModule(f"{module}.{name}")
        if len(exports.upstream_stars) == 1:
            return Upstream(f"{exports.upstream_stars[0]}.{name}")
        return None

    def table(self, path: str, name: str) -> dict[str, str] | None:
        """The dispatch table (comparison symbol by key) module ``path`` binds ``name`` to
        at its top level, or imports as from another project module; None: not one."""
        key = (path, name)
        if key not in self.tables:
            self.tables[key] = None  # an import cycle: no table
            self.tables[key] = self.walker(self, path, emit=False).module_table(name)
        return self.tables[key]

    def summary(self, function: ProjectFunction) -> tuple[Value | None, tuple[str, ...]]:
        """What a project helper returns, in terms of its parameters (:class:`Param`), and
        its parameter names."""
        key = id(function.definition)
        if key not in self._summaries:
            self._summaries[key] = (None, ())  # recursion: nothing known yet
            walker = self.walker(self, self.path_of[function.module], emit=False)
            self._summaries[key] = walker.summarise(function)
        return self._summaries[key]

    def helper_call(
        self, function: ProjectFunction, params: Mapping[str, object], depth: int
    ) -> versiontests.Outcome | None:
        """A project function called with ``params`` (its parameters' literal values),
        evaluated as a version test (:mod:`canary.surface.versiontests`); None: too deep."""
        frozen = tuple(sorted((k, repr(v)) for k, v in params.items()))
        key = (id(function.definition), frozen)
        if key not in self._helper_calls:
            if depth > versiontests.DEPTH:
                return None
            self._helper_calls[key] = None  # recursion: nothing known yet
            walker = self.walker(self, self.path_of[function.module], emit=False)
            self._helper_calls[key] = walker.evaluate(function, params, depth)
        return self._helper_calls[key]

    def installed_version(
        self, function: ProjectFunction, params: Mapping[str, object], depth: int
    ) -> guards.InstalledVersion | None:
        """The installed version ``function`` returns when called with ``params``."""
        frozen = tuple(sorted((k, repr(v)) for k, v in params.items()))
        key = (id(function.definition), frozen)
        if key not in self._versions_returned:
            self._versions_returned[key] = None  # recursion: nothing known yet
            walker = self.walker(self, self.path_of[function.module], emit=False)
            self._versions_returned[key] = walker.version_returned(function, params, depth)
        return self._versions_returned[key]

    def probe_requires(
        self, function: ProjectFunction, success: probes.Success = probes.Success.TRUTHY
    ) -> frozenset[str] | None:
        """What ``function`` requires of upstream for returning ``success``, when it is a
        presence probe (:mod:`canary.surface.probes`); None: it is none."""
        key = (id(function.definition), success)
        if key not in self._probes and not probes.worth_reading(function.node, success):
            self._probes[key] = None
        if key not in self._probes:
            walker = self.walker(self, self.path_of[function.module], emit=False)
            self._probes[key] = walker.probe(function, success)
        return self._probes[key]

    def may_check(self, function: ProjectFunction, depth: int = 0) -> bool:
        """Whether calling ``function`` may stop the caller (:func:`versiontests.may_stop`):
        it raises, asserts or exits, or calls a function of the project that may, or an
        upstream requirement check; too deep, or a cycle: it may."""
        key = id(function.definition)
        if key not in self._checks:
            if depth > versiontests.DEPTH:
                return True
            self._checks[key] = True  # a cycle: it may
            walker = self.walker(self, self.path_of[function.module], emit=False)
            walker.enter_helper(function, {})
            self._checks[key] = versiontests.may_stop(
                function.node, lambda call: walker.call_may_stop(call, depth + 1)
            )
        return self._checks[key]

    def acts_on_objects(self, function: ProjectFunction) -> bool:
        """The function reads a source or sets an attribute (``patch_function(cls,
        "forward", f)``): an upstream object given to it may be patched or read."""
        key = id(function.definition)
        if key not in self._acts_on_objects:
            definition = function.definition
            text = definition.text if isinstance(definition, Definition) else None
            if text is not None and "getsource" not in text and "setattr" not in text:
                self._acts_on_objects[key] = False
            else:
                self._acts_on_objects[key] = any(
                    (isinstance(n, ast.Name) and n.id in ("getsource", "setattr"))
                    or (isinstance(n, ast.Attribute) and n.attr == "getsource")
                    for n in ast.walk(function.node)
                )
        return self._acts_on_objects[key]

    def takes_source(self, function: ProjectFunction) -> bool:
        """The helper calls ``getsource`` itself (or it could not return a source)."""
        key = id(function.definition)
        if key not in self._takes_source:
            definition = function.definition
            text = definition.text if isinstance(definition, Definition) else None
            path = self.path_of[function.module]
            mentions = "getsource" in text if text is not None else self._mentions_source(path)
            self._takes_source[key] = mentions and any(
                (isinstance(n, ast.Name) and n.id == "getsource")
                or (isinstance(n, ast.Attribute) and n.attr == "getsource")
                for n in ast.walk(function.node)
            )
        return self._takes_source[key]

    def _mentions_source(self, path: str) -> bool:
        if path not in self._source_readers:
            self._source_readers[path] = b"getsource" in self.text(path)
        return self._source_readers[path]

    def apply(
        self,
        function: ProjectFunction,
        values: Mapping[int, Value | Upstream],
        *,
        selector: int | None = None,
        selected: frozenset[str] | None = None,
        depth: int = 0,
    ) -> None:
        """Walk a project function as called with ``values`` at its positional parameters
        (a source text or an upstream object among them): the anchors it applies to that
        text are the text's, and the sources it reads and the patches it makes through that
        object are references, at the function's own lines. Once per distinct call."""
        key = (id(function.definition), repr(sorted(values.items())), selector, selected)
        if key in self._applied:
            return
        self._applied.add(key)
        if depth >= _MAX_APPLY_DEPTH:
            self.skip(f"source handed through more than {_MAX_APPLY_DEPTH} helpers", function)
            return
        walker = self.walker(self, self.path_of[function.module], emit=True)
        walker.apply(function, values, selector=selector, selected=selected, depth=depth)
        self.applied_uses.extend(walker.uses)

    def skip(self, why: str, function: ProjectFunction) -> None:
        self.skipped.add((why, self.path_of[function.module], function.node.lineno))

    def drain_applied(self) -> list[Use]:
        found, self.applied_uses = self.applied_uses, []
        return found

    def registered_anchors(self, registry: SourceRegistry) -> list[Use]:
        """The anchors of the functions registered in a declared source registry, applied
        to the source it declares."""
        before = len(self.applied_uses)
        for key, function in self._registrations(registry.registry):
            sources = registry.sources_of(key)
            if not sources:
                self.skip(f"registered in {registry.registry}[{key!r}]: no class given", function)
                continue
            if not all(self.is_upstream(source) for source in sources):
                continue
            names = syntax.positional(function.node)
            if registry.parameter not in names or (
                registry.selector is not None and registry.selector not in names
            ):
                self.skip(
                    f"registered in {registry.registry}: no parameter {registry.parameter!r}"
                    + (f" or {registry.selector!r}" if registry.selector else ""),
                    function,
                )
                continue
            # one walk for every source: each anchor is then one per source (anchors())
            pending = "{name}" in sources[0]  # in all or none: the configuration checks
            text = Text(
                frozenset() if pending else frozenset(sources),
                pending=sources[0] if pending else None,
                tried=sources if len(sources) > 1 else (),
                follow_shims=registry.follow_shims,
            )
            selector = names.index(registry.selector) if registry.selector else None
            self.apply(function, {names.index(registry.parameter): text}, selector=selector)
        found, self.applied_uses = self.applied_uses[before:], self.applied_uses[:before]
        return found

    def _registrations(self, registry: str) -> Iterator[tuple[str, ProjectFunction]]:
        """(key, function) for each module-level ``REGISTRY["key"].append(f)`` /
        ``.insert(i, f)`` / ``.extend([f, g])`` / ``REGISTRY["key"] = [f, g]`` (``+=`` too)
        in the project."""
        module, _, name = registry.rpartition(".")
        for path in self.files:
            if name.encode() not in self.text(path):
                continue
            here = self.module_of[path]
            # module-level code only: functions and classes stay unparsed
            nodes = [
                child
                for statement in self.body(path)
                if not isinstance(statement, Definition)
                for child in ast.walk(statement)
            ]
            aliases = {name} if here == module else set()
            for node in nodes:
                if isinstance(node, ast.ImportFrom):
                    base = syntax.absolute_module(here, path.endswith("__init__.py"), node)
                    aliases |= {
                        a.asname or a.name for a in node.names if base == module and a.name == name
                    }
            if not aliases:
                continue
            exports = self.exports(here)
            for key, item in _registered(nodes, aliases):
                binding = exports.names.get(item.id) if isinstance(item, ast.Name) else None
                if isinstance(binding, ProjectFunction):
                    yield key, binding
                else:
                    self.skipped.add(
                        (
                            f"registered in {registry}: not a function of the project",
                            path,
                            item.lineno,
                        )
                    )

    def paths_to_walk(self) -> Iterator[str]:
        """The files that can reference upstream: those that name it, and those that import
        the project and use what it binds to upstream or register functions (which may
        import the project's modules that do)."""
        names = "|".join(re.escape(n) for n in sorted(self.upstream))
        mentions = re.compile(rb"\b(?:" + names.encode() + rb")\b|getsource")
        needles = [n.encode() for n in (*self.upstream, "getsource")]
        walked, rest = [], []
        for path in self.files:
            text = self.text(path)
            # a substring test first: most files name none, and it is ten times cheaper
            named = any(n in text for n in needles) and mentions.search(text)
            (walked if named else rest).append(path)
        yield from walked
        if not rest:
            return
        tops = "|".join(re.escape(t) for t in sorted({m.split(".")[0] for m in self.path_of}))
        # a line that starts (after blanks) with an import of the project, found at the
        # newline before it (a literal: ^ with MULTILINE tries every position)
        imports_project = re.compile(
            rb"\n[^\S\n]*(?:from\s+\.|from\s+(?:"
            + tops.encode()
            + rb")\b|import\s+(?:"
            + tops.encode()
            + rb")\b)"
        )
        reexported = {
            name.encode()
            for path in walked
            for name, binding in self.exports(self.module_of[path]).names.items()
            if isinstance(binding, Upstream)
        }
        # a star import of a module whose own upstream star import gives it names gives
        # them on: any name may then be upstream's
        stars_given = any(self.exports(self.module_of[path]).upstream_stars for path in walked)
        for path in rest:
            text = self.text(path)
            if not imports_project.search(b"\n" + text):
                continue
            if (
                (
                    any(name in text for name in reexported)
                    and reexported & set(_IDENTIFIER.findall(text))
                )
                or (stars_given and b"import *" in text)
                or (b"egist" in text and _REGISTRATION.search(text))
            ):
                # a registration's function that imports the project's modules is the way
                # into them, under the model types it is filed under (callers.py)
                yield path


_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_REGISTRATION = re.compile(rb"^@[\w.]*[Rr]egist\w*\(", re.MULTILINE)  # a module-level one


# A source handed on through more helpers than this is not followed (and counted).
_MAX_APPLY_DEPTH = 4


def _registered(nodes: list[ast.AST], aliases: set[str]) -> Iterator[tuple[str, ast.expr]]:
    """(key, registered expression) for the registrations into a mapping named ``aliases``."""

    def key_of(target: ast.expr) -> str | None:
        if (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id in aliases
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
        ):
            return target.slice.value
        return None

    for node in nodes:
        key, items = None, []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            key = key_of(node.func.value)
            if node.func.attr == "append":
                items = [node.args[0]]
            elif node.func.attr == "insert" and len(node.args) > 1:
                items = [node.args[1]]
            elif node.func.attr == "extend" and isinstance(node.args[0], (ast.List, ast.Tuple)):
                items = list(node.args[0].elts)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(node.value, (ast.List, ast.Tuple)):
                key = next((k for k in map(key_of, targets) if k is not None), None)
                items = list(node.value.elts)
        if key is not None:
            for item in items:
                yield key, item


def _module_name(path: str, packages: set[str]) -> str:
    """Dotted module name: from the topmost folder of the chain of packages (with an
    ``__init__.py``) above the file; a file outside any package is named by its path."""
    parts = PurePosixPath(path).with_suffix("").parts
    folder = PurePosixPath(path).parent
    depth = 0
    while str(folder) in packages and str(folder) != ".":
        depth += 1
        folder = folder.parent
    names = list(parts[len(parts) - 1 - depth :]) if depth else list(parts)
    if names and names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def _own_tokens(modules: Iterable[tuple[str, str]]) -> frozenset[str]:
    """Names that mark an attribute as the project's: its top-level packages, and their
    first word when it is a name of its own (``unsloth`` of ``unsloth_zoo``). Top-level
    in the target (under ``src/`` or ``lib/`` too): a package vendored deeper (unsloth's
    ``studio/.../data_designer_*``) is no name of the project's, nor is a script beside its
    packages (``setup.py``); either would make every private upstream name containing it
    (``_prepare_dataset``) look like the project's own."""
    tokens = set()
    for path, module in modules:
        top = module.split(".", 1)[0].lower()
        folders = list(PurePosixPath(path).parts[:-1])
        while folders and folders[0] in _SOURCE_ROOTS:
            folders.pop(0)
        if not folders or folders[0].lower() != top:
            continue
        if not top or top in _GENERIC_FOLDERS or top == "__init__":
            continue
        tokens.add(top)
        first = re.split(r"[_-]", top, maxsplit=1)[0]
        if len(first) >= 4:
            tokens.add(first)
    return frozenset(tokens)


# Folders that hold a project's packages (src layout).
_SOURCE_ROOTS = frozenset({"src", "lib"})


# Top-level folders that are no project's name.
_GENERIC_FOLDERS = frozenset({"src", "lib", "tests", "test", "docs", "examples", "scripts"})


def _said(statement: ast.AST) -> bool:
    """A statement that is a string alone: a docstring where it comes first."""
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _covers(node: ast.expr | ast.alias, line: int, column: int) -> bool:
    """Whether ``node``'s span holds the place (``column`` in bytes, as ``ast`` counts)."""
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    return start <= (line, column) < end
