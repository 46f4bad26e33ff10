"""How right ``python -m canary surface`` is on real projects: every finding against a
triage table a person wrote by reading both sides' source.

    python bench/surface_corpus.py                      # every project in the manifest
    python bench/surface_corpus.py verl oumi            # a subset
    python bench/surface_corpus.py --json > corpus.json
    python bench/surface_corpus.py --offline            # the cache only (after one run)

The projects are ``bench/corpus/projects.toml`` (name, pinned version, the surface
configuration a maintainer would give); each is fetched as ``NAME==VERSION`` and checked
over every release in tags.toml with the canary this script is run from (its worktree
first on ``sys.path``). The verdicts are ``bench/corpus/triage/<name>.toml``: one entry per
(package, upstream target, kind, anchor, project file, releases), never per message or
line, so the table still applies when the engine words or narrows findings differently.

Per project and overall it prints the counted findings and how many the table judges true,
false, debatable or not at all (*untriaged*: a finding nobody judged is listed, never
counted as true), the *possible* findings (reported, not counted: a true one is a miss),
the *lost* references (judged true, no longer reported at all, not even as the owner
``x.y`` of a read of ``x.y.f``: a miss too) and recall,
the share of unknown outcomes, and the wall time (warm when nothing was decided afresh).
Exit 1 on any counted finding judged false or untriaged, 2 when a project could not be
checked or the tables are bad, else 0.
"""

from __future__ import annotations

import argparse
import enum
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "bench" / "corpus"


class Verdict(str, enum.Enum):
    """What a person reading both sides decided about one finding."""

    TRUE = "true"  # the site runs on those releases and the upstream thing is not there
    FALSE = "false"  # a false alarm: `false_class` says which kind
    DEBATABLE = "debatable"  # `why` says what it turns on


class FalseClass(str, enum.Enum):
    """The classes of false alarm of issue 21 (one each), plus what fits none of them."""

    VERSION_HELPER = "version-helper"  # the project's own version function/constant/check
    FALLBACK_IMPORT = "fallback-import"  # except-ImportError branch of an import that works
    PRESENCE_TEST = "presence-test"  # getattr/hasattr/except ImportError: return
    ABSENT_MODEL = "absent-model"  # a model (package or model_type) the release lacks
    BOUND_UNDER_TEST = "bound-under-test"  # a name bound under a version test, used later
    UNKNOWN_LATER = "unknown-later"  # missing on old releases, undecided later
    OWN_ATTRIBUTE = "own-attribute"  # the project's own attribute or compat shim
    OPTIONAL_MODULE = "optional-module"  # a module the project imports only under try
    OTHER = "other"  # none of these: `why` says what


class Confidence(str, enum.Enum):
    """How the engine holds a finding: counted (in the exit status) or only possible."""

    PROVEN = "proven"
    POSSIBLE = "possible"


class CorpusError(Exception):
    """Bad manifest or triage table: one line naming the entry and the fix."""


@dataclass(frozen=True)
class Project:
    """One corpus project: a release on the package index and its surface configuration."""

    name: str
    version: str
    config: Path | None = None  # a [tool.canary.surface]-style file for the run

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class Entry:
    """One verdict: a reference (package, target, kind, anchor) used in one project file,
    on the releases of ``releases`` (a PEP 440 specifier on the package; empty: all)."""

    package: str
    target: str
    kind: str
    path: str
    verdict: Verdict
    upstream: str  # the upstream fact that decides it: file and release
    site: str  # the project's site, path:line
    releases: str = ""
    anchor: str | None = None
    false_class: FalseClass | None = None
    why: str = ""

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        return (self.package, self.target, self.kind, self.anchor)

    def covers(self, version: str) -> bool:
        """Whether the verdict holds on release ``version`` (``main``, a commit: newer than
        every release, so inside a range without an upper bound)."""
        if not self.releases:
            return True
        specifiers = SpecifierSet(self.releases)
        try:
            return specifiers.contains(Version(version), prereleases=True)
        except InvalidVersion:
            return not any(s.operator in ("<", "<=", "==", "===", "~=") for s in specifiers)


