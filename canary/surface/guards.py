"""What makes a site *guarded*: code that runs only when a test about upstream passed, so a
miss there does not crash, it silently skips the patch.

The tests that count are the ones issue 12 names: ``hasattr(x, "y")``, ``getattr(x, "y",
default)``, a version comparison, and an ``is_*_available()`` call (``find_spec`` too: the
same question asked of importlib). Both branches of such a test are guarded (the ``else`` of
a version test is the code for the other releases), and so is the rest of a block after
``if <test>: return`` (or ``continue``/``break``; not ``raise``, which is no silent skip).
``try`` with a handler and ``with contextlib.suppress(...)`` are decided by the walker,
which sees the statements.

A version test also says *where* its branch runs: :func:`version_window` reads the window
of releases, per package, from the tests it can read exactly (a ``packaging`` comparison,
or one through a parser the project declares, of an upstream package's installed version
with a literal version, or of its leading numbers as a tuple with a tuple of numbers,
directly or through a project constant defined as one), negated in
``else``, conjoined when nested. Anything else
gives no window: the branch counts on every release, as if the test were not there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from packaging.version import InvalidVersion, Version

_AVAILABLE = re.compile(r"^_*is_\w+_available$|^find_spec$")
_VERSION = re.compile(r"version", re.IGNORECASE)
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_SILENT_EXITS = (ast.Return, ast.Continue, ast.Break)


def _callee_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def is_presence_call(node: ast.AST) -> bool:
    """``hasattr(x, "y")``, ``getattr(x, "y", default)``, ``x.__dict__.get("y")`` or
    ``vars(x).get("y")``: asks whether ``x.y`` exists, and cannot raise for its absence."""
    name = _callee_name(node)
    if name == "hasattr":
        return True
    if name == "getattr" and isinstance(node, ast.Call):
        return len(node.args) >= 3 or any(k.arg == "default" for k in node.keywords)
    return own_dict_lookup(node) is not None


def _none_if_absent(node: ast.expr) -> bool:
    """A lookup that gives None where the attribute is not there: ``getattr(x, "y", None)``,
    ``x.__dict__.get("y")`` (no default, or None)."""
    if not isinstance(node, ast.Call):
        return False
    if own_dict_lookup(node) is not None:
        default = node.args[1:]
    elif _callee_name(node) == "getattr" and len(node.args) == 3 and not node.keywords:
        default = node.args[2:]
    else:
        return False
    return all(isinstance(d, ast.Constant) and d.value is None for d in default)


def own_dict_lookup(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """``x.__dict__.get(name[, default])`` or ``vars(x).get(...)``: ``(x, name)``; ``x.y`` is
    there where it finds something (in ``x``'s own namespace, so on ``x`` too)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and 1 <= len(node.args) <= 2
        and not node.keywords
    ):
        return None
    owner = _namespace_of(node.func.value)
    return None if owner is None else (owner, node.args[0])


def builtin_call(node: ast.expr, name: str, arity: int) -> list[ast.expr] | None:
    """The arguments of ``node`` when it calls the builtin ``name`` with ``arity``
    positional arguments and no keyword (``hasattr(x, "y")``); None: it does not."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == name
        and len(node.args) == arity
        and not node.keywords
    ):
        return node.args
    return None


def _namespace_of(node: ast.expr) -> ast.expr | None:
    """``x`` of ``x.__dict__`` or ``vars(x)`` (None: neither)."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return node.value
    if (args := builtin_call(node, "vars", 1)) is not None:
        return args[0]
    return None


def _speaks_of_version(node: ast.expr) -> bool:
    for part in ast.walk(node):
        name = part.id if isinstance(part, ast.Name) else getattr(part, "attr", None)
        if isinstance(name, str) and _VERSION.search(name):
            return True
    return False


def _is_version_comparison(node: ast.Compare) -> bool:
    # An ordering between two things one of which speaks of a version: Version(x) >= ...,
    # transformers_version < "4.50", torch.__version__ > ... (== on a version is rare and
    # usually a config value, not a release test).
    if not any(isinstance(op, _ORDERING) for op in node.ops):
        return False
    return any(_speaks_of_version(side) for side in (node.left, *node.comparators))


