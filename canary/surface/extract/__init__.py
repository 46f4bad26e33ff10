"""A project's dependency surface, read from its source with stdlib ``ast`` (nothing of it is
imported): every upstream import, attribute chain, patch target, ``getsource`` target and
source anchor, each with every site that uses it.

What is followed, and where it stops:

- **Bindings.** ``import``/``from ... import`` anywhere (functions included),
  ``importlib.import_module("...")``/``__import__("...")`` with a literal, ``x = <upstream
  chain>`` aliases, ``getattr(x, "name")``, and the project's own modules: a name a project
  module binds to upstream (``from ._utils import *``, ``from .llama import Trainer``) is
  upstream wherever it is imported. A name nothing binds, in a module with exactly one
  ``from <upstream> import *``, comes from that module (two such imports: unknown, skipped).
- **Attribute chains** are reported whole (``transformers.models.llama.modeling_llama.
  nn.LayerNorm``): where a chain leaves the package (``nn`` is torch's) is only known from
  the upstream tree, so resolution cuts it there and says so. A chain stops at a call, a
  subscript, and at the attributes Python itself gives every object (``__name__``,
  ``__dict__``, ``__wrapped__``, ...), and a list/dict/logger method called on a value named
  like one (``MAPPING.append``, ``logger.addFilter``): those say nothing about upstream. A
  bare imported name is its import; only chains that go further are attribute references.
- **Patches**: assignment to an upstream chain (``x.y.forward = ...``, also ``+=``),
  ``setattr(x, "name", ...)`` with a literal name, and item assignment into an upstream
  mapping (the reference is the mapping).
- **Sources and anchors**: ``inspect.getsource(<upstream object>)`` is a SOURCE reference;
  the text is followed through assignments, ``textwrap.dedent`` (anchors then match the
  dedented text), ``.replace``/``.strip`` and ``re.sub`` results, project helpers that return
  a source or transform one (summarised once; a helper named ``*dedent*``/``*detab*`` counts
  as dedenting), ``x or ""``, and every anchor applied to it becomes an ANCHOR reference on
  the function or class it came from: ``.replace``/``.find``/``.index``/``.count``/
  ``.split``/``.partition``, ``in``/``not in``, ``re.sub``/``search``/``match``/``findall``/
  ``finditer``/``split`` and compiled patterns (their flags folded into the pattern as
  inline flags). The anchor text is followed through module constants (this module's or a
  project module's), dict/list literals and subscripts of them, loops and comprehensions
  over lists or dicts of ``(old, new)`` pairs, concatenation, and f-strings: fully literal
  ones whole, others as their literal fragments, each of which must be there. Text the
  project inserted itself (the new side of an earlier ``.replace``), or an anchor spanning
  it (it matches only the rewritten text), is not an anchor.
- **Across functions**: a project function called with a source text, or with an upstream
  object, is walked as called (literal arguments too): the anchors it applies to the text,
  and the sources it reads and patches it makes through the object (``patch_function(cls,
  "forward", f)`` doing ``setattr(cls, name, f)``), are references at its own lines.
  ``getsource(eval(<literal>))`` reads the object the literal names. Functions registered in
  a run-time registry get their source from a ``source_registries`` declaration in
  ``[tool.canary.surface]``, narrowed by the tests on the method-name parameter.
- **Not anchors** (skipped and counted in :class:`Survey`, never guessed): ``x in source``
  in the test of an ``if`` that returns (x is what the patch would add: without it the patch
  goes on), ``x not in source`` in the test of an ``if`` that patches (absent x is when the
  patch applies: :mod:`canary.surface.anchortests`), text naming the project's own markers
  (``_unsloth_*``), an anchor on a registered source where no test selected the method,
  ``getsource(eval(...))`` of a string not known statically.
- **Anchor tests** (:mod:`canary.surface.anchortests`): spellings the project tries in turn
  are each other's ``alternatives`` on their sites; an anchor whose presence is tested, and
  the code that runs only where such a test found it, is guarded.
- **Guarded** sites: inside ``try`` with a handler or ``with suppress(...)``, under a test
  :mod:`canary.surface.guards` recognises, or in a ``hasattr`` / three-argument ``getattr``
  itself. ``if TYPE_CHECKING:`` blocks never run and are skipped.
- **Where a site is reached**: the upstream imports its function made before it
  (``Site.after``: where one fails, it is not reached), and the conditions of the
  project's imports of its module (:mod:`canary.surface.importers`).
- **The project's own attributes** on upstream objects are not dependencies, set or read: a
  private attribute whose name carries the project's name (``_unsloth_patched``, from its
  top-level packages; public names are left alone, upstream has ``use_liger_kernel``) or
  matches ``own_attributes``; a literal marker on something the project replaced
  (``X.forward = mine; X.forward._fast = True``); one that keeps upstream's original beside
  it (``X._orig_forward = X.forward``), or the original's source text, to read back when
  it patches again (``X._orig_src = inspect.getsource(X.forward)``); and one it sets only
  where a test said it is not there (``if hasattr(X, "_orig"): return`` before it, or a
  backfill under ``if not hasattr(...)``). Reads prove nothing either way: patching a name
  and then calling it is the normal case, and ``f = getattr(peft, "get_peft_model", None)``
  before replacing it is a dependency. An attribute only ever assigned is a patch: replacing
  a name upstream no longer uses silently does nothing, which is what the surface exists to
  catch; one upstream never had is missing on every release, and ``own_attributes`` names
  it.

Which files are read: each file that names an upstream package (or calls ``getsource``),
then each file that imports a project module and names something project modules bind to
upstream; other project modules are parsed only when one of those needs their bindings,
constants or helpers. A file that does not parse is an error naming it (a
:class:`~canary.errors.ParseError`): leave such files out with ``exclude`` in
``[tool.canary.surface]``.
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import itertools
import multiprocessing as mp
import os
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from canary.errors import ParseError
from canary.gcpause import no_collections
from canary.surface import anchortests, fallbacks, guards, importers, probes, versiontests
from canary.surface.config import SourceRegistry
from canary.surface.model import Kind, Match, ReadFrom, Reference, Site, merge_references
from canary.surface.segments import Definition, Statement, split_module
from canary.surface.texts import (
    Literals,
    Param,
    Pattern,
    Text,
    Value,
    concatenate,
    dict_view,
    elements,
    fstring_parts,
    inline_flags,
    union,
    unpack,
)

# Attributes Python gives every module, class or function: a chain through them has left
# upstream's API (its name, its code object, the function it wraps).
RUNTIME_ATTRIBUTES = frozenset(
    {
        "__name__",
        "__qualname__",
        "__module__",
        "__doc__",
        "__dict__",
        "__class__",
        "__code__",
        "__globals__",
        "__wrapped__",
        "__defaults__",
        "__kwdefaults__",
        "__annotations__",
        "__mro__",
        "__bases__",
        "__subclasses__",
        "__func__",
        "__self__",
        "__file__",
        "__path__",
        "__spec__",
        "__loader__",
        "__closure__",
    }
)
# The standard modules whose functions extraction understands, and packaging, for its
# version parsers: a project's own ``Version`` wrapper may compare differently (unsloth's
# reads "4.50.0.dev0" as 4.50.0.1), so only packaging's make a version window.
_STDLIB = frozenset({"inspect", "re", "textwrap", "importlib", "contextlib", "typing", "packaging"})
_BUILTINS = frozenset(dir(builtins))
# str methods that return the text (still upstream's, with the project's edits).
_TEXT_METHODS = frozenset({"replace", "strip", "lstrip", "rstrip", "expandtabs"})
# str methods whose first argument is looked for in the text.
_ANCHOR_METHODS = frozenset(
    {"replace", "find", "rfind", "index", "rindex", "count", "split", "rsplit", "partition",
     "rpartition"}
)  # fmt: skip
# re functions: position of the string argument (the pattern is first; a compiled pattern's
# methods take the same arguments without it).
_RE_STRING_ARGUMENT = {
    "sub": 2, "subn": 2, "search": 1, "match": 1, "fullmatch": 1, "findall": 1,
    "finditer": 1, "split": 1,
}  # fmt: skip
_RE_FLAGS_ARGUMENT = {
    "sub": 4, "subn": 4, "search": 2, "match": 2, "fullmatch": 2, "findall": 2,
    "finditer": 2, "split": 3,
}  # fmt: skip
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
# Folders that hold a project's packages (src layout).
_SOURCE_ROOTS = frozenset({"src", "lib"})
# Top-level folders that are no project's name.
_GENERIC_FOLDERS = frozenset({"src", "lib", "tests", "test", "docs", "examples", "scripts"})


@dataclass(frozen=True)
class Upstream:
    path: str  # dotted: transformers.trainer.Trainer


@dataclass(frozen=True)
class Stdlib:
    """An object of a module outside the project and upstream, known by its dotted path: of
    the standard library (and ``packaging``), or a version parser the project declares."""

    path: str  # inspect.getsource


@dataclass(frozen=True)
class ProjectModule:
    name: str


@dataclass(frozen=True)
class ProjectFunction:
    module: str
    name: str
    # parsed, or a top-level definition parsed when first needed
    definition: ast.FunctionDef | ast.AsyncFunctionDef | Definition = field(
        compare=False, hash=False, repr=False
    )

    @property
    def node(self) -> ast.FunctionDef | ast.AsyncFunctionDef:
        node = self.definition
        if isinstance(node, Definition):
            node = node.node  # type: ignore[assignment]
        return node  # type: ignore[return-value]


Binding = Upstream | Stdlib | ProjectModule | ProjectFunction
# A project function whose name says it tests versions or requirements.
_VERSION_HELPER = re.compile(r"version|require|_v\d", re.IGNORECASE)
_UNBOUND = object()  # a name no scope binds (None: bound, to something extraction ignores)


@dataclass(frozen=True)
class Use:
    """One site of one reference, with what the own-attribute rules need to know."""

    kind: Kind
    target: str
    path: str
    line: int
    guarded: bool
    anchor: str | None = None
    match: Match | None = None
    scope: int = 0  # the function it is in (0: module level)
    presence: bool = False  # hasattr(x, "y") / getattr(x, "y", default): asks, needs nothing
    unset: bool = False  # under a test that x.y is not there (yet)
    replaces: bool = False  # a PATCH that replaces the object (not an item in it)
    aliases: str = ""  # ... with upstream's own object Y (X.n = Y): Y's dotted path
    stash: str | None = None  # X._orig_f = X.f: the original it keeps beside it (X.f)
    constant: bool = False  # set to a literal (True, a name): a marker
    versions: tuple[tuple[str, str], ...] = ()  # the window of the version tests around it
    undecided: str = ""  # a test around it canary cannot evaluate decides whether it runs
    fallback_of: tuple[str, ...] = ()  # runs only where one of these upstream imports fails
    requires: tuple[str, ...] = ()  # runs only where these upstream things exist
    spot: anchortests.Spot = (0, 0)  # ANCHOR: where it is applied (line, column)
    partners: tuple[anchortests.Spot, ...] = ()  # ANCHOR: the spots of its alternatives
    after: tuple[str, ...] = ()  # reached only after its function imported these
    handled: str = ""  # an import whose failure its try's handler takes the place of: why
    read_from: ReadFrom | None = None  # an anchor read only where its owner is the one read


def _read_from(text: Text, name: str | None) -> ReadFrom | None:
    """Where a registry with several sources reads method ``name`` from (None: sources
    without ``{name}``): each source's owner (what it is looked up on), in order."""
    if not text.tried:
        return None
    filled = (t.replace("{name}", name) if name else t for t in text.tried)
    owners = tuple(t.rpartition(".")[0] for t in filled)
    return ReadFrom(owners, text.follow_shims)


