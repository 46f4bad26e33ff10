"""The runtime tier's JUnit XML, counted by outcome: what one table row shows."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from canary.errors import InfrastructureError


@dataclass(frozen=True)
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0
    problems: tuple[str, ...] = ()  # "FAILED id: message" lines for the details section

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped + self.errors


def parse_junit(path: Path) -> Counts:
    """Count test cases by outcome; pytest writes xfail as skipped and xpass as passed."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise InfrastructureError(f"{path}: no readable JUnit XML: {exc}") from None
    passed = failed = skipped = errors = 0
    problems = []
    for case in root.iter("testcase"):
        case_id = "::".join(filter(None, (case.get("classname"), case.get("name"))))
        # A case that failed and then errored in teardown counts once, as failed.
        failure = case.find("failure")
        error = case.find("error")
        if failure is not None:
            failed += 1
            problems.append(f"FAILED {case_id}: {_first_line(failure)}")
        elif error is not None:
            errors += 1
            problems.append(f"ERROR {case_id}: {_first_line(error)}")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return Counts(passed, failed, skipped, errors, tuple(problems))


def _first_line(element: ET.Element) -> str:
    text = element.get("message") or element.text or ""
    return text.strip().splitlines()[0] if text.strip() else "(no message)"
