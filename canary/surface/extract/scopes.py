"""What a name is bound to (an upstream object, a project module or function, a standard
module), and the scopes that hold the names of a module, class or function."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from canary.surface import guards
from canary.surface.extract.domains import NOTHING_KNOWN, Narrowing
from canary.surface.segments import Definition
from canary.surface.texts import Value


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
VERSION_HELPER = re.compile(r"version|require|_v\d", re.IGNORECASE)


UNBOUND = object()  # a name no scope binds (None: bound, to something extraction ignores)


def may_mention(function: ProjectFunction, *words: str) -> bool:
    """Whether the function's text may contain one of ``words`` (a function parsed
    already, nested in another, may: its text is not kept)."""
    definition = function.definition
    if not isinstance(definition, Definition):
        return True
    text = definition.text.lower()
    return any(word in text for word in words)


# The standard modules whose functions extraction understands, and packaging, for its
# version parsers: a project's own ``Version`` wrapper may compare differently (unsloth's
# reads "4.50.0.dev0" as 4.50.0.1), so only packaging's make a version window.
STDLIB = frozenset(
    {
        "inspect",
        "re",
        "textwrap",
        "importlib",
        "contextlib",
        "typing",
        "packaging",
        "operator",
        "enum",
        "aenum",
        "pkg_resources",
    }
)
# the calls that bind an attribute named by their second argument on their first, as
# ``setattr`` does: an enum member added at run time (micm-nlp's ``PeftType.XPE``)
BINDERS = frozenset(
    {"aenum.extend_enum", "enum.EnumType._add_member_", "enum.EnumMeta._add_member_"}
)


@dataclass(frozen=True)
class Bound:
    """Where a binding is made: a version window, and the upstream imports it falls back
    from (it is made only where one of them fails)."""

    window: guards.Window = guards.EVERY_RELEASE
    fallback_of: tuple[str, ...] = ()


@dataclass(frozen=True)
class Presence:
    """A name bound to a presence test (``added = not hasattr(x, "y")``): what holds about
    upstream attributes where it is true, and where it is false ("+x.y", "-x.y"); for a
    flag a ``try`` sets after its imports or reads, those one of which failed where it is
    ``failed_if`` (its branch runs as their ``except`` does)."""

    true: frozenset[str]
    false: frozenset[str]
    failed: tuple[str, ...] = ()
    failed_if: bool = False


@dataclass(frozen=True)
class Keys:
    """A module-level dict some of whose string keys a ``try`` sets right after its upstream
    imports, and nothing else sets (speculators' ``model_classes["qwen3_5_text"] = ...``):
    each such key is in it exactly where those imports succeeded, as a flag set there is
    true (``"qwen3_5_text" in model_classes`` is a presence test of them)."""

    flags: tuple[tuple[str, Presence], ...]

    def presence(self, key: str) -> Presence | None:
        return next((flag for name, flag in self.flags if name == key), None)


@dataclass(frozen=True)
class Alternative:
    """Another upstream object a name may hold: one bound to it in another branch than its
    last binding (the ``try`` body beside the ``except ImportError`` that rebinds it, the
    other side of an ``if``), which that branch leaves in place for the uses after them."""

    path: str
    bound: Bound | None  # where that binding is made (None: on every release)
    narrowing: Narrowing = NOTHING_KNOWN  # what the tests around that binding said


Branch = tuple[int, ...]
"""The branches a binding is made in, outermost first (``()``: none)."""


@dataclass
class Scope:
    names: dict[str, Binding | None] = field(default_factory=dict)
    values: dict[str, Value] = field(default_factory=dict)
    parent: Scope | None = None
    is_class: bool = False
    # names bound to upstream under a version test or in an except ImportError: where
    # that binding is made, which every later use of the name carries (elsewhere, the
    # name is something else)
    conditions: dict[str, Bound] = field(default_factory=dict)
    # names bound to a lookup that gives None where the upstream attribute is not there
    # (``old = getattr(x, "y", None)``): the attribute, "x.y"
    absent_if_none: dict[str, str] = field(default_factory=dict)
    # the branch each name's last binding was made in, and the upstream objects another
    # branch bound it to that stay in place where that one is not made
    made_in: dict[str, Branch] = field(default_factory=dict)
    alternatives: dict[str, tuple[Alternative, ...]] = field(default_factory=dict)
    # what the tests around each name's last binding said (none: nothing), which a use
    # under tests that rule that out does not see
    narrowed: dict[str, Narrowing] = field(default_factory=dict)

    def binder(self, name: str) -> Scope | None:
        """The scope whose binding of ``name`` is the one seen here: this one, or an outer
        one it does not shadow (a class body's names are not visible inside its methods)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if (first or not scope.is_class) and name in scope.names:
                return scope
            first = False
            scope = scope.parent
        return None

    def condition_of(self, name: str) -> Bound | None:
        """Where the binding ``name`` has here is made (None: on every release)."""
        scope = self.binder(name)
        return scope.conditions.get(name) if scope is not None else None

    def alternatives_of(self, name: str) -> tuple[Alternative, ...]:
        """The other upstream objects the binding ``name`` has here may be."""
        scope = self.binder(name)
        return scope.alternatives.get(name, ()) if scope is not None else ()

    def absent_where_none(self, name: str) -> str | None:
        """The upstream attribute the binding ``name`` has here is None without (None:
        none is known)."""
        scope = self.binder(name)
        return scope.absent_if_none.get(name) if scope is not None else None

    def lookup(self, name: str) -> object:
        scope = self.binder(name)
        return scope.names[name] if scope is not None else UNBOUND

    def value(self, name: str) -> Value | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            if name in scope.names:
                return None  # bound to something else: shadows an outer constant
            scope = scope.parent
        return None