@dataclass(frozen=True)
class Survey:
    """What extraction found, and what it saw but could not follow (reason -> sites): an
    anchor with no certain target is left out, never guessed (a wrong target is a false
    alarm)."""

    references: tuple[Reference, ...]
    skipped: Mapping[str, int]


def extract(
    root: Path,
    files: Iterable[str],
    *,
    upstream: Collection[str],
    own_attributes: Collection[str] = (),
    registries: Collection[SourceRegistry] = (),
    version_parsers: Collection[str] = (),
) -> tuple[Reference, ...]:
    """The references of the project at ``root`` (``files`` relative, "/"-separated) to the
    packages whose import names are ``upstream``, one per key with every site, sorted.
    ``own_attributes``: fnmatch patterns of attribute names the project puts on upstream
    objects itself (beyond those carrying its name); ``registries``: the project's source
    registries; ``version_parsers``: dotted names of callables that order release versions
    as packaging's ``Version`` does (all three from ``[tool.canary.surface]``)."""
    return survey(
        root,
        files,
        upstream=upstream,
        own_attributes=own_attributes,
        registries=registries,
        version_parsers=version_parsers,
    ).references


@no_collections()  # the collector's passes over a large module's trees made it superlinear
def survey(
    root: Path,
    files: Iterable[str],
    *,
    upstream: Collection[str],
    own_attributes: Collection[str] = (),
    registries: Collection[SourceRegistry] = (),
    version_parsers: Collection[str] = (),
    workers: int | None = None,
) -> Survey:
    """:func:`extract`, with what could not be followed. ``workers``: processes to walk a
    large project's files in (default: one per CPU; 1: this process only)."""
    project = _Project(root, tuple(files), frozenset(upstream), frozenset(version_parsers))
    paths = list(project.paths_to_walk())
    uses, skipped, loads = _walk_all(project, paths, os.cpu_count() if workers is None else workers)
    for registry in registries:
        uses.extend(project.registered_anchors(registry))
    uses.extend(project.drain_applied())
    skipped |= project.skipped
    uses = importers.reach(uses, loads, project.module_of, project.source)
    own = _own_targets(uses, project.own_tokens, tuple(own_attributes))
    references = _merge(use for use in uses if not _is_own(use, own))
    counts = Counter(why for why, _, _ in skipped)
    return Survey(references, dict(sorted(counts.items())))


# Fewer files than this are walked in this process: forking costs more than they do.
_PARALLEL_FROM = 16
_FORKED: _Project | None = None  # the project a forked worker walks (inherited, warm)


def _walk_all(
    project: _Project, paths: list[str], workers: int
) -> tuple[list[Use], set[tuple[str, str, int]], list[importers.Load]]:
    """Walk ``paths``: in this process, or, for a large project where ``fork`` exists, in
    ``workers`` forked processes that inherit the project's bindings already read (parsing
    is most of the time, and files are independent given those)."""
    global _FORKED  # noqa: PLW0603 - handed to forked workers, which inherit it
    forkable = "fork" in mp.get_all_start_methods() and _single_threaded()
    if workers <= 1 or len(paths) < _PARALLEL_FROM or not forkable:
        results = [_walk_file(project, path) for path in paths]
    else:
        _FORKED = project
        try:
            with mp.get_context("fork").Pool(workers) as pool:
                results = pool.map(_walk_forked, paths, chunksize=4)
        finally:
            _FORKED = None
    uses: list[Use] = []
    skipped: set[tuple[str, str, int]] = set()
    loads: list[importers.Load] = []
    for walked, found, loaded in results:
        uses.extend(walked)
        skipped |= found
        loads.extend(loaded)
    return uses, skipped, loads


def _single_threaded() -> bool:
    """Whether this process has one thread: a fork copies the locks other threads hold, held
    for good in the child (3.12+ warns), so with threads the walk stays in this process."""
    try:
        return len(os.listdir("/proc/self/task")) == 1  # every thread, C libraries' too
    except OSError:
        return threading.active_count() == 1


def _walk_forked(
    path: str,
) -> tuple[list[Use], set[tuple[str, str, int]], list[importers.Load]]:
    assert _FORKED is not None
    return _walk_file(_FORKED, path)


def _walk_file(
    project: _Project, path: str
) -> tuple[list[Use], set[tuple[str, str, int]], list[importers.Load]]:
    """One file's uses (with those of the helpers it hands a source to), skips, and its
    imports of project modules."""
    walker = _Walker(project, path, emit=True)
    walker.walk_module()
    skipped, project.skipped = project.skipped, set()
    return [*walker.uses, *project.drain_applied()], skipped, walker.loads


# --- the project: its modules, their bindings and helpers ---------------------------------


@dataclass
class _Exports:
    names: dict[str, Binding | None]
    values: dict[str, Value]
    upstream_stars: list[str]
    conditions: dict[str, _Bound] = field(default_factory=dict)


