"""Where the project imports its own modules: a site of a module runs only after some
import of that module ran, so it takes, once per importer, that importer's conditions.

A project module M runs its module-level code when something imports it, and its
functions exist only from then on. When the project imports M only at places that run
under a condition (a version window, after an import of its function that came later in
a model the release lacks, a presence test), every site of M runs only where one of those
conditions holds, and they are facts of the release, true at import as later: each site
becomes one copy per importer, with the importer's conditions added (a finding holds
where any copy runs: the conditions are or-ed). A module imported by another takes that
module's conditions too, at its module level or in one of its functions (a function of a
module exists only once the module ran: a package's lazy ``__getattr__``); a version test
around the import canary cannot evaluate (a helper it cannot read, ipex-llm's
``trans_version >= "4.47.0"`` compared as text) makes the copy *undecided*, as it does a
site under it: its findings are possible.

What leaves a module as it is (its sites run wherever imported, as before):

- no import statement of the project names it (it is imported by its users, or is the
  entry point), or one does whose conditions are none (an import extraction did not walk,
  in a file or function that names nothing upstream, has none of its own: it runs where
  its module does);
- more than ``_MAX_CONTEXTS`` ways in.

The modules of an import cycle are read together: one of them runs first through a way in
from outside the cycle, so the ways round it add only what those bring (peft's v5
conversion module, imported in a function of ``save_and_load`` under its v5 flag, imports
``save_and_load`` back). Read one at a time, whichever module was met first decided where
the others run, and that order was a set's: two runs of one project could disagree. A
module of a cycle the project may also load by name passes its undecided copy to no other
module of the cycle.

An import inside ``if TYPE_CHECKING:`` never runs: it is no way in; nor is an import of a
package (``from . import x``, ``from .patch import f`` loads it) inside its own submodules:
Python imported the package before any of them ran.

A module no import statement of the project loads, which the project names in a string (a
lazy registry: auto-round's ``{"llama4": LazyImport("auto_round.modeling.fused_moe.llama4")}``;
a relative name, as ``importlib.import_module(".glm_image", package)`` takes it; or its file's
name: mixturekit reads ``"modeling_template.py"`` as a template it rewrites),
runs only where the project loads it by that name, which canary does not follow: its sites
are *undecided*, their findings possible. A module nothing names runs wherever its users
import it, as before.

A module the project may also load by a name canary does not follow (its dotted name in a
string: ``importlib.import_module("a.b")``, a lazy loader; or any import of a name computed
at run time) keeps one more copy, as it was but *undecided*: where only that copy runs, its
findings are possible, never counted. What is assumed: a user importing by hand a module
the project itself imports only under a condition is off the project's own code paths,
which are what canary holds against it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from canary.surface.cycles import least_fixed_point, on_cycles
from canary.surface.model import Kind

_IMPORT_STATEMENT = re.compile(
    r"(?m)^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n#;]*)"
    r"|import[ \t]+([^\n#;]+))"
)
_IMPORTERS = ("import_module(", "__import__(")  # importlib's, and the builtin
_LITERAL_NAME = re.compile(r"\s*[\"'][\w.]+[\"']\s*[,)]")
_DOTTED = re.compile(r"[\w.]*")
_FILE_NAME = re.compile(r"""["']([\w./-]*\.py)["']""")  # a quoted file name, or path to one
_RELATIVE_NAME = re.compile(r"\.+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
_QUOTED_RELATIVE = re.compile(r"""(["'])(\.+[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\1""")
_MAX_CONTEXTS = 16  # more ways in than this: left as it is


def absolute(module: str, is_package: bool, level: int, name: str | None) -> str | None:
    """The absolute module a relative one (``level`` dots, then ``name``) names inside
    ``module`` (None: above the top of its package)."""
    package = module.split(".")
    if not is_package:
        package = package[:-1]
    if level - 1 > len(package):
        return None
    package = package[: len(package) - (level - 1)]
    return ".".join([*package, *([name] if name else [])])


def relative_name(module: str, is_package: bool, text: str) -> str | None:
    """The absolute module a relative name in a string names inside ``module``, as
    ``importlib.import_module(".glm_image", package)`` takes it (cache-dit's planners);
    None where ``text`` is no such name."""
    found = _RELATIVE_NAME.fullmatch(text)
    if found is None:
        return None
    return absolute(module, is_package, len(text) - len(found.group(1)), found.group(1))


@dataclass(frozen=True)
class Load:
    """An import of a project module, with the conditions of the place it runs."""

    module: str  # dotted
    path: str
    line: int
    at_import: bool  # at the module level of its file
    versions: tuple[tuple[str, str], ...] = ()
    after: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    fallback_of: tuple[str, ...] = ()
    undecided: str = ""  # a test around it canary cannot evaluate decides whether it runs
    # its ImportError is taken by its try's handler (the module's own failing imports break
    # nothing there): why ("": it propagates)
    handled: str = ""
    lacks: tuple[str, ...] = ()  # upstream things a test before it found absent
    registered: tuple[str, ...] = ()  # reached through a registration under these model types
    within: str = ""  # the module-level function it lies in ("": none)

    @property
    def context(self) -> Context:
        if not self.handled:
            return Context.of(self)
        where = f"{self.module} is imported at {self.path}:{self.line}, where {self.handled}"
        return replace(Context.of(self), handled=where)


@dataclass(frozen=True)
class Context:
    """Conditions a site runs under, all of which hold where it runs."""

    versions: tuple[tuple[str, str], ...] = ()
    after: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    undecided: str = ""
    fallback_of: tuple[str, ...] = ()
    # where the module's import raises ImportError, a handler takes its place: why
    handled: str = ""
    lacks: tuple[str, ...] = ()  # where one of these is there, it does not run
    # the model types of a registration it is reached through (one of each): where one's
    # packages are all gone, it runs only if that registry is looked up by model type
    registered: tuple[str, ...] = ()
    # reached only through a call in a try whose handlers swallow any exception: what fails
    # here fails into that handler, as in a try of its own (guarded)
    caught: bool = False

    @classmethod
    def of(cls, place: Conditioned) -> Context:
        """The conditions ``place`` (a site, an import, a place naming a function) runs
        under, as recorded there."""
        return cls(
            place.versions,
            place.after,
            place.requires,
            place.undecided,
            place.fallback_of,
            lacks=place.lacks,
            registered=place.registered,
        )

    @property
    def none(self) -> bool:
        return self == Context()

    def __and__(self, other: Context) -> Context:
        return Context(
            tuple(sorted({*self.versions, *other.versions})),
            tuple(sorted({*self.after, *other.after})),
            tuple(sorted({*self.requires, *other.requires})),
            self.undecided or other.undecided,
            # two fallbacks are an and of ors, which a site cannot say: keep one, so
            # the site runs on more releases, never fewer
            self.fallback_of or other.fallback_of,
            # an import at a module's level raises through every import of that module
            self.handled or other.handled,
            tuple(sorted({*self.lacks, *other.lacks})),
            tuple(sorted({*self.registered, *other.registered})),
            self.caught or other.caught,
        )


class Conditioned(Protocol):
    """A place in the project's code with the conditions it runs under."""

    versions: tuple[tuple[str, str], ...]
    after: tuple[str, ...]
    requires: tuple[str, ...]
    undecided: str
    fallback_of: tuple[str, ...]
    lacks: tuple[str, ...]
    registered: tuple[str, ...]


class Sited(Conditioned, Protocol):
    """A site of a use, as extraction records it."""

    kind: Kind
    path: str
    scope: int
    handled: str
    guarded: bool


U = TypeVar("U", bound=Sited)


def reach(
    uses: Sequence[U],
    loads: Iterable[Load],
    module_of: Mapping[str, str],
    text: Callable[[str], str],
    *,
    strings: Collection[str] = (),
    walked: Collection[str] = (),
) -> list[U]:
    """``uses`` with each one copied once per way the project imports its module under
    conditions (``module_of``: each walked file's dotted module; ``text``: a
    project file's source; ``strings``: the dotted project names the code of the ``walked``
    files spells as string literals; the other files' strings are read from their text)."""
    modules = {module_of[use.path] for use in uses if use.path in module_of}
    if not modules:
        return list(uses)
    ways = _Ways(loads, module_of, text, strings=strings, walked=walked)
    contexts = {module: ways.contexts(module) for module in modules}
    return [copy for use in uses for copy in copies(use, contexts.get(module_of.get(use.path, "")))]


def copies(use: U, found: Sequence[Context] | None) -> list[U]:
    """``use`` once per context in ``found``, that context's conditions added to its own
    (a finding holds where any copy runs); as it is where ``found`` is empty. An import at
    its module's level that fails raises through the module's import: where a handler takes
    that import's place, it is handled too (a read raises AttributeError, a function's
    import raises when called: neither reaches that handler). One reached through a call in
    a ``try`` that swallows any exception is guarded there."""
    if not found:
        return [use]
    own = Context.of(use)
    raises_through = use.scope == 0 and use.kind is Kind.IMPORT
    copied = []
    for context in found:
        handled = use.handled or (context.handled if raises_through else "")
        copy = _under(use, own & context, handled)
        copied.append(replace(copy, guarded=True) if context.caught else copy)  # type: ignore[type-var]
    return copied


def conditioned(load: Load, found: Sequence[Context] | None) -> list[Load]:
    """``load`` once per context in ``found``, that context's conditions added to its own;
    as it is where ``found`` is empty."""
    if not found:
        return [load]
    own = Context.of(load)
    return [_under(load, own & context, load.handled) for context in found]


C = TypeVar("C", bound=Conditioned)


def _under(place: C, conditions: Context, handled: str) -> C:
    """``place`` running under ``conditions``, its import's failure ``handled`` so."""
    return replace(
        place,  # type: ignore[type-var]
        versions=conditions.versions,
        after=conditions.after,
        requires=conditions.requires,
        undecided=conditions.undecided,
        fallback_of=conditions.fallback_of,
        handled=handled,
        lacks=conditions.lacks,
        registered=conditions.registered,
    )


class _Ways:
    """The ways into each project module: its import statements and what they run under."""

    def __init__(
        self,
        loads: Iterable[Load],
        module_of: Mapping[str, str],
        text: Callable[[str], str],
        *,
        strings: Collection[str] = (),
        walked: Collection[str] = (),
    ) -> None:
        self._strings = strings
        self._walked = frozenset(walked)
        self.strings: list[str] | None = None  # every dotted project name in a string
        self.module_of = module_of
        known = set(module_of.values())
        self.loads: dict[tuple[str, str, int], list[Load]] = {}
        for load in loads:
            self.loads.setdefault((load.module, load.path, load.line), []).append(load)
        self.text = text
        # the statements that import each module the walk saw imported only under some
        # condition (the others run wherever imported: no text to read for them)
        candidates = self._conditional()
        tops = {name.split(".", 1)[0] for name in known}
        scanned = {
            path: list(_imports(text(path), module, path.endswith("__init__.py"), known, tops))
            for path, module in (module_of.items() if candidates else ())
        }
        # and what they import in no block, or anywhere in a file extraction did not walk
        # (it has no loads recorded: a package's lazy __getattr__)
        path_of = {module: path for path, module in module_of.items()}
        todo = [path_of[m] for m in candidates if m in path_of]
        while todo:
            path = todo.pop()
            for name, _, top in scanned[path]:
                if (top or path not in self._walked) and name not in candidates and name in path_of:
                    candidates.add(name)
                    todo.append(path_of[name])
        self.candidates = candidates
        self.known = known
        self.tops = tops
        self._scanned = scanned or None  # every file's import statements, read when needed
        self._loaded = {module for module, _, _ in self.loads}
        self._imported: set[str] | None = None  # every module an import statement loads
        self.statements: dict[str, set[tuple[str, int]]] = {}  # module -> (path, line)
        self.top: set[tuple[str, int]] = set()  # those in no block: at their module's level
        for module, path, line in self.loads:  # a statement the text scan misses
            self.statements.setdefault(module, set()).add((path, line))
        for path, found in scanned.items():
            for name, line, top in found:
                if name in candidates:
                    self.statements.setdefault(name, set()).add((path, line))
                    if top:
                        self.top.add((path, line))
        self._computed: str | None = None
        self._named: set[str] | None = None
        self._files: set[str] | None = None  # the file names (``x.py``) strings spell
        self._contexts: dict[str, tuple[Context, ...] | None] = {}
        self._cycles: dict[str, frozenset[str]] | None = None
        self._cycle_reads: dict[frozenset[str], dict[str, tuple[Context, ...] | None]] = {}
        self._ways: dict[str, list[tuple[str, list[Load]]]] = {}

    def contexts(self, module: str) -> tuple[Context, ...]:
        """The conditions of each way into ``module`` (): it runs wherever imported)."""
        if module in self._contexts:
            return self._contexts[module] or ()
        found = self._read(module) or ()
        if not found and (why := self._only_by_name(module)):
            found = (Context(undecided=why),)
        elif found and (why := self._loaded_by_name(module)):
            # a way in canary does not follow adds releases where it may run, never
            # takes one away from those its importers run on
            found = (*found, Context(undecided=why))
        self._contexts[module] = found
        return found

    def _conditional(self) -> set[str]:
        """The modules every import the walk saw of which runs under some condition, or in a
        module that does (at its import, or in one of its functions)."""
        found = {module for module, _, _ in self.loads}
        while True:
            unconditional = {
                module
                for (module, path, _), loads in self.loads.items()
                if module in found
                and not _within(self.module_of[path], module)  # no way in: see _read
                and any(load.context.none and self.module_of[path] not in found for load in loads)
            }
            if not unconditional:
                return found
            found -= unconditional

    def _read(self, module: str) -> tuple[Context, ...] | None:
        if not self.statements.get(module):
            return None  # its users import it
        cycle = self._cyclic().get(module)
        if cycle is not None:
            return self._read_cycle(cycle).get(module)
        return final(self._found(module, {}))

    def _found(self, module: str, cycle: Mapping[str, set[Context]]) -> set[Context]:
        """The conditions of the ways into ``module``: each import's own, and its module's
        (those in ``cycle`` as known so far)."""
        found: set[Context] = set()
        for outer, loads in self._ways_in(module):
            # in a function or not, an import runs only once its module was imported
            if outer in cycle:
                around: Iterable[Context] = cycle[outer]
            else:
                around = self.contexts(outer) or (Context(),)
            for load in loads:
                found.update(load.context & context for context in around)
        return found

    def _read_cycle(self, cycle: frozenset[str]) -> dict[str, tuple[Context, ...] | None]:
        """The modules of an import cycle, read together: a module of it runs first through
        a way in from outside it, so the ways round it add only what those bring (the least
        fixed point, from none). Too many ways in: each left as it is."""
        if cycle not in self._cycle_reads:
            found = least_fixed_point(cycle, lambda _: set(), self._found, _MAX_CONTEXTS)
            self._cycle_reads[cycle] = (
                dict.fromkeys(cycle)
                if found is None
                else {module: final(found[module]) for module in cycle}
            )
        return self._cycle_reads[cycle]

    def _ways_in(self, module: str) -> list[tuple[str, list[Load]]]:
        """Each import statement of ``module`` that runs before it can: the module it lies
        in, and the loads the walk recorded there (read once: a cycle's are read again on
        every round)."""
        if module not in self._ways:
            self._ways[module] = list(self._read_ways_in(module))
        return self._ways[module]

    def _read_ways_in(self, module: str) -> Iterator[tuple[str, list[Load]]]:
        for path, line in self.statements.get(module, ()):
            if _within(self.module_of.get(path, ""), module):
                continue  # the package itself, or a submodule of it: it ran first
            loads = self.loads.get((module, path, line))
            if not loads and _type_checking_only(self.text(path), line):
                continue  # read by type checkers only: it never runs
            if not loads:
                # not walked (in a file, or a function, that names nothing upstream): its
                # own conditions are not known, and could only narrow where it runs
                loads = [Load(module, path, line, at_import=(path, line) in self.top)]
            yield self.module_of[path], loads

    def _cyclic(self) -> dict[str, frozenset[str]]:
        """The modules on an import cycle, each with its cycle's: read together, so the same
        whichever module the reading starts from."""
        if self._cycles is None:
            self._cycles = on_cycles(
                sorted(self.statements), lambda m: [outer for outer, _ in self._ways_in(m)]
            )
        return self._cycles

    def _only_by_name(self, module: str) -> str:
        """Why the project loads ``module`` only by its name in a string (a lazy registry,
        ``importlib.import_module("a.b")``), which canary does not follow: no import
        statement of the project loads it, and a string names it ("": one does, or none)."""
        if module in self._loaded:
            return ""
        if self.strings is None:
            unwalked = [p for p in self.module_of if p not in self._walked]
            quoted = set(self._strings).union(
                *(_quoted(self.text(p), self.tops) for p in unwalked),
                *(self._quoted_relative(p) for p in unwalked),
            )
            self.strings = sorted(quoted)
        named = next((n for n in self.strings if n == module or n.startswith(f"{module}.")), None)
        if named is None:
            named = self._file_named(module)
        if named is None:
            return ""  # named in no string the walk saw: its users import it
        if self._imported is None:
            scanned = self._scanned or {
                path: list(
                    _imports(
                        self.text(path), name, path.endswith("__init__.py"), self.known, self.tops
                    )
                )
                for path, name in self.module_of.items()
            }
            self._imported = {name for found in scanned.values() for name, _, _ in found}
        if module in self._imported:
            return ""
        return (
            f"no import statement of the project loads {module}; it is loaded by its name "
            f"({named!r}), which canary does not follow"
        )

    def _quoted_relative(self, path: str) -> set[str]:
        """The absolute modules the relative names in ``path``'s strings name."""
        module, package = self.module_of[path], path.endswith("__init__.py")
        found = _QUOTED_RELATIVE.finditer(self.text(path))
        return {name for m in found if (name := relative_name(module, package, m.group(2)))}

    def _file_named(self, module: str) -> str | None:
        """The name of ``module``'s file where a string of the project spells it (mixturekit's
        ``"modeling_template.py"``, read and rewritten as text; a file copied beside a
        checkpoint, loaded by path): None where none does, or it is a package's."""
        path = next((p for p, m in self.module_of.items() if m == module), "")
        name = path.rpartition("/")[2]
        if not name.endswith(".py") or name == "__init__.py":
            return None
        if self._files is None:
            texts = (self.text(p) for p in self.module_of)
            self._files = {
                found.rpartition("/")[2]
                for text in texts
                if '.py"' in text or ".py'" in text  # most files spell none: skip the scan
                for found in _FILE_NAME.findall(text)
            }
        return name if name in self._files else None

    def _loaded_by_name(self, module: str) -> str:
        """Why ``module`` may be imported where canary does not follow ("": it is not)."""
        if self._named is None:
            self._named, self._computed = self._by_name()
        if any(n == module or n.startswith(f"{module}.") for n in self._named):
            return (
                f"{module} is also named in a string, which may import it where canary "
                "does not follow"
            )
        if self._computed:
            return (
                f"a module name computed at run time is imported at {self._computed}, "
                f"which may be {module}"
            )
        return ""

    def _by_name(self) -> tuple[set[str], str]:
        """The dotted names in strings that start with a top-level package of a module
        imported only under conditions, and the first place a name computed at run time
        is imported ("": none)."""
        tops = {module.split(".", 1)[0] for module in self.candidates}
        named: set[str] = set()
        computed = ""
        for path in self.module_of:
            source = self.text(path)
            named |= _quoted(source, tops)
            for call in _IMPORTERS if not computed else ():
                at = source.find(call)
                while at != -1 and not computed:
                    if not _LITERAL_NAME.match(source, at + len(call)):
                        computed = f"{path}:{source.count(chr(10), 0, at) + 1}"
                    at = source.find(call, at + 1)
        return named, computed


def _quoted(source: str, tops: Collection[str]) -> set[str]:
    """The dotted names in ``source``'s strings that start with one of ``tops``."""
    named: set[str] = set()
    for top in tops:
        for quote in "\"'":
            needle = f"{quote}{top}"
            at = source.find(needle)
            while at != -1:
                named.add(_DOTTED.match(source, at + 1).group())  # type: ignore[union-attr]
                at = source.find(needle, at + 1)
    return named


def _imports(
    source: str, module: str, is_package: bool, known: Collection[str], tops: Collection[str]
) -> Iterable[tuple[str, int, bool]]:
    """Each project module an import statement of ``source`` loads, with its line and
    whether it is in no block (not indented): the module named, its parents, and ``from m
    import n``'s ``m.n`` where that is a module (a star or an unread list: every
    submodule of ``m``; ``tops``: the first parts of their names, which an absolute import
    of one starts with)."""
    line, at = 1, 0
    for match in _statements(source):
        line += source.count("\n", at, match.start())  # counted on from the last one
        at = match.start()
        if match.group(4) is not None:
            names = [p.split()[0] for p in match.group(4).split(",") if p.split()]
            loaded = [(name, ()) for name in names if name.split(".", 1)[0] in tops]
        else:
            relative, dotted, taken = match.group(1), match.group(2), match.group(3)
            if not relative and dotted.split(".", 1)[0] not in tops:
                continue  # another package's
            taken = taken.strip()
            base = _absolute(module, is_package, relative, dotted)
            if base is None:
                continue
            pieces = taken.strip("()").split(",")
            every = "*" in taken or taken.endswith("\\")
            loaded = [(base, None if every else [p.split()[0] for p in pieces if p.split()])]
        top = source[match.start()] not in " \t"
        for base, names in loaded:
            for name in loaded_by(base, names, known):
                yield name, line, top


_TYPE_CHECKING = re.compile(r"if\s+(?:typing\.)?TYPE_CHECKING\s*:")


def _type_checking_only(source: str, line: int) -> bool:
    """Whether line ``line`` of ``source`` lies in an ``if TYPE_CHECKING:`` block (an
    enclosing line less indented than it, read upwards, is that test)."""
    lines = source.splitlines()
    if not 0 < line <= len(lines):
        return False
    text = lines[line - 1]
    indent = len(text) - len(text.lstrip())
    for above in reversed(lines[: line - 1]):
        stripped = above.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        depth = len(above) - len(stripped)
        if depth < indent:
            if _TYPE_CHECKING.match(stripped):
                return True
            indent = depth
            if depth == 0:
                return False
    return False


def _statements(source: str) -> Iterable[re.Match[str]]:
    """The import statements of ``source``, in order: found by the word, then read from
    the start of its line (a regular expression over the whole text is five times
    slower, and unsloth's text is 37 MB)."""
    at, last = 0, -1
    while (found := source.find("import", at)) != -1:
        start = source.rfind("\n", 0, found) + 1
        at = found + len("import")
        if start == last:
            continue
        match = _IMPORT_STATEMENT.match(source, start)
        if match:
            last = start
            yield match


def final(found: set[Context], limit: int = _MAX_CONTEXTS) -> tuple[Context, ...] | None:
    """The ways in, in order; None where there is none, one runs under no condition, or
    there are more than ``limit`` to follow: it runs wherever it is reached."""
    if not found or any(context.none for context in found) or len(found) > limit:
        return None
    return tuple(sorted(found, key=repr))


def _within(importer: str, module: str) -> bool:
    """Whether code of ``importer`` runs only once ``module`` was imported: it is that
    module, or a submodule of it (Python imports a package before its submodules)."""
    return importer == module or importer.startswith(f"{module}.")


def loaded_by(base: str, names: Iterable[str] | None, known: Collection[str]) -> set[str]:
    """The project modules ``from base import names`` loads (``import base``: no names;
    None: a star, every submodule): ``base``, its parents, and each name that is a module."""
    wanted = [base]
    if names is None:
        wanted += [k for k in known if k.startswith(f"{base}.")]
    else:
        wanted += [f"{base}.{name}" for name in names]
    found = set()
    for name in wanted:
        parts = name.split(".")
        found.update(p for end in range(1, len(parts) + 1) if (p := ".".join(parts[:end])) in known)
    return found


def _absolute(module: str, is_package: bool, relative: str, dotted: str) -> str | None:
    if not relative:
        return dotted
    package = module.split(".")
    if not is_package:
        package = package[:-1]
    up = len(relative) - 1
    if up > len(package):
        return None
    package = package[: len(package) - up]
    return ".".join([*package, *([dotted] if dotted else [])]) or None
