"""What a catalog check is made of: the ``@check`` declaration and the expectations.

A check is a plain pytest test in ``canary/checks/test_<package>.py`` that takes the
``upstream`` fixture (a :class:`canary.workspace.Snapshot`) and declares, with
``@check``, the files it reads, the fix that depends on it and its version window::

    pytestmark = pytest.mark.upstream("transformers")

    @check(reads=TRAINER, fix="accepts_loss_kwargs shadowing", since="4.46.0")
    def test_compute_loss_takes_num_items_in_batch(upstream):
        \"\"\"Trainer.compute_loss takes num_items_in_batch.\"\"\"
        compute_loss = upstream.module(TRAINER).cls("Trainer").method("compute_loss")
        expect_parameters(compute_loss, "num_items_in_batch")

When upstream has drifted, the failure says which fix breaks, what the check expects
(its docstring) and what upstream has instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from canary import versions
from canary.codeindex import Assignment, Call, Class, ClassAttribute, Function, Module
from canary.errors import CheckDrift, Drift, Subject
from canary.fixes import Fix, get_fix

CheckFunction = TypeVar("CheckFunction", bound=Callable[..., Any])


@dataclass(frozen=True)
class Window:
    """The releases a check applies to: ``since`` inclusive, ``until`` exclusive."""

    since: str | None = None
    until: str | None = None

    @property
    def specifier(self) -> SpecifierSet:
        return SpecifierSet(",".join(self._bounds()))

    def _bounds(self) -> list[str]:
        parts = []
        if self.since:
            parts.append(f">={self.since}")
        if self.until:
            parts.append(f"<{self.until}")
        return parts

    def excludes(self, version: Version | None) -> bool:
        # A tree whose version cannot be read (a branch without a literal version) is
        # treated as newer than every release.
        if version is None:
            return self.until is not None
        return not versions.within(version, self.since, self.until)

    def __str__(self) -> str:
        # Lower bound first (SpecifierSet would sort them: "<1.6.0,>=0.26.0").
        return ",".join(self._bounds()) or "every release"


def check(
    *,
    reads: str | Iterable[str],
    fix: str,
    since: str | None = None,
    until: str | None = None,
    known_drift: Mapping[str, str] | None = None,
) -> Callable[[CheckFunction], CheckFunction]:
    """Declare a catalog check: the upstream files it reads, the fix at risk, its window.

    ``known_drift`` maps a release inside the window to why this check fails there (a
    release that broke the fix and was repaired in the next one). Those cases are strict
    xfails: a drift there is expected, and a pass says the entry is stale.
    """
    protected = get_fix(fix)  # a typo in the catalog is an error at collection, not a pass
    paths = (reads,) if isinstance(reads, str) else tuple(reads)
    if not paths:
        raise ValueError("a check must read at least one upstream file")
    window = Window(since, until)
    for bound in (since, until):
        if bound is not None:
            Version(bound)  # raises InvalidVersion for a bad bound, at collection
    known = dict(known_drift or {})
    for release, why in known.items():
        if window.excludes(Version(release)):
            raise ValueError(f"known_drift {release} is outside the check's window ({window})")
        if not why.strip():
            raise ValueError(f"known_drift {release} needs a reason")

    def decorate(function: CheckFunction) -> CheckFunction:
        if not (function.__doc__ or "").strip():
            raise ValueError(f"check {function.__name__} needs a docstring saying what it asserts")

        @functools.wraps(function)
        def run_check(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except AssertionError as exc:  # Drift, or a plain assert in the check
                message = drift_message(function, protected, paths, kwargs.get("upstream"), exc)
                subject = drift_subject(exc, paths)
                kind = exc.kind if isinstance(exc, Drift) else Drift.CHANGED
            # Outside the except block: the report shows the drift once, not a chain.
            raise CheckDrift(message, fix=protected.name, subject=subject, kind=kind)

        marker = pytest.mark.canary_check(reads=paths, fix=fix, window=window, known_drift=known)
        return marker(run_check)  # type: ignore[return-value]

    return decorate


def drift_message(
    function: Callable[..., Any],
    fix: Fix,
    paths: tuple[str, ...],
    upstream: Any,
    exc: BaseException,
) -> str:
    expected = " ".join((function.__doc__ or "").split())
    where = f" in {upstream.case}" if upstream is not None else ""
    return (
        f"upstream drift{where} breaks the {fix}\n"
        f"  file: {', '.join(paths)}\n"
        f"  expected: {expected}\n"
        f"  found: {exc}"
    )


def drift_subject(exc: AssertionError, paths: tuple[str, ...]) -> Subject:
    """What the failing check was looking at: the Drift's own subject when the code index
    set one, else the function or class the raising expectation was handed (its first such
    argument), so every expectation, present and future, names its subject without
    having to pass it. The path falls back to the check's only file, when it reads one."""
    subject = getattr(exc, "subject", None)
    if subject is None:
        subject = Subject(None, _argument_qualname(exc))
    if subject.path is None and len(paths) == 1:
        subject = Subject(paths[0], subject.qualname)
    return subject