def is_guard_test(test: ast.expr) -> bool:
    """Whether a condition asks about upstream's presence, shape or version: the test
    itself, or a part of it joined by ``and``/``or``/``not`` (or an argument of a call, as
    in ``callable(getattr(x, "y", None))``)."""
    if isinstance(test, (ast.BoolOp, ast.UnaryOp)):
        parts = test.values if isinstance(test, ast.BoolOp) else [test.operand]
        return any(is_guard_test(part) for part in parts)
    if isinstance(test, ast.Compare):
        return _is_version_comparison(test) or any(
            is_guard_test(side) for side in (test.left, *test.comparators)
        )
    if not isinstance(test, ast.Call):
        return False
    name = _callee_name(test)
    return (
        is_presence_call(test)
        or (name is not None and _AVAILABLE.match(name) is not None)
        or any(isinstance(a, ast.Call) and is_guard_test(a) for a in test.args)
    )


def is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:``: the block never runs, so it is no runtime dependency."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def catches(handler: ast.ExceptHandler, names: frozenset[str]) -> bool:
    """The handler is bare, or names (alone or in its tuple) one of the exception classes
    ``names``."""
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in names for t in types)


def called_name(node: ast.Call) -> str:
    """The last name of what ``node`` calls (``sys.exit(...)`` -> "exit"; "": neither a
    name nor an attribute)."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def exits(body: Sequence[ast.stmt], *, silently: bool = False) -> bool:
    """The block always leaves: what follows it in the enclosing block runs only when the
    test that led into it failed. ``silently``: by ``return``/``continue``/``break``, not by
    ``raise`` (after ``if version < floor: raise ImportError`` a miss still crashes, loudly:
    that is no guard)."""
    return bool(body) and isinstance(body[-1], _SILENT_EXITS if silently else _EXITS)


def presence_tested(
    test: ast.expr, *, positive: bool = True, name_of: NameOf | None = None
) -> Iterator[tuple[ast.expr, str, bool]]:
    """What ``test`` being ``positive`` says about attributes: ``(object, name, present)``.
    Inside ``if hasattr(x, "y"):`` ``x.y`` is present; after ``if hasattr(x, "y"): return``
    it is absent; so for ``"y" in x.__dict__`` and ``x.__dict__.get("y") is not None``.
    Used to tell a project's own attribute: one it sets only where it knows the attribute
    is not there yet, or reads only once it knows it is. ``name_of``: the one string an
    expression naming the attribute has (default: a literal's)."""
    name_of = name_of or _literal
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from presence_tested(test.operand, positive=not positive, name_of=name_of)
    elif isinstance(test, ast.BoolOp):
        # a and b holds: both hold; a or b fails: both fail. Otherwise nothing is known.
        if isinstance(test.op, ast.And) == positive:
            for value in test.values:
                yield from presence_tested(value, positive=positive, name_of=name_of)
    elif isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        # getattr(x, "y", None) is not None
        is_none = isinstance(right, ast.Constant) and right.value is None
        if is_none and isinstance(op, (ast.Is, ast.IsNot)):
            holds = isinstance(op, ast.IsNot) == positive
            yield from presence_tested(test.left, positive=holds, name_of=name_of)
        # "y" in x.__dict__ / vars(x)
        owner = _namespace_of(right)
        name = name_of(test.left)
        if owner is not None and name is not None and isinstance(op, (ast.In, ast.NotIn)):
            yield owner, name, isinstance(op, ast.In) == positive
    elif positive and _instance_test(test) and _none_if_absent(lookup := test.args[0]):  # type: ignore[attr-defined]
        # isinstance(getattr(x, "y", None), T): x.y is there
        yield from presence_tested(lookup, positive=True, name_of=name_of)
    elif is_presence_call(test) and isinstance(test, ast.Call):
        found = own_dict_lookup(test)
        obj, name_node = found if found else [*test.args, None, None][:2]
        name = None if name_node is None else name_of(name_node)
        if obj is not None and name is not None:
            yield obj, name, positive


def model_types_tested(
    test: ast.expr, *, positive: bool = True, strings: Callable[[ast.expr], tuple[str, ...]]
) -> Iterator[tuple[str, ...]]:
    """The model types ``test`` being ``positive`` says a model has, one tuple per test (any
    of its members): ``config.model_type == "llama4"``, ``getattr(c, "model_type", None) in
    ("qwen3_5", "qwen3_5_moe")``, ``cfg.get("model_type") == ...``, ``field(cfg,
    "model_type") == ...``, or ``!=``/``not in`` where it fails. ``strings``: the strings an
    expression holds (a literal, a tuple of them, a constant bound to one)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from model_types_tested(test.operand, positive=not positive, strings=strings)
    elif isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == positive:  # a and b holds / a or b fails: each
            for value in test.values:
                yield from model_types_tested(value, positive=positive, strings=strings)
    elif isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, (ast.Eq, ast.NotEq)) and _is_model_type(right):
            left, right = right, left
        if not _is_model_type(left):
            return
        if isinstance(op, (ast.Eq, ast.In)) == positive and isinstance(
            op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
        ):
            types = strings(right)
            if types:
                yield types


def registered_under(
    decorator: ast.expr, *, strings: Callable[[ast.expr], tuple[str, ...]]
) -> tuple[str, ...]:
    """The model types a registration decorator files its function under (any of them):
    a call named for registering whose first argument, or ``name``/``key``/``model_type``
    keyword, holds names as model types are spelled (``@register_loader("qwen3_5_moe",
    matches=...)``, ``@MODELS.register(name=("a", "b"))``); () for any other decorator.
    ``strings``: the strings an expression holds."""
    if not isinstance(decorator, ast.Call) or _REGISTERS.search(called_name(decorator)) is None:
        return ()
    keyed = decorator.args[:1] or [k.value for k in decorator.keywords if k.arg in _KEYS]
    found = tuple(t for node in keyed for t in strings(node))
    return found if found and all(_MODEL_TYPE.fullmatch(t) for t in found) else ()


_REGISTERS = re.compile(r"regist", re.IGNORECASE)
_KEYS = frozenset({"name", "key", "model_type"})
_MODEL_TYPE = re.compile(r"[a-z][a-z0-9_]*")  # a model package's name: what a key must be


def _is_model_type(node: ast.expr) -> bool:
    """An expression that reads a model's type: ``x.model_type``, a name ``model_type``,
    or a call given the literal ``"model_type"`` (``getattr``, ``.get``, a helper)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "model_type"
    if isinstance(node, ast.Name):
        return node.id == "model_type"
    if isinstance(node, ast.Subscript):
        return _literal(node.slice) == "model_type"
    if isinstance(node, ast.Call):
        return any(_literal(a) == "model_type" for a in node.args)
    return False


def _instance_of_a_type(test: ast.expr) -> bool:
    """``isinstance(X, T)`` of a name, ``T`` no spelling of None's type."""
    return _instance_test(test) and isinstance(test.args[0], ast.Name)  # type: ignore[attr-defined]


def _instance_test(test: ast.expr) -> bool:
    """``isinstance(e, T)``, ``T`` no spelling of None's type: true only of an ``e`` that
    is not None."""
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
    ):
        return False
    return "None" not in ast.unparse(test.args[1])  # type(None), NoneType, (int, None.__class__)


