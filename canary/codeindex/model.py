"""The model layer of the code index: what one upstream file defines.

A :class:`Module` holds its classes, functions, module-level assignments and imports; a
:class:`Class` its methods, class attributes and nested classes; a :class:`Function` its
signature and decorators, and its body (:mod:`canary.codeindex.body`) on demand. Plain
frozen dataclasses of strings, ints and tuples, no ``ast`` nodes, so a summary pickles
compactly.

A lookup that finds nothing raises :class:`~canary.errors.Drift` (kind ``MISSING``) with the
subject it looked for and the closest names that are there.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field

from canary.codeindex.body import Assignment, Body, Call, walk_function
from canary.codeindex.equivalence import DeferredScope, Scope, function_scope
from canary.codeindex.expressions import SourceText, Span, normalised_text
from canary.codeindex.flow import Flow, flow_of_function
from canary.codeindex.pickling import by_fields
from canary.errors import Drift, Subject

# Drift messages list at most this many candidate names, closest first.
_LISTED = 15

POSITIONAL_ONLY = "positional_only"
POSITIONAL_OR_KEYWORD = "positional_or_keyword"
VAR_POSITIONAL = "var_positional"
KEYWORD_ONLY = "keyword_only"
VAR_KEYWORD = "var_keyword"


@by_fields
@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a signature; ``default``/``annotation`` are normalised text."""

    name: str
    kind: str
    default: str | None = None
    annotation: str | None = None

    @property
    def positional(self) -> bool:
        """Can be passed by position (``f(x)``): positional-only or positional-or-keyword."""
        return self.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)

    @property
    def keyword(self) -> bool:
        """Can be passed as ``name=``: positional-or-keyword or keyword-only."""
        return self.kind in (POSITIONAL_OR_KEYWORD, KEYWORD_ONLY)

    def format(self, *, annotations: bool = False) -> str:
        star = {VAR_POSITIONAL: "*", VAR_KEYWORD: "**"}.get(self.kind, "")
        text = star + self.name
        if annotations and self.annotation is not None:
            text += f": {self.annotation}"
            if self.default is not None:
                text += f" = {self.default}"
        elif self.default is not None:
            text += f"={self.default}"
        return text


