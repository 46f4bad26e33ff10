"""The end of a run in words: errors grouped by cause, and the one-line verdict.

Pure functions over plain data (no pytest here), so the terminal summary of ``pytest
canary`` and ``python -m canary report`` say the same things the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.version import Version

from canary.report.matrix import DASH
from canary.report.results import EXIT_CLEAR, EXIT_DRIFT, EXIT_INFRASTRUCTURE
from canary.versions import report_order

# The reason canary gives a check it does not run on a release (the plugin writes it with
# these words): expected, so counted rather than listed. Matched on the text because that
# is what pytest keeps. (main outside a window stays listed: its line says which version
# main declared.)
OUTSIDE_WINDOW = "outside the window of"
_WINDOW_SKIP = re.compile(rf"\b{OUTSIDE_WINDOW} ")


def is_window_skip(reason: str) -> bool:
    """Whether a skip's reason is canary's "outside the window of <check>"."""
    return bool(_WINDOW_SKIP.search(reason))


@dataclass(frozen=True)
class CaseError:
    """One errored check: which case, and the cause without the case in it."""

    package: str
    label: str
    cause: str


@dataclass(frozen=True)
class ErrorGroup:
    cause: str
    count: int
    labels: dict[str, list[str]]  # package -> its labels, in version order


def group_errors(errors: Iterable[CaseError]) -> list[ErrorGroup]:
    """Errors by cause, the most frequent first; each cause with the versions it hit."""
    by_cause: dict[str, list[CaseError]] = {}
    for error in errors:
        by_cause.setdefault(error.cause, []).append(error)
    groups = []
    for cause, members in by_cause.items():
        labels: dict[str, set[str]] = {}
        for error in members:
            labels.setdefault(error.package, set()).add(error.label)
        ordered = {package: sorted(found, key=_version_order) for package, found in labels.items()}
        groups.append(ErrorGroup(cause, len(members), ordered))
    return sorted(groups, key=lambda group: -group.count)


def describe(group: ErrorGroup) -> str:
    """``4,575 errors: cannot reach the package index (pip: connection refused):
    transformers 4.46.1-5.25.0 (87 versions), trl 0.25.1-1.16.0 (45 versions)``, the ranges
    with an en dash."""
    noun = "error" if group.count == 1 else "errors"
    where = ", ".join(_span(package, labels) for package, labels in group.labels.items())
    return f"{group.count:,} {noun}: {group.cause}: {where}"


def _span(package: str, labels: Sequence[str]) -> str:
    if len(labels) == 1:
        return f"{package} {labels[0]}"
    return f"{package} {labels[0]}{DASH}{labels[-1]} ({len(labels)} versions)"


def _version_order(label: str) -> tuple[tuple[int, Version], str]:
    # As the report's columns: releases in version order, main and commits after them.
    return (report_order(label, None), label)


@dataclass(frozen=True)
class RunCounts:
    """What a run did, as the verdict needs it."""

    selected: int  # cases pytest was to run (after -k and the like)
    finished: int  # cases that reached an outcome
    drift: int  # failing checks
    errors: int
    passed: int = 0
    window_skips: int = 0
    other_skips: int = 0
    xfailed: int = 0
    interrupted: bool = False
    deselected: int = 0
    keyword: str = ""  # the -k expression, if any
    collection_errors: int = 0  # modules that could not be collected (pytest stops then)


def verdict(counts: RunCounts) -> str:
    """The run's last line: what it proves, and what it does not."""
    if counts.collection_errors:
        noun = "error" if counts.collection_errors == 1 else "errors"
        return (
            f"canary: nothing checked: {counts.collection_errors:,} {noun} while collecting "
            f"the checks (see above)"
        )
    if counts.interrupted or counts.selected == 0:
        return _not_run(counts)
    unfinished = counts.selected - counts.finished
    stopped = f"; stopped early: {unfinished:,} of {counts.selected:,} cases not run" * (
        unfinished > 0
    )
    if counts.drift:
        errors = f"; {counts.errors:,} error(s): not everything was checked" * (counts.errors > 0)
        return f"canary: drift found: {counts.drift:,} failing check(s){errors}{stopped}"
    if counts.errors:
        return (
            f"canary: not everything was checked: {counts.errors:,} error(s), no drift in "
            f"the rest{stopped}"
        )
    if unfinished:
        return f"canary: nothing is proven{stopped}"
    parts = [f"{counts.passed:,} passed"]
    if counts.window_skips:
        parts.append(f"{counts.window_skips:,} outside their window")
    if counts.other_skips:
        parts.append(f"{counts.other_skips:,} skipped")
    if counts.xfailed:
        parts.append(f"{counts.xfailed:,} xfailed as known drift")
    return f"canary: all clear: {', '.join(parts)}"


def exit_status(counts: RunCounts, pytest_status: int) -> int:
    """A canary run's exit status under pytest, as ``report``'s: 1 drift found, 2 not
    everything was checked (an error and no drift, or cases left unrun); pytest's other
    statuses (interrupted, internal or usage error, nothing collected) stand as they are."""
    if pytest_status not in (EXIT_CLEAR, EXIT_DRIFT):
        return pytest_status
    if counts.drift:
        return EXIT_DRIFT
    if counts.errors or counts.collection_errors or counts.finished < counts.selected:
        return EXIT_INFRASTRUCTURE
    return pytest_status


def interrupted(finished: int, selected: int | None) -> str:
    """``interrupted: 120 of 8,224 cases run, nothing is proven`` (selected may be unknown)."""
    of = f" of {selected:,}" if selected is not None else ""
    return f"interrupted: {finished:,}{of} cases run, nothing is proven"


def _not_run(counts: RunCounts) -> str:
    if counts.interrupted:
        return f"canary: {interrupted(counts.finished, counts.selected)}"
    if counts.deselected:
        return (
            f"canary: nothing checked: -k {counts.keyword!r} selected none of the "
            f"{counts.deselected:,} cases (ids are <package>_<version>, "
            f"e.g. transformers_5_5_4, transformers_5_5 for a series)"
        )
    return "canary: nothing checked: no cases collected"