NameOf = Callable[[ast.expr], "str | None"]
"""The one string an expression has, if it has one."""


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def names_not_none(test: ast.expr, *, positive: bool = True) -> Iterator[ast.Name]:
    """The names ``test`` being ``positive`` says are not None: ``X is not None``, ``X``
    (truthy), ``isinstance(X, T)`` (of a type other than None's), joined by ``and`` (or,
    negated, by ``or``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from names_not_none(test.operand, positive=not positive)
    elif isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == positive:
            for value in test.values:
                yield from names_not_none(value, positive=positive)
    elif isinstance(test, ast.Name) and positive:
        yield test
    elif positive and _instance_of_a_type(test):
        yield test.args[0]  # type: ignore[attr-defined, misc]
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name):
        right, op = test.comparators[0], test.ops[0]
        is_none = isinstance(right, ast.Constant) and right.value is None
        if (
            is_none
            and isinstance(op, (ast.Is, ast.IsNot))
            and isinstance(op, ast.IsNot) == positive
        ):
            yield test.left


# --- version windows ----------------------------------------------------------------------

# What makes a comparable version of a string: packaging's, by where it was imported from
# (a project's own ``Version`` wrapper may compare differently), and the callables a project
# declares (``version_parsers`` in ``[tool.canary.surface]``). A comparison of two strings
# or of a version and a string is not read: it does not order releases (or raises).
PARSERS = frozenset({"packaging.version.Version", "packaging.version.parse"})
# A declared parser is trusted to order final releases as packaging does, nothing more:
# unsloth's reads "4.50.0.dev0" as 4.50.0.1, above 4.50.0 where packaging puts it below. So
# a literal compared through one is read only when it is a final release's plain number.
_PLAIN_RELEASE = re.compile(r"\d+(?:\.\d+)*")
_OPERATORS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_SWAPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


@dataclass(frozen=True)
class Window:
    """Releases a branch can run on: bounds ``(package, operator, version)`` that all hold
    (none: every release)."""

    bounds: frozenset[tuple[str, str, str]] = frozenset()

    def __and__(self, other: Window) -> Window:
        return Window(self.bounds | other.bounds)

    def negated(self) -> Window | None:
        """Where the test that gave this window fails: exact for one bound; the negation
        of several (``>=4.50,<5``) is no single window, so None."""
        if len(self.bounds) != 1:
            return None
        ((package, operator, version),) = self.bounds
        return Window(frozenset({(package, _NEGATED[operator], version)}))

    def specifiers(self) -> tuple[tuple[str, str], ...]:
        """Per package, its bounds as one specifier text (``("transformers",
        ">=4.50.0,<5.0.0")``): :attr:`canary.surface.model.Site.versions`."""
        packages = sorted({package for package, _, _ in self.bounds})
        return tuple(
            (
                package,
                ",".join(sorted(f"{op}{v}" for p, op, v in self.bounds if p == package)),
            )
            for package in packages
        )


EVERY_RELEASE = Window()


@dataclass(frozen=True)
class InstalledVersion:
    """An expression whose value is the installed release of ``package``: its text
    (``transformers.__version__``, ``importlib.metadata.version("transformers")``) or, when
    ``parsed``, a ``packaging`` version of it, the only form that compares as releases do."""

    package: str
    parsed: bool = False


@dataclass(frozen=True)
class InstalledNumber:
    """An expression whose value is one number of ``package``'s installed release (``index``
    0: the major): ``Version(v).major``, ``int(v.split(".")[0])`` of its text (granite-tsfm's
    ``major = int(transformers.__version__.split(".")[0])``), or a name unpacked from its
    leading numbers (``major, minor = map(int, v.split(".")[:2])``). The major alone is a
    window; a later number is one only after those before it, in a tuple display."""

    package: str
    index: int = 0


@dataclass(frozen=True)
class InstalledRelease:
    """An expression whose value is the leading numbers of ``package``'s installed release,
    as a tuple: ``Version(v).release`` (``length`` None: all of them), ``.release[:2]``,
    ``tuple(int(x) for x in v.split(".")[:2])``, ``tuple(map(int, re.findall(r"\\d+",
    v)[:2]))`` of its text, or ``(major, minor)`` of names unpacked from them. It compares
    with a tuple of literal numbers as tuples do, which :func:`_release_window` reads."""

    package: str
    length: int | None = None


@dataclass(frozen=True)
class VersionGate:
    """A value that is a version test (``IS_V5 = Version(transformers.__version__) >=
    Version("5.0.0")``): where it is true and where it is false (None: not one window)."""

    true: Window | None
    false: Window | None


# what version tests read a name or call as
VersionFact = InstalledVersion | InstalledNumber | InstalledRelease | VersionGate


class Names(Protocol):
    """What the walker knows of the names in a test (its bindings and constants)."""

    def version_of(self, node: ast.expr) -> VersionFact | str | None:
        """A name, attribute chain or call as an installed version (or its major number),
        a version test, or a literal string; None: none of these."""

    def version_parser(self, func: ast.expr) -> str | None:
        """The dotted name of the version parser a callee is: one of :data:`PARSERS` or one
        the project declares; None: no parser."""


def version_fact(node: ast.expr, names: Names) -> VersionFact | None:
    """What a value assigned to a name is, as far as version tests go: an installed version
    (parsed or not), its major number, or a version test; None: none (or not read exactly)."""
    if (package := _major(node, names)) is not None:
        return InstalledNumber(package)
    if (release := installed_release(node, names)) is not None:
        return release
    value = _version_operand(node, names)
    if isinstance(value, InstalledVersion):
        return value
    fact = names.version_of(node)
    if isinstance(fact, InstalledVersion):
        return fact
    true = version_window(node, names, positive=True)
    false = version_window(node, names, positive=False)
    return VersionGate(true, false) if true is not None or false is not None else None


def installed_operands(
    node: ast.Compare, names: Names
) -> Iterator[InstalledVersion | InstalledNumber | InstalledRelease]:
    """The operands of a comparison that are an upstream package's installed version (its
    text or parsed), or numbers of it, in order."""
    for side in (node.left, *node.comparators):
        fact = version_fact(side, names)
        if isinstance(fact, (InstalledVersion, InstalledNumber, InstalledRelease)):
            yield fact


def version_window(  # noqa: PLR0911 - one return per form of test
    test: ast.expr, names: Names, *, positive: bool = True
) -> Window | None:
    """The releases where ``test`` is ``positive``, or None where that cannot be read as one
    window. A conjunction keeps the parts it can read: the branch runs on a subset of
    each part's window, so the window it gets is never too narrow."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return version_window(test.operand, names, positive=not positive)
    if isinstance(test, ast.BoolOp):
        return _conjunction(test, names, positive=positive)
    if isinstance(test, ast.Compare):
        window = _comparison(test, names)
        if window is None or positive:
            return window
        return window.negated()
    if isinstance(test, (ast.Name, ast.Attribute)):
        fact = names.version_of(test)
        if isinstance(fact, VersionGate):
            return fact.true if positive else fact.false
    if isinstance(test, ast.Call):
        gate = names.call_gate(test)
        if gate is not None:
            return gate.true if positive else gate.false
    return None