class _Project:
    def __init__(
        self,
        root: Path,
        files: tuple[str, ...],
        upstream: frozenset[str],
        parsers: frozenset[str] = frozenset(),
    ) -> None:
        self.root = root
        self.upstream = upstream
        self.parsers = parsers  # the version parsers the project declares, dotted
        self.files = tuple(f for f in files if f.endswith(".py"))
        self.module_of: dict[str, str] = {}
        self.path_of: dict[str, str] = {}
        packages = {str(PurePosixPath(f).parent) for f in self.files if f.endswith("__init__.py")}
        for path in self.files:
            name = _module_name(path, packages)
            self.module_of[path] = name
            self.path_of.setdefault(name, path)
        self.own_tokens = _own_tokens(self.module_of.items())
        self.children: dict[str, list[str]] = {}  # package -> its direct submodules
        self.modules = frozenset(self.path_of)
        for name in self.path_of:
            if "." in name:
                self.children.setdefault(name.rpartition(".")[0], []).append(name)
        self._text: dict[str, bytes] = {}
        self._trees: dict[str, ast.Module] = {}
        self._exports: dict[str, _Exports] = {}
        self._summaries: dict[int, tuple[Value | None, tuple[str, ...]]] = {}
        self._helper_calls: dict[tuple, versiontests.Outcome | None] = {}
        self._checks: dict[int, bool] = {}
        self._probes: dict[int, frozenset[str] | None] = {}
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
        self._unbound_harmless: dict[tuple[str, int, str, bool], str] = {}
        # (path, line, column) of a try -> its handled imports (line, column) -> why
        self.handled: dict[tuple[str, int, int], dict[tuple[int, int], str]] = {}

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
        """:func:`fallbacks.unbound_is_harmless` of the module-level ``node`` of ``path``,
        where no other file names ``name`` ("": some may import it)."""
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
            self._unbound_harmless[key] = "" if why and self.named_elsewhere(path, name) else why
        return self._unbound_harmless[key]

    def named_elsewhere(self, path: str, name: str) -> bool:
        """Whether a file other than ``path`` has ``name`` in its text (it may import it):
        asked only of a name its module leaves harmless, so seldom."""
        word = name.encode()
        return any(word in self.text(other) for other in self.files if other != path)

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
        if dotted.split(".", 1)[0] in _STDLIB or self.outside_parser(dotted):
            return Stdlib(dotted)
        return None

    def outside_parser(self, dotted: str) -> bool:
        """Whether ``dotted`` is a declared version parser, or a module holding one, that
        is neither the project's nor upstream's (unsloth's ``unsloth_zoo.utils.Version``)."""
        return any(p == dotted or p.startswith(f"{dotted}.") for p in self.parsers)

    def exports(self, module: str) -> _Exports:
        """The module-level bindings of a project module (lazily; a cycle sees what is
        known so far, as Python would see a partly initialised module)."""
        if module not in self._exports:
            self._exports[module] = _Exports({}, {}, [])
            path = self.path_of.get(module)
            if path is not None:
                self._reading.append(module)
                try:
                    walker = _Walker(self, path, emit=False)
                    walker.bind_module_level()
                finally:
                    self._reading.pop()
                scope = walker.module_scope
                self._exports[module] = _Exports(
                    scope.names, scope.values, walker.upstream_stars, scope.conditions
                )
        elif module in self._reading:
            # a cycle: the modules read since saw this one partly initialised
            self._cut_short.update(self._reading[self._reading.index(module) + 1 :])
        return self._exports[module]

    def whole_exports(self, module: str) -> _Exports | None:
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

    def summary(self, function: ProjectFunction) -> tuple[Value | None, tuple[str, ...]]:
        """What a project helper returns, in terms of its parameters (:class:`Param`), and
        its parameter names."""
        key = id(function.definition)
        if key not in self._summaries:
            self._summaries[key] = (None, ())  # recursion: nothing known yet
            walker = _Walker(self, self.path_of[function.module], emit=False)
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
            walker = _Walker(self, self.path_of[function.module], emit=False)
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
            walker = _Walker(self, self.path_of[function.module], emit=False)
            self._versions_returned[key] = walker.version_returned(function, params, depth)
        return self._versions_returned[key]

    def probe_requires(self, function: ProjectFunction) -> frozenset[str] | None:
        """What ``function`` requires of upstream for returning a truthy value, when it is a
        presence probe (:mod:`canary.surface.probes`); None: it is none."""
        key = id(function.definition)
        if key not in self._probes:
            walker = _Walker(self, self.path_of[function.module], emit=False)
            exports = self.exports(function.module)
            walker.module_scope = walker.scope = _Scope(
                exports.names, exports.values, conditions=exports.conditions
            )
            self._probes[key] = probes.requirements(
                function.node, walker._imports_only, walker.upstream_path
            )
        return self._probes[key]

    def may_check(self, function: ProjectFunction) -> bool:
        """Whether calling ``function`` may stop the caller: it raises, or its name says it
        checks versions or requirements."""
        key = id(function.definition)
        if key not in self._checks:
            named = _VERSION_HELPER.search(function.name) is not None
            self._checks[key] = named or _may_mention(function, "raise")
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
        walker = _Walker(self, self.path_of[function.module], emit=True)
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
            names = _positional(function.node)
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
                    base = _absolute_module(here, path.endswith("__init__.py"), node)
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
        """The files that can reference upstream (see the module docstring)."""
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
        for path in rest:
            text = self.text(path)
            if (
                imports_project.search(b"\n" + text)
                and any(name in text for name in reexported)
                and reexported & set(_IDENTIFIER.findall(text))
            ):
                yield path


_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# A source handed on through more helpers than this is not followed (and counted).
_MAX_APPLY_DEPTH = 4


