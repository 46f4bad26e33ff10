"""A surface run for people: each reference's outcomes folded into version ranges, in the
order a maintainer should read them.

1. **Hard breaks**: a reference missing on a release inside the target's declared range
   that crashes where it is used (an import, an attribute read, an assignment on what is
   gone, an item assignment): the releases the project pins itself (``==``) first of all.
2. **Silent breaks**: missing inside the range where the miss does not crash: every site
   is guarded (``try/except``, ``hasattr``, a version test), an assignment binds the name
   (it never raises), or an anchor no longer applies. The patch silently does nothing (a
   guarded import fails into its fallback), which is what a canary exists to catch. An
   anchor's entry shows the upstream diff of the function it is applied to between the last
   release where it applied and the first where it does not.
3. **Came later than the declared floor**: missing inside the range only on releases
   older than the first that has it: the project needs a newer upstream for it ("needs
   transformers>=X"; an assignment that binds it does nothing there, it does not break):
   raise the floor or guard the use. Each says whether it counts (it fails the run) or not
   (every site that runs there is guarded, or a model package the release lacks, used
   only where that model runs: :mod:`canary.surface.findings`).
4. **The rest**: misses outside the declared range or where no site runs (a version test
   excludes the release), of a name the project adds itself (a compat shim, its own
   attribute), and what could not be decided (``unknown``, never reported as missing);
   references fine everywhere are counted.

Which misses are held against the target (the *findings*) is the caller's to say (the
resolver knows the configuration's accepted entries and the baseline); without it, every
miss inside a declared range where a site runs is one. The anchored functions' sources
come through an :class:`AnchorSource` the caller gives, so this module never fetches.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from canary import codeindex, versions
from canary.errors import ConfigError, Subject
from canary.report.diff import UpstreamDiff, diff_subject
from canary.report.matrix import range_label, runs
from canary.report.render import diff_excerpt, markdown_cell, workflow_command
from canary.surface.findings import Finding, findings_of_result, in_range
from canary.surface.model import (
    Kind,
    Match,
    Outcome,
    Reference,
    Resolved,
    Site,
    SurfaceResult,
    Target,
)

FORMATS = ("terminal", "markdown", "json", "github")

HARD = "hard"
SILENT = "silent"
LATER = "later"
REST = "rest"
POSSIBLE = "possible"
SECTIONS = (HARD, SILENT, LATER, POSSIBLE, REST)

ReferenceKey = tuple[object, ...]  # Reference.key

_PIN_OPERATORS = ("==", "===")
_SITES_SHOWN = 3
_ANCHOR_SHOWN = 70  # characters of an anchor's text in a heading
_TERMINAL_DIFF_LINES = 40


class AnchorSource(Protocol):
    """Where the report reads an anchored function on a release (the caller reads through
    its workspace; a test gives a fake)."""

    def locate(self, reference: Reference, version: str) -> Subject | None:
        """The file and qualname of the function ``reference`` is anchored in, on
        ``version``; None where it cannot be found there."""

    def module(self, package: str, version: str, path: str) -> codeindex.Module | None:
        """``path`` of ``package`` at ``version``, parsed; None where the release lacks it."""


@dataclass(frozen=True)
class Span:
    """Consecutive versions (in the order checked) with one outcome."""

    outcome: Outcome
    versions: tuple[str, ...]
    # False: a registry reads another of its sources there (ok, but nothing was found)
    read: bool = True

    @property
    def label(self) -> str:
        return range_label(self.versions[0], self.versions[-1])


@dataclass(frozen=True)
class AnchorDiff:
    """The anchored function between ``good`` (the anchor applied) and ``bad`` (it no
    longer does)."""

    good: str
    bad: str
    upstream: UpstreamDiff


@dataclass(frozen=True)
class Entry:
    """One reference in the report."""

    resolved: Resolved
    section: str
    spans: tuple[Span, ...]
    held: tuple[str, ...]  # versions where the miss is held against the target
    pinned: tuple[str, ...]  # of those, the versions the target pins itself
    diffs: tuple[AnchorDiff, ...] = ()
    since: str | None = None  # came later: the first release that has it
    excused: dict[str, str] | None = None  # came later, not counted: release -> why
    possible: str = ""  # why a miss inside the range is only possible (POSSIBLE)
    silently: bool = False  # a miss does not raise: the patch or anchor does nothing there
    added: str = ""  # why its misses are of a name the project adds itself, not held

    @property
    def reference(self) -> Reference:
        return self.resolved.reference

    @property
    def first(self) -> str | None:
        """The version this entry is about: the first held against the target, else the
        first that is not ``ok``."""
        if self.held:
            return self.held[0]
        return next(
            (v for s in self.spans if s.outcome is not Outcome.OK for v in s.versions), None
        )


@dataclass(frozen=True)
class SurfaceReport:
    result: SurfaceResult
    entries: tuple[Entry, ...]  # every reference with something to say, in reading order
    fine: int  # references ok on every version checked
    everything: bool = False  # --all: the misses outside the range too, whole histories
    unchecked: int = 0  # references to a package no release of which was checked

    @property
    def sections(self) -> tuple[str, ...]:
        """The sections shown: by default the findings inside the declared range."""
        return SECTIONS if self.everything else (HARD, SILENT, LATER, POSSIBLE)

    def section(self, name: str) -> list[Entry]:
        return [entry for entry in self.entries if entry.section == name]


# -- deciding --------------------------------------------------------------------------


def declared_range(targets: Iterable[Target], package: str) -> list[SpecifierSet]:
    """Each target's requirement on ``package``. A target that declares none is not
    constrained by it (it uses the package all the same): every release is inside."""
    found = []
    for target in targets:
        text = target.requires.get(package, "")
        try:
            found.append(SpecifierSet(text))
        except InvalidSpecifier:
            raise ConfigError(
                f"{target.name}: its requirement on {package} ({text!r}) is not a PEP 440 "
                f"specifier; fix the project's Requires-Dist"
            ) from None
    return found


def inside(specifiers: Iterable[SpecifierSet], version: str) -> bool:
    """Whether ``version`` is inside one of the ranges, as the findings decide it
    (:func:`canary.surface.findings.in_range`: a pre-release counts as its release,
    ``main`` is newer than every release)."""
    return any(in_range(version, specifier) for specifier in specifiers)


def default_findings(result: SurfaceResult) -> tuple[Finding, ...]:
    """Every miss on a version inside a target's declared range where a site runs
    (nothing accepted; no model package known absent, so only guarded came-later misses
    are excused)."""
    return findings_of_result(result)


def own_pins(result: SurfaceResult) -> dict[str, frozenset[str]]:
    """Per package, the versions checked that a target pins itself (``==X``, ``==X.*``,
    ``===X``): the releases its users actually run, so their breaks come first."""
    pins: dict[str, frozenset[str]] = {}
    for package, checked in result.packages.items():
        pinned = set()
        for specifier_set in declared_range(result.targets, package):
            for spec in specifier_set:
                if spec.operator in _PIN_OPERATORS:
                    pinned.update(
                        v for v in checked if (p := versions.parse(v)) and spec.contains(p, True)
                    )
        pins[package] = frozenset(pinned)
    return pins


def silent(reference: Reference, owner_missing: bool = False) -> bool:
    """A miss of this reference does not crash: the patch silently does nothing. An
    anchor that no longer matches (unless the project raises without it at every site: a
    check), a guarded use (unless a guard raises its ImportError again), and an assignment
    that binds the name at every site (``X.f = mine`` never raises while ``X`` is there;
    ``owner_missing``: it is not, and that raises; ``X.f[k] = v`` and ``X.f += v`` read
    ``X.f`` first, and raise)."""
    binds = bool(reference.sites) and all(site.replaces for site in reference.sites)
    if reference.kind is Kind.PATCH and binds and not owner_missing:
        return True
    if reference.kind is Kind.ANCHOR:
        return not (reference.sites and all(site.raises for site in reference.sites))
    return reference.guarded and not any(site.raises for site in reference.sites)


def build(
    result: SurfaceResult,
    *,
    findings: Sequence[Finding] | None = None,
    sources: AnchorSource | None = None,
    everything: bool = False,
) -> SurfaceReport:
    """The report's entries, in reading order; ``findings`` default to
    :func:`default_findings`; without ``sources`` anchors get no diff."""
    found = default_findings(result) if findings is None else findings
    held_against = {(f.reference.key, v) for f in found for v in f.new}
    later = {(f.reference.key, v) for f in found for v in f.came_later}
    since = {f.reference.key: f.since for f in found if f.came_later}
    excused = {(f.reference.key, v): why for f in found for v, why in f.excused.items()}
    possible = {f.reference.key: f.possible for f in found if f.possible and f.new}
    # a name the project adds itself: why its misses are not held (one reason per reference)
    added = {f.reference.key: next(iter(f.added.values())) for f in found if f.added}
    pins = own_pins(result)
    gone: dict[str, set[str]] = {}  # target -> releases where it is missing
    for item in result.references:
        if item.reference.kind is not Kind.ANCHOR:
            misses = {v for v, o in item.outcomes.items() if o is Outcome.MISSING}
            gone.setdefault(item.reference.target, set()).update(misses)
    entries, fine, unchecked = [], 0, 0
    for resolved in result.references:
        reference = resolved.reference
        order = _order(result, resolved)
        if not order:  # no release of its package was read: fine nowhere, not everywhere
            unchecked += 1
            continue
        held = tuple(v for v in order if (reference.key, v) in held_against)
        if held and not everything:  # a finding's history inside the declared range only
            ranges = declared_range(result.targets, reference.package)
            order = [v for v in order if inside(ranges, v)]
        came_later = [v for v in order if (reference.key, v) in later]
        if not held and not came_later and all(resolved.outcomes[v] is Outcome.OK for v in order):
            fine += 1
            continue
        removed = [v for v in held if (reference.key, v) not in later]
        owner = gone.get(reference.target.rpartition(".")[0], ())
        quiet = silent(reference, (removed or came_later or [""])[0] in owner)
        if reference.key in possible:
            section = POSSIBLE
        elif removed:
            section = SILENT if quiet else HARD
        else:
            section = LATER if came_later else REST
        spans = _spans(resolved, order)
        diffs: tuple[AnchorDiff, ...] = ()
        if reference.kind is Kind.ANCHOR and sources is not None:
            diffs = tuple(_anchor_diffs(reference, spans, sources))
        pinned = tuple(v for v in held if v in pins.get(reference.package, ()))
        waived = {v: excused[reference.key, v] for v in came_later if (reference.key, v) in excused}
        entries.append(
            Entry(
                resolved,
                section,
                spans,
                held,
                pinned,
                diffs,
                since.get(reference.key),
                waived,
                possible.get(reference.key, ""),
                quiet,
                added.get(reference.key, ""),
            )
        )
    entries.sort(key=lambda entry: _reading_order(result, entry))
    return SurfaceReport(result, tuple(entries), fine, everything, unchecked)


def _spans(resolved: Resolved, order: Sequence[str]) -> tuple[Span, ...]:
    """The outcomes in ``order`` folded, a release where the reference is not read (a
    registry reads another source there) apart from one where it is read and ok."""
    folded = runs(order, lambda v: (resolved.outcomes[v], resolved.read_on(v)))
    return tuple(Span(outcome, versions, read) for (outcome, read), versions in folded)


def _order(result: SurfaceResult, resolved: Resolved) -> list[str]:
    """The versions this reference was resolved on, in the order the run checked them."""
    checked = result.packages.get(resolved.reference.package, ())
    order = [v for v in checked if v in resolved.outcomes]
    return order + [v for v in resolved.outcomes if v not in checked]


def _reading_order(result: SurfaceResult, entry: Entry) -> tuple[int, bool, str, int, str, str]:
    reference = entry.reference
    checked = result.packages.get(reference.package, ())
    first = entry.first
    position = checked.index(first) if first in checked else len(checked)
    return (
        SECTIONS.index(entry.section),
        not entry.pinned,
        reference.package,
        position,
        reference.target,
        reference.anchor or "",
    )


def _anchor_diffs(
    reference: Reference, spans: tuple[Span, ...], sources: AnchorSource
) -> Iterable[AnchorDiff]:
    """Each place the anchor stopped applying: the last ``ok`` before a ``missing`` span
    (``unknown`` between them is stepped over: it says nothing either way, as does a
    release where the reference is not read)."""
    good: str | None = None
    for span in spans:
        if span.outcome is Outcome.OK and span.read:
            good = span.versions[-1]
        elif span.outcome is Outcome.MISSING and good is not None:
            bad = span.versions[0]
            yield AnchorDiff(good, bad, _diff_function(reference, good, bad, sources))
            good = None


def _diff_function(
    reference: Reference, good: str, bad: str, sources: AnchorSource
) -> UpstreamDiff:
    subject = sources.locate(reference, good)
    if subject is None or subject.path is None:
        why = f"{reference.target} cannot be located in {good} to diff"
        return UpstreamDiff(subject, "", why)
    package = reference.package
    old = sources.module(package, good, subject.path)
    new = sources.module(package, bad, subject.path)
    if not subject.qualname and old is not None:
        # An anchor in a whole module's source: diff the function that held the text.
        qualname = holding(old, reference)
        if qualname is None:
            why = f"no function or class of {subject.path} in {good} holds the anchor's text"
            return UpstreamDiff(subject, "", why)
        subject = Subject(subject.path, qualname)
    return diff_subject(subject, old, new, good, bad)


def holding(module: codeindex.Module, reference: Reference) -> str | None:
    """The innermost function (else class) of ``module`` whose source holds the anchor's
    text (this only picks what to diff: the outcome was decided exactly)."""
    holds = _finder(reference)
    classes = list(module.classes.values())
    for cls in classes:
        classes.extend(cls.classes.values())
    functions = [*module.functions.values(), *(m for c in classes for m in c.methods.values())]
    found = next((f.qualname for f in functions if holds(f.source)), None)
    return found or next((c.qualname for c in reversed(classes) if holds(c.source)), None)


def _finder(reference: Reference) -> Callable[[str], bool]:
    """Whether a source holds the anchor: a pattern searched as one, a text whitespace
    aside (a method's source starts at its ``def``, not at its line's indentation)."""
    anchor = reference.anchor or ""
    if reference.match in (Match.REGEX, Match.REGEX_DEDENTED):
        try:
            pattern = re.compile(anchor)
        except re.error:
            return lambda source: False
        return lambda source: pattern.search(source) is not None
    wanted = " ".join(anchor.split())
    return lambda source: wanted in " ".join(source.split())


# -- rendering -------------------------------------------------------------------------


def render(
    result: SurfaceResult,
    fmt: str,
    *,
    findings: Sequence[Finding] | None = None,
    sources: AnchorSource | None = None,
    everything: bool = False,
) -> str:
    """The result in ``fmt`` (one of :data:`FORMATS`; ``json`` is the JSON contract);
    ``everything`` (--all): the misses outside the declared range too."""
    if fmt == "json":
        return json.dumps(result.to_json(), indent=1, ensure_ascii=False) + "\n"
    report = build(result, findings=findings, sources=sources, everything=everything)
    return {"terminal": terminal, "markdown": markdown, "github": github}[fmt](report)


def summary(report: SurfaceReport) -> str:
    """One line: what was checked and what was found."""
    result = report.result
    names = ", ".join(_target_name(t.name, t.version) for t in result.targets) or "no target"
    checked = "; ".join(
        f"{package} {len(vs)} version(s)" for package, vs in result.packages.items() if vs
    )
    # the verdict's count: references held against the target (counted), by label
    counted = {name: sum(1 for e in report.section(name) if e.held) for name in SECTIONS}
    total = counted[HARD] + counted[SILENT] + counted[LATER]
    counts = (
        f"{total} counted: {counted[HARD]} break(s), {counted[SILENT]} silently stop(s) "
        f"applying, {counted[LATER]} came later than the declared floor; "
        f"{len(report.section(POSSIBLE))} possible"
    )
    others = len(report.section(REST)) + sum(
        1 for name in (HARD, SILENT, LATER) for e in report.section(name) if not e.held
    )
    hidden = "" if report.everything else " (--all shows them)"
    return (
        f"canary surface of {names}: {len(result.references)} references over "
        f"{checked or 'no release'}: {counts}; {others} not counted (outside the declared "
        f"range, excused or undecided){hidden}; {report.fine} fine everywhere"
        + (f"; {report.unchecked} on no release checked" if report.unchecked else "")
    )


def _target_name(name: str, version: str | None) -> str:
    return f"{name} {version}" if version else name


def heading(reference: Reference) -> str:
    """``transformers.trainer.Trainer.compute_loss (patch)``; an anchor shows its text."""
    if reference.kind is Kind.ANCHOR:
        anchor = reference.anchor or ""
        shown = anchor if len(anchor) <= _ANCHOR_SHOWN else anchor[: _ANCHOR_SHOWN - 3] + "..."
        match = f", {reference.match}" if reference.match else ""
        return f"{reference.target} (anchor{match}: {shown!r})"
    return f"{reference.target} ({reference.kind})"


def _guard(reference: Reference, site: Site) -> str:
    if not site.guarded:
        return ""
    if reference.kind is Kind.IMPORT and site.raises:
        return " (guarded, its ImportError raised again)"
    return " (guarded)"


def sites(reference: Reference) -> str:
    """Where the target uses it: ``unsloth/models/llama.py:12 (guarded), ...``."""
    # one line's sites under different conditions (a module's, once per importer) once
    lines = list(dict.fromkeys(f"{s.path}:{s.line}{_guard(reference, s)}" for s in reference.sites))
    shown = lines[:_SITES_SHOWN]
    if len(lines) > _SITES_SHOWN:
        shown.append(f"and {len(lines) - _SITES_SHOWN} more")
    return ", ".join(shown) or "(no site recorded)"


def spans_text(entry: Entry) -> str:
    """The outcomes folded: ``4.46.0-5.1.0: ok (20), 5.2.0-5.5.3: MISSING (5)`` (the ranges
    joined by an en dash)."""
    parts = []
    for span in entry.spans:
        count = f" ({len(span.versions)})" if len(span.versions) > 1 else ""
        shown = "MISSING" if span.outcome is Outcome.MISSING else str(span.outcome)
        shown = shown if span.read else "not read"
        parts.append(f"{span.label}: {shown}{count}")
    return ", ".join(parts)


def why(entry: Entry) -> str | None:
    """What upstream has instead (or why it cannot be decided) on :attr:`Entry.first`."""
    return entry.resolved.why.get(entry.first) if entry.first is not None else None


_TITLES = {
    HARD: "Breaks inside the declared range (an import, call or read that raises)",
    SILENT: "Silently stops applying inside the declared range (a patch or anchor no longer "
    "takes effect, or a guarded import fails into its fallback)",
    POSSIBLE: (
        "Possible findings (missing inside the declared range, but whether the site runs "
        "there depends on a test canary cannot evaluate: not counted unless --strict)"
    ),
    LATER: (
        "Came later than the declared floor (the project needs a newer upstream for "
        "these: raise the floor, or guard the use)"
    ),
    REST: (
        "Misses outside the declared range, where no site runs or of a name the project adds "
        "itself, and what could not be decided"
    ),
}


def later_text(entry: Entry) -> str | None:
    """``needs transformers>=5.2.0; counts on 5.0.0-5.1.0: fails the run`` and/or ``not
    counted on ...: why``, for an entry that came later (None for the others)."""
    if entry.since is None or entry.section != LATER:
        return None
    package = entry.reference.package
    parts = [f"needs {package}>={entry.since}"]
    if entry.held:
        parts.append(f"counts on {_range(entry.held)}: fails the run")
    if entry.excused:
        waived = list(entry.excused)
        parts.append(f"not counted on {_range(waived)}: {entry.excused[waived[0]]}")
    return "; ".join(parts)


def added_text(entry: Entry) -> str | None:
    """``not counted: a compat alias: ...`` for a name the project adds (None otherwise)."""
    return f"not counted: {entry.added}" if entry.added else None


def _range(labels: Sequence[str]) -> str:
    return range_label(labels[0], labels[-1])


def terminal(report: SurfaceReport) -> str:
    out = [summary(report), ""]
    for name in report.sections:
        entries = report.section(name)
        if not entries:
            continue
        out += [f"{_TITLES[name]} ({len(entries)}):", ""]
        for entry in entries:
            reference = entry.reference
            pinned = f" [pinned: {', '.join(entry.pinned)}]" if entry.pinned else ""
            out.append(f"{reference.package} {heading(reference)}{pinned}")
            out.append(f"  used at {sites(reference)}")
            if (text := later_text(entry)) is not None:
                out.append(f"  {text}")
            if entry.possible:
                out.append(f"  possible: {entry.possible}")
            if (text := added_text(entry)) is not None:
                out.append(f"  {text}")
            out.append(f"  {spans_text(entry)}")
            if (text := why(entry)) is not None:
                out.append(f"  upstream: {text}")
            for diff in entry.diffs:
                out.append(f"  applied in {diff.good}, not in {diff.bad}: {diff.upstream.note}")
                out.extend(
                    diff_excerpt(diff.upstream.diff, _TERMINAL_DIFF_LINES, "--format markdown")
                )
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def markdown(report: SurfaceReport) -> str:
    out = [f"## {summary(report)}", ""]
    for name in report.sections:
        entries = report.section(name)
        if not entries:
            continue
        out += [f"### {_TITLES[name]} ({len(entries)})", ""]
        out += ["| package | reference | used at | outcomes in version order | upstream |"]
        out += ["| --- | --- | --- | --- | --- |"]
        for entry in entries:
            reference = entry.reference
            pinned = f" **pinned: {', '.join(entry.pinned)}**" if entry.pinned else ""
            cells = (
                reference.package,
                f"`{markdown_cell(heading(reference))}`{pinned}",
                markdown_cell(sites(reference)),
                markdown_cell(
                    "; ".join(
                        filter(None, (later_text(entry), added_text(entry), spans_text(entry)))
                    )
                ),
                markdown_cell(why(entry) or ""),
            )
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        for entry in entries:
            out += _markdown_details(entry)
    return "\n".join(out).rstrip() + "\n"


def _markdown_details(entry: Entry) -> list[str]:
    """An anchor's upstream diffs, under the table."""
    if not entry.diffs:
        return []
    out = [f"#### `{markdown_cell(heading(entry.reference))}`", ""]
    for diff in entry.diffs:
        out += [f"Applied in {diff.good}, not in {diff.bad}: {diff.upstream.note}.", ""]
        if diff.upstream.diff:
            out += [
                "<details><summary>upstream diff</summary>",
                "",
                "```diff",
                diff.upstream.diff.rstrip(),
                "```",
                "",
                "</details>",
                "",
            ]
    return out


