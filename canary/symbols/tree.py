"""One package at one release, and any dotted name in it: :class:`PackageTree`."""

from __future__ import annotations

from canary.codeindex import Class, ClassAttribute, Module
from canary.symbols.alltext import AllReader
from canary.symbols.callables import function_attribute, property_attribute, set_on, wrapper
from canary.symbols.classes import PLAIN_BASES, Classes, dynamic
from canary.symbols.exports import Resolver
from canary.symbols.instances import callee, constructor, literal, literal_attribute
from canary.symbols.lookup import (
    ASSIGNMENT,
    CLASS,
    CLASS_ATTRIBUTE,
    EXTERNAL,
    FUNCTION,
    INHERITED,
    MEMBER,
    METHOD,
    MODULE,
    NAME,
    NESTED_CLASS,
    PROPERTY,
    Lookup,
    missing,
    unknown,
)
from canary.symbols.modules import Lister, Loader, ModuleFiles, TextReader, dotted_of

# What a found name is that may hold an instance or a literal: a module name, a class's.
_HOLDERS = frozenset({ASSIGNMENT, CLASS_ATTRIBUTE})


class PackageTree:
    """The package ``import_name`` ("transformers") of one release, read through ``load``
    on demand (a path in the installed layout -> its code index, None when absent).

    ``listdir``, where the caller can list folders, makes what transformers'
    ``define_import_structure`` reads exact; without it the folder's ``__init__`` (its
    TYPE_CHECKING mirror) lists it. ``read_all`` (files' ``__all__`` read off their text,
    :mod:`canary.symbols.alltext`) lets a walk over a listed folder read them as that
    function does, instead of loading each file's code index. ``read_text`` (a file's
    text) lets a lookup that asks only whether a name is bound answer from the text where
    it shows a top-level definition (:meth:`lookup`'s ``bound_only``).
    """

    def __init__(
        self,
        import_name: str,
        load: Loader,
        *,
        listdir: Lister | None = None,
        read_all: AllReader | None = None,
        read_text: TextReader | None = None,
    ) -> None:
        self.import_name = import_name
        self._files = ModuleFiles(import_name, load, listdir, read_all, read_text)
        self._resolver = Resolver(self._files)
        self._classes = Classes(self._resolver)

    def module_file(self, dotted: str) -> str | None:
        """``"transformers.trainer"`` -> ``"transformers/trainer.py"`` (or the package's
        ``__init__.py``); None when there is no such file."""
        return self._files.module_file(dotted)

    def lookup(self, dotted: str, *, bound_only: bool = False, imported: bool = False) -> Lookup:
        """Any dotted path in the package: a module, ``module.name``, or
        ``module.Class.member[.more]``, as attribute access after ``import`` would see it.

        ``bound_only``: only whether the last name is bound matters (not the object, its
        source or its members): a module whose text shows a top-level definition of it
        answers without being parsed, and the answer then holds no function or class.

        ``imported``: the path is what an import statement names (``from a.b import c``),
        so each part but the last is the module of that name where the package has one:
        the import system finds a submodule through its package's ``__path__``, never
        through its attributes (transformers' ``convert_slow_tokenizer`` is a module, and
        as an attribute of ``transformers`` a function). Without it, a path missing as
        attributes that such a module holds is unknown, not missing: the name may have been
        bound by an import (siirl's ``from transformers.convert_slow_tokenizer import
        SLOW_TO_FAST_CONVERTERS``, then an item assigned in it) or reached as attributes,
        and the dotted path alone does not say which."""
        parts = dotted.split(".")
        if parts[0] != self.import_name:
            return unknown(NAME, None, dotted, f"{dotted} is not in {self.import_name}")
        found, hidden = self._walk(parts, bound_only=bound_only, imported=imported)
        if found.found is False and hidden:
            through, _ = self._walk(parts, bound_only=bound_only, imported=True)
            if through.found is True:
                why = (
                    f"{dotted} is there through the module of that name, which an attribute "
                    "of its package hides: which the site reads depends on how it was bound"
                )
                return unknown(NAME, through.path, dotted, why)
        return found

    def _walk(self, parts: list[str], *, bound_only: bool, imported: bool) -> tuple[Lookup, bool]:
        """The path's lookup, and whether the walk stepped, as attributes, into something
        other than a module where a module of that name is (past the package, before the
        last name: an attribute of the package hides it)."""
        found, hidden = self._resolver.module(self.import_name), False
        for i, part in enumerate(parts[1:], start=1):
            if found.found is not True:
                return found, hidden
            last = i == len(parts) - 1
            within = ".".join(parts[: i + 1])
            module = not last and self._files.module_file(within) is not None
            if imported and module:
                found = self._resolver.module(within)
                continue
            found = self._step(found, part, ".".join(parts[:i]), bound_only=bound_only and last)
            hidden = hidden or (module and found.found is True and found.kind != MODULE)
        return found, hidden

    def star_exports(self, dotted: str) -> frozenset[str] | None:
        """The names ``from dotted import *`` binds, where the module lists them exactly
        (a literal ``__all__``); None where it takes every public name, or cannot be told."""
        return self._resolver.star_exports(dotted)

    def member(self, path: str, class_qualname: str, name: str) -> Lookup:
        """``name`` on the class ``class_qualname`` of ``path``, through its static MRO."""
        cls = self._class(path, class_qualname)
        if isinstance(cls, Lookup):
            return cls
        return self._classes.member(path, cls, name)

    def mro(self, path: str, class_qualname: str) -> tuple[tuple[str, Class] | str, ...]:
        """The class's MRO: ``(path, Class)`` for each class in the package, the dotted
        name for each base outside it ("torch.nn.Module"), in C3 order. Empty when it
        cannot be computed (the class is not there, a base is missing or unreadable)."""
        cls = self._class(path, class_qualname)
        linear = cls if isinstance(cls, Lookup) else self._classes.mro(path, cls)
        if isinstance(linear, Lookup):
            return ()
        return tuple((e.path, e.cls) if e.cls is not None and e.path else e.name for e in linear)

    @property
    def paths_read(self) -> frozenset[str]:
        """Every path ``load`` was asked for (to prefetch or declare them)."""
        return self._files.paths_read

    def _step(self, found: Lookup, part: str, where: str, *, bound_only: bool = False) -> Lookup:
        if found.kind == MODULE and found.path is not None:
            answer = self._resolver.attribute(dotted_of(found.path), part, bound_only=bound_only)
            if answer.found is False and where != dotted_of(found.path):
                return self._resolver.through_alias(where, part) or answer
            return answer
        if found.kind in (CLASS, NESTED_CLASS) and found.cls is not None and found.path:
            return self._classes.member(found.path, found.cls, part)
        if (held := self._held_attribute(found, part, where)) is not None:
            return held
        if found.kind == EXTERNAL:
            why = f"{where} is {found.why}, outside {self.import_name}"
        else:
            why = f"{where} is a {found.kind}: what it holds is not known statically"
        return unknown(NAME, found.path, f"{where}.{part}", why)

    def _held_attribute(self, found: Lookup, part: str, where: str) -> Lookup | None:
        """``part`` of what a found name holds, where that is known: an instance of the
        package's class, a function, method or property, or a literal."""
        if (made := self._instance_of(found)) is not None:
            return self._classes.member(made[0], made[1], part)
        return self._callable_attribute(found, part, where) or self._literal_attribute(
            found, part, where
        )

    def _callable_attribute(self, found: Lookup, part: str, where: str) -> Lookup | None:
        """``part`` of a function, method or property that was found, where Python's tables
        decide it (:mod:`canary.symbols.callables`); None where they do not."""
        function = found.function
        if found.kind not in (FUNCTION, METHOD, PROPERTY) or function is None or not found.path:
            return None
        if found.kind == PROPERTY:
            has, what = property_attribute(function, part), "a property"
        else:
            made = wrapper(function)
            has = (
                None
                if made is None
                else function_attribute(made, part, method=found.kind == METHOD)
            )
            what = f"a {made.value}" if made is not None else ""
            if has is not None and self._rebound(found):
                has = None  # the def is not what the name holds, or gains attributes
        qualname = f"{found.qualname}.{part}"
        if has is None:
            return None
        if has:
            return Lookup(True, INHERITED, found.path, qualname, f"{what} object's own")
        why = f"{where} is {what} object, which has no {part!r}, and nothing sets it"
        return missing(MEMBER, found.path, qualname, why)

    def _literal_attribute(self, found: Lookup, part: str, where: str) -> Lookup | None:
        """``part`` of a module name or class attribute that holds a literal of a builtin
        type (:mod:`canary.symbols.instances`); None where that does not decide it."""
        module = self._module_of(found)
        if module is None or found.qualname is None:
            return None
        if found.kind == ASSIGNMENT:
            value = literal(module, found.qualname)
        else:
            attribute = self._plain_class_attribute(module, found.qualname)
            value = attribute.literal if attribute is not None else None
        has = literal_attribute(value, part)
        qualname = f"{found.qualname}.{part}"
        if has is None:
            return None
        what = type(value).__name__
        if has:
            return Lookup(True, INHERITED, found.path, qualname, what)
        return missing(MEMBER, found.path, qualname, f"{where} is a {what}, which has no {part!r}")

    def _module_of(self, found: Lookup) -> Module | None:
        """The module a found module name or class attribute is bound in; None for any
        other kind of answer."""
        if found.found is not True or not found.path or found.kind not in _HOLDERS:
            return None
        return self._files.load(found.path)

    def _plain_class_attribute(self, module: Module, qualname: str) -> ClassAttribute | None:
        """The class attribute ``qualname`` ("Class.name") of ``module``, where its class
        keeps it as its body binds it (:meth:`_plain`)."""
        owner, _, name = qualname.rpartition(".")
        cls = self._class(module.path, owner)
        if isinstance(cls, Lookup) or not self._plain(module.path, cls):
            return None  # an Enum's class attribute is a member, a NamedTuple's a field
        return cls.attributes.get(name)

    def _plain(self, path: str, cls: Class) -> bool:
        """Whether the class keeps its class attributes as its body binds them: its bases
        outside the package are only ``object``, ``torch.nn.Module``, ``abc.ABC`` and
        ``typing.Generic`` (an ``Enum`` makes them members, a ``NamedTuple`` fields)."""
        mro = self._classes.mro(path, cls)
        return not isinstance(mro, Lookup) and all(
            e.cls is not None or e.name in PLAIN_BASES for e in mro
        )

    def _rebound(self, found: Lookup) -> bool:
        """Whether the module of a found function or method binds its name another way too
        (``f = lru_cache(f)``, ``forward = torch.compile(forward)`` in the class body) or
        sets attributes on it (:func:`canary.symbols.callables.set_on`)."""
        module = self._files.load(found.path) if found.path else None
        if module is None or not found.qualname:
            return True
        owner, _, name = found.qualname.rpartition(".")
        if not owner:
            bound = name in module.assignments or name in module.imports
            return bound or set_on(module, name)
        cls = self._class(module.path, owner)
        return isinstance(cls, Lookup) or name in cls.attributes or set_on(module, found.qualname)

    def _instance_of(self, found: Lookup) -> tuple[str, Class] | None:
        """The class (its path and definition) whose instance a module name or a class
        attribute that was found holds (:mod:`canary.symbols.instances`), where that is
        exact: the class is the package's, and no class of its MRO may make the call return
        something else or give the instance attributes other than by ``self.x = ...``
        (:func:`canary.symbols.classes.dynamic`: ``__new__``, ``setattr(self, k, v)``,
        ``torch.nn.Module``'s registered submodules)."""
        held = self._held_call(found)
        if held is None:
            return None
        entry = self._classes.base(*held)
        if isinstance(entry, Lookup) or entry.cls is None or entry.path is None:
            return None
        mro = self._classes.mro(entry.path, entry.cls)
        if isinstance(mro, Lookup) or any(dynamic(e.name, e.cls) for e in mro):
            return None
        return entry.path, entry.cls

    def _held_call(self, found: Lookup, *, named: bool = False) -> tuple[str, str] | None:
        """Where, and the callee of the call whose result, a found module name or class
        attribute holds; a class attribute may name such a module name (``_model_mapping =
        MODEL_MAPPING``)."""
        module = self._module_of(found) if found.kind == ASSIGNMENT or not named else None
        if module is None or found.qualname is None:
            return None
        if found.kind == ASSIGNMENT:
            made = constructor(module, found.qualname)
            return (module.path, made) if made else None
        attribute = self._plain_class_attribute(module, found.qualname)
        value = attribute.value if attribute is not None else None
        if value is not None and value.isidentifier():  # a module name of the class's module
            return self._held_call(
                self._resolver.attribute(dotted_of(module.path), value), named=True
            )
        made = callee(value) if value is not None else None
        return (module.path, made) if made else None

    def _class(self, path: str, qualname: str) -> Class | Lookup:
        module = self._files.load(path)
        if module is None:
            return missing(MODULE, path, qualname, f"no file {path} in the package")
        head, *rest = qualname.split(".")
        cls = module.classes.get(head)
        for part in rest:
            cls = cls.classes.get(part) if cls is not None else None
        if cls is None:
            return missing(NAME, path, qualname, f"no class {qualname} in {path}")
        return cls