@dataclass(frozen=True)
class Seen:
    """A finding as the corpus needs it: its key, the project files of the sites that run
    where it is missing, those releases, and how the engine holds it."""

    package: str
    target: str
    kind: str
    anchor: str | None
    sites: tuple[tuple[str, int], ...]  # (path, line) of every site
    releases: tuple[str, ...]  # where it is held (counted) or possible
    confidence: Confidence

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        return (self.package, self.target, self.kind, self.anchor)

    def describe(self) -> str:
        where = ", ".join(f"{path}:{line}" for path, line in self.sites[:3])
        more = f" (+{len(self.sites) - 3} sites)" if len(self.sites) > 3 else ""
        anchor = f" anchor {self.anchor!r:.60}" if self.anchor is not None else ""
        span = (
            self.releases[0]
            if len(self.releases) == 1
            else (f"{self.releases[0]}..{self.releases[-1]} ({len(self.releases)} releases)")
        )
        return f"{self.kind} {self.target}{anchor} at {where}{more} on {self.package} {span}"


@dataclass(frozen=True)
class Judged:
    """A finding and what the table says of it (None: nobody judged it)."""

    seen: Seen
    verdict: Verdict | None
    entries: tuple[Entry, ...] = ()


@dataclass
class Tally:
    """One project's (or the corpus's) figures."""

    counted: int = 0
    true: int = 0
    false: int = 0
    debatable: int = 0
    untriaged: int = 0
    possible: int = 0
    possible_true: int = 0  # misses: true findings the engine only calls possible
    possible_untriaged: int = 0
    lost: int = 0  # references the table calls true that the engine no longer reports at all
    cells: int = 0
    unknown: int = 0
    seconds: float = 0.0
    decided: int = 0  # outcomes looked up afresh (0: a warm run)
    stale: int = 0  # triage entries no finding matched
    error: str | None = None

    def add(self, other: Tally) -> None:
        for name in self.__dataclass_fields__:
            if name != "error":
                setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def precision(self) -> float | None:
        """True over judged counted findings (debatable is not true)."""
        judged = self.true + self.false + self.debatable
        return self.true / judged if judged else None

    @property
    def recall(self) -> float | None:
        """True counted findings over every true finding: counted, possible or lost."""
        found = self.true + self.possible_true + self.lost
        return self.true / found if found else None

    @property
    def unknown_share(self) -> float | None:
        return self.unknown / self.cells if self.cells else None

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data.update(precision=self.precision, recall=self.recall, unknown_share=self.unknown_share)
        return data


@dataclass
class ProjectReport:
    project: Project
    tally: Tally
    judged: list[Judged] = field(default_factory=list)
    lost: list[tuple[str, str, str, str | None]] = field(default_factory=list)


# -- the tables ---------------------------------------------------------------------------


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read it as TOML ({exc}); fix the file") from None


def load_projects(path: Path) -> list[Project]:
    """The manifest: ``[[project]]`` tables of name, version and an optional ``config``
    (a path relative to the repository root)."""
    data = _read_toml(path)
    projects = []
    for number, item in enumerate(data.get("project", []), 1):
        name, version = item.get("name"), item.get("version")
        if not isinstance(name, str) or not isinstance(version, str):
            raise CorpusError(f"{path}: project #{number} needs a name and a version (strings)")
        config = item.get("config")
        config_path = (REPO / config) if isinstance(config, str) else None
        if config_path is not None and not config_path.is_file():
            raise CorpusError(f"{path}: {name}'s config {config!r} is not a file")
        projects.append(Project(name, version, config_path))
    if not projects:
        raise CorpusError(f"{path}: no [[project]] table")
    return projects


_REQUIRED = ("package", "target", "kind", "path", "verdict", "upstream", "site")


