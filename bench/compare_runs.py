"""Two canary runs compared case by case: the same checks under another Python give the same
verdicts, or this lists each case that differs.

    python bench/compare_runs.py static-3.11.json static-3.10.json
    python bench/compare_runs.py --surface liger-3.11.json liger-3.10.json

Static tier results (``--canary-json``): every case (by node id) must be in both runs with the
same outcome, message and subject; durations are ignored. Surface JSON (``--surface``): the
same references with the same outcomes on every release. Exit 0 when identical, 1 when any
case differs, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from canary.errors import ConfigError
from canary.report.results import CaseResult, load

_SHOWN = 20  # differing cases listed before "... and N more"


def verdict(case: CaseResult) -> tuple[object, ...]:
    """What a case concluded: everything but how long it took."""
    subject = (case.subject.path, case.subject.qualname) if case.subject else None
    return (case.outcome, case.message, subject, case.version, case.commit)


def static_differences(reference: Path, other: Path) -> tuple[int, list[str]]:
    """The cases compared and a line per case whose verdict differs (or is in one run only)."""
    left = {c.nodeid: c for c in load([reference]).cases}
    right = {c.nodeid: c for c in load([other]).cases}
    lines = []
    for nodeid in sorted(left.keys() | right.keys()):
        a, b = left.get(nodeid), right.get(nodeid)
        if a is None or b is None:
            lines.append(f"{nodeid}: only in {reference.name if b is None else other.name}")
        elif verdict(a) != verdict(b):
            lines.append(
                f"{nodeid}: {a.outcome} ({a.message[:200]!r}) vs {b.outcome} ({b.message[:200]!r})"
            )
    return len(left.keys() | right.keys()), lines


def surface_differences(reference: Path, other: Path) -> tuple[int, list[str]]:
    """The references compared and a line per reference whose outcomes differ."""

    def keyed(path: Path) -> dict[str, dict]:
        data = json.loads(path.read_text())
        return {
            json.dumps([r["package"], r["target"], r["kind"], r.get("anchor")]): r
            for r in data["references"]
        }

    left, right = keyed(reference), keyed(other)
    lines = []
    for key in sorted(left.keys() | right.keys()):
        a, b = left.get(key), right.get(key)
        if a != b:
            lines.append(f"{key}: {a and a['outcomes']} vs {b and b['outcomes']}")
    return len(left.keys() | right.keys()), lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference", type=Path, help="the run to compare with (3.11's)")
    parser.add_argument("other", type=Path, help="the same run under another Python")
    parser.add_argument("--surface", action="store_true", help="surface JSON, not results")
    options = parser.parse_args(argv)
    compare = surface_differences if options.surface else static_differences
    try:
        compared, lines = compare(options.reference, options.other)
    except (OSError, ValueError, KeyError, ConfigError) as exc:
        print(f"compare_runs: cannot read the runs: {exc}", file=sys.stderr)
        return 2
    unit = "references" if options.surface else "cases"
    if not lines:
        print(f"identical: {compared:,} {unit}, {options.other.name} vs {options.reference.name}")
        return 0
    print(
        f"{len(lines):,} of {compared:,} {unit} differ, {options.other.name} vs "
        f"{options.reference.name}:"
    )
    for line in lines[:_SHOWN]:
        print(f"  {line}")
    if len(lines) > _SHOWN:
        print(f"  ... and {len(lines) - _SHOWN:,} more")
    return 1


if __name__ == "__main__":
    sys.exit(main())