def _argument_qualname(exc: BaseException) -> str | None:
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    arguments = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    for name in arguments:
        value = tb.tb_frame.f_locals.get(name)
        if isinstance(value, (Function, Class)):
            return value.qualname
    return None


# -- expectations: each raises Drift saying what upstream has instead --------------------


def expect_parameters(function: Function, *names: str) -> None:
    """``function`` has each of ``names`` as a named parameter (not only via **kwargs)."""
    missing = [name for name in names if not function.signature.has(name)]
    if missing:
        raise Drift(
            f"{function.qualname} has no parameter {', '.join(map(repr, missing))}; "
            f"its signature is {function.signature}"
        )


def expect_keyword_accepted(function: Function, name: str) -> None:
    """``function`` can be called with ``name=...`` (a parameter, or **kwargs)."""
    if not function.signature.accepts_keyword(name):
        raise Drift(
            f"{function.qualname} cannot take {name}=...; its signature is {function.signature}"
        )


def expect_call(function: Function, callee: str) -> tuple[Call, ...]:
    """``function`` calls ``callee`` at least once; returns those calls."""
    found = function.calls_to(callee)
    if not found:
        called = sorted({call.func for call in function.calls})
        listing = ", ".join(called) or "nothing"
        raise Drift(f"{function.qualname} no longer calls {callee}; it calls: {listing}")
    return found


def expect_defined(module: Module, name: str) -> None:
    """``module`` itself defines ``name`` (class, function or assignment): an import of it
    from elsewhere does not count, because the check is about where the code lives."""
    if name in module.classes or name in module.functions or name in module.assignments:
        return
    if name in module.imports:
        imported = module.imports[name]
        origin = f"from {imported.module} " if imported.module is not None else ""
        raise Drift(
            f"{name!r} is only imported in {module.where} ({origin}import {imported.imported}, "
            f"line {imported.line}); it is defined elsewhere now"
        )
    module.find(name)  # raises Drift listing what is defined there


def expect_class_attribute(cls: Class, name: str, *values: object) -> ClassAttribute:
    """``cls`` assigns ``name`` in its own body, to one of ``values`` when given (compared
    as literals: ``expect_class_attribute(c, "accepts_loss_kwargs", False)``)."""
    attribute = cls.attribute(name)
    if values and attribute.literal not in values:
        wanted = " or ".join(map(repr, values))
        raise Drift(
            f"{cls.qualname}.{name} is {attribute.value} in {cls.where} (line {attribute.line}); "
            f"expected {wanted}"
        )
    return attribute


def expect_not_declared(cls: Class, name: str) -> None:
    """``cls`` does not bind ``name`` in its own body (no default a fix would inherit)."""
    if cls.declares(name):
        found = cls.attributes.get(name)
        how = f" = {found.value} (line {found.line})" if found is not None else ""
        raise Drift(f"{cls.qualname} now declares {name}{how} in {cls.where}")


def expect_base(cls: Class, *bases: str) -> str:
    """``cls`` derives directly from one of ``bases``; returns the one found."""
    for base in bases:
        if base in cls.bases:
            return base
    raise Drift(
        f"class {cls.qualname} in {cls.where} derives from ({', '.join(cls.bases)}), "
        f"not from {' or '.join(bases)}"
    )


def expect_hasattr(function: Function, attribute: str) -> tuple[str, ...]:
    """``function`` calls ``hasattr(<object>, "<attribute>")``; returns the objects it asks."""
    calls = [c for c in function.calls_to("hasattr") if _names_attribute(c, attribute)]
    if not calls:
        asked = sorted({f"hasattr({', '.join(c.args)})" for c in function.calls_to("hasattr")})
        listing = ", ".join(asked) or "nothing"
        raise Drift(
            f"{function.qualname} no longer calls hasattr(..., {attribute!r}); "
            f"its hasattr targets are: {listing}"
        )
    return tuple(str(c.arg(0)) for c in calls)


def _names_attribute(call: Call, attribute: str) -> bool:
    return len(call.args) >= 2 and call.literal_args[1] == attribute