def load_triage(path: Path) -> list[Entry]:
    """One project's verdicts: ``[[finding]]`` tables (a missing file: none yet)."""
    if not path.is_file():
        return []
    entries = []
    for number, item in enumerate(_read_toml(path).get("finding", []), 1):
        where = f"{path.name}: finding #{number} ({item.get('target', '?')})"
        missing = [key for key in _REQUIRED if not isinstance(item.get(key), str)]
        if missing:
            raise CorpusError(f"{where}: needs {', '.join(missing)}")
        try:
            verdict = Verdict(item["verdict"])
        except ValueError:
            raise CorpusError(f"{where}: verdict must be true, false or debatable") from None
        false_class = None
        if verdict is Verdict.FALSE:
            try:
                false_class = FalseClass(item.get("class", ""))
            except ValueError:
                names = ", ".join(c.value for c in FalseClass)
                raise CorpusError(
                    f"{where}: a false verdict needs class = one of {names}"
                ) from None
        why = str(item.get("why", ""))
        if verdict is Verdict.DEBATABLE and not why:
            raise CorpusError(f"{where}: a debatable verdict needs why (what it turns on)")
        releases = str(item.get("releases", ""))
        if releases:
            try:
                SpecifierSet(releases)
            except InvalidSpecifier:
                raise CorpusError(f"{where}: releases {releases!r} is no specifier") from None
        entries.append(
            Entry(
                package=item["package"],
                target=item["target"],
                kind=item["kind"],
                path=item["path"],
                verdict=verdict,
                upstream=item["upstream"],
                site=item["site"],
                releases=releases,
                anchor=item.get("anchor"),
                false_class=false_class,
                why=why,
            )
        )
    return entries


# -- judging ------------------------------------------------------------------------------


def judge(seen: Seen, entries: Sequence[Entry]) -> Judged:
    """The table's verdict on a finding. It is true where some entry for one of its site
    files says true on one of its releases (one real break makes it real); false or
    debatable only where every (site file, release) has a verdict and none is true
    (debatable wins over false); otherwise nobody judged it all (None)."""
    mine = [e for e in entries if e.key == seen.key]
    paths = sorted({path for path, _ in seen.sites})
    used: set[Entry] = set()
    verdicts: set[Verdict] = set()
    complete = True
    for path in paths:
        for version in seen.releases:
            covering = [e for e in mine if e.path == path and e.covers(version)]
            if not covering:
                complete = False
                continue
            used.update(covering)
            verdicts.update(e.verdict for e in covering)
    if Verdict.TRUE in verdicts:
        verdict: Verdict | None = Verdict.TRUE
    elif not complete or not verdicts:
        verdict = None
    elif Verdict.DEBATABLE in verdicts:
        verdict = Verdict.DEBATABLE
    else:
        verdict = Verdict.FALSE
    return Judged(seen, verdict, tuple(sorted(used, key=lambda e: (e.path, e.releases))))


def tally(judged: Iterable[Judged]) -> Tally:
    """The figures of a project's judged findings (the run's own figures are added later)."""
    result = Tally()
    for item in judged:
        if item.seen.confidence is Confidence.POSSIBLE:
            result.possible += 1
            result.possible_true += item.verdict is Verdict.TRUE
            result.possible_untriaged += item.verdict is None
            continue
        result.counted += 1
        if item.verdict is None:
            result.untriaged += 1
        else:
            field_name = item.verdict.value
            setattr(result, field_name, getattr(result, field_name) + 1)
    return result


def stale_entries(entries: Sequence[Entry], judged: Sequence[Judged]) -> list[Entry]:
    """The entries no finding used: fixed in the engine, or keyed wrong."""
    used = {e for item in judged for e in item.entries}
    return [e for e in entries if e not in used]


def lost_references(
    entries: Sequence[Entry], seen: Sequence[Seen]
) -> list[tuple[str, str, str, str | None]]:
    """The references the table judges true somewhere that no finding, counted or possible,
    reports any more: a true finding the engine dropped is a miss too. A read or patch of
    ``x.y.f`` whose owner ``x.y`` is reported is not lost: the engine reports that miss as
    the owner's (reaching ``x.y.f`` fails at ``x.y`` first)."""
    reported = {item.key for item in seen}
    owners = {key[1] for key in reported}

    def owned(entry: Entry) -> bool:
        parts = entry.target.split(".")
        prefixes = {".".join(parts[:end]) for end in range(1, len(parts))}
        return entry.kind != "import" and bool(prefixes & owners)

    return sorted(
        {
            e.key
            for e in entries
            if e.verdict is Verdict.TRUE and e.key not in reported and not owned(e)
        },
        key=lambda key: (key[0], key[1], key[2], key[3] or ""),
    )


# -- the engine's side (the one place that reads canary's findings) ------------------------


def _confidence(finding: Any) -> Confidence:
    value = getattr(finding, "confidence", None)
    value = getattr(value, "value", value)
    return Confidence.POSSIBLE if value == Confidence.POSSIBLE.value else Confidence.PROVEN


