"""What a catalog check is made of: the ``@check`` declaration, tables, the expectations.

A check is a plain pytest test in ``canary/checks/test_<package>.py`` that takes the
``upstream`` fixture (a :class:`canary.workspace.Snapshot`) and declares, with
``@check``, the files it reads, the fix that depends on it and its version window::

    pytestmark = pytest.mark.upstream("transformers")

    @check(reads=TRAINER, fix="accepts_loss_kwargs shadowing", since="4.46.0")
    def test_compute_loss_takes_num_items_in_batch(upstream):
        \"\"\"Trainer.compute_loss takes num_items_in_batch.\"\"\"
        compute_loss = upstream.module(TRAINER).cls("Trainer").method("compute_loss")
        expect_parameters(compute_loss, "num_items_in_batch")

The declaration is a :class:`CheckSpec` on the test's ``canary_check`` marker, read with
:meth:`CheckSpec.of`. A family of checks that differ only in data is a table,
``@check.each(row(...), ...)``: one body, one check per row (see :func:`each`).

When upstream has drifted, the failure says which fix breaks, what the check expects
(its docstring) and what upstream has instead; every expectation names the function,
class or module-level name it looked at (the drift's subject) and whether it is gone
(``Drift.MISSING``) or changed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from canary.codeindex import Assignment, Call, Class, ClassAttribute, Function, Module, Param
from canary.errors import CheckDrift, Drift, Subject
from canary.fixes import Fix, get_fix

CheckFunction = TypeVar("CheckFunction", bound=Callable[..., Any])
T = TypeVar("T")


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
        return not self.specifier.contains(version, prereleases=True)

    def __str__(self) -> str:
        # Lower bound first (SpecifierSet would sort them: "<1.6.0,>=0.26.0").
        return ",".join(self._bounds()) or "every release"


@dataclass(frozen=True)
class CheckSpec:
    """What ``@check`` declares about a check: the upstream files it reads, the fix at risk,
    its version window, and the releases inside it where it is known to fail.

    Carried by the check's ``canary_check`` marker; :meth:`of` is the one way to read it.
    """

    reads: tuple[str, ...]
    fix: str
    window: Window = Window()
    known_drift: Mapping[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def declare(
        cls,
        *,
        reads: str | Iterable[str],
        fix: str,
        since: str | None = None,
        until: str | None = None,
        known_drift: Mapping[str, str] | None = None,
    ) -> CheckSpec:
        """A validated spec: a typo in the catalog is an error at collection, not a pass."""
        get_fix(fix)  # raises for a fix canary does not know
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
        return cls(paths, fix, window, known)

    @classmethod
    def of(cls, item: pytest.Item) -> CheckSpec | None:
        """What the item's ``@check`` declared; None for a test that is not a catalog check."""
        marker = item.get_closest_marker("canary_check")
        if marker is None or not marker.args or not isinstance(marker.args[0], cls):
            return None
        return marker.args[0]


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
    spec = CheckSpec.declare(
        reads=reads, fix=fix, since=since, until=until, known_drift=known_drift
    )

    def decorate(function: CheckFunction) -> CheckFunction:
        return _declared_check(function, spec)

    return decorate


