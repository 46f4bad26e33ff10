"""What ``pytest canary`` prints about a run: one line per error, a section, the verdict last.

The plugin's hooks call these; the words come from :mod:`canary.report.verdict`.

* A canary error (fetch, cache, offline miss, parse, config) is one line, in the error
  section and in pytest's short summary: the case's reason, not canary's call stack
  (``--tb=long`` or ``-v`` still show it). A check that crashed keeps its traceback: that
  one is a bug to read.
* Skips outside a check's window are expected: the section counts them, pytest's short
  summary does not list them (other skips are listed in the section).
* The verdict is the very last line, after pytest's own counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import pytest

from canary.errors import CanaryError, Drift
from canary.report.verdict import (
    CaseError,
    RunCounts,
    describe,
    exit_status,
    group_errors,
    is_window_skip,
)
from canary.report.verdict import verdict as verdict_line
from canary.workspace import Case

ERROR_ATTRIBUTE = "canary_error"  # on a failed report: {"package", "label", "cause"}
_OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def one_line_report(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport | None:
    """The report of a phase that failed with canary's own error, its reason as the whole
    longrepr; None for anything else, or when a traceback was asked for (``--tb``, ``-v``).

    Built before pytest formats the traceback, not by replacing it after: formatting
    parses each source file in the traceback again (0.14 s an error, 4 minutes for the
    errors of one dead index).
    """
    excinfo = call.excinfo
    if excinfo is None or not _is_canary_error(excinfo.value):
        return None
    config = item.config
    if config.option.tbstyle != "auto" or config.option.verbose > 0:
        return None
    error = excinfo.value
    # pytest takes a failed call's excinfo that is not an ExceptionInfo as the longrepr
    # itself; the real one is put back for every hook wrapper around this one.
    call.excinfo = f"{type(error).__name__}: {error}"  # type: ignore[assignment]
    try:
        return pytest.TestReport.from_item_and_call(item, call)
    finally:
        call.excinfo = excinfo


def _is_canary_error(error: BaseException) -> bool:
    return isinstance(error, CanaryError) and not isinstance(error, Drift)


def note_error(
    report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException], case: Case | None
) -> None:
    """Record why a check errored, without the case in it where canary knows, for the
    grouping at the end; nothing for a test that runs on no case."""
    if case is None:
        return
    error = excinfo.value
    if _is_canary_error(error):
        cause = getattr(error, "cause", None) or str(error)
    else:  # a check that crashed: its last line says what
        lines = excinfo.exconly().strip().splitlines()
        cause = f"a check crashed: {lines[-1] if lines else type(error).__name__}"
    # Plain JSON data: xdist ships it from the worker with the report.
    noted = {"package": case.package, "label": case.label, "cause": cause}
    setattr(report, ERROR_ATTRIBUTE, noted)


def write_section(
    terminalreporter: pytest.TerminalReporter,
    stats: Mapping[str, float],
    *,
    fetch_threads: int,
    workers: int,
) -> None:
    """canary's section: what the run read, the errors by cause, the skips by kind."""
    tr = terminalreporter
    tr.write_sep("-", "canary")
    tr.write_line(
        f"files: {stats['files_from_cache']:,.0f} from cache, {stats['files_fetched']:,.0f} "
        f"fetched ({stats['bytes_downloaded'] / 1e6:.1f} MB downloaded); code indexes: "
        f"{stats['modules_from_cache']:,.0f} from cache, {stats['modules_parsed']:,.0f} parsed"
    )
    if remembered := stats.get("outcomes_remembered", 0):
        tr.write_line(
            f"outcomes: {remembered:,.0f} remembered from earlier runs whose inputs are "
            f"unchanged (--canary-recompute checks them again)"
        )
    if stats["fetch_seconds"] or stats["parse_seconds"]:
        over = f"{fetch_threads} fetch threads" + (f" in each of {workers} workers" * (workers > 1))
        tr.write_line(
            f"time summed over {over} and the parse processes, not wall time: "
            f"{stats['fetch_seconds']:.1f} s fetching, {stats['parse_seconds']:.1f} s parsing"
        )
    for group in group_errors(_errors(tr)):
        tr.write_line(describe(group), red=True)
    window, other = _skips(tr)
    if window:
        tr.write_line(f"skipped: {len(window):,} outside their check's window (expected)")
        # pytest's short summary would list each of them (-ra): leave skips to this section.
        tr.reportchars = tr.reportchars.replace("s", "").replace("S", "")
        for reason, count in Counter(other).most_common():
            tr.write_line(f"SKIPPED [{count}] {reason}", yellow=True)


def write_verdict(terminalreporter: pytest.TerminalReporter, session: pytest.Session) -> None:
    """The last line of the run; the run's exit status made to say the same (pytest exits
    1 for an error as for a failure: 2 here when nothing drifted but not all was checked)."""
    counts = run_counts(terminalreporter, session)
    session.exitstatus = exit_status(counts, int(session.exitstatus))
    line = verdict_line(counts)
    clear = line.startswith("canary: all clear")
    nothing = counts.selected == 0 and not counts.interrupted
    terminalreporter.write_line(line, green=clear, yellow=nothing, red=not (clear or nothing))


def run_counts(terminalreporter: pytest.TerminalReporter, session: pytest.Session) -> RunCounts:
    tr = terminalreporter
    finished = {report.nodeid for outcome in _OUTCOMES for report in _reports(tr, outcome)}
    window, other = _skips(tr)
    return RunCounts(
        selected=session.testscollected,
        finished=len(finished),
        # A check that crashed (a bug in the check, not upstream's drift) failed too: it is
        # counted with the errors, where its cause is listed.
        drift=sum(1 for r in _reports(tr, "failed") if not hasattr(r, ERROR_ATTRIBUTE)),
        errors=len(
            {r.nodeid for r in _reports(tr, "error")}
            | {r.nodeid for r in _reports(tr, "failed") if hasattr(r, ERROR_ATTRIBUTE)}
        ),
        passed=len(_reports(tr, "passed")),
        window_skips=len(window),
        other_skips=len(other),
        xfailed=len(_reports(tr, "xfailed")),
        interrupted=session.exitstatus == pytest.ExitCode.INTERRUPTED,
        deselected=len(tr.stats.get("deselected", [])),
        keyword=session.config.option.keyword,
        collection_errors=sum(
            1 for report in tr.stats.get("error", []) if isinstance(report, pytest.CollectReport)
        ),
    )


def _reports(tr: pytest.TerminalReporter, outcome: str) -> list[pytest.TestReport]:
    """A check's reports of that outcome (not a module's collection report)."""
    return [report for report in tr.stats.get(outcome, []) if isinstance(report, pytest.TestReport)]


def _errors(tr: pytest.TerminalReporter) -> Iterable[CaseError]:
    for report in [*tr.stats.get("error", []), *tr.stats.get("failed", [])]:
        if (noted := getattr(report, ERROR_ATTRIBUTE, None)) is not None:
            yield CaseError(noted["package"], noted["label"], noted["cause"])


def _skips(tr: pytest.TerminalReporter) -> tuple[list[str], list[str]]:
    """The skip reasons of the run: (outside a window, the others)."""
    window: list[str] = []
    other: list[str] = []
    for report in tr.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        (window if is_window_skip(reason) else other).append(reason.removeprefix("Skipped: "))
    return window, other