def seen_findings(findings: Iterable[Any]) -> list[Seen]:
    """canary's findings as :class:`Seen`: the counted ones (``fails``) and the possible
    ones (``confidence == "possible"``, held on the releases that are neither accepted nor
    excused nor handled); a finding that is neither (accepted, excused, handled, gated) is
    left out."""
    seen = []
    for finding in findings:
        confidence = _confidence(finding)
        if confidence is Confidence.PROVEN:
            if not finding.fails:
                continue
            releases = tuple(finding.new)
        else:
            releases = tuple(
                v
                for v in finding.missing
                if v not in finding.accepted
                and v not in getattr(finding, "excused", {})
                and v not in getattr(finding, "handled", {})
            )
            if not releases:
                continue
        ref = finding.reference
        running = [
            (site.path, site.line)
            for site in ref.sites
            if any(site.runs_on(ref.package, v) for v in releases)
        ]
        sites = tuple(running or [(site.path, site.line) for site in ref.sites])
        seen.append(
            Seen(ref.package, ref.target, ref.kind.value, ref.anchor, sites, releases, confidence)
        )
    return seen


def run_project(project: Project, *, offline: bool, workers: int) -> tuple[list[Seen], Tally]:
    """One project over every release in tags.toml: its findings, its outcome counts and
    the wall time (the extraction included, as a user waits for it)."""
    sys.path.insert(0, str(REPO))  # the canary of this worktree, whatever is installed
    # A target is read, never installed: its Requires-Python (axolotl 0.21.0: >=3.12) must
    # not stop pip from downloading its wheel (pip reads this as --ignore-requires-python).
    os.environ.setdefault("PIP_IGNORE_REQUIRES_PYTHON", "1")
    from canary.surface.command import SurfaceOptions, run_surface
    from canary.surface.model import Outcome

    options = SurfaceOptions(
        targets=(project.spec,),
        offline=offline,
        tags_file=REPO / "tags.toml",
        config=project.config,
        workers=workers,
    )
    started = time.perf_counter()
    run = run_surface(options, fmt="json")
    seconds = time.perf_counter() - started
    figures = Tally(seconds=seconds, decided=run.decided)
    for item in run.result.references:
        figures.cells += len(item.outcomes)
        figures.unknown += sum(1 for o in item.outcomes.values() if o is Outcome.UNKNOWN)
    if run.errors or run.empty:
        causes = {str(exc.cause or exc) for _, exc in run.errors} | set(run.empty)
        figures.error = "not everything was checked: " + "; ".join(sorted(causes))[:300]
    return seen_findings(run.findings), figures


# -- the report ---------------------------------------------------------------------------


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


HEADER = (
    "project", "counted", "true", "false", "debat.", "untri.", "precision",
    "possible", "poss.true", "lost", "recall", "unknown", "seconds",
)  # fmt: skip