def _conjunction(test: ast.BoolOp, names: Names, *, positive: bool) -> Window | None:
    if isinstance(test.op, ast.And) != positive:
        return None  # a and b failing, a or b holding: one of several windows
    read = [
        part
        for value in test.values
        if (part := version_window(value, names, positive=positive)) is not None
    ]
    if not read:
        return None
    window = read[0]
    for part in read[1:]:
        window &= part
    return window


def _comparison(node: ast.Compare, names: Names) -> Window | None:  # noqa: PLR0911 - one return per form
    """``Version(installed) <op> Version("X")`` (either side), ``Version(installed).major
    <op> N``, or the installed release's leading numbers ``<op> (4, 41)``: the window where it
    holds."""
    if len(node.ops) != 1 or type(node.ops[0]) not in _OPERATORS:
        return None
    operator = _OPERATORS[type(node.ops[0])]
    left, right = node.left, node.comparators[0]
    major = _major(left, names), _major(right, names)
    if major[0] is not None and isinstance(right, ast.Constant):
        return _major_window(major[0], operator, right.value)
    if major[1] is not None and isinstance(left, ast.Constant):
        return _major_window(major[1], _SWAPPED[operator], left.value)
    if (release := installed_release(left, names)) and (numbers := _release_literal(right, names)):
        return _release_window(release, operator, numbers)
    if (release := installed_release(right, names)) and (numbers := _release_literal(left, names)):
        return _release_window(release, _SWAPPED[operator], numbers)
    first, second = _version_operand(left, names), _version_operand(right, names)
    if isinstance(first, InstalledVersion) and isinstance(second, Version):
        return Window(frozenset({(first.package, operator, str(second))}))
    if isinstance(second, InstalledVersion) and isinstance(first, Version):
        return Window(frozenset({(second.package, _SWAPPED[operator], str(first))}))
    return None