def github(report: SurfaceReport) -> str:
    """One ``::error`` per reference held against the target, at its first site (GitHub
    shows a handful of annotations per step; the Markdown report has the rest)."""
    out = []
    for entry in report.entries:
        if entry.section == REST or not entry.held:
            continue  # a came-later miss that does not count is in the summary's count
        reference = entry.reference
        site = reference.sites[0] if reference.sites else None
        kind = _what_happens(entry)
        if entry.section == LATER:
            kind = f"{kind} (needs {reference.package}>={entry.since})"
        title = f"canary surface: {reference.package} {_held_range(entry)} {kind}"
        body = f"{heading(reference)}: {spans_text(entry)}"
        if (text := why(entry)) is not None:
            body += f"\nupstream: {text}"
        props = {
            "file": site.path if site else None,
            "line": site.line if site else None,
            "title": title,
        }
        out.append(workflow_command("error", props, body))
    out.append(summary(report))
    return "\n".join(out) + "\n"


def _what_happens(entry: Entry) -> str:
    """What the miss does at the site: it raises, a patch or anchor silently does nothing,
    or a guarded import fails into its fallback (no patch of its own to stop)."""
    if not entry.silently:
        return "breaks"
    if entry.reference.kind is Kind.IMPORT:
        return "fails into its fallback (guarded)"
    return "silently does nothing"


def _held_range(entry: Entry) -> str:
    return range_label(entry.held[0], entry.held[-1])