def table(reports: Sequence[ProjectReport], overall: Tally) -> str:
    rows = [HEADER]
    for report in [*reports, None]:
        name = "overall" if report is None else f"{report.project.name} {report.project.version}"
        t = overall if report is None else report.tally
        warm = "" if report is None or not t.decided else f" (cold: {t.decided:,} decided)"
        rows.append(
            (
                name,
                str(t.counted),
                str(t.true),
                str(t.false),
                str(t.debatable),
                str(t.untriaged),
                _share(t.precision),
                str(t.possible),
                str(t.possible_true),
                str(t.lost),
                _share(t.recall),
                _share(t.unknown_share),
                f"{t.seconds:.1f}{warm}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return "\n".join(lines)


def details(reports: Sequence[ProjectReport]) -> list[str]:
    """The counted findings that fail the corpus, and the possible ones judged true."""
    lines = []
    for report in reports:
        name = report.project.name
        if report.tally.error:
            lines.append(f"{name}: ERROR {report.tally.error}")
        for item in report.judged:
            counted = item.seen.confidence is Confidence.PROVEN
            if counted and item.verdict is None:
                lines.append(f"{name}: UNTRIAGED {item.seen.describe()}")
            elif counted and item.verdict is Verdict.FALSE:
                classes = sorted({e.false_class.value for e in item.entries if e.false_class})
                lines.append(f"{name}: FALSE ({', '.join(classes)}) {item.seen.describe()}")
            elif not counted and item.verdict is Verdict.TRUE:
                lines.append(f"{name}: MISSED (possible, true) {item.seen.describe()}")
        for package, target, kind, anchor in report.lost:
            text = f" anchor {anchor!r:.60}" if anchor is not None else ""
            lines.append(
                f"{name}: LOST (true, no longer reported) {kind} {target}{text} ({package})"
            )
    return lines


def report_json(reports: Sequence[ProjectReport], overall: Tally) -> dict[str, Any]:
    def finding(item: Judged) -> dict[str, Any]:
        seen = item.seen
        return {
            "package": seen.package,
            "target": seen.target,
            "kind": seen.kind,
            "anchor": seen.anchor,
            "sites": [f"{path}:{line}" for path, line in seen.sites],
            "releases": list(seen.releases),
            "confidence": seen.confidence.value,
            "verdict": item.verdict.value if item.verdict else None,
        }

    return {
        "projects": [
            {
                "name": r.project.name,
                "version": r.project.version,
                **r.tally.to_json(),
                "findings": [finding(item) for item in r.judged],
                "lost": [
                    {"package": p, "target": t, "kind": k, "anchor": a} for p, t, k, a in r.lost
                ],
            }
            for r in reports
        ],
        "overall": overall.to_json(),
    }


def exit_status(reports: Sequence[ProjectReport]) -> int:
    if any(r.tally.false or r.tally.untriaged for r in reports):
        return 1
    return 2 if any(r.tally.error for r in reports) else 0


def evaluate(
    project: Project, seen: Sequence[Seen], figures: Tally, entries: Sequence[Entry]
) -> ProjectReport:
    """A project's report: its findings judged by its table, its run's figures added."""
    judged = sorted(
        (judge(item, entries) for item in seen),
        key=lambda j: (j.seen.confidence.value, j.seen.package, j.seen.target, j.seen.kind),
    )
    figures_of = tally(judged)
    figures_of.cells, figures_of.unknown = figures.cells, figures.unknown
    figures_of.seconds, figures_of.decided = figures.seconds, figures.decided
    figures_of.error = figures.error
    figures_of.stale = len(stale_entries(entries, judged))
    lost = lost_references(entries, seen) if figures.error is None else []
    figures_of.lost = len(lost)
    return ProjectReport(project, figures_of, judged, lost)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="*", help="names from the manifest (default: all)")
    parser.add_argument("--json", action="store_true", help="the figures and findings as JSON")
    parser.add_argument("--offline", action="store_true", help="read the cache only")
    parser.add_argument("--workers", type=int, default=2, help="parallel downloads")
    parser.add_argument("--manifest", type=Path, default=CORPUS / "projects.toml")
    parser.add_argument("--triage", type=Path, default=CORPUS / "triage", help="a folder")
    options = parser.parse_args(argv)
    try:
        projects = load_projects(options.manifest)
        unknown = sorted(set(options.projects) - {p.name for p in projects})
        if unknown:
            raise CorpusError(f"not in {options.manifest.name}: {', '.join(unknown)}")
        chosen = [p for p in projects if not options.projects or p.name in options.projects]
        tables = {p.name: load_triage(options.triage / f"{p.name}.toml") for p in chosen}
    except CorpusError as exc:
        print(f"surface_corpus: {exc}", file=sys.stderr)
        return 2
    reports = []
    for project in chosen:
        try:
            seen, figures = run_project(project, offline=options.offline, workers=options.workers)
        except Exception as exc:  # one project's failure must not hide the others' figures
            seen, figures = [], Tally(error=f"{type(exc).__name__}: {exc}"[:300])
        reports.append(evaluate(project, seen, figures, tables[project.name]))
        if not options.json:
            t = reports[-1].tally
            print(f"{project.spec}: {t.counted} counted, {t.seconds:.1f} s", file=sys.stderr)
    overall = Tally()
    for report in reports:
        overall.add(report.tally)
    if options.json:
        print(json.dumps(report_json(reports, overall), indent=1))
    else:
        print(table(reports, overall))
        for line in details(reports):
            print(line)
        stale = sum(r.tally.stale for r in reports)
        if stale:
            print(f"{stale} triage entries matched no finding (fixed, or keyed wrong)")
    return exit_status(reports)


if __name__ == "__main__":
    sys.exit(main())
