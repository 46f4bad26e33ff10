"""``--canary-json PATH``: record every case of a run as it is reported, write them at the end.

Each test report of a canary check (a catalog check, or a surface case of
:mod:`canary.plugin.surface`) carries a ``canary`` attribute (a :class:`CaseResult`
as plain JSON data: pytest and pytest-xdist ship a report's extra attributes from the
workers to the controller), so the controller sees every worker's cases; only the
controller writes the file, as :class:`RunResults`.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

import canary
from canary.atomic import write_atomically
from canary.catalog import CheckSpec
from canary.errors import CheckDrift, InfrastructureError, WriteFailed
from canary.plugin.surface import FIXTURE as SURFACE_FIXTURE
from canary.plugin.surface import OWN, SurfaceCase
from canary.report.results import EXIT_INFRASTRUCTURE, CaseResult, RunResults
from canary.workspace import Case

REPORT_ATTRIBUTE = "canary"
_MESSAGE_LIMIT = 4000  # characters of an error's text kept in the file


@dataclass(frozen=True)
class RunFacts:
    """What the results file says about the run as a whole."""

    tags_file: str
    source: str
    cache_dir: str | None = None
    local: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Recorded:
    """What a results entry says about the check an item runs, besides its outcome."""

    case: Case
    check: str  # the row of the matrix
    fix: str
    reads: tuple[str, ...]
    window: str


def recorded(item: pytest.Item) -> Recorded | None:
    """The case and check a collected item records: a catalog check on its ``upstream``
    case, or one surface target on its case (the row ``surface[<target>]``, so each target
    is its own row of the package's matrix); None for anything else."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec else {}
    case, spec = params.get("upstream"), CheckSpec.of(item)
    if isinstance(case, Case) and spec is not None:
        check = getattr(item, "originalname", item.name)
        return Recorded(case, check, spec.fix, spec.reads, str(spec.window))
    surface = params.get(SURFACE_FIXTURE)
    if isinstance(surface, SurfaceCase):
        # A failure names the fixes it breaks (its drift's fix); the row names the target.
        own = surface.target == OWN
        fix = "canary's own fixes" if own else surface.name
        window = "each fix's window" if own else f"{surface.name}'s declared requirement"
        return Recorded(surface.case, f"surface[{surface.name}]", fix, (), window)
    return None


def case_of(item: pytest.Item) -> Case | None:
    """The case a collected check or surface case runs on; None for anything else."""
    found = recorded(item)
    return found.case if found is not None else None


def phase_result(
    item: pytest.Item,
    call: pytest.CallInfo[None],
    report: pytest.TestReport,
    version_of: Callable[[Case], Version | None],
    commit_of: Callable[[Case], str | None],
) -> CaseResult | None:
    """What one phase (setup, call, teardown) of a canary check says about its case; its
    outcome is empty while the phase leaves it undecided (a setup that passed)."""
    found = recorded(item)
    if found is None:
        return None
    case = found.case
    outcome, message, subject, fix = _phase_outcome(call, report)
    if outcome == "pass" and not message:  # a pre-release on the old side of a split
        message = "; ".join(getattr(getattr(item, "funcargs", {}).get("upstream"), "notes", ()))
    return CaseResult(
        package=case.package,
        label=case.label,
        source=case.source,
        check=found.check,
        nodeid=item.nodeid,
        outcome=outcome,
        fix=fix or found.fix,
        message=message,
        reads=found.reads,
        window=found.window,
        subject=subject,
        version=_declared_version(case, version_of) if outcome else None,
        duration=report.duration,
        commit=commit_of(case) if outcome else None,
    )


def _phase_outcome(
    call: pytest.CallInfo[None], report: pytest.TestReport
) -> tuple[str, str, Any, str]:
    """(outcome, or "" while undecided; message; subject; the fix a drift names, else "")
    of one phase."""
    if hasattr(report, "wasxfail"):  # a release listed as broken in tags.toml
        if report.skipped:
            return "xfail", report.wasxfail, None, ""
        if report.passed and report.when == "call":
            return "pass", f"passes although listed as broken: {report.wasxfail}", None, ""
    if report.skipped:
        reason = getattr(call.excinfo.value, "msg", "") if call.excinfo else ""
        return "skip", str(reason), None, ""
    if report.passed:
        return ("pass" if report.when == "call" else ""), "", None, ""
    excinfo = call.excinfo
    assert excinfo is not None  # a failed phase always has one
    if report.when == "call" and isinstance(drift := excinfo.value, CheckDrift):
        return "fail", str(drift), drift.subject, drift.fix
    # A fetch, cache or parse problem, or a check that crashed: nothing was checked.
    return "error", excinfo.exconly()[-_MESSAGE_LIMIT:], None, ""


def _declared_version(case: Case, version_of: Callable[[Case], Version | None]) -> str | None:
    # A release's version is its label; main's was read (and kept) by the fixture, and a
    # failed read stays unknown.
    try:
        version = version_of(case)
    except InfrastructureError:
        return None
    return None if version is None else str(version)


class Recorder:
    """Registered by the canary plugin when ``--canary-json`` is given."""

    def __init__(
        self,
        path: Path,
        facts: RunFacts,
        *,
        version_of: Callable[[Case], Version | None],
        commit_of: Callable[[Case], str | None],
    ) -> None:
        self.path = path
        self.facts = facts
        self.version_of = version_of
        self.commit_of = commit_of
        self.cases: dict[str, CaseResult] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        result = phase_result(item, call, report, self.version_of, self.commit_of)
        if result is not None:
            setattr(report, REPORT_ATTRIBUTE, result.to_json())
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, REPORT_ATTRIBUTE, None)
        if not data:
            return
        result = CaseResult.from_json(data, undecided=True)
        known = self.cases.get(report.nodeid)
        if known is None:
            self.cases[report.nodeid] = result
            return
        # The first phase that decides wins; a teardown error still spoils a pass.
        undecided = not known.outcome
        spoiled = result.outcome == "error" and known.outcome == "pass"
        decided = {"duration": known.duration + result.duration}
        if result.outcome and (undecided or spoiled):
            decided.update(
                outcome=result.outcome,
                fix=result.fix,
                message=result.message,
                subject=result.subject,
                version=result.version,
                commit=result.commit,
            )
        self.cases[report.nodeid] = replace(known, **decided)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(session.config, "workerinput"):
            return
        results = RunResults(
            cases=[replace(c, outcome=c.outcome or "error") for c in self.cases.values()],
            exitstatus=int(exitstatus),
            selected=session.testscollected,
            cache_dir=self.facts.cache_dir,
            tags_file=self.facts.tags_file,
            source=self.facts.source,
            local=self.facts.local,
            created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            canary=canary.__version__,
        )
        try:
            write_atomically(self.path, json.dumps(results.to_json(), indent=1) + "\n")
        except WriteFailed as exc:  # one line, not an INTERNALERROR traceback
            print(f"canary: error: --canary-json: {exc}", file=sys.stderr)
            session.exitstatus = EXIT_INFRASTRUCTURE