@by_fields
@dataclass(frozen=True, slots=True)
class Signature:
    params: tuple[Param, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Every parameter name in order, ``*args``/``**kwargs`` names included."""
        return tuple(p.name for p in self.params)

    def has(self, name: str) -> bool:
        """A parameter literally named ``name`` (being swallowed by ``**kwargs`` does not count)."""
        return any(p.name == name for p in self.params)

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def positional(self) -> tuple[str, ...]:
        """The names a call can fill by position, in order (``self`` included for a method);
        keyword-only parameters and ``*args`` are not among them."""
        return tuple(p.name for p in self.params if p.positional)

    @property
    def keyword_only(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.kind == KEYWORD_ONLY)

    @property
    def var_positional(self) -> str | None:
        return next((p.name for p in self.params if p.kind == VAR_POSITIONAL), None)

    @property
    def var_keyword(self) -> str | None:
        return next((p.name for p in self.params if p.kind == VAR_KEYWORD), None)

    def accepts_keyword(self, name: str) -> bool:
        """Whether ``f(name=...)`` binds: a named, non-positional-only param, or ``**kwargs``."""
        p = self.param(name)
        if p is not None and p.kind in (POSITIONAL_OR_KEYWORD, KEYWORD_ONLY):
            return True
        return self.var_keyword is not None

    def format(self, *, annotations: bool = False) -> str:
        parts: list[str] = []
        previous = None
        for p in self.params:
            if previous == POSITIONAL_ONLY and p.kind != POSITIONAL_ONLY:
                parts.append("/")
            if p.kind == KEYWORD_ONLY and previous not in (KEYWORD_ONLY, VAR_POSITIONAL):
                parts.append("*")
            parts.append(p.format(annotations=annotations))
            previous = p.kind
        if previous == POSITIONAL_ONLY:
            parts.append("/")
        return "(" + ", ".join(parts) + ")"

    def __str__(self) -> str:
        # Messages show names and defaults only; annotations are noise there.
        return self.format()


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    qualname: str  # "Trainer.compute_loss"
    signature: Signature
    decorators: tuple[str, ...]
    is_async: bool
    line: int  # the ``def`` line (decorators may start earlier; ``source`` includes them)
    end_line: int
    _text: SourceText = field(repr=False)
    _span: Span = field(repr=False)
    # The body summary (calls, assignments, returns, names), built on first use from the
    # function's own text: checks read the bodies of a few functions per file, and walking
    # every body was most of the cost of a parse (and of the pickled size). Derived from
    # ``_text`` and ``_span``, so it takes no part in equality.
    _body: Body | None = field(default=None, repr=False, compare=False)

    @property
    def source(self) -> str:
        """The exact text of the definition, from its first decorator's line."""
        return self._text.segment(self._span)

    @property
    def calls(self) -> tuple[Call, ...]:
        """Source order (by start position; an outer call before the calls inside it)."""
        return self._walked().calls

    @property
    def assignments(self) -> tuple[Assignment, ...]:
        return self._walked().assignments

    @property
    def returns(self) -> tuple[str, ...]:
        """Normalised value of each ``return <expr>``; bare returns skipped."""
        return self._walked().returns

    @property
    def names(self) -> frozenset[str]:
        """Every Name id and Attribute attr in the body."""
        return self._walked().names

    @property
    def scope(self) -> Scope:
        """The function's locals and known names, for comparing its expressions modulo a
        renamed local (:mod:`canary.codeindex.equivalence`); parsed on first use."""
        return function_scope(self._text, self._span)

    @property
    def deferred_scope(self) -> DeferredScope:
        """:attr:`scope` parsed only when called; its module's context without it."""
        return DeferredScope(self._text, self._span)

    @property
    def flow(self) -> Flow:
        """Where each local value comes from and what reaches each call and return
        (:mod:`canary.codeindex.flow`), built on first use."""
        body = self._walked()
        if body._flow is None:
            object.__setattr__(body, "_flow", flow_of_function(self._text, self._span))
        return body._flow  # type: ignore[return-value]

    def _walked(self) -> Body:
        body = self._body
        if body is None:
            body = walk_function(self._text, self._span)
            object.__setattr__(self, "_body", body)  # a cache, not a change of value
        return body

    def __getstate__(self) -> tuple:
        # Pickled without the body summary: it is rebuilt on demand, and a pickle written
        # after a check read it would otherwise carry it.
        return tuple(None if name == "_body" else getattr(self, name) for name in _FUNCTION_FIELDS)

    def __setstate__(self, state: tuple) -> None:
        for name, value in zip(_FUNCTION_FIELDS, state, strict=True):
            object.__setattr__(self, name, value)

    def calls_to(self, func: str) -> tuple[Call, ...]:
        """Calls whose normalised callee is exactly ``func`` ("self.accelerator.backward")."""
        func = normalised_text(func)
        return tuple(c for c in self.calls if c.func == func)

    def calls_named(self, name: str) -> tuple[Call, ...]:
        """Calls whose callee's last component is ``name``: "backward" matches
        ``self.accelerator.backward(...)`` and ``backward(...)``."""
        return tuple(c for c in self.calls if c.name == name)

    def assignments_to(self, target: str) -> tuple[Assignment, ...]:
        """Assignments to exactly ``target`` (normalised), including as an element of an
        unpacking target (``loss, outputs = ...`` assigns "loss")."""
        target = normalised_text(target)
        return tuple(a for a in self.assignments if a.assigns(target))

    def mentions(self, name: str) -> bool:
        return name in self.names


_FUNCTION_FIELDS = tuple(f.name for f in dataclasses.fields(Function))


@by_fields
@dataclass(frozen=True, slots=True)
class ClassAttribute:
    name: str
    value: str | None  # normalised; None for a bare annotation (``field: int``), for/with targets
    literal: object
    line: int
    annotation: str | None = None


@by_fields
@dataclass(frozen=True, slots=True)
class Class:
    name: str
    qualname: str  # "Outer.Inner" for a nested class
    bases: tuple[str, ...]  # normalised; keywords such as ``metaclass=`` excluded
    decorators: tuple[str, ...]
    line: int
    end_line: int
    _text: SourceText = field(repr=False)
    _span: Span = field(repr=False)
    attributes: dict[str, ClassAttribute]
    methods: dict[str, Function]
    classes: dict[str, Class]
    # Kept so a missing method/attribute can be reported against the right file.
    path: str = ""
    origin: str = ""
    # Imports in the class body bind class attributes too (Trainer imports log_metrics
    # and friends from trainer_pt_utils as methods).
    imports: dict[str, Import] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The exact text of the class statement, from its first decorator's line."""
        return self._text.segment(self._span)

    @property
    def where(self) -> str:
        return located(self.path, self.origin)

    def has_method(self, name: str) -> bool:
        return name in self.methods

    def declares(self, name: str) -> bool:
        """Bound in this class's own body (attribute, method or nested class); bases are not
        consulted."""
        return name in self.attributes or name in self.methods or name in self.classes

    def method(self, name: str) -> Function:
        try:
            return self.methods[name]
        except KeyError:
            raise Drift(
                f"{self.qualname}.{name}: class {self.name} in {self.where} has no method "
                f"{name!r}; it has: {_listing(name, self.methods)}{self._other_kind(name)}",
                subject=self._subject(name),
                kind=Drift.MISSING,
            ) from None

    def attribute(self, name: str) -> ClassAttribute:
        try:
            return self.attributes[name]
        except KeyError:
            raise Drift(
                f"{self.qualname}.{name}: class {self.name} in {self.where} has no class "
                f"attribute {name!r}; it has: {_listing(name, self.attributes)}"
                f"{self._other_kind(name)}",
                subject=self._subject(name),
                kind=Drift.MISSING,
            ) from None

    def cls(self, name: str) -> Class:
        """A class nested in this one."""
        try:
            return self.classes[name]
        except KeyError:
            raise Drift(
                f"{self.qualname}.{name}: class {self.name} in {self.where} has no nested "
                f"class {name!r}; nested classes: {_listing(name, self.classes)}"
                f"{self._other_kind(name)}",
                subject=self._subject(name),
                kind=Drift.MISSING,
            ) from None

    def _subject(self, name: str) -> Subject:
        return Subject(self.path or None, f"{self.qualname}.{name}")

    def _other_kind(self, name: str) -> str:
        # "Has no method" is misleading when the name is bound some other way.
        if name in self.methods:
            return f"; {name!r} is a method there"
        if name in self.attributes:
            value = self.attributes[name].value
            return f"; {name!r} is a class attribute there" + (f" = {value}" if value else "")
        if name in self.classes:
            return f"; {name!r} is a nested class there"
        return ""

    def all_functions(self) -> Iterator[Function]:
        yield from self.methods.values()
        for nested in self.classes.values():
            yield from nested.all_functions()


@by_fields
@dataclass(frozen=True, slots=True)
class Import:
    """One name a module-level import binds (``name`` "*" for a star import)."""

    name: str  # the local binding: "np" for ``import numpy as np``, "os" for ``import os.path``
    module: str | None  # ``from`` module as written ("..utils"); None for a plain ``import``
    imported: str | None  # the name as imported: "y" for ``from x import y as z``, "os.path"
    line: int
    # The tests of the module-level ``if`` statements around it, outermost first, as for
    # an Assignment: ``("TYPE_CHECKING",)`` for an import only type checkers see.
    guards: tuple[str, ...] = ()

    @property
    def statement(self) -> str:
        """The import as messages quote it, without its alias: "from ..utils import y",
        "import os.path"."""
        source = f"from {self.module} " if self.module is not None else ""
        return f"{source}import {self.imported}"


@by_fields
@dataclass(frozen=True, slots=True)
class Effect:
    """A module-level statement that shapes the module's namespace other than by binding a
    plain name: an item or attribute assignment (``_import_structure["trainer"] = [...]``,
    ``sys.modules[__name__] = _LazyModule(...)``), an augmented assignment (``__all__ +=
    [...]``) or a call statement (``__all__.extend([...])``, ``_create_module_alias(...)``).
    A plain ``name = value`` is one too when ``name`` is the root of another effect, so the
    steps that build a container read in order.
    """

    target: str  # normalised assignment target, or the callee of a call statement
    op: str  # "=" / the operator of an augmented assignment ("+") / "call"
    value: str  # normalised assigned value, or the whole call
    line: int
    guards: tuple[str, ...]  # the enclosing module-level ``if`` tests, as for an Assignment
    fallback: bool = False  # inside an ``except`` handler: what runs when the ``try`` failed

    @property
    def root(self) -> str:
        """The module-level name the target starts from: "_import_structure" for
        ``_import_structure["x"].extend``, "sys" for ``sys.modules[__name__]``."""
        end = 0
        while end < len(self.target) and (self.target[end].isalnum() or self.target[end] == "_"):
            end += 1
        return self.target[:end]


@by_fields
@dataclass(frozen=True, slots=True)
class Module:
    path: str
    origin: str
    sha256: str  # of the source bytes (UTF-8 encoding when given text)
    python: str  # the Python that built this summary, e.g. "3.11"
    classes: dict[str, Class]
    functions: dict[str, Function]
    assignments: dict[str, Assignment]  # bound name -> last module-level assignment
    imports: dict[str, Import]
    # ``from x import *``, in source order (names only known by reading ``x``).
    star_imports: tuple[Import, ...] = ()
    effects: tuple[Effect, ...] = ()  # in source order
    # Names a function of the module declares ``global`` (``global triton_kernels_hub``):
    # module attributes bound when that function runs, not on import -> the declaration's line.
    run_time_globals: dict[str, int] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return located(self.path, self.origin)

    def has_class(self, name: str) -> bool:
        return name in self.classes

    def has_function(self, name: str) -> bool:
        return name in self.functions

    def defines(self, name: str) -> bool:
        """Defined here, at module level: a class, function or assignment target. An import
        does not count: the question is where the code lives."""
        return name in self.classes or name in self.functions or name in self.assignments

    def binds(self, name: str) -> bool:
        """Bound at module level in any way, imports included: whether ``from <module>
        import <name>`` works."""
        return self.defines(name) or name in self.imports

    def cls(self, name: str) -> Class:
        try:
            return self.classes[name]
        except KeyError:
            raise Drift(
                f"class {name!r} not found in {self.where}; classes defined there: "
                f"{_listing(name, self.classes)}{self.how_bound(name)}",
                subject=Subject(self.path, name),
                kind=Drift.MISSING,
            ) from None

    def function(self, name: str) -> Function:
        try:
            return self.functions[name]
        except KeyError:
            raise Drift(
                f"function {name!r} not found in {self.where}; functions defined there: "
                f"{_listing(name, self.functions)}{self.how_bound(name)}",
                subject=Subject(self.path, name),
                kind=Drift.MISSING,
            ) from None

    def assignment(self, name: str) -> Assignment:
        """The last module-level assignment to ``name``."""
        try:
            return self.assignments[name]
        except KeyError:
            raise Drift(
                f"{name!r} is not assigned at module level in {self.where}; assigned there: "
                f"{_listing(name, self.assignments)}{self.how_bound(name)}",
                subject=Subject(self.path, name),
                kind=Drift.MISSING,
            ) from None

    def find(self, qualname: str) -> Function | Class:
        """``"Trainer.compute_loss"``, ``"Trainer"``, ``"Outer.Inner.method"`` or a
        module-level function such as ``"fixed_cross_entropy"``."""
        head, *rest = qualname.split(".")
        if not rest:
            if head in self.classes:
                return self.classes[head]
            if head in self.functions:
                return self.functions[head]
            names = {**self.classes, **self.functions}
            raise Drift(
                f"{qualname!r} not found in {self.where}: no class or function of that name; "
                f"defined there: {_listing(head, names)}{self.how_bound(head)}",
                subject=Subject(self.path, qualname),
                kind=Drift.MISSING,
            )
        if head not in self.classes and head in self.functions:
            raise Drift(
                f"{qualname!r}: {head!r} is a function in {self.where}, and definitions "
                "nested in functions are not indexed",
                subject=Subject(self.path, head),
                kind=Drift.MISSING,
            )
        found: Class = self.cls(head)
        for i, part in enumerate(rest):
            last = i == len(rest) - 1
            if last and part in found.methods:
                return found.methods[part]
            if part in found.classes:
                found = found.classes[part]
                continue
            # Report as a missing method: that is what a dotted lookup usually wants.
            return found.method(part) if last else found.cls(part)
        return found

    def all_functions(self) -> Iterator[Function]:
        """Every indexed function: module-level ones, then methods (nested classes' too)."""
        yield from self.functions.values()
        for c in self.classes.values():
            yield from c.all_functions()

    def relabeled(self, *, path: str, origin: str) -> Module:
        """The same summary naming another path/origin (a cache hit by content hash may
        come from another version of the same file)."""
        if path == self.path and origin == self.origin:
            return self
        return dataclasses.replace(
            self,
            path=path,
            origin=origin,
            classes={k: _relabel(c, path, origin) for k, c in self.classes.items()},
        )

    def how_bound(self, name: str) -> str:
        """How ``name`` is bound here, as a clause for a message ("; 'x' is imported there
        (...)"), or "" when it is not: a symbol that moved is usually re-imported or aliased."""
        if name in self.imports:
            imp = self.imports[name]
            return f"; {name!r} is imported there ({imp.statement}, line {imp.line})"
        if name in self.classes:
            return f"; {name!r} is a class there"
        if name in self.functions:
            return f"; {name!r} is a function there"
        if name in self.assignments:
            a = self.assignments[name]
            return f"; {name!r} is assigned there ({name} = {a.value}, line {a.line})"
        return ""


def _relabel(c: Class, path: str, origin: str) -> Class:
    return dataclasses.replace(
        c,
        path=path,
        origin=origin,
        classes={k: _relabel(n, path, origin) for k, n in c.classes.items()},
    )


def located(path: str, origin: str) -> str:
    """How messages name a file: its path and, when known, the release it came from."""
    return f"{path} ({origin})" if origin else path


def _listing(name: str, candidates: dict[str, object] | list[str]) -> str:
    names = list(candidates)
    if not names:
        return "(none)"
    close = difflib.get_close_matches(name, names, n=_LISTED, cutoff=0.5)
    chosen = set(close)
    shown = (close + sorted(n for n in names if n not in chosen))[:_LISTED]
    text = ", ".join(shown)
    if len(names) > len(shown):
        text += f", ... ({len(names) - len(shown)} more)"
    return text