def _absolute_module(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The absolute module ``from <node.module> import ...`` names inside ``module``."""
    if not node.level:
        return node.module
    package = module.split(".")
    if not is_package:
        package = package[:-1]
    if node.level - 1 > len(package):
        return None
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


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


def _may_mention(function: ProjectFunction, *words: str) -> bool:
    """Whether the function's text may contain one of ``words`` (a function parsed
    already, nested in another, may: its text is not kept)."""
    definition = function.definition
    if not isinstance(definition, Definition):
        return True
    text = definition.text.lower()
    return any(word in text for word in words)


def _positional(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in (*node.args.posonlyargs, *node.args.args)]


_IMPORT_STATEMENT = re.compile(
    r"(?m)^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n#;]*)"
    r"|import[ \t]+([^\n#;]+))"
)


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


# --- scopes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Bound:
    """Where a binding is made: a version window, and the upstream imports it falls back
    from (it is made only where one of them fails)."""

    window: guards.Window = guards.EVERY_RELEASE
    fallback_of: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Presence:
    """A name bound to a presence test (``added = not hasattr(x, "y")``): what holds about
    upstream attributes where it is true, and where it is false ("+x.y", "-x.y")."""

    true: frozenset[str]
    false: frozenset[str]


@dataclass
class _Scope:
    names: dict[str, Binding | None] = field(default_factory=dict)
    values: dict[str, Value] = field(default_factory=dict)
    parent: _Scope | None = None
    is_class: bool = False
    # names bound to upstream under a version test or in an except ImportError: where
    # that binding is made, which every later use of the name carries (elsewhere, the
    # name is something else)
    conditions: dict[str, _Bound] = field(default_factory=dict)

    def condition_of(self, name: str) -> _Bound | None:
        """Where the binding ``name`` has here is made (None: on every release)."""
        scope: _Scope | None = self
        first = True
        while scope is not None:
            if (first or not scope.is_class) and name in scope.names:
                return scope.conditions.get(name)
            first = False
            scope = scope.parent
        return None

    def lookup(self, name: str) -> object:
        scope: _Scope | None = self
        first = True
        while scope is not None:
            # a class body's names are not visible inside its methods
            if (first or not scope.is_class) and name in scope.names:
                return scope.names[name]
            first = False
            scope = scope.parent
        return _UNBOUND

    def value(self, name: str) -> Value | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            if name in scope.names:
                return None  # bound to something else: shadows an outer constant
            scope = scope.parent
        return None


# --- the walker ------------------------------------------------------------------------


class _Walker:
    """Walks one file in order, keeping bindings, text values and the guard context."""

    def __init__(self, project: _Project, path: str, *, emit: bool) -> None:
        self.project = project
        self.path = path
        self.module = project.module_of[path]
        self.is_package = path.endswith("__init__.py")
        self.emit = emit
        self.module_scope = _Scope()
        self.scope = self.module_scope
        self.upstream_stars: list[str] = []
        self.uses: list[Use] = []
        self.guarded = 0
        self.window = guards.EVERY_RELEASE  # the releases the current branch runs on
        self.present: frozenset[str] = frozenset()
        self.conditional = 0  # branches entered within the current scope
        self.function = 0
        self.returns: Value | None = None
        self.summarising = False
        self.interesting: frozenset[str] | None = None
        self.checked: ast.stmt | None = None  # the definition _skippable passed last
        # applying a function to a source (Project.apply): only its anchors are recorded
        # (its other references are the plain walk's); the parameter naming the method
        # that source is, and the methods the tests on it selected (None: any)
        self.applying = False
        self.depth = 0
        self.passed: set[str] = set()  # the upstream objects given to the applied function
        self.selector: str | None = None
        self.selected: frozenset[str] | None = None
        self.done_test = False  # evaluating the test of an if whose body returns
        # the function walked, whose anchor tests are read when first needed (most
        # functions never hold a source text)
        self.function_node: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        self.tested = 0  # in code that runs only where an anchor a test asked about is there
        self.helper_depth = 0  # evaluating a version helper called from helpers this deep
        self.undecided = ""  # why the current branch may not run: a test not evaluated
        self.fallback_of: tuple[str, ...] = ()  # in an except ImportError of these imports
        # upstream imports this function made before, in the blocks around: where one
        # fails it raises there, so what follows in them runs only where they succeed
        self.imported: frozenset[str] = frozenset()
        self.loads: list[importers.Load] = []  # its imports of project modules
        # imports (by position) whose failure a handler takes the place of: why
        self.handled: dict[tuple[int, int], str] = {}
        # the function (0: the module) whose current try body an except ImportError ends
        self.catching: int | None = None

    # entry points

    def walk_module(self) -> None:
        exports = self.project.whole_exports(self.module)
        if exports is None:
            self.bind_module_level()
        else:  # the same binding pass, done already
            self.module_scope = _Scope(
                dict(exports.names), dict(exports.values), conditions=dict(exports.conditions)
            )
            self.scope = self.module_scope
            self.upstream_stars = list(exports.upstream_stars)
        self.interesting = self._interesting()
        self.block(self.project.body(self.path))

    def _interesting(self) -> frozenset[str] | None:
        """The names a module-level function or class must mention to reference upstream
        (None: any name may, under a ``from <upstream> import *``)."""
        if self.upstream_stars:
            return None
        return frozenset(
            {"__import__", "getsource", "import_module", *self._bound_upstream(self.module_scope)}
        )

    def _bound_upstream(self, scope: _Scope) -> Iterator[str]:
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
        """An import that can bind something upstream-bound: an upstream module, or names of
        a project module that are bound to upstream (a module that reaches it, a helper
        that reads sources)."""
        project = self.project
        if project.is_upstream(module):
            return True
        if names is None or module not in project.path_of:
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
        emit, self.emit = self.emit, False
        try:
            for node in self.project.body(self.path):
                self.statement(node, nested=False)
        finally:
            self.emit = emit

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
        self.module_scope = _Scope(exports.names, exports.values, conditions=exports.conditions)
        self.upstream_stars = exports.upstream_stars
        node = function.node
        names = _positional(node)
        self.scope = _Scope(parent=self.module_scope)
        for arg in _arguments(node.args):
            self.scope.names[arg] = None
        for index, value in values.items():
            if index >= len(names):
                continue
            if isinstance(value, Upstream):
                self.scope.names[names[index]] = value
                self.passed.add(value.path)
            else:
                self.scope.values[names[index]] = value
        self.selector = names[selector] if selector is not None and selector < len(names) else None
        self.selected = selected
        self.applying, self.depth, self.function = True, depth, id(node)
        self.function_node = node
        self.block(node.body)

    def evaluate(
        self, function: ProjectFunction, params: Mapping[str, object], depth: int
    ) -> versiontests.Outcome:
        """``function``'s body run as a version test with ``params`` bound."""
        exports = self.project.exports(self.module)
        self.module_scope = _Scope(exports.names, exports.values, conditions=exports.conditions)
        self.upstream_stars = exports.upstream_stars
        self.scope = _Scope(parent=self.module_scope)
        for arg in _arguments(function.node.args):
            self.scope.names[arg] = None
        for name, value in params.items():
            if isinstance(value, str):
                self.scope.values[name] = Literals((value,))
        self.helper_depth = depth
        evaluator = versiontests.Evaluator(self, params, self.project.upstream, self.helper_outcome)
        return evaluator.block(function.node.body)

    def helper_outcome(self, node: ast.Call) -> versiontests.Outcome | None:
        """A call of a project function, as a version test; None: no project function, or
        one whose text never speaks of versions (it cannot compare them)."""
        function = self._callee(node)
        if not isinstance(function, ProjectFunction):
            return None
        if _VERSION_HELPER.search(function.name) is None and not _may_mention(
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
        helper = _Walker(self.project, self.project.path_of[function.module], emit=False)
        exports = self.project.exports(function.module)
        helper.module_scope = helper.scope = _Scope(
            exports.names, exports.values, conditions=exports.conditions
        )
        return versiontests.bind_arguments(
            function.node, node, self.constant_of, helper.constant_of
        )

    def returned_version(self, node: ast.Call) -> guards.InstalledVersion | None:
        """A project function that returns an upstream package's installed version
        (``_get_package_version("transformers")``), as called; None: it does not."""
        function = self._callee(node)
        if not isinstance(function, ProjectFunction) or self.helper_depth >= versiontests.DEPTH:
            return None
        if not _may_mention(function, "version"):
            return None  # no installed version is read without naming one
        params = self._bound_arguments(function, node)
        if params is None:
            return None
        return self.project.installed_version(function, params, self.helper_depth + 1)

    def version_returned(
        self, function: ProjectFunction, params: Mapping[str, object], depth: int
    ) -> guards.InstalledVersion | None:
        """What every ``return`` of ``function`` outside its exception handlers gives,
        when that is one package's installed version."""
        exports = self.project.exports(self.module)
        self.module_scope = _Scope(exports.names, exports.values, conditions=exports.conditions)
        self.scope = _Scope(parent=self.module_scope)
        for arg in _arguments(function.node.args):
            self.scope.names[arg] = None
        for name, value in params.items():
            if isinstance(value, str):
                self.scope.values[name] = Literals((value,))
        self.helper_depth = depth
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

    def _bound_at(self, node: ast.AST) -> _Bound:
        """Where a use runs: the branch's window and fallback, and those of the binding
        the name it goes through had (``H`` bound to ``trl.CPOTrainer`` under ``trl<0.29``
        is that object only there)."""
        here = _Bound(self.window, self.fallback_of)
        root = node
        while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if not isinstance(root, ast.Name):
            return here
        bound = self.scope.condition_of(root.id)
        if bound is None:
            return here
        return _Bound(self.window & bound.window, self.fallback_of or bound.fallback_of)

    def _undecided(self, node: ast.expr, *, check: bool = False) -> str:
        """Why a test or check decides where what follows runs and canary cannot say
        where: a call of a project function named for versions or requirements that was
        not read as a window (""): none); ``check``: a call made as a statement, where
        what matters is whether it returns, not its value."""
        for part in ast.walk(node):
            if not isinstance(part, ast.Call):
                continue
            function = self._callee(part)
            if not isinstance(function, ProjectFunction):
                continue
            if _VERSION_HELPER.search(function.name) is None:
                continue
            outcome = self.helper_outcome(part)
            cond = None if outcome is None else outcome.returns if check else outcome.value
            readable = cond is not None and (cond.constant is not None or cond.gate is not None)
            if not readable:
                call = ast.unparse(part)
                call = call if len(call) <= 80 else f"{call[:77]}..."
                return f"runs only where {call} allows, which canary cannot evaluate"
        return ""

    def constant_of(self, node: ast.expr) -> object:
        value = self.literal(node)
        if value is _NOT_LITERAL or isinstance(value, (tuple, list, dict)):
            return versiontests.NOT_CONSTANT
        return value

    def callee_of(self, node: ast.Call) -> tuple[str, object] | None:
        binding = self._callee(node)
        if isinstance(binding, ProjectFunction):
            return ("helper", binding)
        if isinstance(binding, Upstream):
            return ("upstream", binding.path)
        return None

    def run_assignment(self, node: ast.stmt) -> None:
        self.statement(node)

    def summarise(self, function: ProjectFunction) -> tuple[Value | None, tuple[str, ...]]:
        exports = self.project.exports(self.module)
        self.module_scope = _Scope(exports.names, exports.values, conditions=exports.conditions)
        self.upstream_stars = exports.upstream_stars
        node = function.node
        names = tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args))
        self.scope = _Scope(parent=self.module_scope)
        for arg in _arguments(node.args):
            self.scope.names[arg] = None
        for index, name in enumerate(names):
            self.scope.values[name] = Param(index)
        self.summarising = True
        self.block(node.body)
        result = self.returns
        if _DEDENTING_HELPER.search(node.name):
            if isinstance(result, Text):
                result = replace(result, dedented=True)
            elif isinstance(result, Param):
                result = Param(result.index, result.source, True)
        return result, names

    # statements

    def block(self, statements: list[ast.stmt]) -> None:
        saved = (self.guarded, self.present, self.selected, self.window, self.undecided)
        tested = self.tested
        imported = self.imported
        for node in statements:
            self.statement(node)
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
                # check_version("trl>=0.9"): what follows runs only where it returned
                returns = self.returns_where(node.value)
                if returns is not None:
                    self.window &= returns
                else:
                    self.undecided = self.undecided or self._undecided(node.value, check=True)
            if isinstance(node, ast.Try) and (imports := self._upstream_imported(node.body)):
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
            if isinstance(node, ast.If) and guards.exits(node.body):
                self.tested += self.anchor_branches(node).rest
                self.undecided = self.undecided or self._undecided(node.test)
                # what follows runs only where the test failed
                if guards.exits(node.body, silently=True) and guards.is_guard_test(node.test):
                    self.guarded += 1
                self.present |= self._present(node.test, positive=False)
                self.selected = self._narrowed(node.test, positive=False)
                self.window &= self._window(node.test, positive=False)
        self.guarded, self.present, self.selected, self.window, self.undecided = saved
        self.tested = tested
        self.imported = imported

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

    def s_annotated(self, node: ast.AnnAssign, nested: bool) -> None:
        if nested:
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
        self.guarded += suppresses
        self.body(node.body, nested)
        self.guarded -= suppresses

    def s_for(self, node: ast.For | ast.AsyncFor, nested: bool) -> None:
        if nested:
            self.expr(node.iter)
        self.bind_loop(node.target, node.iter)
        self.conditional += 1
        self.body(node.body, nested)
        self.body(node.orelse, nested)
        self.conditional -= 1

    def s_while(self, node: ast.While, nested: bool) -> None:
        if nested:
            self.expr(node.test)
        guard = guards.is_guard_test(node.test)
        self.guarded += guard
        self.conditional += 1
        self.body(node.body, nested)
        self.guarded -= guard
        self.body(node.orelse, nested)
        self.conditional -= 1

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
        self.conditional += 1
        for case in node.cases:
            self.body(case.body, nested)
        self.conditional -= 1

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
            self.done_test = guards.exits(node.body, silently=True)
            self.expr(node.test)
            self.done_test = False
        guard = guards.is_guard_test(node.test)
        saved = (self.present, self.selected, self.window)
        branches = self.anchor_branches(node)
        undecided = self.undecided
        self.undecided = undecided or self._undecided(node.test)
        self.guarded += guard
        self.conditional += 1
        self.present = saved[0] | self._present(node.test, positive=True)
        self.selected = self._narrowed(node.test, positive=True)
        self.window = saved[2] & self._window(node.test, positive=True)
        self.tested += branches.body
        self.body(node.body, nested)
        self.tested += branches.orelse - branches.body
        self.present = saved[0] | self._present(node.test, positive=False)
        self.selected = saved[1]
        self.selected = self._narrowed(node.test, positive=False)
        self.window = saved[2] & self._window(node.test, positive=False)
        self.body(node.orelse, nested)
        self.tested -= branches.orelse
        self.present, self.selected, self.window = saved
        self.undecided = undecided
        self.conditional -= 1
        self.guarded -= guard

    def anchor_tests(self) -> anchortests.Reading:
        """How the function walked tests its anchors (module level: not read)."""
        function = self.function_node
        return anchortests.EMPTY if function is None else anchortests.read(function)

    def anchor_branches(self, node: ast.If) -> anchortests.Branches:
        """The parts of an ``if`` that run only where an anchor its test asks about is
        there, when one of those is applied to a source text (the syntax alone cannot tell
        ``x in source`` from ``x in ("a", "b")``)."""
        if not any(isinstance(v, Text) for v in self.scope.values.values()):
            return anchortests.Branches()  # no test here can ask about a source text
        branches = self.anchor_tests().branches(node)
        if any(self._on_text(asked) for asked in branches.asks):
            return branches
        return anchortests.Branches()

    def _on_text(self, node: ast.expr) -> bool:
        """Whether an ``in`` test or anchor call is applied to a source text."""
        if isinstance(node, ast.Compare):
            return isinstance(self.value(node.comparators[0]), Text)
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        operands = [*node.args, *([func.value] if isinstance(func, ast.Attribute) else [])]
        return any(isinstance(self.value(operand), Text) for operand in operands)

    def s_try(self, node: ast.Try, nested: bool) -> None:
        caught = bool(node.handlers)
        imports = self._imports_only(node.body)
        self.guarded += caught
        handled: dict[tuple[int, int], str] = {}
        # only a walk that records uses reads it, and only of a try that imports upstream
        if nested and self.emit and self._upstream_imported(node.body):
            key = (self.path, node.lineno, node.col_offset)
            if key not in self.project.handled:  # a function may be walked more than once
                found = fallbacks.handled_imports(
                    node,
                    lambda name: self._none_harmless(node, name),
                    lambda name, kept: self._unbound_harmless(node, name, kept=kept),
                )
                self.project.handled[key] = {
                    (n.lineno, n.col_offset): found[id(n)] for n in node.body if id(n) in found
                }
            handled = self.project.handled[key]
        self.handled.update(handled)
        catching = self.catching
        if any(fallbacks.catches_import_error(h) for h in node.handlers):
            self.catching = self.function
        self.body(node.body, nested)
        self.catching = catching
        for key in handled:
            self.handled.pop(key, None)
        self.guarded -= caught
        self.conditional += 1
        outer = self.fallback_of
        for handler in node.handlers:
            if nested and handler.type is not None:
                self.expr(handler.type)
            if handler.name:
                self.scope.names[handler.name] = None
            if imports and not outer and fallbacks.catches_import_error(handler):
                self.fallback_of = imports
            self.body(handler.body, nested)
            self.fallback_of = outer
        self.body(node.orelse, nested)
        self.conditional -= 1
        self.body(node.finalbody, nested)

    def _handled_import(self, node: ast.AST) -> str:
        position = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        return self.handled.get(position, "")

    def _none_harmless(self, node: ast.Try, name: str) -> bool:
        """Whether ``name``, set to None where the imports of ``node`` fail, is read
        nowhere a None can break: judged at module level only."""
        if self.scope is not self.module_scope or self.function:
            return False
        return self.project.none_harmless(self.path, node, name)

    def _unbound_harmless(self, node: ast.Try, name: str, *, kept: bool) -> str:
        """Why ``name``, left as it was where the body of ``node`` stops at a failed
        import, breaks nothing (""): it may). In a function, its body is the block; at
        module level the module, and no other file may name it (it may import it)."""
        if self.function_node is not None:
            function = self.function_node
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

    def _upstream_imported(self, body: list[ast.stmt]) -> tuple[str, ...]:
        """The upstream targets a block's own import statements import (other imports and
        statements beside them): all imported wherever the block ran to its end."""
        return tuple(
            target
            for node in body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for target in self._imports_only([node])
        )

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
            elif fallbacks.harmless(node):
                continue
            else:
                return ()
            if not all(self.project.is_upstream(name) for name in names):
                return ()
            targets += names
        return tuple(targets)

    def s_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, nested: bool) -> None:
        self.scope.names[node.name] = ProjectFunction(self.module, node.name, node)
        self.scope.values.pop(node.name, None)
        if not nested:
            return
        for child in (*node.decorator_list, *_defaults(node.args)):
            self.expr(child)
        for annotation in _annotations(node):
            self.expr(annotation)
        if self.summarising or self._skippable(node):
            return  # a helper's nested functions are not its return value
        outer = (self.scope, self.conditional, self.function, self.imported, self.function_node)
        parent = self.scope
        while parent.is_class and parent.parent is not None:
            parent = parent.parent
        self.scope = _Scope(parent=parent)
        for arg in _arguments(node.args):
            self.scope.names[arg] = None
        self.conditional, self.function, self.imported = 0, id(node), frozenset()
        self.function_node = node
        self.block(node.body)
        self.scope, self.conditional, self.function, self.imported, self.function_node = outer

    def s_class(self, node: ast.ClassDef, nested: bool) -> None:
        self.scope.names[node.name] = None
        self.scope.values.pop(node.name, None)
        if not nested or self._skippable(node):
            return
        for child in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.expr(child)
        outer = self.scope
        self.scope = _Scope(parent=outer, is_class=True)
        self.block(node.body)
        self.scope = outer

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
                known = base.split(".", 1)[0] in _STDLIB or self.project.outside_parser(dotted)
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
            self.bind(name, self.project.member(base, alias.name))
            bound = self.project.exports(base).conditions.get(alias.name)
            if bound is not None:  # bound there under a condition: so is it here
                self.scope.conditions[name] = _Bound(
                    self.window & bound.window, self.fallback_of or bound.fallback_of
                )
            value = self.project.exports(base).values.get(alias.name)
            if value is not None:
                self.scope.values[name] = value
            return
        exports = self.project.exports(base)
        public = [n for n in exports.names if not n.startswith("_")]
        for name in public:
            self.bind(name, exports.names[name])
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
        requires = tuple(sorted(p[1:] for p in self.present if p.startswith("+")))
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
                )
            )

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        return _absolute_module(self.module, self.is_package, node)

    # bindings

    def bind(self, name: str, binding: Binding | None) -> None:
        if binding is None and self.conditional and self.scope.lookup(name) is not _UNBOUND:
            # `except ImportError: X = None` and `else: X = None` are fallbacks: the
            # primary branch's binding is the one that uses upstream
            return
        self.scope.names[name] = binding
        self.scope.values.pop(name, None)
        if isinstance(binding, Upstream) and (self.window.bounds or self.fallback_of):
            self.scope.conditions[name] = _Bound(self.window, self.fallback_of)
        else:
            self.scope.conditions.pop(name, None)

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
                    stash=stash,
                    constant=constant,
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
            presence = _Presence(true, false) if true or false else None
        self.bind(name, binding)
        if text is not None:
            self.scope.values[name] = text
        elif fact is not None:
            self.scope.values[name] = fact  # type: ignore[assignment]
        elif presence is not None:
            self.scope.values[name] = presence  # type: ignore[assignment]
        elif not self.conditional:
            self.scope.values.pop(name, None)

    def assign_unpacking(self, target: ast.Tuple | ast.List, value: ast.expr | None) -> None:
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            for element, element_value in zip(target.elts, value.elts, strict=True):
                self.assign(element, element_value)
            return
        whole = self.value(value)
        for index, element in enumerate(target.elts):
            if isinstance(element, ast.Name):
                self.bind(element.id, None)
                if index == 0 and isinstance(whole, (Text, Param)):
                    self.scope.values[element.id] = whole  # text, extra = helper(text)
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

    def binding(self, node: ast.expr | None) -> Binding | None:
        if node is None:
            return None
        binding, _, complete = self.chain(node)
        return binding if complete else None

    def upstream_path(self, node: ast.expr) -> str | None:
        """The upstream thing ``node`` names in whole, if any."""
        binding, _, complete = self.chain(node)
        return binding.path if isinstance(binding, Upstream) and complete else None

    def chain(self, node: ast.expr) -> tuple[Binding | None, int, bool]:
        """What an attribute chain is bound to: the binding, how many attributes were taken
        on upstream objects, and whether the whole chain was (False: it stopped early, at a
        runtime attribute or a name extraction knows nothing of)."""
        parts: list[str] = []
        root = node
        while isinstance(root, ast.Attribute):
            parts.append(root.attr)
            root = root.value
        binding = self.root(root)
        steps = 0
        for index, attr in enumerate(reversed(parts)):
            if isinstance(binding, Upstream):
                if attr in RUNTIME_ATTRIBUTES:
                    return binding, steps, False
                binding, steps = Upstream(f"{binding.path}.{attr}"), steps + 1
            elif isinstance(binding, Stdlib):
                binding = Stdlib(f"{binding.path}.{attr}")
            elif isinstance(binding, ProjectModule):
                binding = self.project.member(binding.name, attr)
            else:
                return binding, steps, index == len(parts)
        return binding, steps, True

    def root(self, node: ast.expr) -> Binding | None:
        if isinstance(node, ast.Name):
            found = self.scope.lookup(node.id)
            if found is _UNBOUND:
                if node.id in _BUILTINS or len(self.upstream_stars) != 1:
                    return None
                return Upstream(f"{self.upstream_stars[0]}.{node.id}")
            return found  # type: ignore[return-value]
        if isinstance(node, ast.Call):
            if (module := self._imported_module(node)) is not None:
                return self.project.module_binding(module)
            if self._builtin(node.func, "getattr") and len(node.args) >= 2:
                name = self._literal_string(node.args[1])
                binding, _, complete = self.chain(node.args[0])
                if name is not None and complete and isinstance(binding, Upstream):
                    return Upstream(f"{binding.path}.{name}")
        return None

    def _imported_module(self, node: ast.Call) -> str | None:
        """The literal module of ``importlib.import_module("x")`` / ``__import__("x")``."""
        callee = self._callee(node)
        importer = callee == Stdlib("importlib.import_module") or self._builtin(
            node.func, "__import__"
        )
        if not importer or not node.args or any(k.arg == "package" for k in node.keywords):
            return None
        name = self._literal_string(node.args[0])
        return name if name and not name.startswith(".") else None

    def _builtin(self, func: ast.expr, name: str) -> bool:
        return (
            isinstance(func, ast.Name) and func.id == name and self.scope.lookup(name) is _UNBOUND
        )

    def _callee(self, node: ast.expr) -> Binding | None:
        return self.binding(node.func) if isinstance(node, ast.Call) else None

    def _literal_string(self, node: ast.expr) -> str | None:
        value = self.value(node)
        if isinstance(value, Literals) and not value.fragments and len(value.values) == 1:
            only = value.values[0]
            return only if isinstance(only, str) else None
        return None

    def _narrowed(self, test: ast.expr, *, positive: bool) -> frozenset[str] | None:
        """The methods selected where ``test`` is ``positive``, given those selected so far."""
        found = self._selection(test, positive=positive)
        if found is None:
            return self.selected
        return found if self.selected is None else self.selected & found

    def _selection(self, test: ast.expr, *, positive: bool) -> frozenset[str] | None:
        """The method names the selector parameter can have where ``test`` is ``positive``
        (None: the test does not say): ``name == "x"``, ``name != "x"``, ``name in (...)``,
        ``not``, ``and``/``or`` of those."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._selection(test.operand, positive=not positive)
        if isinstance(test, ast.BoolOp):
            parts = [self._selection(value, positive=positive) for value in test.values]
            if isinstance(test.op, ast.Or) == positive:  # a or b; not (a and b)
                if any(part is None for part in parts):
                    return None
                return frozenset().union(*parts)  # type: ignore[arg-type]
            known = [part for part in parts if part is not None]
            return frozenset.intersection(*known) if known else None
        single = isinstance(test, ast.Compare) and len(test.ops) == 1 and self.selector
        return self._compared(test, positive=positive) if single else None  # type: ignore[arg-type]

    def _compared(self, test: ast.Compare, *, positive: bool) -> frozenset[str] | None:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Eq, ast.NotEq)) and _is_name(right, self.selector or ""):
            left, right = right, left
        value = self.value(right) if _is_name(left, self.selector or "") else None
        if not isinstance(value, Literals) or value.fragments:
            return None
        names: tuple[str, ...] = ()
        if isinstance(op, (ast.Eq, ast.NotEq)):
            names = value.strings()
        elif isinstance(op, (ast.In, ast.NotIn)):
            items = elements(value)
            names = items.strings() if items is not None else ()
        if not names or isinstance(op, (ast.Eq, ast.In)) != positive:
            return None  # "anything but x" selects nothing an anchor can be given
        return frozenset(names)

    def _window(self, test: ast.expr, *, positive: bool) -> guards.Window:
        """The releases where ``test`` is ``positive`` (every release: not readable)."""
        window = guards.version_window(test, self, positive=positive)
        return guards.EVERY_RELEASE if window is None else window

    def _version_fact(self, value: ast.expr) -> guards.InstalledVersion | guards.VersionGate | None:
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

    def version_of(
        self, node: ast.expr
    ) -> guards.InstalledVersion | guards.VersionGate | str | None:
        """What :mod:`canary.surface.guards` asks of a name or call (:class:`guards.Names`):
        a version fact bound to it, an upstream package's installed version, or a literal
        string."""
        if isinstance(node, ast.Name):
            value = self.scope.value(node.id)
            if isinstance(value, (guards.InstalledVersion, guards.VersionGate)):
                return value
        if isinstance(node, ast.Call):
            if self._callee(node) == Stdlib("importlib.metadata.version") and len(node.args) == 1:
                package = self._literal_string(node.args[0])
                if package is not None and package in self.project.upstream:
                    return guards.InstalledVersion(package)
            return self.returned_version(node)
        if isinstance(node, (ast.Name, ast.Attribute)):
            binding, _, complete = self.chain(node)
            if isinstance(binding, Upstream) and complete:
                package, _, name = binding.path.partition(".")
                if name == "__version__":
                    return guards.InstalledVersion(package)
        return self._literal_string(node)

    def _present(self, test: ast.expr, *, positive: bool) -> frozenset[str]:
        """What holds about upstream attributes where ``test`` is ``positive``: "+x.y" (it is
        there), "-x.y" (it is not)."""
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, positive = test.operand, not positive
        if isinstance(test, ast.Name):
            bound = self.scope.value(test.id)
            if isinstance(bound, _Presence):  # if added: ... (added = not hasattr(...))
                return bound.true if positive else bound.false
        if positive and isinstance(test, ast.Call):
            function = self._callee(test)
            if isinstance(function, ProjectFunction):  # if _mistral4_available(): ...
                required = self.project.probe_requires(function)
                return frozenset(f"+{target}" for target in required or ())
        found = set()
        for obj, name, present in guards.presence_tested(test, positive=positive):
            binding, _, complete = self.chain(obj)
            if isinstance(binding, Upstream) and complete:
                found.add(f"{'+' if present else '-'}{binding.path}.{name}")
        for name in guards.names_not_none(test, positive=positive):
            binding = self.binding(name)
            if isinstance(binding, Upstream):  # None where its import failed
                found.add(f"+{binding.path}")
        return frozenset(found)

    # expressions

    def expr(self, node: ast.expr) -> None:
        kind = type(node)
        if kind is ast.Name or kind is ast.Constant:
            return  # most expressions: a bare name is its binding's reference, made there
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
        binding, steps, _ = self.chain(node)
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
        saved = (self.guarded, self.present, self.window)
        # a and b: b runs where a held; a or b: where a did not
        positive = isinstance(node.op, ast.And)
        for value in node.values:
            self.expr(value)
            self.guarded += guards.is_guard_test(value)
            self.present |= self._present(value, positive=positive)
            self.window &= self._window(value, positive=positive)
        self.guarded, self.present, self.window = saved

    def e_conditional(self, node: ast.IfExp) -> None:
        self.expr(node.test)
        guard = guards.is_guard_test(node.test)
        saved, window = self.present, self.window
        self.guarded += guard
        self.present = saved | self._present(node.test, positive=True)
        self.window = window & self._window(node.test, positive=True)
        self.expr(node.body)
        self.present = saved | self._present(node.test, positive=False)
        self.window = window & self._window(node.test, positive=False)
        self.expr(node.orelse)
        self.present, self.window = saved, window
        self.guarded -= guard

    def e_lambda(self, node: ast.Lambda) -> None:
        for child in _defaults(node.args):
            self.expr(child)
        outer = self.scope
        self.scope = _Scope(parent=outer)
        for arg in _arguments(node.args):
            self.scope.names[arg] = None
        self.expr(node.body)
        self.scope = outer

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
        outer = self.scope
        self.scope = _Scope(parent=outer)
        self.conditional += 1
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
        self.conditional -= 1
        self.scope = outer

    def e_call(self, node: ast.Call) -> None:
        func = node.func
        args = node.args
        if self._builtin(func, "hasattr") or (
            self._builtin(func, "getattr") and guards.is_presence_call(node)
        ):
            self._attribute_by_name(node, presence=True)
        elif self._builtin(func, "getattr"):
            self._attribute_by_name(node, presence=False)
        elif self._builtin(func, "setattr") and len(args) >= 2:
            binding, _, complete = self.chain(args[0])
            name = self._literal_string(args[1])
            if isinstance(binding, Upstream) and complete and name is not None:
                value = args[2] if len(args) > 2 else None
                bound = self.binding(value)
                aliases = bound.path if isinstance(bound, Upstream) else ""
                self.use(Kind.PATCH, f"{binding.path}.{name}", node, replaces=True, aliases=aliases)
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
                    argument = _argument(node, summary.index, names)
                    if argument is not None:
                        self._source(argument, node)
        self.anchors_of_call(node, callee)
        self.expr(func)
        for child in (*args, *(k.value for k in node.keywords)):
            self.expr(child)

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
        names = _positional(callee.node)
        arguments = dict(enumerate(positional))
        arguments.update((names.index(k.arg), k.value) for k in node.keywords if k.arg in names)
        values: dict[int, Value | Upstream] = {}
        selector = None
        for index, argument in arguments.items():
            if self.selector is not None and _is_name(argument, self.selector):
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

    def upstream_objects(self, argument: ast.expr) -> tuple[str, ...]:
        """The upstream objects an expression is: a chain, or ``eval`` of literal dotted
        names (``eval(f"trl.trainer.{name}.{method}")`` over literal loops)."""
        binding, _, complete = self.chain(argument)
        if isinstance(binding, Upstream) and complete:
            return (binding.path,)
        if not (
            isinstance(argument, ast.Call)
            and self._builtin(argument.func, "eval")
            and len(argument.args) == 1
        ):
            return ()
        value = self.value(argument.args[0])
        if not isinstance(value, Literals) or value.fragments:
            self.skip("getsource(eval(...)) of a string not known statically", argument)
            return ()
        found = []
        for text in value.strings():
            try:
                expression = ast.parse(text.strip(), mode="eval").body
            except SyntaxError:
                continue
            if isinstance(expression, (ast.Name, ast.Attribute)):
                binding, _, complete = self.chain(expression)
                if isinstance(binding, Upstream) and complete:
                    found.append(binding.path)
        return tuple(found)

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

    def anchors_of_call(self, node: ast.Call, callee: Binding | None) -> None:
        func, args = node.func, node.args
        if isinstance(func, ast.Attribute) and func.attr in _ANCHOR_METHODS and args:
            text = self.value(func.value)
            if isinstance(text, Text):
                self.anchors(text, self.value(args[0]), node, regex=False)
                return
        if isinstance(callee, Stdlib) and callee.path.startswith("re."):
            name = callee.path.removeprefix("re.")
            position = _RE_STRING_ARGUMENT.get(name)
            if position is not None and len(args) > position:
                text = self.value(args[position])
                if isinstance(text, Text):
                    flags = _argument_or_keyword(node, _RE_FLAGS_ARGUMENT[name], "flags")
                    self.anchors(text, self.value(args[0]), node, regex=True, flags=flags)
            return
        if isinstance(func, ast.Attribute) and func.attr in _RE_STRING_ARGUMENT:
            pattern = self.value(func.value)
            position = _RE_STRING_ARGUMENT[func.attr] - 1
            if isinstance(pattern, Pattern) and len(args) > position:
                text = self.value(args[position])
                if isinstance(text, Text):
                    self.anchors(text, Literals(pattern.patterns), node, regex=True)

    def anchors(
        self,
        text: Text,
        anchor: Value | None,
        node: ast.AST,
        *,
        regex: bool,
        flags: ast.expr | None = None,
    ) -> None:
        if not isinstance(anchor, Literals) or (regex and anchor.fragments):
            return
        if regex:
            match = Match.REGEX_DEDENTED if text.dedented else Match.REGEX
        else:
            match = Match.DEDENTED if text.dedented else Match.EXACT
        prefix = inline_flags(flags) if regex else ""
        origins = {o: _read_from(text, None) if o in text.tried else None for o in text.origins}
        if text.pending is not None:
            if self.selected is None:
                self.skip("anchor on a registered source where no test selected the method", node)
            else:
                origins |= {
                    source.replace("{name}", name): _read_from(text, name)
                    for name in self.selected
                    for source in text.tried or (text.pending,)
                }
        role = self.anchor_tests().role(node)
        if role is anchortests.Role.TRIGGER:
            self.skip("'if x not in source: <patch>' (absent x is when the patch applies)", node)
            return
        # a presence test of it, or code that runs only where a tested anchor is there
        tested = role is anchortests.Role.TESTED or self.tested > 0
        spot, partners = anchortests.spot(node), self.anchor_tests().alternatives(node)
        for literal in anchor.strings():
            if any(literal in inserted for inserted in text.inserted):
                continue  # the project's own text, put there by an earlier replace
            if any(_inside(inserted, literal) for inserted in text.inserted):
                # it spans what an earlier replace put there: it matches the rewritten
                # text, which upstream's source cannot be asked about
                self.skip("anchor spanning text the project inserted itself", node)
                continue
            if _carries_own_name(literal, self.project.own_tokens):
                self.skip("anchor naming the project's own marker (_unsloth_...)", node)
                continue
            for origin in sorted(origins):
                self.use(
                    Kind.ANCHOR,
                    origin,
                    node,
                    guarded=self.guarded > 0 or tested,
                    anchor=prefix + literal,
                    match=match,
                    spot=spot,
                    partners=partners,
                    read_from=origins[origin],
                )

    # values

    def value(self, node: ast.expr | None) -> Value | None:
        """What an expression may be, as far as anchors are concerned (pure)."""
        handler = _VALUES.get(type(node))
        return handler(self, node) if handler is not None else None

    def v_constant(self, node: ast.Constant) -> Value | None:
        return Literals((node.value,)) if isinstance(node.value, (str, int, float)) else None

    def v_display(self, node: ast.Tuple | ast.List | ast.Set | ast.Dict) -> Value | None:
        literal = self.literal(node)
        return None if literal is _NOT_LITERAL else Literals((literal,))

    def v_name(self, node: ast.Name) -> Value | None:
        return self.scope.value(node.id)

    def v_attribute(self, node: ast.Attribute) -> Value | None:
        binding, _, complete = self.chain(node.value)
        if isinstance(binding, ProjectModule) and complete:
            return self.project.exports(binding.name).values.get(node.attr)
        return None

    def v_binary(self, node: ast.BinOp) -> Value | None:
        if not isinstance(node.op, ast.Add):
            return None
        left, right = self.value(node.left), self.value(node.right)
        if isinstance(left, Literals) and isinstance(right, Literals):
            return concatenate(left, right)
        return next((v for v in (left, right) if isinstance(v, (Text, Param))), None)

    def v_conditional(self, node: ast.IfExp) -> Value | None:
        return union(self.value(node.body), self.value(node.orelse))

    def v_boolean(self, node: ast.BoolOp) -> Value | None:
        if not isinstance(node.op, ast.Or):
            return None
        result: Value | None = None
        for value in node.values:
            result = union(result, self.value(value))
        return result

    def v_fstring(self, node: ast.JoinedStr) -> Literals | None:
        pieces: list[Literals] = []
        fragments: list[str] = []
        whole = True
        for part in fstring_parts(node):
            if isinstance(part, str):
                pieces.append(Literals((part,)))
                fragments.append(part)
                continue
            value = self.value(part.value) if isinstance(part, ast.FormattedValue) else None
            plain = isinstance(part, ast.FormattedValue) and part.format_spec is None
            if plain and part.conversion == -1 and isinstance(value, Literals):
                pieces.append(value)
            else:
                whole = False
        if whole:
            result: Literals | None = Literals(("",))
            for piece in pieces:
                result = concatenate(result, piece) if result is not None else None
            return result
        return Literals(tuple(fragments), fragments=True) if fragments else None

    def v_subscript(self, node: ast.Subscript) -> Value | None:
        base, index = self.value(node.value), self.value(node.slice)
        if not isinstance(base, Literals) or not isinstance(index, Literals):
            return None
        found: list[object] = []
        for container in base.values:
            for key in index.values:
                try:
                    found.append(container[key])  # type: ignore[index]
                except (KeyError, IndexError, TypeError):
                    continue
        return Literals(tuple(found)) if found else None

    def v_call(self, node: ast.Call) -> Value | None:  # noqa: PLR0911 - one return per callee
        func, args = node.func, node.args
        callee = self.binding(func)
        first = args[0] if args else None
        if callee == Stdlib("inspect.getsource") and first is not None:
            return self.source_of(first)
        if callee == Stdlib("textwrap.dedent") and first is not None:
            return _dedented(self.value(first))
        if callee == Stdlib("re.compile") and first is not None:
            pattern = self.value(first)
            if isinstance(pattern, Literals) and not pattern.fragments:
                flags = inline_flags(_argument_or_keyword(node, 1, "flags"))
                return Pattern(tuple(flags + p for p in pattern.strings()))
            return None
        if callee == Stdlib("re.sub") and len(args) > 2:
            return _with_inserted(self.value(args[2]), self.value(args[1]))
        if isinstance(callee, ProjectFunction):
            return self.helper_result(callee, node)
        if self._builtin(func, "str") and first is not None:
            return self.value(first)
        if isinstance(func, ast.Attribute):
            receiver = self.value(func.value)
            if isinstance(receiver, (Text, Param)) and func.attr in _TEXT_METHODS:
                if func.attr == "replace" and len(args) > 1:
                    return _with_inserted(receiver, self.value(args[1]))
                return receiver
            if isinstance(receiver, Pattern) and func.attr == "sub" and len(args) > 1:
                return _with_inserted(self.value(args[1]), self.value(args[0]))
            if isinstance(receiver, Literals) and func.attr in ("items", "keys", "values"):
                return dict_view(receiver, func.attr)
        return None

    def helper_result(self, function: ProjectFunction, node: ast.Call) -> Value | None:
        if not self.project.takes_source(function) and not any(
            isinstance(self.value(a), (Text, Param))
            for a in (*node.args, *(k.value for k in node.keywords))
        ):
            return None  # neither reads a source nor is given one: not a text helper
        result, names = self.project.summary(function)
        if not isinstance(result, Param):
            return result if isinstance(result, Text) else None
        argument = _argument(node, result.index, names)
        if argument is None:
            return None
        if not result.source:
            inner = self.value(argument)
            return _dedented(inner) if result.dedented else inner
        source = self.source_of(argument)
        return _dedented(source) if result.dedented else source

    def source_of(self, argument: ast.expr) -> Value | None:
        """``getsource(argument)``: upstream text, or inside a helper its parameter's."""
        objects = self.upstream_objects(argument)
        if objects:
            return Text(frozenset(objects))
        inner = self.value(argument)
        if isinstance(inner, Param) and not inner.source:
            return Param(inner.index, source=True)
        return None

    def literal(self, node: ast.expr) -> object:
        """The Python value of a literal display (names of constants included), or
        ``_NOT_LITERAL``."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [self.literal(e) for e in node.elts]
            if any(item is _NOT_LITERAL for item in items):
                return _NOT_LITERAL
            return tuple(items) if isinstance(node, ast.Tuple) else list(items)
        if isinstance(node, ast.Dict):
            return self.literal_dict(node)
        value = self.value(node)
        single = isinstance(value, Literals) and not value.fragments and len(value.values) == 1
        return value.values[0] if single else _NOT_LITERAL  # type: ignore[union-attr]

    def literal_dict(self, node: ast.Dict) -> object:
        keys = [self.literal(k) if k is not None else _NOT_LITERAL for k in node.keys]
        values = [self.literal(v) for v in node.values]
        if any(x is _NOT_LITERAL for x in (*keys, *values)):
            return _NOT_LITERAL
        try:
            return dict(zip(keys, values, strict=True))
        except TypeError:  # an unhashable key
            return _NOT_LITERAL

    # recording

    def skip(self, why: str, node: ast.AST) -> None:
        """Count something seen and deliberately not made a reference."""
        if self.emit:
            self.project.skipped.add((why, self.path, getattr(node, "lineno", 0)))

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
        stash: str | None = None,
        constant: bool = False,
        spot: anchortests.Spot = (0, 0),
        partners: tuple[anchortests.Spot, ...] = (),
        read_from: ReadFrom | None = None,
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
        self.uses.append(
            Use(
                kind=kind,
                target=target,
                path=self.path,
                line=getattr(node, "lineno", 0),
                guarded=(self.guarded > 0 if guarded is None else guarded) or presence,
                anchor=anchor,
                match=match,
                scope=self.function,
                presence=presence,
                unset=f"-{target}" in self.present,
                replaces=replaces,
                aliases=aliases,
                stash=stash,
                constant=constant,
                versions=bound.window.specifiers(),
                undecided=self.undecided,
                fallback_of=bound.fallback_of,
                requires=self._required(target, presence=presence),
                spot=spot,
                partners=partners,
                read_from=read_from,
                after=tuple(sorted(self.imported - {target})),
                handled=self._handled_import(node) if kind is Kind.IMPORT else "",
            )
        )

    def _required(self, target: str, *, presence: bool) -> tuple[str, ...]:
        """The upstream things found present before this use that it lies in (``x.y``
        for ``x.y.f``); a presence test requires what it tests."""
        found = {
            p[1:]
            for p in self.present
            if p.startswith("+") and (target == p[1:] or target.startswith(f"{p[1:]}."))
        }
        if presence:
            found.add(target)
        return tuple(sorted(found))


_NOT_LITERAL = object()
_EXPRESSIONS: dict[type, Callable[[_Walker, Any], None]] = {
    ast.Attribute: _Walker.e_attribute,
    ast.Call: _Walker.e_call,
    ast.Compare: _Walker.e_compare,
    ast.BoolOp: _Walker.e_boolean,
    ast.IfExp: _Walker.e_conditional,
    ast.ListComp: _Walker.e_comprehension,
    ast.SetComp: _Walker.e_comprehension,
    ast.GeneratorExp: _Walker.e_comprehension,
    ast.DictComp: _Walker.e_comprehension,
    ast.Lambda: _Walker.e_lambda,
    ast.NamedExpr: _Walker.e_walrus,
}
_VALUES: dict[type, Callable[[_Walker, Any], Value | None]] = {
    ast.Constant: _Walker.v_constant,
    ast.JoinedStr: _Walker.v_fstring,
    ast.Tuple: _Walker.v_display,
    ast.List: _Walker.v_display,
    ast.Set: _Walker.v_display,
    ast.Dict: _Walker.v_display,
    ast.Name: _Walker.v_name,
    ast.Attribute: _Walker.v_attribute,
    ast.BinOp: _Walker.v_binary,
    ast.Subscript: _Walker.v_subscript,
    ast.IfExp: _Walker.v_conditional,
    ast.BoolOp: _Walker.v_boolean,
    ast.Call: _Walker.v_call,
}
_STATEMENTS: dict[type, Callable[[_Walker, Any, bool], None]] = {
    ast.Import: _Walker.s_import,
    ast.ImportFrom: _Walker.s_import,
    ast.FunctionDef: _Walker.s_function,
    ast.AsyncFunctionDef: _Walker.s_function,
    ast.ClassDef: _Walker.s_class,
    ast.Assign: _Walker.s_assign,
    ast.AnnAssign: _Walker.s_annotated,
    ast.AugAssign: _Walker.s_augmented,
    ast.If: _Walker.s_if,
    **dict.fromkeys(_TRY, _Walker.s_try),
    ast.With: _Walker.s_with,
    ast.AsyncWith: _Walker.s_with,
    ast.For: _Walker.s_for,
    ast.AsyncFor: _Walker.s_for,
    ast.While: _Walker.s_while,
    ast.Return: _Walker.s_return,
    ast.Match: _Walker.s_match,
}


def _dedented(value: Value | None) -> Value | None:
    if isinstance(value, Text):
        return replace(value, dedented=True)
    if isinstance(value, Param):
        return Param(value.index, value.source, True)
    return None


def _inside(inserted: str, literal: str) -> bool:
    """Whether a text the project inserted lies inside an anchor (a blank or one-word
    insertion says nothing: upstream may have it too)."""
    return len(inserted.strip()) >= 8 and inserted in literal


def _with_inserted(text: Value | None, inserted: Value | None) -> Value | None:
    if isinstance(text, Text) and isinstance(inserted, Literals):
        return replace(text, inserted=text.inserted | frozenset(inserted.strings()))
    return text if isinstance(text, (Text, Param)) else None


def _arguments(args: ast.arguments) -> Iterator[str]:
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        yield arg.arg
    for arg in (args.vararg, args.kwarg):
        if arg is not None:
            yield arg.arg


def _defaults(args: ast.arguments) -> list[ast.expr]:
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


def _annotations(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    args = node.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None and arg.annotation is not None:
            yield arg.annotation
    if node.returns is not None:
        yield node.returns


def _argument(node: ast.Call, index: int, names: tuple[str, ...]) -> ast.expr | None:
    if index < len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args):
        return node.args[index]
    name = names[index] if index < len(names) else None
    return next((k.value for k in node.keywords if k.arg == name), None)


def _carries_own_name(text: str, tokens: frozenset[str]) -> bool:
    """A private identifier in ``text`` carries the project's name (``_unsloth_fused``)."""
    return any(
        any(token in name.lower() for token in tokens)
        for name in _TEXT_IDENTIFIER.findall(text)
        if name.startswith("_")
    )


