"""What a catalog check is made of: the ``@check`` declaration and check tables.

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

The ``expect_*`` vocabulary lives in :mod:`canary.expectations` and is importable from
here, so a check module imports from one place. When upstream has drifted, the failure
says which fix breaks, what the check expects (its docstring) and what upstream has
instead, and names what the check was looking at (the drift's subject).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from packaging.version import Version

from canary.errors import CheckDrift, Drift, Subject
from canary.expectations import (  # the vocabulary, so a check imports from one place
    assignments_to,
    drift,
    expect_any_of,
    expect_assigned_after,
    expect_assignment,
    expect_assignment_where,
    expect_base,
    expect_bound,
    expect_call,
    expect_class_attribute,
    expect_decorated,
    expect_defined,
    expect_flows_into,
    expect_guarded,
    expect_guards,
    expect_hasattr,
    expect_keyword_accepted,
    expect_leading_parameters,
    expect_mentions,
    expect_module_value,
    expect_never_assigns,
    expect_no_parameter,
    expect_not_bound,
    expect_not_declared,
    expect_not_mentioned,
    expect_parameter_kind,
    expect_parameters,
    expect_reaches,
    expect_returns,
    expect_returns_by_branch,
    expect_updated_once,
)
from canary.fixes import Fix, get_fix
from canary.versions import Window  # a check's window is a fix's kind of window

__all__ = [
    "CheckSpec",
    "CheckTable",
    "Row",
    "Window",
    "assignments_to",
    "check",
    "drift",
    "drift_message",
    "drift_subject",
    "each",
    "expect_any_of",
    "expect_assigned_after",
    "expect_assignment",
    "expect_assignment_where",
    "expect_base",
    "expect_bound",
    "expect_call",
    "expect_class_attribute",
    "expect_decorated",
    "expect_defined",
    "expect_flows_into",
    "expect_guarded",
    "expect_guards",
    "expect_hasattr",
    "expect_keyword_accepted",
    "expect_leading_parameters",
    "expect_mentions",
    "expect_module_value",
    "expect_never_assigns",
    "expect_no_parameter",
    "expect_not_bound",
    "expect_not_declared",
    "expect_not_mentioned",
    "expect_parameter_kind",
    "expect_parameters",
    "expect_reaches",
    "expect_returns",
    "expect_returns_by_branch",
    "expect_updated_once",
    "row",
    "table_items",
]

CheckFunction = TypeVar("CheckFunction", bound=Callable[..., Any])


@dataclass(frozen=True)
class Split:
    """A table row whose window starts at ``at`` where another row of the same table (the
    *old side*, ``test``) ends: the check moved, e.g. to a file a release renamed. A
    pre-release or dev build of ``at`` belongs to the new side's window, but its code may
    still have the old shape (a stale mirror, an old checkout, a replayed commit): it passes
    when either side holds, and says which. A release of ``at`` is judged strictly."""

    at: str
    test: str
    reads: tuple[str, ...]
    inherits: tuple[str, ...]
    values: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def applies(self, version: Version | None) -> bool:
        return (
            version is not None
            and version.is_prerelease
            and Version(version.base_version) == Version(self.at)
        )


@dataclass(frozen=True)
class CheckSpec:
    """What ``@check`` declares about a check: the upstream files it reads, the fix at risk,
    its version window, and the releases inside it where it is known to fail.

    Carried by the check's ``canary_check`` marker; :meth:`of` is the one way to read it.
    """

    reads: tuple[str, ...]
    fix: str
    window: Window = field(default_factory=Window)
    known_drift: Mapping[str, str] = field(default_factory=dict, hash=False)
    # Classes of the files read whose static MRO is read too (the files their bases live
    # in), so ``upstream.method(...)`` finds a method that moved to a base or a mixin.
    inherits: tuple[str, ...] = ()
    split: Split | None = None  # the row of its table this check takes over from

    def reads_for(self, version: Version | None) -> tuple[str, ...]:
        """The files a case at ``version`` reads: the old side's too on a split's
        pre-release (see :class:`Split`)."""
        if self.split is None or not self.split.applies(version):
            return self.reads
        return (*self.reads, *(p for p in self.split.reads if p not in self.reads))

    def inherits_for(self, version: Version | None) -> tuple[str, ...]:
        if self.split is None or not self.split.applies(version):
            return self.inherits
        return (*self.inherits, *(c for c in self.split.inherits if c not in self.inherits))

    # Behaviour tests (``canary/runtime/<module>.py::<test>``, marked ``behaviour``) that prove
    # on every release what this check reads as a shape: the sweep runs them (docs/sweep.md).
    backed_by: tuple[str, ...] = ()

    @classmethod
    def declare(
        cls,
        *,
        reads: str | Iterable[str],
        fix: str,
        since: str | None = None,
        until: str | None = None,
        known_drift: Mapping[str, str] | None = None,
        inherits: str | Iterable[str] = (),
        split: Split | None = None,
        backed_by: str | Iterable[str] = (),
    ) -> CheckSpec:
        """A validated spec: a typo in the catalog is an error at collection, not a pass."""
        get_fix(fix)  # raises for a fix canary does not know
        paths = _names(reads)
        if not paths:
            raise ValueError("a check must read at least one upstream file")
        window = Window(since, until)  # InvalidVersion for a bad bound, at collection
        known = dict(known_drift or {})
        for release, why in known.items():
            if window.excludes(Version(release)):
                raise ValueError(f"known_drift {release} is outside the check's window ({window})")
            if not why.strip():
                raise ValueError(f"known_drift {release} needs a reason")
        return cls(paths, fix, window, known, _names(inherits), split, _names(backed_by))

    @classmethod
    def of(cls, item: pytest.Item) -> CheckSpec | None:
        """What the item's ``@check`` declared; None for a test that is not a catalog check."""
        marker = item.get_closest_marker("canary_check")
        if marker is None or not marker.args or not isinstance(marker.args[0], cls):
            return None
        return marker.args[0]


