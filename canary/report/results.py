"""The machine-readable results of one canary run (``pytest canary --canary-json PATH``).

One JSON object per run::

    {"schema": "canary-results/1", "created": "...", "canary": "0.1.0",
     "exitstatus": 1, "selected": 8224, "cache_dir": "...", "tags_file": "...",
     "source": "auto",
     "local": {"transformers": {"path": "...", "version": "5.6.0.dev0"}},
     "cases": [{"package": "transformers", "label": "5.5.4", "source": "index",
                "check": "test_compute_loss_takes_num_items_in_batch",
                "nodeid": "canary/checks/test_transformers.py::...[transformers_5_5_4]",
                "outcome": "fail", "fix": "accepts_loss_kwargs shadowing",
                "message": "upstream drift in ...", "reads": ["transformers/trainer.py"],
                "window": ">=4.46.0", "subject": {"path": "...", "qualname": "..."},
                "version": "5.5.4", "duration": 0.01}]}

A surface case (``canary/checks/test_surface.py::test_surface[<target>-<case id>]``) is
recorded the same way, its ``check`` naming the target (``surface[canary]``,
``surface[liger-kernel]``): one row per target, the case's package and version its column;
on failure ``fix`` names what the missing references break and ``message`` lists them.

``outcome`` is one of :data:`OUTCOMES`; ``subject`` is set on drift only; ``version`` is
what the tree declares (it differs from ``label`` for ``main``), null where unknown;
``commit`` is the commit a ``main`` (or commit) case was read at, null for releases and
local trees: ``--canary-tags PKG=<commit>`` replays it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from canary.errors import ConfigError, Subject
from canary.versions import report_order

SCHEMA = "canary-results/1"
OUTCOMES = ("pass", "fail", "skip", "xfail", "error")

# Exit statuses of ``python -m canary report``.
EXIT_CLEAR = 0  # every case passed, skipped outside its window, or xfailed as known-broken
EXIT_DRIFT = 1  # at least one check failed: upstream drifted
EXIT_INFRASTRUCTURE = 2  # no drift, but something was not checked (error, no cases, bad run)
PYTEST_INTERRUPTED = 2  # pytest's exit status of a run stopped by Ctrl-C


@dataclass(frozen=True)
class CaseResult:
    """One check on one case: a cell of the matrix."""

    package: str
    label: str
    source: str
    check: str
    nodeid: str
    outcome: str
    fix: str
    message: str
    reads: tuple[str, ...]
    window: str
    subject: Subject | None = None
    version: str | None = None
    duration: float = 0.0
    commit: str | None = None

    @property
    def column(self) -> tuple[str, str]:
        """The matrix column: a label from one kind of source (a local tree stated as 5.5.4
        is not the 5.5.4 release)."""
        return (self.label, self.source)

    @property
    def column_name(self) -> str:
        if self.source == "local":
            return f"{self.label} (local)"
        if self.commit and self.label != self.commit:
            return f"{self.label}@{self.commit[:7]}"  # main@1a2b3c4
        if self.commit:
            return f"@{self.commit[:7]}"  # a replayed commit
        return self.label

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["reads"] = list(self.reads)
        return data

    @classmethod
    def from_json(cls, entry: Mapping[str, Any], *, undecided: bool = False) -> CaseResult:
        """A case as :meth:`to_json` wrote it; ValueError, KeyError or TypeError when not.
        ``undecided``: a phase of a running case may have no outcome yet (``""``)."""
        outcome = entry["outcome"]
        if outcome not in OUTCOMES and not (undecided and outcome == ""):
            nodeid = entry.get("nodeid")
            raise ValueError(f"outcome {outcome!r} of {nodeid} is not one of {OUTCOMES}")
        subject = entry.get("subject")
        return cls(
            package=str(entry["package"]),
            label=str(entry["label"]),
            source=str(entry["source"]),
            check=str(entry["check"]),
            nodeid=str(entry["nodeid"]),
            outcome=outcome,
            fix=str(entry["fix"]),
            message=str(entry.get("message") or ""),
            reads=tuple(entry["reads"]),
            window=str(entry.get("window") or ""),
            subject=Subject(subject.get("path"), subject.get("qualname")) if subject else None,
            version=entry.get("version"),
            duration=float(entry.get("duration") or 0.0),
            commit=entry.get("commit"),
        )


@dataclass
class RunResults:
    cases: list[CaseResult]
    exitstatus: int | None = None
    cache_dir: str | None = None
    tags_file: str | None = None
    source: str = "auto"
    local: dict[str, dict[str, str]] = field(default_factory=dict)
    created: str | None = None
    canary: str | None = None
    selected: int | None = None  # cases the run was to check (an interrupted one did fewer)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "created": self.created,
            "canary": self.canary,
            "exitstatus": self.exitstatus,
            "selected": self.selected,
            "cache_dir": self.cache_dir,
            "tags_file": self.tags_file,
            "source": self.source,
            "local": self.local,
            "cases": [case.to_json() for case in self.cases],
        }

    def packages(self) -> list[str]:
        return list(dict.fromkeys(case.package for case in self.cases))

    def columns(self, package: str) -> list[tuple[str, str]]:
        """The package's columns in version order; main last."""
        found = {c.column: c for c in self.cases if c.package == package}
        return sorted(found, key=lambda column: column_order(found[column]))

    def column_names(self, package: str) -> list[str]:
        """The package's columns as a report shows them (``main@1a2b3c4``), in order."""
        named = {c.column: c.column_name for c in self.cases if c.package == package}
        return [named[column] for column in self.columns(package)]


