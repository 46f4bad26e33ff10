"""``--canary-json PATH``: record every case of a run as it is reported, write them at the end.

Each test report of a canary check carries a ``canary`` attribute (plain JSON data: pytest
and pytest-xdist ship a report's extra attributes from the workers to the controller), so
the controller sees every worker's cases; only the controller writes the file.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

import canary
from canary.errors import CheckDrift
from canary.report.results import SCHEMA
from canary.upstream import Case

REPORT_ATTRIBUTE = "canary"
_MESSAGE_LIMIT = 4000  # characters of an error's text kept in the file


def case_of(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("upstream") if callspec else None
    return case if isinstance(case, Case) else None


def phase_record(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> dict[str, Any] | None:
    """What one phase (setup, call, teardown) of a canary check says about its case."""
    case = case_of(item)
    marker = item.get_closest_marker("canary_check")
    if case is None or marker is None:
        return None
    outcome, message, subject = _phase_outcome(call, report)
    return {
        "package": case.package,
        "label": case.label,
        "source": case.source,
        "check": getattr(item, "originalname", item.name),
        "nodeid": item.nodeid,
        "fix": marker.kwargs["fix"],
        "reads": list(marker.kwargs["reads"]),
        "window": str(marker.kwargs["window"]),
        "version": _declared_version(item.config, case) if outcome is not None else None,
        "outcome": outcome,
        "message": message,
        "subject": subject,
        "duration": report.duration,
    }


def _phase_outcome(
    call: pytest.CallInfo[None], report: pytest.TestReport
) -> tuple[str | None, str, dict[str, str | None] | None]:
    """(outcome or None while undecided, message, subject) of one phase."""
    if hasattr(report, "wasxfail"):  # a release listed as broken in tags.toml
        if report.skipped:
            return "xfail", report.wasxfail, None
        if report.passed and report.when == "call":
            return "pass", f"passes although listed as broken: {report.wasxfail}", None
    if report.skipped:
        reason = getattr(call.excinfo.value, "msg", "") if call.excinfo else ""
        return "skip", str(reason), None
    if report.passed:
        return ("pass" if report.when == "call" else None), "", None
    excinfo = call.excinfo
    assert excinfo is not None  # a failed phase always has one
    if report.when == "call" and isinstance(drift := excinfo.value, CheckDrift):
        subject = drift.subject
        shape = {"path": subject.path, "qualname": subject.qualname} if subject else None
        return "fail", str(drift), shape
    # A fetch, cache or parse problem, or a check that crashed: nothing was checked.
    return "error", excinfo.exconly()[-_MESSAGE_LIMIT:], None


def _declared_version(config: pytest.Config, case: Case) -> str | None:
    if (known := case.known_version) is not None:
        return str(known)
    from canary.errors import InfrastructureError
    from canary.plugin import canary_run

    try:  # main: resolved (and cached) by the fixture; a failed read stays unknown
        version = canary_run(config).workspace.version(case)
    except InfrastructureError:
        return None
    return None if version is None else str(version)


class Recorder:
    """Registered by the canary plugin when ``--canary-json`` is given."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config = config
        self.path = path
        self.cases: dict[str, dict[str, Any]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        record = phase_record(item, call, report)
        if record is not None:
            setattr(report, REPORT_ATTRIBUTE, record)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, REPORT_ATTRIBUTE, None)
        if not record:
            return
        known = self.cases.get(report.nodeid)
        if known is None:
            self.cases[report.nodeid] = dict(record)
            return
        known["duration"] += record["duration"]
        # The first phase that decides wins; a teardown error still spoils a pass.
        undecided = known["outcome"] is None
        spoiled = record["outcome"] == "error" and known["outcome"] == "pass"
        if record["outcome"] is not None and (undecided or spoiled):
            known.update({k: record[k] for k in ("outcome", "message", "subject", "version")})

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput"):
            return
        from canary.plugin import current_run, tags_path

        cases = [
            {**record, "outcome": record["outcome"] or "error"} for record in self.cases.values()
        ]
        local: dict[str, dict[str, str]] = {}
        cache_dir = None
        if (run := current_run(self.config)) is not None:
            local = {
                package: {"path": str(tree.root), "version": tree.ref}
                for package, tree in run.local.items()
            }
            cache_dir = str(run.workspace.cache.root) if run.workspace.cache else None
        data = {
            "schema": SCHEMA,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "canary": canary.__version__,
            "exitstatus": int(exitstatus),
            "cache_dir": cache_dir,
            "tags_file": str(tags_path(self.config).resolve()),
            "source": self.config.getoption("canary_source"),
            "local": local,
            "cases": cases,
        }
        write_atomically(self.path, json.dumps(data, indent=1) + "\n")


def write_atomically(path: Path, text: str) -> None:
    """A reader never sees half a file (a CI step reading it after a killed run)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