def _names(given: str | Iterable[str]) -> tuple[str, ...]:
    """``reads=``/``inherits=`` as written: one name, or several."""
    return (given,) if isinstance(given, str) else tuple(given)


def check(
    *,
    reads: str | Iterable[str],
    fix: str,
    since: str | None = None,
    until: str | None = None,
    known_drift: Mapping[str, str] | None = None,
    inherits: str | Iterable[str] = (),
    backed_by: str | Iterable[str] = (),
) -> Callable[[CheckFunction], CheckFunction]:
    """Declare a catalog check: the upstream files it reads, the fix at risk, its window.

    ``known_drift`` maps a release inside the window to why this check fails there (a
    release that broke the fix and was repaired in the next one). Those cases are strict
    xfails: a drift there is expected, and a pass says the entry is stale.

    ``inherits`` names classes of the files read whose bases are read too, wherever in the
    package they live: ``upstream.method(path, cls, name)`` then follows the static MRO.

    ``backed_by`` names the runtime behaviour tests that check the same claim by running it
    (``test_grad_accum.py::test_window_claim_matches_live_state``).
    """
    spec = CheckSpec.declare(
        reads=reads,
        fix=fix,
        since=since,
        until=until,
        known_drift=known_drift,
        inherits=inherits,
        backed_by=backed_by,
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
    inherits: tuple[str, ...] = ()


def row(
    test: str,
    *,
    reads: str | Iterable[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    fix: str | None = None,
    known_drift: Mapping[str, str] | None = None,
    doc: str | None = None,
    inherits: str | Iterable[str] = (),
    **values: Any,
) -> Row:
    """One row of a :func:`check.each <each>` table. ``values`` are handed to the check
    body by keyword; a row with a ``path`` value reads that file unless ``reads`` says
    otherwise."""
    if reads is None:
        if "path" not in values:
            raise ValueError(f"row {test} needs reads= or a path= value")
        reads = values["path"]
    return Row(
        test, _names(reads), dict(values), since, until, fix, known_drift, doc, _names(inherits)
    )


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
        return list(self._declared)

    @functools.cached_property
    def _declared(self) -> tuple[tuple[str, Callable[..., Any]], ...]:
        # Declared once, at import (see each()): collection reuses the validated functions.
        return tuple((r.test, self._check(r)) for r in self.rows)

    def _split(self, r: Row) -> Split | None:
        """The row of this table whose window ends where ``r``'s starts, for the same fix."""
        fix = r.fix or self.fix
        for old in self.rows:
            if r.since is not None and old.until == r.since and (old.fix or self.fix) == fix:
                return Split(r.since, old.test, old.reads, old.inherits, old.values)
        return None

    def _check(self, r: Row) -> Callable[..., Any]:
        body, values, split = self.body, r.values, self._split(r)

        def run(upstream: Any) -> Any:
            try:
                return body(upstream, **values)
            except AssertionError as new_side:
                if split is None or not split.applies(getattr(upstream, "version", None)):
                    raise
                if not _holds(body, upstream, split.values):
                    raise
                upstream.notes.append(
                    f"{upstream.case} is a pre-release of {split.at} still on the old side "
                    f"of the split at {split.at}: {split.test} holds, {r.test} does not "
                    f"({new_side})"
                )
                return None

        run.__name__ = run.__qualname__ = r.test
        run.__module__ = body.__module__
        run.__doc__ = r.doc or (body.__doc__ or "").format(**values)
        run.place_as = body  # type: ignore[attr-defined]  # pytest reports the body's location
        run.canary_table = self  # type: ignore[attr-defined]  # which table made it
        spec = CheckSpec.declare(
            reads=r.reads,
            fix=r.fix or self.fix,
            since=r.since,
            until=r.until,
            known_drift=r.known_drift,
            inherits=r.inherits,
            split=split,
        )
        return _declared_check(run, spec)


def _holds(body: Callable[..., Any], upstream: Any, values: Mapping[str, Any]) -> bool:
    """Whether the old side's row holds on this case."""
    try:
        body(upstream, **values)
    except AssertionError:
        return False
    return True


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
        table.checks()  # declare every row (fix, window, docstring) at import, not at collection
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
        existing = getattr(module, name, None)
        if existing is not None and getattr(existing, "canary_table", None) is not table:
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