def _version_operand(node: ast.expr, names: Names) -> InstalledVersion | Version | None:
    """A comparable version: ``Version(<installed>)`` (or a name bound to one), or
    ``Version("X")`` of a literal."""
    if isinstance(node, ast.Call):
        parser = names.version_parser(node.func) if len(node.args) == 1 else None
        if parser is None or node.keywords:
            # a function of the project's returning a parsed installed version
            fact = names.version_of(node)
            return fact if isinstance(fact, InstalledVersion) and fact.parsed else None
        argument = node.args[0]
        if isinstance(argument, ast.Attribute) and argument.attr in _SAME_RELEASE:
            # parse(parse(v).base_version): the release itself (a pre-release of X is X)
            inner_operand = _version_operand(argument.value, names)
            if isinstance(inner_operand, InstalledVersion):
                return InstalledVersion(inner_operand.package, parsed=True)
        inner = names.version_of(argument)
        if isinstance(inner, InstalledVersion):
            return InstalledVersion(inner.package, parsed=True)
        return _literal_version(inner, parser) if isinstance(inner, str) else None
    fact = names.version_of(node)
    return fact if isinstance(fact, InstalledVersion) and fact.parsed else None


# Attributes of a parsed version that name the same release, as canary compares releases
# (a pre-release, post or local part of X counts as X).
_SAME_RELEASE = frozenset({"base_version", "public"})