_TEXT_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _argument_or_keyword(node: ast.Call, index: int, keyword: str) -> ast.expr | None:
    if index < len(node.args):
        return node.args[index]
    return next((k.value for k in node.keywords if k.arg == keyword), None)


# --- the project's own attributes, and merging -----------------------------------------


def _own_targets(
    uses: list[Use], tokens: frozenset[str], patterns: tuple[str, ...]
) -> frozenset[str]:
    replaced = {u.target for u in uses if u.kind is Kind.PATCH and u.replaces}
    sets: dict[str, list[Use]] = {}
    for use in uses:
        if use.kind is Kind.PATCH and use.replaces:
            sets.setdefault(use.target, []).append(use)
    own = {
        target
        for target in {u.target for u in uses if u.kind is not Kind.IMPORT}
        if _named_own(target.rpartition(".")[2], tokens, patterns)
    }
    for target, assigned in sets.items():
        owner = target.rpartition(".")[0]
        marker = owner in replaced and all(s.constant for s in assigned)
        stash = any(s.stash for s in assigned)
        if marker or stash or all(s.unset for s in assigned):
            own.add(target)
    return frozenset(own)


def _named_own(name: str, tokens: frozenset[str], patterns: tuple[str, ...]) -> bool:
    """A private name that carries the project's name (``_unsloth_patched``), or one the
    configuration lists. Public names are left alone: upstream has ``use_liger_kernel``."""
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
        return True
    lowered = name.lower()
    return name.startswith("_") and any(token in lowered for token in tokens)


