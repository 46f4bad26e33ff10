"""The matrix of one run in four formats: a terminal grid, GitHub Markdown (the job
summary), JSON for other tools, and GitHub workflow commands (annotations)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canary import codeindex
from canary.errors import CanaryError
from canary.report.diff import Differ, UpstreamDiff
from canary.report.matrix import DASH, Row, Transition, rows, transitions
from canary.report.results import (
    EXIT_CLEAR,
    EXIT_DRIFT,
    OUTCOMES,
    PYTEST_INTERRUPTED,
    CaseResult,
    RunResults,
    exit_status,
)
from canary.report.verdict import interrupted

FORMATS = ("terminal", "markdown", "json", "github")
REPORT_SCHEMA = "canary-report/1"
_MARK = {"pass": "✅", "fail": "❌", "skip": "⏭️", "xfail": "⚠️", "error": "💥"}
_TERMINAL_DIFF_LINES = 60


@dataclass(frozen=True)
class DriftFinding:
    """One failing range of one check, with the upstream change behind it (when diffed).
    The fix at risk is its first failing case's (a surface row's cases each name the fixes
    their missing references break)."""

    transition: Transition
    upstream: UpstreamDiff | None


@dataclass
class Report:
    results: RunResults
    rows: dict[str, list[Row]]
    drift: list[DriftFinding]
    errors: list[CaseResult]
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def exit_status(self) -> int:
        return exit_status(self.results)


def build(results: RunResults, *, diffs: bool = True, offline: bool = False) -> Report:
    by_package = {package: rows(results, package) for package in results.packages()}
    differ = Differ(results, offline=offline) if diffs else None
    drift = []
    try:
        for package_rows in by_package.values():
            for row in package_rows:
                for transition in transitions(row):
                    upstream = differ.diff(transition) if differ is not None else None
                    drift.append(DriftFinding(transition, upstream))
    finally:
        if differ is not None:
            differ.close()
    errors = [case for case in results.cases if case.outcome == "error"]
    counts = Counter(case.outcome for case in results.cases)
    return Report(results, by_package, drift, errors, counts)


def render(report: Report, fmt: str) -> str:
    return {"terminal": terminal, "markdown": markdown, "json": as_json, "github": github}[fmt](
        report
    )


def _verdict(report: Report) -> str:
    counts = ", ".join(f"{report.counts[o]} {o}" for o in OUTCOMES if report.counts[o])
    checks = sum(len(r) for r in report.rows.values())
    cases = len(report.results.cases)
    return f"canary: {_status(report)}: {checks} checks, {cases} cases ({counts or 'none'})"


def _status(report: Report) -> str:
    """What the run proves; for status 2, why not everything was checked."""
    results = report.results
    if report.exit_status == EXIT_CLEAR:
        return "all clear"
    if report.exit_status == EXIT_DRIFT:
        return "drift found"
    if results.exitstatus == PYTEST_INTERRUPTED:
        return interrupted(len(results.cases), results.selected)
    if not results.cases:
        return "nothing checked: the run recorded no cases"
    if report.errors:
        return f"not everything was checked: {len(report.errors)} error(s)"
    return f"the run did not finish (pytest exit status {results.exitstatus}): nothing is proven"


def _spans(row: Row, *, marks: bool) -> str:
    parts = []
    for span in row.spans:
        count = f" ({len(span.cases)})" if len(span.cases) > 1 else ""
        if marks:
            parts.append(f"`{span.label}` {_MARK[span.outcome]} {span.outcome}{count}")
        else:
            shown = span.outcome.upper() if span.outcome in ("fail", "error") else span.outcome
            parts.append(f"{span.label}: {shown}{count}")
    return " · ".join(parts) if marks else ", ".join(parts)


def _columns(report: Report, package: str) -> str:
    names = report.results.column_names(package)
    return f"{len(names)} version(s), {names[0]}{DASH}{names[-1]}" if len(names) > 1 else names[0]


def _where(transition: Transition) -> str:
    good = transition.good.column_name if transition.good else "none"
    where = f"last pass {good}, first fail {transition.bad.column_name}"
    if transition.through is not transition.bad:
        where += f", failing through {transition.through.column_name}"
    return where


# -- terminal --------------------------------------------------------------------------


def terminal(report: Report) -> str:
    out = [_verdict(report), ""]
    for package, package_rows in report.rows.items():
        out.append(f"{package}: {_columns(report, package)}")
        width = max(len(row.check) for row in package_rows)
        out.extend(f"  {row.check:<{width}}  {_spans(row, marks=False)}" for row in package_rows)
        out.append("")
    for item in report.drift:
        t = item.transition
        out.append(f"DRIFT {t.row.package} {t.row.check}: {_where(t)}")
        out.append(f"  fix at risk: {t.bad.fix}")
        out.extend(f"  {line}" for line in t.bad.message.splitlines())
        if item.upstream is not None:
            out.append(f"  upstream: {item.upstream.note}")
            out.extend(
                diff_excerpt(item.upstream.diff, _TERMINAL_DIFF_LINES, "--format markdown or json")
            )
        out.append("")
    out.extend(f"NOTE {case.package} {case.check}: {case.message}" for case in _notes(report))
    for message, cases in _errors_by_message(report.errors):
        out.append(f"ERROR in {len(cases)} case(s), e.g. {cases[0].nodeid}:")
        out.append(f"  {message}")
    return "\n".join(out).rstrip() + "\n"


def _notes(report: Report) -> list[CaseResult]:
    """Passes that say something: a pre-release that matched the old side of a split."""
    return [c for c in report.results.cases if c.outcome == "pass" and c.message]


def _errors_by_message(errors: list[CaseResult]) -> list[tuple[str, list[CaseResult]]]:
    # One fetch failure errors every check of its case: show it once.
    grouped: dict[str, list[CaseResult]] = {}
    for case in errors:
        lines = case.message.strip().splitlines() or ["(no message)"]
        grouped.setdefault(lines[-1], []).append(case)
    return list(grouped.items())


# -- markdown --------------------------------------------------------------------------


def markdown(report: Report) -> str:
    out = [f"## {_verdict(report)}", ""]
    for package, package_rows in report.rows.items():
        out += [f"### {package}: {_columns(report, package)}", ""]
        out += ["| check | fix | outcomes in version order |", "| --- | --- | --- |"]
        out.extend(
            f"| `{row.check}` | {markdown_cell(row.fix)} | {_spans(row, marks=True)} |"
            for row in package_rows
        )
        out.append("")
    if notes := _notes(report):
        out += ["### Passed with a note", ""]
        out += [
            f"- `{c.check}` on {c.package} {c.label}: {markdown_cell(c.message)}" for c in notes
        ]
        out.append("")
    if report.drift:
        out += ["### Drift", ""]
    for item in report.drift:
        t = item.transition
        out += [
            f"#### ❌ {t.row.package} `{t.row.check}`: {_where(t)}",
            "",
            f"Fix at risk: **{t.bad.fix}**.",
            "",
            "```text",
            t.bad.message.strip(),
            "```",
            "",
        ]
        if item.upstream is not None:
            out += [f"Upstream: {item.upstream.note}.", ""]
            if item.upstream.diff:
                out += [
                    "<details><summary>upstream diff</summary>",
                    "",
                    "```diff",
                    item.upstream.diff.rstrip(),
                    "```",
                    "",
                    "</details>",
                    "",
                ]
    if report.errors:
        out += ["### Errors (nothing was checked)", ""]
        for message, cases in _errors_by_message(report.errors):
            out.append(
                f"- {len(cases)} case(s), e.g. `{cases[0].nodeid}`: {markdown_cell(message)}"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def diff_excerpt(diff: str, limit: int, complete_in: str) -> list[str]:
    """A diff's first ``limit`` lines, indented under a terminal report's entry, and how
    many more there are (shown in full by ``complete_in``)."""
    lines = diff.splitlines()
    out = [f"    {line}" for line in lines[:limit]]
    if len(lines) > limit:
        out.append(f"    ... {len(lines) - limit} more lines ({complete_in} has them all)")
    return out


def markdown_cell(text: str) -> str:
    """``text`` fit for one cell of a Markdown table."""
    return text.replace("|", "\\|").replace("\n", " ")


# -- json ------------------------------------------------------------------------------


def as_json(report: Report) -> str:
    data: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "exit_status": report.exit_status,
        "counts": {outcome: report.counts[outcome] for outcome in OUTCOMES},
        "packages": {
            package: {
                "columns": [
                    {"label": label, "source": source}
                    for label, source in report.results.columns(package)
                ],
                "checks": [
                    {
                        "check": row.check,
                        "test": row.key,
                        "fix": row.fix,
                        "window": row.window,
                        "spans": [
                            {
                                "outcome": span.outcome,
                                "from": span.first.label,
                                "to": span.last.label,
                                "count": len(span.cases),
                            }
                            for span in row.spans
                        ],
                    }
                    for row in package_rows
                ],
            }
            for package, package_rows in report.rows.items()
        },
        "drift": [_drift_json(item) for item in report.drift],
        "errors": [{"nodeid": case.nodeid, "message": case.message} for case in report.errors],
    }
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _drift_json(item: DriftFinding) -> dict[str, Any]:
    t = item.transition
    subject = t.bad.subject
    return {
        "package": t.row.package,
        "check": t.row.check,
        "test": t.row.key,
        "fix": t.bad.fix,
        "last_pass": t.good.label if t.good else None,
        "first_fail": t.bad.label,
        "failing_through": t.through.label,
        "message": t.bad.message,
        "subject": {"path": subject.path, "qualname": subject.qualname} if subject else None,
        "upstream_note": item.upstream.note if item.upstream else None,
        "upstream_diff": item.upstream.diff if item.upstream else None,
    }


# -- github workflow commands ------------------------------------------------------------


def github(report: Report) -> str:
    """One ``::error`` per drift (per failing range of a check, not per case: GitHub shows
    a handful of annotations per step) and one per distinct infrastructure error."""
    out = []
    for item in report.drift:
        t = item.transition
        path, line = _check_location(t.row)
        title = f"canary drift: {t.row.package} {t.range} breaks the fix {t.bad.fix!r}"
        props = {"file": path, "line": line, "title": title}
        body = f"{t.row.check}: {_where(t)}\n{t.bad.message.strip()}"
        out.append(workflow_command("error", props, body))
    for message, cases in _errors_by_message(report.errors):
        props = {"title": f"canary: infrastructure error in {len(cases)} case(s)"}
        out.append(workflow_command("error", props, f"e.g. {cases[0].nodeid}: {message}"))
    out.append(_verdict(report))
    return "\n".join(out) + "\n"


def _check_location(row: Row) -> tuple[str, int | None]:
    path = row.key.split("::", 1)[0]
    try:
        module = codeindex.parse_module(Path(path).read_bytes(), path=path)
    except (OSError, CanaryError):
        return path, None  # rendered away from the checkout: the file alone still links
    # The test function: a surface row (``surface[canary]``) is one target of test_surface.
    function = module.functions.get(row.key.rsplit("::", 1)[-1])
    return path, function.line if function else None


def workflow_command(kind: str, props: dict[str, object], message: str) -> str:
    """A GitHub workflow command (``::error file=...::message``), encoded as the runner
    expects; a property whose value is None is left out."""
    shown = ",".join(f"{k}={_escape(str(v), prop=True)}" for k, v in props.items() if v is not None)
    return f"::{kind} {shown}::{_escape(message)}"


def _escape(text: str, *, prop: bool = False) -> str:
    # GitHub's workflow-command encoding (actions/toolkit's escapeData/escapeProperty).
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text