def _literal_version(text: str, parser: str) -> Version | None:
    if parser not in PARSERS and _PLAIN_RELEASE.fullmatch(text) is None:
        return None  # a declared parser may read it otherwise
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _major(node: ast.expr, names: Names) -> str | None:
    """The package whose installed version's major number this is: ``.major`` of a parsed
    one, ``int(text.split(".")[0])`` of its text, or a name bound to either."""
    if isinstance(node, ast.Attribute) and node.attr == "major":
        value = _version_operand(node.value, names)
        return value.package if isinstance(value, InstalledVersion) else None
    if isinstance(node, ast.Name):
        fact = names.version_of(node)
        return fact.package if isinstance(fact, InstalledNumber) and fact.index == 0 else None
    args = builtin_call(node, "int", 1)
    if args is None:
        return None
    part = args[0]  # text.split(".")[0]
    if not (
        isinstance(part, ast.Subscript)
        and isinstance(part.slice, ast.Constant)
        and part.slice.value == 0
        and isinstance(split := part.value, ast.Call)
        and isinstance(split.func, ast.Attribute)
        and split.func.attr == "split"
        and len(split.args) == 1
        and isinstance(split.args[0], ast.Constant)
        and split.args[0].value == "."
    ):
        return None
    text = names.version_of(split.func.value)
    return text.package if isinstance(text, InstalledVersion) and not text.parsed else None


def _major_window(package: str, operator: str, major: object) -> Window | None:
    """``major <op> N`` as version bounds: the release's first number against ``(N,)``."""
    return _prefix_window(package, operator, (major,)) if _a_number(major) else None


def installed_release(  # noqa: PLR0911 - one return per form
    node: ast.expr, names: Names
) -> InstalledRelease | None:
    """``node`` as the leading numbers of an installed release (:class:`InstalledRelease`);
    None: it is not one, or not read exactly."""
    if isinstance(node, ast.Name):
        fact = names.version_of(node)
        return fact if isinstance(fact, InstalledRelease) else None
    if isinstance(node, ast.Tuple) and node.elts:
        numbers = [names.version_of(e) if isinstance(e, ast.Name) else None for e in node.elts]
        packages = {n.package for n in numbers if isinstance(n, InstalledNumber)}
        in_order = all(
            isinstance(n, InstalledNumber) and n.index == i for i, n in enumerate(numbers)
        )
        if not in_order or len(packages) != 1:
            return None
        return InstalledRelease(packages.pop(), len(numbers))
    if isinstance(node, ast.Subscript):  # .release[:2], or a name bound to all of them
        length = _prefix_length(node.slice)
        whole = None if length is None else installed_release(node.value, names)
        if whole is None:
            return None
        return InstalledRelease(whole.package, min(length, whole.length or length))
    if isinstance(node, ast.Attribute) and node.attr == "release":
        parsed = _version_operand(node.value, names)
        return InstalledRelease(parsed.package) if isinstance(parsed, InstalledVersion) else None
    args = builtin_call(node, "tuple", 1)
    return None if args is None else release_numbers(args[0], names)


def release_numbers(node: ast.expr, names: Names) -> InstalledRelease | None:
    """The installed release's leading numbers as ints, one by one: ``int(x) for x in
    parts`` or ``map(int, parts)``, where ``parts`` is ``v.split(".")`` or
    ``re.findall(r"\\d+", v)`` of the installed text, maybe sliced ``[:n]``."""
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
        (loop,) = node.generators
        args = builtin_call(node.elt, "int", 1)
        if not (
            args is not None
            and isinstance(loop.target, ast.Name)
            and isinstance(args[0], ast.Name)
            and args[0].id == loop.target.id
            and not loop.ifs
            and not loop.is_async
        ):
            return None
        parts = loop.iter
    elif (args := builtin_call(node, "map", 2)) is not None and (
        isinstance(args[0], ast.Name) and args[0].id == "int"
    ):
        parts = args[1]
    else:
        return None
    length = None
    if isinstance(parts, ast.Subscript):
        length = _prefix_length(parts.slice)
        if length is None:
            return None
        parts = parts.value
    text = _split_text(parts)
    if text is None:
        return None
    fact = names.version_of(_without_local(text))
    if not isinstance(fact, InstalledVersion) or fact.parsed:
        return None
    return InstalledRelease(fact.package, length)


