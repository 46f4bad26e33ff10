"""What a name is in one module of the package, as Python would bind it at import time.

:class:`Resolver` answers ``module.name`` for a module of the package: a class, function or
assignment defined there, an import followed to where it is defined (relative or
absolute, aliased, through chains), a star import (honouring a literal ``__all__``), a
submodule, or what a lazy module (:mod:`canary.symbols.lazy`) serves.

Decisions where the source alone is ambiguous:

* Several bindings of one name: a definition (class, then function) beats an import, an
  import beats an assignment, and an explicit binding beats a star import. That takes
  ``try: from x import A / except ImportError: A = None`` and ``if available: import`` as
  the case where the optional dependency is installed, as the code index does.
* A name bound only under ``if TYPE_CHECKING:`` does not exist at run time; in a regular
  module it is *unknown* (a reference to it is odd, not provably broken). In a lazy
  module the lazy structure is the truth and those imports are ignored.
* A module with a module-level ``__getattr__``, one that writes ``globals()``, a star
  import from outside the package, an import cycle or a lazy structure with steps we do
  not evaluate: a name not found otherwise is *unknown*, never missing.
* Outside the package (``import torch``): the binding is found, kind ``external``, and
  ``why`` names it ("torch.nn"); what lies beyond it is not this package's to say.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from canary.codeindex import NOT_LITERAL, Import, Module
from canary.symbols.dynamic import Served, served, served_by_assignment
from canary.symbols.effects import declared_all, effect_text
from canary.symbols.lazy import (
    LazyModule,
    converter_candidates,
    converter_table,
    converts_tokenizers,
    lazy_module,
    suffix_fallbacks,
)
from canary.symbols.lookup import (
    ASSIGNMENT,
    CLASS,
    EXTERNAL,
    FUNCTION,
    MODULE,
    NAME,
    RUN_TIME_GLOBAL,
    SERVED,
    Lookup,
    closest,
    missing,
    unknown,
)
from canary.symbols.modules import ModuleFiles, absolute, dotted_of

_TYPE_CHECKING = frozenset({"TYPE_CHECKING", "typing.TYPE_CHECKING"})
# ``globals()[name] = ...``, ``globals().update(...)``, ``vars()``: names we cannot list.
_NAMESPACE_WRITERS = frozenset({"globals", "vars", "locals"})
# What the import system puts on every module it loads (a lazy module's own __init__ sets
# __file__ and __path__ as well); ``__path__`` on packages only. ``__all__`` is not one.
_MODULE_ATTRIBUTES = frozenset(
    {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__file__", "__cached__"}
    | {"__dict__", "__builtins__"}
)


class Resolver:
    """Names in the modules of one package, each answered once."""

    def __init__(self, files: ModuleFiles) -> None:
        self.files = files
        self._answers: dict[tuple[str, str], Lookup] = {}
        self._bound_only: dict[tuple[str, str], Lookup] = {}
        self._active: set[tuple[str, str]] = set()
        self._lazy: dict[str, LazyModule | None] = {}
        self._all: dict[str, frozenset[str] | None] = {}
        self._getattr_sources: dict[str, str] = {}  # a lazy module's factory's __getattr__
        self._converters: dict[str, dict[str, str] | None] = {}
        self._below: dict[str, tuple[frozenset[str], bool] | None] = {}

    def module(self, dotted: str) -> Lookup:
        path = self.files.module_file(dotted)
        if path is None:
            base = dotted.replace(".", "/")
            return missing(
                MODULE, None, dotted, f"no {base}.py or {base}/__init__.py in the package"
            )
        return Lookup(True, MODULE, path, "")

    def attribute(self, dotted: str, name: str, *, bound_only: bool = False) -> Lookup:
        """``name`` as an attribute of module ``dotted`` once it has been imported.
        ``bound_only``: only whether it is bound matters (see :meth:`PackageTree.lookup`);
        followed through lazy structures and imports to the module that defines it."""
        key = (dotted, name)
        # An answer for bound_only may hold no object: it is never one for other callers.
        known = self._answers.get(key) or (self._bound_only.get(key) if bound_only else None)
        if (known := known or self._by_text(dotted, name, bound_only)) is not None:
            return known
        if key in self._active:
            # ``from . import x`` in a package's own __init__: x is the submodule, which
            # Python imports because the package does not bind x yet.
            if self.files.module_file(f"{dotted}.{name}") is not None:
                return self.module(f"{dotted}.{name}")
            return unknown(
                NAME, self.files.module_file(dotted), name, f"import cycle through {dotted}.{name}"
            )
        module = self.files.module(dotted)
        if module is None:
            return self.module(dotted)
        if name in _MODULE_ATTRIBUTES or (name == "__path__" and _is_package(module)):
            return Lookup(True, ASSIGNMENT, module.path, name, "set by the import system")
        self._active.add(key)
        try:
            lazy = self._lazy_of(module)
            if lazy is not None:
                answer = self._served(module, dotted, lazy, name, bound_only=bound_only)
            else:
                answer = self._bound(module, dotted, name, bound_only=bound_only)
        finally:
            self._active.discard(key)
        (self._bound_only if bound_only else self._answers)[key] = answer
        return answer

    def _by_text(self, dotted: str, name: str, bound_only: bool) -> Lookup | None:
        """Where only being bound matters: a top-level definition the module's text shows,
        answered without parsing the module (never remembered: it holds no object)."""
        defined = self.files.defined_at_top(dotted, name) if bound_only else None
        if defined is None:
            return None
        path, kind = defined
        return Lookup(True, CLASS if kind == "class" else FUNCTION, path, name)

    def follow(self, module: Module, imported: Import, *, bound_only: bool = False) -> Lookup:
        """Where an import binding of ``module`` leads."""
        if imported.module is None:  # import a.b.c / import a.b.c as x
            assert imported.imported is not None
            alias = imported.name != imported.imported.split(".", 1)[0]
            target = imported.imported if alias else imported.name
            if not self.files.inside(target):
                return Lookup(True, EXTERNAL, module.path, imported.name, target)
            return self.module(target)
        base = absolute(imported.module, module.path)
        if base is None:
            return missing(
                NAME, module.path, imported.name, f"{imported.statement} climbs above the package"
            )
        assert imported.imported is not None
        if not self.files.inside(base):
            return Lookup(True, EXTERNAL, module.path, imported.name, f"{base}.{imported.imported}")
        if self.files.module_file(base) is None:
            return missing(
                NAME,
                module.path,
                imported.name,
                f"{imported.statement} (line {imported.line}): {self.module(base).why}",
            )
        return self.attribute(base, imported.imported, bound_only=bound_only)

    def alias(self, dotted: str) -> Lookup | None:
        """The module a legacy module name stands for, where the package's top-level lazy
        module serves one (transformers 5.0+), else None."""
        root = self.files.module(self.files.import_name)
        lazy = self._lazy_of(root) if root is not None else None
        if lazy is None or not dotted.startswith(self.files.import_name + "."):
            return None
        target = lazy.alias(dotted.removeprefix(self.files.import_name + "."))
        if target is None:
            return None
        real = f"{self.files.import_name}.{target}"
        answer = self.module(real)
        return Lookup(answer.found, MODULE, answer.path, "", f"legacy alias of {real}")

    def through_alias(self, alias: str, name: str) -> Lookup | None:
        """``name`` on the legacy module ``alias`` where only the alias serves it: from 5.4
        on, transformers' alias modules serve a renamed ``XImageProcessorFast`` as
        ``XImageProcessor`` (5.4-5.20 a ``__getattr__`` per alias, 5.21+ the finder's)."""
        root = self.files.module(self.files.import_name)
        lazy = self._lazy_of(root) if root is not None else None
        target = self.alias(alias)
        if not (lazy and lazy.fast_image_modules and target and target.path):
            return None
        if not name.endswith("ImageProcessorFast"):
            return None
        renamed = name.removesuffix("Fast")
        answer = self.attribute(dotted_of(target.path), renamed)
        if answer.found is not True:
            return None
        why = f"served as {renamed} by the legacy module {alias}"
        return Lookup(
            True, answer.kind, answer.path, answer.qualname, why, answer.function, answer.cls
        )

    # -- regular modules

    def _bound(self, module: Module, dotted: str, name: str, *, bound_only: bool = False) -> Lookup:
        explicit = self._explicit(module, dotted, name, bound_only=bound_only)
        if explicit is not None:
            return explicit
        starred = self._starred(module, name)
        if starred is not None and starred.found is True:
            return starred
        submodule = self._submodule(module, dotted, name) or self.alias(f"{dotted}.{name}")
        if submodule is not None:
            return submodule
        if starred is not None:
            return starred
        by = _getattr_serves(module)
        if by is not None:
            return self._served_by_getattr(module, dotted, name, by)
        return _unbound(module, dotted, name)

    def _served_by_getattr(self, module: Module, dotted: str, name: str, by: Served) -> Lookup:
        why = f"served by {dotted}.__getattr__"
        if name in by.names:
            imported = by.names[name]
            answer = self.follow(module, imported) if imported is not None else None
            if answer is None or answer.found is False:
                return Lookup(True, SERVED, module.path, name, why)
            return replace(answer, why=why)
        if by.closed and not any(e.root in _NAMESPACE_WRITERS for e in module.effects):
            listed = ", ".join(sorted(by.names)) or "nothing"
            return missing(
                NAME,
                module.path,
                name,
                f"{dotted} does not bind {name!r}, and its __getattr__ serves only {listed}",
            )
        return _unbound(module, dotted, name)

    def _explicit(
        self, module: Module, dotted: str, name: str, *, bound_only: bool = False
    ) -> Lookup | None:
        if name in module.assignments:  # PretrainedConfig = PreTrainedConfig: that class
            name = _plain_alias(module, name) or name
        if name in module.classes:
            c = module.classes[name]
            return Lookup(True, CLASS, module.path, name, cls=c)
        if name in module.functions:
            f = module.functions[name]
            return Lookup(True, FUNCTION, module.path, name, function=f)
        imported = module.imports.get(name)
        if imported is not None and not _typing_only(imported):
            return self.follow(module, imported, bound_only=bound_only)
        if name in module.assignments:
            return Lookup(True, ASSIGNMENT, module.path, name)
        if imported is not None:
            return self._typing_only(module, dotted, name, imported)
        return None

    def _typing_only(self, module: Module, dotted: str, name: str, imported: Import) -> Lookup:
        """A name the module imports only for type checkers: at run time, what its
        ``__getattr__`` serves under it, where that is known (nothing, where it serves only
        other names); else unknown."""
        by = _getattr_serves(module)
        if by is not None and (name in by.names or by.closed):
            return self._served_by_getattr(module, dotted, name, by)
        return unknown(
            NAME,
            module.path,
            name,
            f"{dotted} binds {name!r} only for type checkers ({imported.statement} under "
            "if TYPE_CHECKING), not at run time",
        )

    def _starred(self, module: Module, name: str) -> Lookup | None:
        """``name`` through the module's star imports, the last one first; None when none
        of them can bind it."""
        undecided: Lookup | None = None
        for star in reversed(module.star_imports):
            base = absolute(star.module or "", module.path)
            if base is None:
                continue
            if not self.files.inside(base):
                undecided = undecided or unknown(
                    NAME,
                    module.path,
                    name,
                    f"from {base} import * (outside the package) may bind {name!r}",
                )
                continue
            exported = self._exported(base)
            if exported is not None and name not in exported:
                continue
            if exported is None and name.startswith("_"):
                continue
            answer = self.attribute(base, name)
            if answer.found is False:
                continue
            if _typing_only(star):
                return unknown(
                    NAME,
                    module.path,
                    name,
                    f"{name!r} comes only from from {star.module} import * under if TYPE_CHECKING",
                )
            if answer.found is True:
                return answer
            undecided = undecided or answer
        return undecided

    def star_exports(self, dotted: str) -> frozenset[str] | None:
        """What ``from dotted import *`` binds, where the module says it exactly: its
        literal ``__all__``. None where it has none (every public name), where it is lazy
        (its ``__all__`` is built when it is imported) or not in the package."""
        module = self.files.module(dotted)
        if module is None or self._lazy_of(module) is not None:
            return None
        return self._exported(dotted)

    def _exported(self, dotted: str) -> frozenset[str] | None:
        """A module's literal ``__all__`` (what a star import takes), None without one."""
        if dotted not in self._all:
            module = self.files.module(dotted)
            built = declared_all(module) if module is not None else None
            # An __all__ we cannot evaluate fully: fall back to the public names, which
            # may find more than Python would, never less (no false "missing").
            exact = built is not None and not built.unevaluated
            self._all[dotted] = frozenset(built.value) if exact else None  # type: ignore[arg-type]
        return self._all[dotted]

    def _submodule(self, module: Module, dotted: str, name: str) -> Lookup | None:
        if not module.path.endswith("/__init__.py"):
            return None
        sub = f"{dotted}.{name}"
        return self.module(sub) if self.files.module_file(sub) is not None else None

    # -- lazy modules

    def _lazy_of(self, module: Module) -> LazyModule | None:
        if module.path not in self._lazy:
            self._lazy[module.path] = lazy_module(module)
        return self._lazy[module.path]

    def _served(
        self,
        module: Module,
        dotted: str,
        lazy: LazyModule,
        name: str,
        *,
        bound_only: bool = False,
        legacy: bool = True,
    ) -> Lookup:
        if name in lazy.objects:
            return self._explicit(module, dotted, name, bound_only=bound_only) or Lookup(
                True, ASSIGNMENT, module.path, name
            )
        if name in lazy.names:
            return self.attribute(f"{dotted}.{lazy.names[name]}", name, bound_only=bound_only)
        # A submodule before the folders' names: what _LazyModule does for the keys of
        # its structure, and reading every file of a folder for a submodule is wasted.
        submodule = self._submodule(module, dotted, name) or self.alias(f"{dotted}.{name}")
        if submodule is not None:
            return submodule
        complete = not lazy.unevaluated
        for folder in lazy.folders:
            package = f"{dotted}.{folder.replace('/', '.')}" if folder else dotted
            found, listed = self._in_folder(package, name, set())
            complete = complete and listed
            if found is not None:
                return self.attribute(found, name)
        return self._legacy(module, dotted, lazy, name, complete=complete, legacy=legacy)

    def _legacy(
        self,
        module: Module,
        dotted: str,
        lazy: LazyModule,
        name: str,
        *,
        complete: bool,
        legacy: bool = True,
    ) -> Lookup:
        """A name only a lazy module's backward-compatibility paths serve (``legacy``: they
        are tried, each as its ``__getattr__`` does, only on names its structure has), else
        the miss."""
        getattr_source = self._getattr_source(module, dotted, lazy) if legacy else ""
        for suffix, replacement in suffix_fallbacks(getattr_source):
            if name.endswith(suffix):
                served = name.removesuffix(suffix) + replacement
                answer = self._served(module, dotted, lazy, served, legacy=False)
                if answer.found is not False:
                    why = f"served as {served} by {lazy.factory}.__getattr__"
                    return replace(answer, why=why)
        if name.endswith(("Tokenizer", "TokenizerFast")) and converts_tokenizers(getattr_source):
            converted = self._converted(module, dotted, lazy, name)
            if converted is not None:
                return converted
        if lazy.unevaluated:
            steps = "; ".join(lazy.unevaluated)
            why = f"{dotted} is a lazy module built by steps not evaluated: {steps}"
            return unknown(NAME, module.path, name, why)
        if not complete:
            folders = ", ".join(f or "its own" for f in lazy.folders)
            why = (
                f"{dotted} serves every __all__ of its folder ({folders}), which only a "
                f"listing can prove {name!r} absent from (the __init__ mirrors can be stale)"
            )
            return unknown(NAME, module.path, name, why)
        return missing(
            NAME,
            module.path,
            name,
            f"{dotted}'s lazy import structure has no {name!r}{closest(name, lazy.names)}",
        )

    def _in_folder(self, package: str, name: str, seen: set[str]) -> tuple[str | None, bool]:
        """The module of ``package``'s folder (recursively) whose ``__all__`` has ``name``,
        as define_import_structure would find it, and whether that answer is complete.

        The folder is listed by the caller's lister, else by its ``__init__``'s imports
        (the TYPE_CHECKING mirror). The mirror finds what it lists, but cannot prove a
        miss: it can be stale (transformers 5.5.3's models/__init__ omits lighton_ocr and
        the pp_ocrv5 recognisers that define_import_structure serves). Children are tried
        in order of likeness to ``name``: LlamaModel is in models/llama.

        A listed folder is read as define_import_structure reads it: from the listing,
        each file's ``__all__`` off its text (:mod:`canary.symbols.alltext`), loading only
        a file whose text does not decide it, and once per tree (:meth:`_listed_exports`):
        a miss would otherwise read every file of ``models/`` (about 2,000) again."""
        if package in seen:
            return None, True
        seen.add(package)
        children = self.files.folder(package)
        listed = children is not None
        if listed and package not in self._below:
            # Every file's text below in one read: summing the folder reads them all.
            self.files.read_all_texts(self._listed_modules(package))
        if listed and (below := self._listed_exports(package)) is not None:
            names, whole = below
            if name not in names:
                return None, whole  # what the walk below would answer, without walking it
        if self.files.module_file(package) is None:
            return None, False
        if children is None:
            init = self.files.module(package)
            assert init is not None  # module_file found it
            children = _listed(init, package, self.files)
        complete = listed
        for child in sorted(children, key=lambda c: _unlike(name, c)):
            path = self.files.module_file(child)
            if path is None:
                continue  # a stale line of the mirror, or a folder that is no package
            if path.endswith("/__init__.py"):
                found, whole = self._in_folder(child, name, seen)
                complete = complete and whole
                if found is not None:
                    return found, complete
                continue
            exported, exact = self._file_exports(child, path, listed=listed)
            complete = complete and exact
            if name in exported:
                return child, complete
        return None, complete

    def _listed_exports(self, package: str) -> tuple[frozenset[str], bool] | None:
        """Every name an ``__all__`` of a file in ``package``'s listed folder (recursively)
        lists, and whether :meth:`_in_folder` would call a miss there complete; None
        where a folder below cannot be listed (the walk then reads a mirror)."""
        if package in self._below:
            return self._below[package]
        self._below[package] = None  # a folder that contains itself (a link) is not summed
        children = self.files.folder(package)
        if children is None:
            return None
        if self.files.module_file(package) is None:
            self._below[package] = (frozenset(), False)
            return self._below[package]
        paths = {child: self.files.module_file(child) for child in children}
        names: set[str] = set()
        complete = True
        for child, path in paths.items():
            if path is None:
                continue
            if path.endswith("/__init__.py"):
                below = self._listed_exports(child)
                if below is None:
                    return None
                names.update(below[0])
                complete = complete and below[1]
                continue
            exported, exact = self._file_exports(child, path, listed=True)
            names.update(exported)
            complete = complete and exact
        self._below[package] = (frozenset(names), complete)
        return self._below[package]

    def _listed_modules(self, package: str) -> Iterator[str]:
        """The module files of ``package``'s listed folder and of the listed packages
        below it: what :meth:`_listed_exports` reads the text of."""
        for child in self.files.folder(package) or ():
            path = self.files.module_file(child)
            if path is not None and path.endswith("/__init__.py"):
                yield from self._listed_modules(child)
            elif path is not None:
                yield path

    def _file_exports(self, child: str, path: str, *, listed: bool) -> tuple[frozenset[str], bool]:
        """What define_import_structure serves from the module ``child`` (its ``__all__``
        and its ``@requires`` definitions: off its text where the folder is listed and the
        text decides it, else from its code index), and whether that is exact (not an
        ``__all__`` built in steps we do not evaluate)."""
        from_text = self.files.text_all(path) if listed else None
        if from_text is not None:
            return frozenset(from_text), True
        exported = self._exported(child)
        module = self.files.module(child)
        required = _requires_decorated(module) if module is not None else frozenset()
        if exported is None:
            return required, not _has_all(module)
        return exported | required, True

    def _getattr_source(self, module: Module, dotted: str, lazy: LazyModule) -> str:
        """The source of ``__getattr__`` of the ``_LazyModule`` class this release defines
        ("": none), where its backward-compatibility paths are read."""
        if module.path not in self._getattr_sources:
            self._getattr_sources[module.path] = ""  # a cycle through the factory finds none
            factory = self._explicit(module, dotted, lazy.factory.rpartition(".")[2])
            getattr_ = factory.cls.methods.get("__getattr__") if factory and factory.cls else None
            self._getattr_sources[module.path] = getattr_.source if getattr_ else ""
        return self._getattr_sources[module.path]

    def _converted(self, module: Module, dotted: str, lazy: LazyModule, name: str) -> Lookup | None:
        """A tokenizer the structure lacks, served as the first tokenizer sharing its
        converter that the structure has (None: none does, or the table cannot be read)."""
        table = self._converter_table(f"{dotted}.convert_slow_tokenizer")
        if table is None:
            return None
        for candidate in converter_candidates(name, table):
            answer = self._served(module, dotted, lazy, candidate, legacy=False)
            if answer.found is True:
                lookup = name.removesuffix("Fast")
                why = (
                    f"served as {candidate} by {lazy.factory}.__getattr__ "
                    f"({lookup} shares {table[lookup]} in SLOW_TO_FAST_CONVERTERS)"
                )
                return replace(answer, why=why)
        return None

    def _converter_table(self, dotted: str) -> dict[str, str] | None:
        if dotted not in self._converters:
            module = self.files.module(dotted)
            assignment = module.assignments.get("SLOW_TO_FAST_CONVERTERS") if module else None
            self._converters[dotted] = converter_table(assignment.value) if assignment else None
        return self._converters[dotted]


def _getattr_serves(module: Module) -> Served | None:
    """What the module's ``__getattr__`` serves, defined or assigned (None: it has none, or
    one canary cannot read)."""
    function = module.functions.get("__getattr__")
    if function is not None:
        return served(function, lambda name: _literal(module, name))
    assigned = module.assignments.get("__getattr__")
    return served_by_assignment(assigned.value) if assigned is not None else None


def _literal(module: Module, name: str) -> object:
    assignment = module.assignments.get(name)
    return assignment.literal if assignment is not None else NOT_LITERAL


def _unbound(module: Module, dotted: str, name: str) -> Lookup:
    """A name a regular module does not bind: unknown where the module may still serve it
    (it writes its namespace dynamically, or has a module ``__getattr__``), else missing.
    A name one of its functions declares ``global`` is there once that function ran, and
    is what the module's code reads under that name: found, as a binding made at run time
    (transformers' ``integrations.mxfp4.triton_kernels_hub``, set when a model is
    quantized, which a project may set itself first)."""
    if name in module.run_time_globals:
        return Lookup(True, RUN_TIME_GLOBAL, module.path, name)
    dynamic = next((e for e in module.effects if e.root in _NAMESPACE_WRITERS), None)
    if dynamic is not None:
        where = f"{effect_text(dynamic)}, line {dynamic.line}"
        return unknown(
            NAME, module.path, name, f"{dotted} writes its namespace dynamically ({where})"
        )
    if "__getattr__" in module.functions or "__getattr__" in module.assignments:
        why = f"{dotted} has a module __getattr__, which may serve {name!r}"
        return unknown(NAME, module.path, name, why)
    bound = [*module.classes, *module.functions, *module.assignments, *module.imports]
    why = f"{dotted} does not bind {name!r}{closest(name, bound)}"
    return missing(NAME, module.path, name, why)


def _is_package(module: Module) -> bool:
    return module.path.endswith("/__init__.py")


def _requires_decorated(module: Module) -> frozenset[str]:
    """The module's top-level definitions with a ``requires...`` decorator: without the
    file's text, what :func:`canary.symbols.alltext.requires_names` finds in it wherever
    the decorators stand on lines of their own (the code index keeps no column-0 comment
    that could carry ``@requires`` too)."""
    return frozenset(
        name
        for name, definition in (*module.classes.items(), *module.functions.items())
        if any(d.startswith("requires") for d in definition.decorators)
    )


def _has_all(module: Module | None) -> bool:
    return module is not None and (
        "__all__" in module.assignments or any(e.root == "__all__" for e in module.effects)
    )


def _plain_alias(module: Module, name: str) -> str | None:
    """The other name ``name`` is a plain alias of (``PretrainedConfig = PreTrainedConfig``,
    unconditional, at module level, of a class or function the module defines, or of a
    name it imports unconditionally and binds no other way: transformers 5's ``BartTokenizer
    = _RobertaTokenizer``): None where it is anything else."""
    assignment = module.assignments[name]
    value = assignment.value
    if assignment.op is not None or assignment.guards or value == name:
        return None
    shadowed = name in module.classes or name in module.functions or name in module.imports
    if shadowed or not value.isidentifier():  # bound otherwise too: which binding wins?
        return None
    if value in module.classes or value in module.functions:
        return value
    imported = module.imports.get(value)
    if imported is None or imported.guards or value in module.assignments:
        return None
    return value


def _typing_only(imported: Import) -> bool:
    return any(guard in _TYPE_CHECKING for guard in imported.guards)


def _listed(init: Module, package: str, files: ModuleFiles) -> list[str]:
    """The submodules an ``__init__`` imports from (``from .x import ...``), its mirror of
    the folder. A line written without its dot (``from modeling_xlstm import *``, in
    transformers 5.0's xlstm) never runs, but still names a file of the folder."""
    children: list[str] = []
    for imported in (*init.star_imports, *init.imports.values()):
        written = imported.module or ""
        if written.startswith("..") or not written.strip("."):
            continue
        if written.startswith("."):
            child = absolute(written, init.path)
        elif (
            imported.name == "*"
            and "." not in written
            and files.module_file(f"{package}.{written}") is not None
        ):
            child = f"{package}.{written}"
        else:
            continue
        # define_import_structure skips conversion scripts and modular sources.
        if child and child.rpartition(".")[2].startswith(("convert_", "modular_")):
            continue
        if child and child != package and child not in children:
            children.append(child)
    return children


def _unlike(name: str, dotted: str) -> int:
    """0 when ``name`` starts like the module's last part (LlamaModel, models.llama)."""
    squashed = dotted.rpartition(".")[2].replace("_", "").lower()
    return 0 if name.replace("_", "").lower().startswith(squashed) else 1


__all__ = ["Resolver", "dotted_of"]