def _declared_check(function: CheckFunction, spec: CheckSpec) -> CheckFunction:
    if not (function.__doc__ or "").strip():
        raise ValueError(f"check {function.__name__} needs a docstring saying what it asserts")
    protected = get_fix(spec.fix)

    @functools.wraps(function)
    def run_check(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except AssertionError as exc:  # Drift, or a plain assert in the check
            message = drift_message(function, protected, spec.reads, kwargs.get("upstream"), exc)
            subject = drift_subject(exc, spec.reads)
            kind = exc.kind if isinstance(exc, Drift) else Drift.CHANGED
        # Outside the except block: the report shows the drift once, not a chain.
        raise CheckDrift(message, fix=protected.name, subject=subject, kind=kind)

    return pytest.mark.canary_check(spec)(run_check)  # type: ignore[return-value]


# -- tables: one check body, one row per (test name, files, window) ---------------------


@dataclass(frozen=True)
class Row:
    """One check of a table: its test name, what it reads, its window, and the values its
    body is called with (by keyword, after ``upstream``)."""

    test: str
    reads: tuple[str, ...]
    values: Mapping[str, Any] = field(default_factory=dict, hash=False)
    since: str | None = None
    until: str | None = None
    fix: str | None = None  # the table's fix unless the row names another
    known_drift: Mapping[str, str] | None = field(default=None, hash=False)
    doc: str | None = None  # the table body's docstring, formatted with values, unless given


def row(
    test: str,
    *,
    reads: str | Iterable[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    fix: str | None = None,
    known_drift: Mapping[str, str] | None = None,
    doc: str | None = None,
    **values: Any,
) -> Row:
    """One row of a :func:`check.each <each>` table. ``values`` are handed to the check
    body by keyword; a row with a ``path`` value reads that file unless ``reads`` says
    otherwise."""
    if reads is None:
        if "path" not in values:
            raise ValueError(f"row {test} needs reads= or a path= value")
        reads = values["path"]
    paths = (reads,) if isinstance(reads, str) else tuple(reads)
    return Row(test, paths, dict(values), since, until, fix, known_drift, doc)


@dataclass(frozen=True)
class CheckTable:
    """A family of checks written once: ``body(upstream, **row.values)`` for every row,
    each row its own test (name, files, window). Expanded into one parametrized test per
    row at collection (:func:`table_items`)."""

    body: Callable[..., Any]
    rows: tuple[Row, ...]
    fix: str

    def checks(self) -> list[tuple[str, Callable[..., Any]]]:
        """``(test name, check function)`` per row, each declared like an ``@check``."""
        return [(r.test, self._check(r)) for r in self.rows]

    def _check(self, r: Row) -> Callable[..., Any]:
        body, values = self.body, r.values

        def run(upstream: Any) -> Any:
            return body(upstream, **values)

        run.__name__ = run.__qualname__ = r.test
        run.__module__ = body.__module__
        run.__doc__ = r.doc or (body.__doc__ or "").format(**values)
        run.place_as = body  # type: ignore[attr-defined]  # pytest reports the body's location
        spec = CheckSpec.declare(
            reads=r.reads,
            fix=r.fix or self.fix,
            since=r.since,
            until=r.until,
            known_drift=r.known_drift,
        )
        return _declared_check(run, spec)


def each(*rows: Row, fix: str) -> Callable[[Callable[..., Any]], CheckTable]:
    """Declare a table of checks: the decorated body runs once per row, as the row's own
    test. The body's docstring, formatted with a row's values, is that check's docstring::

        @check.each(
            row("test_grpo_declares_scaling", path=GRPO, since="1.15.0", name="GRPOTrainer"),
            row("test_dpo_declares_scaling", path=DPO, since="1.15.0", name="DPOTrainer"),
            fix="accepts_loss_kwargs shadowing",
        )
        def declares_loss_scaling(upstream, name, path):
            \"\"\"{name} ({path}) declares loss_is_scaled_for_ga.\"\"\"
            expect_class_attribute(upstream.module(path).cls(name), "loss_is_scaled_for_ga")
    """
    if not rows:
        raise ValueError("a check table needs at least one row")
    names = [r.test for r in rows]
    if duplicated := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"a check table names {', '.join(duplicated)} more than once")
    if strays := [n for n in names if not n.startswith("test_")]:
        raise ValueError(f"a table row's test name must start with test_: {', '.join(strays)}")

    def decorate(body: Callable[..., Any]) -> CheckTable:
        table = CheckTable(body, rows, fix)
        table.checks()  # validate every row (fix, window, docstring) at import, not at collection
        return table

    return decorate


check.each = each  # type: ignore[attr-defined]


def table_items(collector: pytest.Collector, table: CheckTable) -> list[pytest.Item]:
    """The items of a check table found in a check module: one parametrized test function
    per row, made the way pytest makes any (``PyCollector._genfunctions``), so ids, ``-k``,
    markers and ``pytest_generate_tests`` work as for an ``@check`` function. Each row's
    function is also bound in the module under its test name, where pytest looks a test
    function up again."""
    module = collector.obj
    items: list[pytest.Item] = []
    for name, function in table.checks():
        if getattr(module, name, function) is not function:
            raise ValueError(f"{collector.nodeid}: a table row and another object are both {name}")
        setattr(module, name, function)
        items.extend(collector._genfunctions(name, function))  # type: ignore[attr-defined]
    return items


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
    """What the failing check was looking at: the subject its Drift names (every
    expectation and code-index lookup names one), its path falling back to the check's only
    file when the Drift names none (a function knows its qualified name, not its file)."""
    subject = getattr(exc, "subject", None) or Subject(None)
    if subject.path is None and len(paths) == 1:
        subject = Subject(paths[0], subject.qualname)
    return subject


# -- expectations: each raises Drift saying what upstream has instead --------------------
# Every Drift names its subject (the function or class handed in, which the report diffs
# between releases) and its kind: MISSING when the thing is gone, CHANGED otherwise.


def drift(subject: Function | Class | Module, message: str) -> Drift:
    """A Drift about ``subject`` (a function or class the check found, or a module) that is
    still there in another shape: for the rare check no expectation expresses."""
    return Drift(message, subject=_subject_of(subject), kind=Drift.CHANGED)


def _subject_of(found: Function | Class | Module, name: str | None = None) -> Subject:
    if isinstance(found, Module):
        return Subject(found.path, name)
    path = found.path or None if isinstance(found, Class) else None
    return Subject(path, found.qualname)


def expect_any_of(*alternatives: Callable[[], T]) -> T:
    """One of ``alternatives`` (expectations wrapped in ``lambda:``, likeliest first) holds;
    returns what the first that holds returns. The Drift lists why each one fails; its
    subject is the first alternative's, and it is MISSING only if every alternative is."""
    if not alternatives:
        raise ValueError("expect_any_of needs at least one alternative")
    failures: list[Drift] = []
    for alternative in alternatives:
        try:
            return alternative()
        except Drift as exc:
            failures.append(exc)
    if len(failures) == 1:
        raise failures[0]
    listing = "; ".join(f"({i}) {exc}" for i, exc in enumerate(failures, 1))
    missing = all(exc.kind == Drift.MISSING for exc in failures)
    raise Drift(
        f"none of {len(failures)} alternatives holds: {listing}",
        subject=failures[0].subject,
        kind=Drift.MISSING if missing else Drift.CHANGED,
    )


def expect_parameters(function: Function, *names: str) -> None:
    """``function`` has each of ``names`` as a named parameter (not only via **kwargs)."""
    missing = [name for name in names if not function.signature.has(name)]
    if missing:
        raise drift(
            function,
            f"{function.qualname} has no parameter {', '.join(map(repr, missing))}; "
            f"its signature is {function.signature}",
        )


def expect_no_parameter(function: Function, *names: str) -> None:
    """``function`` has none of ``names`` as a named parameter (a renamed parameter whose
    old name must not come back)."""
    present = [name for name in names if function.signature.has(name)]
    if present:
        raise drift(
            function,
            f"{function.qualname} takes {', '.join(map(repr, present))} again; "
            f"its signature is {function.signature}",
        )


def expect_leading_parameters(function: Function, *names: str) -> None:
    """``function``'s signature starts with exactly ``names``, in that order (a caller that
    passes them by position)."""
    if function.signature.names[: len(names)] != names:
        raise drift(
            function,
            f"{function.qualname}{function.signature} no longer starts ({', '.join(names)})",
        )


def expect_parameter_kind(function: Function, name: str, kind: str) -> Param:
    """``function`` has parameter ``name`` of ``kind`` (``canary.codeindex.KEYWORD_ONLY``,
    ``VAR_KEYWORD``, ...): ``**template_kwargs`` is a VAR_KEYWORD parameter named
    "template_kwargs"."""
    param = function.signature.param(name)
    if param is None or param.kind != kind:
        found = f"is {param.kind.replace('_', '-')}" if param is not None else "is not there"
        raise drift(
            function,
            f"{function.qualname} has no {kind.replace('_', '-')} parameter {name!r} ({name} "
            f"{found}); its signature is {function.signature}",
        )
    return param


def expect_keyword_accepted(function: Function, name: str) -> None:
    """``function`` can be called with ``name=...`` (a parameter, or **kwargs)."""
    if not function.signature.accepts_keyword(name):
        raise drift(
            function,
            f"{function.qualname} cannot take {name}=...; its signature is {function.signature}",
        )


def expect_decorated(found: Function | Class, *decorators: str) -> str:
    """``found`` is decorated with one of ``decorators`` (normalised text, compared whole:
    ``"property"``, ``"contextlib.contextmanager"``); returns the one found."""
    for decorator in decorators:
        if decorator in found.decorators:
            return decorator
    has = ", ".join(f"@{d}" for d in found.decorators) or "no decorator"
    raise drift(
        found,
        f"{found.qualname} is no longer decorated {' or '.join(f'@{d}' for d in decorators)}; "
        f"it has {has}",
    )


def expect_call(
    function: Function,
    callee: str,
    *,
    args: Iterable[str] = (),
    keywords: Mapping[str, str] | None = None,
) -> tuple[Call, ...]:
    """``function`` calls ``callee`` at least once, with ``args`` as its leading positional
    arguments and ``keywords`` among its keyword arguments (normalised text; the key
    ``"**"`` is a ``**mapping`` argument); returns those calls."""
    found = function.calls_to(callee)
    if not found:
        called = sorted({call.func for call in function.calls})
        listing = ", ".join(called) or "nothing"
        message = f"{function.qualname} no longer calls {callee}; it calls: {listing}"
        raise drift(function, message)
    leading = tuple(args)
    wanted = [(None if k == "**" else k, v) for k, v in (keywords or {}).items()]
    matching = tuple(
        c
        for c in found
        if c.args[: len(leading)] == leading and all(kw in c.keywords for kw in wanted)
    )
    if not matching:
        shown = [*leading, *(f"**{v}" if k is None else f"{k}={v}" for k, v in wanted)]
        raise drift(
            function,
            f"{function.qualname} no longer calls {callee}({', '.join(shown)}, ...); its calls: "
            + "; ".join(f"line {c.line}: {c.source}" for c in found),
        )
    return matching


def expect_defined(module: Module, name: str) -> None:
    """``module`` itself defines ``name`` (class, function or assignment): an import of it
    from elsewhere does not count, because the check is about where the code lives."""
    if module.defines(name):
        return
    if name in module.imports:
        imported = module.imports[name]
        origin = f"from {imported.module} " if imported.module is not None else ""
        raise Drift(
            f"{name!r} is only imported in {module.where} ({origin}import {imported.imported}, "
            f"line {imported.line}); it is defined elsewhere now",
            subject=_subject_of(module, name),
            kind=Drift.CHANGED,
        )
    module.find(name)  # raises Drift listing what is defined there


def expect_module_value(
    module: Module, name: str, *, values: Iterable[str] = (), literals: Iterable[object] = ()
) -> Assignment:
    """``module`` assigns ``name`` at module level to one of ``values`` (normalised text:
    ``"version('trl')"``) or of ``literals`` (compared as literals: ``"1.2.0"``); returns
    that assignment."""
    texts, wanted = tuple(values), tuple(literals)
    assignment = module.assignment(name)
    if assignment.value in texts or (wanted and assignment.literal in wanted):
        return assignment
    expected = " or ".join([*texts, *map(repr, wanted)])
    raise Drift(
        f"{module.where} assigns {name} = {assignment.value} (line {assignment.line}), "
        f"not {expected}",
        subject=_subject_of(module, name),
        kind=Drift.CHANGED,
    )


def expect_class_attribute(cls: Class, name: str, *values: object) -> ClassAttribute:
    """``cls`` assigns ``name`` in its own body, to one of ``values`` when given (compared
    as literals: ``expect_class_attribute(c, "accepts_loss_kwargs", False)``)."""
    attribute = cls.attribute(name)
    if values and attribute.literal not in values:
        wanted = " or ".join(map(repr, values))
        raise drift(
            cls,
            f"{cls.qualname}.{name} is {attribute.value} in {cls.where} (line {attribute.line}); "
            f"expected {wanted}",
        )
    return attribute


def expect_not_declared(cls: Class, name: str) -> None:
    """``cls`` does not bind ``name`` in its own body (no default a fix would inherit)."""
    if cls.declares(name):
        found = cls.attributes.get(name)
        how = f" = {found.value} (line {found.line})" if found is not None else ""
        raise drift(cls, f"{cls.qualname} now declares {name}{how} in {cls.where}")


def expect_base(cls: Class, *bases: str) -> str:
    """``cls`` derives directly from one of ``bases``; returns the one found."""
    for base in bases:
        if base in cls.bases:
            return base
    raise drift(
        cls,
        f"class {cls.qualname} in {cls.where} derives from ({', '.join(cls.bases)}), "
        f"not from {' or '.join(bases)}",
    )


def expect_hasattr(
    function: Function, attribute: str, *, only_on: str | None = None
) -> tuple[str, ...]:
    """``function`` calls ``hasattr(<object>, "<attribute>")``; returns the objects it asks.
    With ``only_on``, it asks exactly once, on that object (``"unwrapped_model"``)."""
    calls = [c for c in function.calls_to("hasattr") if _names_attribute(c, attribute)]
    if not calls:
        asked = sorted({f"hasattr({', '.join(c.args)})" for c in function.calls_to("hasattr")})
        listing = ", ".join(asked) or "nothing"
        raise drift(
            function,
            f"{function.qualname} no longer calls hasattr(..., {attribute!r}); "
            f"its hasattr targets are: {listing}",
        )
    objects = tuple(str(c.arg(0)) for c in calls)
    if only_on is not None and objects != (only_on,):
        raise drift(
            function,
            f"{function.qualname} asks hasattr(..., {attribute!r}) on {', '.join(objects)}, "
            f"not on {only_on} alone",
        )
    return objects


def _names_attribute(call: Call, attribute: str) -> bool:
    return len(call.args) >= 2 and call.literal_args[1] == attribute


def expect_assignment(function: Function, target: str) -> tuple[Assignment, ...]:
    """``function`` assigns ``target`` (normalised text: ``"self.model_accepts_loss_kwargs"``);
    returns those assignments, in source order."""
    found = function.assignments_to(target)
    if not found:
        assigned = sorted({t for a in function.assignments for t in a.unpacked or a.targets})
        raise drift(
            function,
            f"{function.qualname} no longer assigns {target}; it assigns: "
            f"{', '.join(assigned) or 'nothing'}",
        )
    return found


def expect_mentions(function: Function, *names: str) -> None:
    """Every one of ``names`` appears in ``function``'s body as a name or attribute (a
    fingerprint of the code path a fix relies on)."""
    missing = [name for name in names if not function.mentions(name)]
    if missing:
        raise drift(
            function,
            f"{function.qualname} ({function.line}-{function.end_line}) no longer mentions "
            f"{', '.join(missing)}",
        )


def expect_not_mentioned(function: Function, *names: str) -> None:
    """None of ``names`` appears in ``function``'s body as a name or attribute (a code path
    a fix must not meet there)."""
    present = [name for name in names if function.mentions(name)]
    if present:
        raise drift(
            function,
            f"{function.qualname} ({function.line}-{function.end_line}) now mentions "
            f"{', '.join(present)}",
        )


def expect_returns(function: Function, *values: str) -> str:
    """``function`` has a ``return`` of one of ``values`` (normalised text:
    ``"(batch_samples, None)"``); returns the one found."""
    for value in values:
        if value in function.returns:
            return value
    raise drift(
        function,
        f"{function.qualname} no longer returns {' or '.join(values)}; "
        f"it returns: {', '.join(function.returns) or 'nothing'}",
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
        raise drift(cls, f"{cls.qualname} now assigns {target} in {cls.where}: {where}")


def expect_assigned_after(function: Function, target: str, callee: str) -> tuple[Assignment, ...]:
    """``function`` assigns ``target`` after its first call to ``callee``, so the value is
    not overwritten by that call (an attribute set before ``super().__init__`` is lost);
    returns the assignments that follow the call."""
    (first, *_) = expect_call(function, callee)
    assignments = expect_assignment(function, target)
    after = tuple(a for a in assignments if a.line > first.line)
    if not after:
        lines = ", ".join(str(a.line) for a in assignments)
        raise drift(
            function,
            f"{function.qualname} assigns {target} (line {lines}) only before it calls "
            f"{callee} (line {first.line}), which overwrites it",
        )
    return after


def expect_assignment_where(
    function: Function,
    target: str,
    *,
    guard: str | None = None,
    unguarded: bool = False,
    values: Iterable[str] = (),
    augmented: str | None = None,
    after: str | None = None,
) -> Assignment:
    """``function`` assigns ``target`` under ``guard`` (one enclosing ``if`` test, normalised
    text) or, with ``unguarded``, under no ``if`` at all; when ``values`` are given, to one of
    them (normalised text); with ``augmented`` as that augmented assignment (``"*"`` for
    ``*=``); with ``after``, after the function's first call to that callee. Returns the
    first such assignment. The Drift lists every assignment to ``target`` with its guards,
    so a changed condition or value reads as what upstream decides instead."""
    wanted = tuple(values)
    first_line = expect_call(function, after)[0].line if after is not None else 0
    found = [
        a
        for a in function.assignments_to(target)
        if (guard is None or guard in a.guards)
        and not (unguarded and a.guards)
        and (not wanted or a.value in wanted)
        and (augmented is None or a.op == augmented)
        and a.line > first_line
    ]
    if found:
        return found[0]
    conditions = []
    if augmented is not None:
        conditions.append(f"with {augmented}=")
    if guard is not None:
        conditions.append(f"under `if {guard}`")
    if unguarded:
        conditions.append("unconditionally")
    if after is not None:
        conditions.append(f"after calling {after} (line {first_line})")
    if wanted:
        conditions.append("to " + " or ".join(f"`{v}`" for v in wanted))
    listing = "; ".join(
        f"line {a.line}: {target} {a.op or ''}= {a.value}"
        + (f" under {' and '.join(f'`{g}`' for g in a.guards)}" if a.guards else "")
        for a in function.assignments_to(target)
    )
    raise drift(
        function,
        f"{function.qualname} no longer assigns {target} {' '.join(conditions)}; "
        f"its assignments to {target}: {listing or 'none'}",
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
            f"(line {imported.line}), not from {imported_from}",
            subject=_subject_of(module, name),
            kind=Drift.CHANGED,
        )
    if imported_from is not None and module.defines(name):
        raise Drift(
            f"{module.where} binds {name!r} itself now, not by importing {imported_from}",
            subject=_subject_of(module, name),
            kind=Drift.CHANGED,
        )
    module.find(name)  # raises Drift listing what is defined there
    return "class"  # unreachable: find() raises for a name bound in none of the tables


def expect_not_bound(module: Module, name: str) -> None:
    """``module`` binds no ``name`` at module level, neither defined nor imported there."""
    if module.binds(name):
        how = module.how_bound(name)
        raise Drift(
            f"{module.where} now binds {name!r}{how}",
            subject=_subject_of(module, name),
            kind=Drift.CHANGED,
        )
