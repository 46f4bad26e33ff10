"""Checks x versions, folded: runs of equal outcomes in version order become ranges, and
each drift becomes a transition from the last passing to the first failing version."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from canary.report.results import CaseResult, RunResults

DASH = "\u2013"  # an en dash joins the ends of a version range

Item = TypeVar("Item")
Key = TypeVar("Key")


@dataclass(frozen=True)
class Span:
    """Consecutive columns (in version order) where one check had one outcome."""

    outcome: str
    cases: tuple[CaseResult, ...]

    @property
    def first(self) -> CaseResult:
        return self.cases[0]

    @property
    def last(self) -> CaseResult:
        return self.cases[-1]

    @property
    def label(self) -> str:
        return range_label(self.first.column_name, self.last.column_name)


@dataclass(frozen=True)
class Row:
    """One check of one package across the run's columns."""

    package: str
    check: str
    key: str  # the test id without its case: "canary/checks/test_trl.py::test_x"
    fix: str
    window: str
    spans: tuple[Span, ...]

    @property
    def outcomes(self) -> Counter[str]:
        return Counter(span.outcome for span in self.spans for _ in span.cases)


@dataclass(frozen=True)
class Transition:
    """Where a check broke: ``good`` is the last passing case before ``bad`` (None when it
    failed from the first version checked)."""

    row: Row
    good: CaseResult | None
    bad: CaseResult
    through: CaseResult  # the last case of the failing span

    @property
    def range(self) -> str:
        if self.through is self.bad:
            return self.bad.column_name
        return f"{self.bad.column_name}{DASH}{self.through.column_name}"


def check_key(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def rows(results: RunResults, package: str) -> list[Row]:
    order = {column: i for i, column in enumerate(results.columns(package))}
    # One test can be several rows: the surface test is one row per target
    # (``surface[canary]``, ``surface[liger-kernel]``), its id naming target and case.
    by_check: dict[tuple[str, str], list[CaseResult]] = {}
    for case in results.cases:
        if case.package == package:
            by_check.setdefault((check_key(case.nodeid), case.check), []).append(case)
    found = []
    for (key, _), cases in by_check.items():
        cases.sort(key=lambda case: order[case.column])
        found.append(
            Row(
                package=package,
                check=cases[0].check,
                key=key,
                fix=cases[0].fix,
                window=cases[0].window,
                spans=tuple(fold(cases)),
            )
        )
    return found


def fold(cases: list[CaseResult]) -> list[Span]:
    return [Span(outcome, run) for outcome, run in runs(cases, lambda case: case.outcome)]


def runs(items: Iterable[Item], key: Callable[[Item], Key]) -> list[tuple[Key, tuple[Item, ...]]]:
    """``items`` (in version order) cut into runs of consecutive items with equal keys:
    the folding behind the matrix and the surface report."""
    found: list[tuple[Key, tuple[Item, ...]]] = []
    run: list[Item] = []
    for item in items:
        if run and key(item) != key(run[-1]):
            found.append((key(run[-1]), tuple(run)))
            run = []
        run.append(item)
    if run:
        found.append((key(run[-1]), tuple(run)))
    return found


def range_label(first: str, last: str) -> str:
    """Two versions joined by :data:`DASH`, or one version alone."""
    return first if first == last else f"{first}{DASH}{last}"


def transitions(row: Row) -> list[Transition]:
    """Every failing span with the last pass before it (skips, xfails and errors between
    them are stepped over: they say nothing about whether the shape held)."""
    found = []
    good: CaseResult | None = None
    for span in row.spans:
        if span.outcome == "pass":
            good = span.last
        elif span.outcome == "fail":
            found.append(Transition(row, good, span.first, span.last))
    return found