def column_order(case: CaseResult) -> tuple[tuple[int, Version], int]:
    # A branch tree (main, a commit) sorts after every release, whatever it declares.
    return (report_order(case.label, case.version), case.source == "local")


def exit_status(results: RunResults) -> int:
    """Drift wins (it is the finding); then anything unchecked; else all clear."""
    outcomes = {case.outcome for case in results.cases}
    if "fail" in outcomes:
        return EXIT_DRIFT
    if "error" in outcomes or not results.cases:
        return EXIT_INFRASTRUCTURE
    # pytest's own status: 2 interrupted, 3 internal error, 4 usage error (0/1/5 are fine here).
    if results.exitstatus not in (None, 0, 1, 5):
        return EXIT_INFRASTRUCTURE
    return EXIT_CLEAR


def load(paths: Iterable[Path]) -> RunResults:
    """Read one or more runs; a later run's case replaces an earlier one with the same test
    id and column, so a run of a local tree adds its column beside the releases."""
    merged: dict[tuple[str, str, str], CaseResult] = {}
    run: RunResults | None = None
    for path in paths:
        part = _load_one(path)
        for case in part.cases:
            merged[(case.nodeid, *case.column)] = case
        if run is None:
            run = part
        else:
            run.local.update(part.local)
            run.exitstatus = max(run.exitstatus or 0, part.exitstatus or 0)
            run.selected = max(run.selected or 0, part.selected or 0) or None
    if run is None:
        raise ConfigError("canary report: give at least one results file (--canary-json PATH)")
    run.cases = list(merged.values())
    return run


def _load_one(path: Path) -> RunResults:
    hint = "write it with `pytest canary --canary-json PATH`"
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such results file; {hint}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable results file ({exc}); {hint}") from None
    if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
        raise ConfigError(f"{path}: expected schema {SCHEMA!r}, found {found!r}; {hint}")
    try:
        cases = [CaseResult.from_json(entry) for entry in data["cases"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: a case entry is malformed ({exc}); {hint}") from None
    return RunResults(
        cases=cases,
        exitstatus=data.get("exitstatus"),
        cache_dir=data.get("cache_dir"),
        tags_file=data.get("tags_file"),
        source=data.get("source", "auto"),
        local=dict(data.get("local") or {}),
        created=data.get("created"),
        canary=data.get("canary"),
        selected=data.get("selected"),
    )