def _is_own(use: Use, own: frozenset[str]) -> bool:
    if use.kind is Kind.IMPORT:
        return False
    target = use.target
    while target:
        if target in own:
            return True
        target = target.rpartition(".")[0]
    return False


def _merge(uses: Iterable[Use]) -> tuple[Reference, ...]:
    uses = list(uses)
    alternatives = _alternatives(uses)
    merged = merge_references(
        Reference(
            use.target.split(".", 1)[0],
            use.target,
            use.kind,
            (
                Site(
                    use.path,
                    use.line,
                    use.guarded,
                    use.versions,
                    at_import=use.scope == 0,
                    undecided=use.undecided,
                    fallback_of=use.fallback_of,
                    requires=use.requires,
                    replaces=use.kind is Kind.PATCH and use.replaces,
                    aliases=use.aliases if use.kind is Kind.PATCH else "",
                    alternatives=alternatives.get(use, ()),
                    after=use.after,
                    handled=use.handled,
                ),
            ),
            use.anchor,
            use.match,
            use.read_from,
        )
        for use in uses
    )
    return tuple(sorted(merged, key=lambda r: (r.key[:3], r.anchor or "")))


def _alternatives(uses: list[Use]) -> dict[Use, tuple[str, ...]]:
    """Each anchor use's alternatives (:mod:`canary.surface.anchortests`): the anchors
    applied at its partners' spots to the same source, as the walk found them."""
    at: dict[tuple[str, str, anchortests.Spot], set[str]] = {}
    for use in uses:
        if use.kind is Kind.ANCHOR and use.anchor is not None:
            at.setdefault((use.path, use.target, use.spot), set()).add(use.anchor)
    found = {}
    for use in uses:
        if use.partners:
            anchors = set().union(*(at.get((use.path, use.target, p), ()) for p in use.partners))
            anchors.discard(use.anchor)
            if anchors:
                found[use] = tuple(sorted(anchors))
    return found