def _split_text(node: ast.expr) -> ast.expr | None:
    """``v`` of ``v.split(".")`` or ``re.findall(r"\\d+", v)`` (None: neither)."""
    if not isinstance(node, ast.Call) or node.keywords or not isinstance(node.func, ast.Attribute):
        return None
    func, args = node.func, node.args
    if func.attr == "split" and len(args) == 1 and _is_text(args[0], "."):
        return func.value
    if (
        func.attr == "findall"
        and isinstance(func.value, ast.Name)
        and func.value.id == "re"
        and len(args) == 2
        and (_is_text(args[0], r"\d+") or _is_text(args[0], "[0-9]+"))
    ):
        return args[1]
    return None


def _without_local(node: ast.expr) -> ast.expr:
    """``v`` of ``v.split("+")[0]`` (a local version label cut off), else ``node``."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == 0
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "split"
        and len(node.value.args) == 1
        and _is_text(node.value.args[0], "+")
    ):
        return node.value.func.value
    return node


def _is_text(node: ast.expr, text: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == text


def _prefix_length(node: ast.expr) -> int | None:
    """``n`` of a slice ``[:n]`` (n > 0); None: another subscript."""
    if (
        isinstance(node, ast.Slice)
        and node.lower is None
        and node.step is None
        and isinstance(node.upper, ast.Constant)
        and _a_number(node.upper.value)
        and node.upper.value > 0
    ):
        return node.upper.value
    return None


def _a_number(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _release_literal(node: ast.expr, names: Names) -> tuple[int, ...] | None:
    """A tuple of literal release numbers: ``(4, 41)``, or ``Version("4.41").release``."""
    if isinstance(node, ast.Tuple) and node.elts:
        numbers = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
        return tuple(numbers) if all(_a_number(n) for n in numbers) else None  # type: ignore[arg-type]
    if isinstance(node, ast.Attribute) and node.attr == "release":
        literal = _version_operand(node.value, names)
        return literal.release if isinstance(literal, Version) else None
    return None


# The installed tuple t against a literal L of m numbers, when t is longer: t's first m
# numbers decide, and equal ones make t the greater; == and != are then constants.
_LONGER = {"<": "<", ">=": ">=", "<=": "<", ">": ">="}
# ... when t is shorter (n numbers): L's first n decide, and equal ones make t the lesser.
_SHORTER = {"<": "<=", ">=": ">", "<=": "<=", ">": ">"}


def _release_window(
    release: InstalledRelease, operator: str, numbers: tuple[int, ...]
) -> Window | None:
    """``t <op> numbers`` as version bounds, t the installed release's leading numbers
    (:func:`_prefix_window` once the lengths agree). All of them (``.release``) are read
    only for ``<`` and ``>=``, which give the same answer for any length from the literal's
    up; a release written shorter than the literal (4.56 against ``(4, 56, 0)``) is the one
    case where tuples and versions disagree, and transformers, trl and peft publish none."""
    length = release.length
    if length is None:
        if operator not in ("<", ">="):
            return None
    elif length > len(numbers):
        operator = _LONGER.get(operator, "")
    elif length < len(numbers):
        operator, numbers = _SHORTER.get(operator, ""), numbers[:length]
    return _prefix_window(release.package, operator, numbers) if operator else None


def _prefix_window(package: str, operator: str, numbers: tuple[int, ...]) -> Window | None:
    """The release's first ``len(numbers)`` numbers ``<op> numbers``, as version bounds:
    the smallest version whose numbers begin 4.41 is ``4.41.dev0`` (below its
    pre-releases), so ``< (4, 41)`` is ``< 4.41.dev0`` and ``<= (4, 41)`` is ``<
    4.42.dev0`` exactly; ``!=`` is no single window."""
    low = ".".join(map(str, numbers)) + ".dev0"
    high = ".".join(map(str, (*numbers[:-1], numbers[-1] + 1))) + ".dev0"
    bounds = {
        "<": {(package, "<", low)},
        ">=": {(package, ">=", low)},
        "<=": {(package, "<", high)},
        ">": {(package, ">=", high)},
        "==": {(package, ">=", low), (package, "<", high)},
        "!=": None,
    }[operator]
    return Window(frozenset(bounds)) if bounds else None