def expect_assignment(function: Function, target: str) -> tuple[Assignment, ...]:
    """``function`` assigns ``target`` (normalised text: ``"self.model_accepts_loss_kwargs"``);
    returns those assignments, in source order."""
    found = function.assignments_to(target)
    if not found:
        assigned = sorted({t for a in function.assignments for t in a.unpacked or a.targets})
        raise Drift(
            f"{function.qualname} no longer assigns {target}; it assigns: "
            f"{', '.join(assigned) or 'nothing'}"
        )
    return found


def expect_mentions(function: Function, *names: str) -> None:
    """Every one of ``names`` appears in ``function``'s body as a name or attribute (a
    fingerprint of the code path a fix relies on)."""
    missing = [name for name in names if not function.mentions(name)]
    if missing:
        raise Drift(
            f"{function.qualname} ({function.line}-{function.end_line}) no longer mentions "
            f"{', '.join(missing)}"
        )


def expect_never_assigns(cls: Class, target: str) -> None:
    """No method of ``cls`` assigns ``target`` (``"self.model_accepts_loss_kwargs"``): the
    class leaves that value to the code it inherits."""
    found = [
        (method, assignment)
        for method in cls.methods.values()
        for assignment in method.assignments_to(target)
    ]
    if found:
        where = ", ".join(f"{m.qualname} (line {a.line}: = {a.value})" for m, a in found)
        raise Drift(f"{cls.qualname} now assigns {target} in {cls.where}: {where}")


def expect_assigned_after(function: Function, target: str, callee: str) -> tuple[Assignment, ...]:
    """``function`` assigns ``target`` after its first call to ``callee``, so the value is
    not overwritten by that call (an attribute set before ``super().__init__`` is lost);
    returns the assignments that follow the call."""
    (first, *_) = expect_call(function, callee)
    assignments = expect_assignment(function, target)
    after = tuple(a for a in assignments if a.line > first.line)
    if not after:
        lines = ", ".join(str(a.line) for a in assignments)
        raise Drift(
            f"{function.qualname} assigns {target} (line {lines}) only before it calls "
            f"{callee} (line {first.line}), which overwrites it"
        )
    return after


# -- appended for the transformers catalog ----------------------------------------------


def expect_assignment_where(
    function: Function,
    target: str,
    *,
    guard: str | None = None,
    values: Iterable[str] = (),
) -> Assignment:
    """``function`` assigns ``target`` under ``guard`` (one enclosing ``if`` test, normalised
    text) and, when ``values`` are given, to one of them (normalised text); returns the first
    such assignment. The Drift lists every assignment to ``target`` with its guards, so a
    changed condition or value reads as what upstream decides instead."""
    wanted = tuple(values)
    found = [
        a
        for a in function.assignments_to(target)
        if (guard is None or guard in a.guards) and (not wanted or a.value in wanted)
    ]
    if found:
        return found[0]
    conditions = []
    if guard is not None:
        conditions.append(f"under `if {guard}`")
    if wanted:
        conditions.append("to " + " or ".join(f"`{v}`" for v in wanted))
    listing = "; ".join(
        f"line {a.line}: {target} {a.op or ''}= {a.value}"
        + (f" under {' and '.join(f'`{g}`' for g in a.guards)}" if a.guards else "")
        for a in function.assignments_to(target)
    )
    raise Drift(
        f"{function.qualname} no longer assigns {target} {' '.join(conditions)}; "
        f"its assignments to {target}: {listing or 'none'}"
    )


def expect_bound(module: Module, name: str, *, imported_from: str | None = None) -> str:
    """``module`` binds ``name`` at module level, so ``from <module> import <name>`` works:
    a class, function or assignment there, or an import (from ``imported_from`` when given).
    Returns how it is bound: "class", "function", "assignment" or "import"."""
    if imported_from is None:
        for kind, table in (
            ("class", module.classes),
            ("function", module.functions),
            ("assignment", module.assignments),
        ):
            if name in table:
                return kind
    if name in module.imports:
        imported = module.imports[name]
        if imported_from is None or imported.module == imported_from:
            return "import"
        raise Drift(
            f"{module.where} imports {name!r} from {imported.module or imported.imported} "
            f"(line {imported.line}), not from {imported_from}"
        )
    if imported_from is not None and module.defines(name):
        raise Drift(f"{module.where} binds {name!r} itself now, not by importing {imported_from}")
    module.find(name)  # raises Drift listing what is defined there
    return "class"  # unreachable: find() raises for a name bound in none of the tables
