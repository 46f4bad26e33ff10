"""One surface run: targets -> references -> outcomes on every release -> findings -> exit.

The releases are the static tier's cases (tags.toml, ``--tags`` filtering them like
``--canary-tags``), read through the same workspace, cache and code index. Exit status as
``report``'s: 0 nothing missing, 1 a reference missing on a release inside a target's
declared range and not accepted (it wins over errors: it is the finding), 2 nothing or
not everything was checked (a release that could not be read, a target with no upstream
reference).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from canary import versions
from canary.atomic import write_atomically
from canary.discovery import Releases, discover, listed_only
from canary.errors import InfrastructureError, Subject
from canary.report.matrix import DASH
from canary.report.results import EXIT_CLEAR, EXIT_DRIFT, EXIT_INFRASTRUCTURE
from canary.report.verdict import CaseError, describe, group_errors
from canary.run import Run, RunOptions, open_run
from canary.surface.baseline import Baseline, load_baseline, write_baseline
from canary.surface.coinstall import conflict
from canary.surface.findings import (
    Finding,
    ModelPackages,
    findings,
    model_package,
    with_inherited,
)
from canary.surface.memo import Memo
from canary.surface.model import (
    Kind,
    Outcome,
    Reference,
    Resolved,
    SurfaceResult,
    merge_references,
    model_alternatives,
)
from canary.surface.pins import exact_pins, pinned_out
from canary.surface.pipeline import TARGETS_FOLDER, Surface, open_surface
from canary.surface.resolve import MakeTree, WorkspaceSources, release_of, resolve, salt
from canary.tags import SHIPPED_TAGS, Tags
from canary.workspace import Case, Workspace


@dataclass(frozen=True)
class SurfaceOptions:
    """What ``python -m canary surface`` was asked, as given."""

    targets: tuple[str, ...]
    tags: tuple[str, ...] = ()  # "PKG=V1,V2", as --canary-tags
    offline: bool = False
    tags_file: Path | None = None  # None: the lists this canary ships, and newer releases
    config: Path | None = None  # instead of each target's [tool.canary.surface]
    baseline: Path | None = None
    update_baseline: bool = False
    strict: bool = False  # possible findings fail the run too
    everything: bool = False  # --all: the report shows what is not counted too
    workers: int = 4
    also: tuple[tuple[str, Path], ...] = ()  # (format, file): more reports of the same run


@dataclass
class SurfaceRun:
    """What a surface run found, and what it could not check."""

    result: SurfaceResult
    findings: tuple[Finding, ...]  # every finding, accepted or not
    errors: list[tuple[Case, InfrastructureError]] = field(default_factory=list)
    empty: tuple[str, ...] = ()  # targets without a single upstream reference
    stale: int = 0  # baseline entries no finding matches any more
    seconds: dict[str, float] = field(default_factory=dict)  # per phase
    recalled: int = 0  # outcomes recalled from the file digests
    decided: int = 0  # outcomes looked up afresh
    text: str = ""  # the rendered report
    releases: Releases | None = None  # where the releases came from (None: not told)
    written: tuple[Path, int] | None = None  # --update-baseline: the file, its entries

    strict: bool = False  # possible findings fail the run too
    everything: bool = False  # --all: the report shows what is not counted too

    @property
    def failing(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.fails or (self.strict and f.new))

    @property
    def possible(self) -> tuple[Finding, ...]:
        """Findings on releases inside the range that canary cannot prove run there."""
        return tuple(f for f in self.findings if f.new and f.possible)

    @property
    def exit_status(self) -> int:
        if self.failing and self.written is None:  # written: the findings are the baseline
            return EXIT_DRIFT
        checked = any(self.result.packages.values())
        unasked = self.releases is not None and self.releases.failed
        if self.errors or self.empty or not checked or unasked:
            return EXIT_INFRASTRUCTURE
        return EXIT_CLEAR


def run_surface(
    options: SurfaceOptions, *, fmt: str = "json", make_tree: MakeTree | None = None
) -> SurfaceRun:
    """Extract every target, resolve its references on every release, decide findings
    and render them in ``fmt`` (while the releases are at hand: the report diffs anchored
    functions); with ``update_baseline``, write the findings as the baseline."""
    baseline = None  # bad input stops the run before any work
    if options.baseline is not None and not options.update_baseline:
        baseline = load_baseline(options.baseline)
    run = open_run(
        RunOptions(
            offline=options.offline,
            tags_file=options.tags_file or SHIPPED_TAGS,
            workers=options.workers,
            # Outcomes and __all__ readings are remembered: the files need no entries.
            keep_files=False,
        ),
        Path.cwd(),
    )
    try:
        started = time.perf_counter()
        surfaces = _extract(options, run)
        pins = (*options.tags, *(pin for surface in surfaces for pin in surface.tags))
        releases = _releases_to_check(options, run.tags, pins)
        run.pin(releases.tags, pins)
        extracted = time.perf_counter() - started
        surface_run = check_surfaces(
            surfaces, run.workspace, run.cases, baseline=baseline, make_tree=make_tree
        )
        surface_run.releases = releases
        started = time.perf_counter()
        cases = {package: run.cases(package) for package in surface_run.result.packages}
        sources = WorkspaceSources(run.workspace, cases, make_tree=make_tree)
        surface_run.everything = options.everything
        surface_run.text = render(surface_run, fmt, sources=sources)
        for other, path in options.also:  # one run, several readers (a CI job's summary)
            write_atomically(path, render(surface_run, other, sources=sources))
        rendered = time.perf_counter() - started
    finally:
        run.close()
    surface_run.seconds = {"extract": extracted, **surface_run.seconds, "render": rendered}
    surface_run.strict = options.strict
    if options.update_baseline and options.baseline is not None:
        entries = write_baseline(
            options.baseline, surface_run.result.packages, surface_run.findings
        )
        surface_run.written = (options.baseline, entries)
    return surface_run


def _extract(options: SurfaceOptions, run: Run) -> list[Surface]:
    """Each target opened (a wheel of ``NAME==VERSION`` kept under the cache) and its
    references to the packages in tags.toml, extracted with its configuration."""
    cache = run.workspace.cache
    download_dir = cache.root / TARGETS_FOLDER if cache is not None else Path(TARGETS_FOLDER)
    upstream = tuple(run.tags.packages)
    return [
        open_surface(
            spec,
            upstream=upstream,
            download_dir=download_dir,
            offline=options.offline,
            config=options.config,
        ).surface
        for spec in options.targets
    ]


def _releases_to_check(options: SurfaceOptions, tags: Tags, pins: Sequence[str]) -> Releases:
    """The releases to check: a tags file given is the whole list; the shipped one gains
    the releases on the index newer than it, for every package no pin names."""
    if options.tags_file is not None or options.offline:
        return listed_only(tags)
    return discover(tags, pinned={pin.partition("=")[0].strip() for pin in pins})


def check_surfaces(
    surfaces: Sequence[Surface],
    workspace: Workspace,
    cases_of: Callable[[str], Sequence[Case]],
    *,
    baseline: Baseline | None = None,
    make_tree: MakeTree | None = None,
    decide_only: Collection[Case] | None = None,
) -> SurfaceRun:
    """Resolve the surfaces' references on every case of their packages (``cases_of``:
    a package's cases, oldest first) and decide each target's findings; ``decide_only``:
    the cases that may be read, the others count with what is remembered of them."""
    references = _merged(surface.references for surface in surfaces)
    packages = sorted({ref.package for ref in references})
    cases = {package: cases_of(package) for package in packages}
    errors: list[tuple[Case, InfrastructureError]] = []
    memo = Memo(workspace.cache, salt())
    started = time.perf_counter()
    extra = _model_packages(references)
    everything = resolve(
        references + extra,
        cases,
        workspace,
        memo=memo,
        make_tree=make_tree,
        on_error=lambda case, exc: errors.append((case, exc)),
        decide_only=decide_only,
    )
    # the model packages are asked only to excuse came-later misses: no finding, no output
    helpers = {ref.key for ref in extra}
    resolved = tuple(item for item in everything if item.reference.key not in helpers)
    absent = _absent(everything)
    failed = {case for case, _ in errors}
    checked = {
        package: tuple(case.label for case in listed if case not in failed)
        for package, listed in cases.items()
    }
    by_key = {item.reference.key: item for item in resolved}
    found = _decide(surfaces, by_key, absent, baseline)
    sources = WorkspaceSources(workspace, cases, make_tree=make_tree)
    installable = _installable(surfaces, found, sources)
    if installable is not surfaces:
        surfaces = installable
        found = _decide(surfaces, by_key, absent, baseline)
    # A came-later class transformers exports at its top level lives in a model package
    # too (transformers.Gemma3ForConditionalGeneration): where, is read on the release
    # that first has it, and the package is asked of the others like the rest. A patched
    # member its class had only by inheritance, from a class it no longer derives from:
    # that class's member, read where the class last had it, and asked of every release.
    homes = _model_homes(found, sources, decide_only, memo)
    providers = _providers(found, by_key, sources, decide_only, memo)
    named = _named_models(found)
    known = {ref.key for ref in references + extra}
    more = [
        ref
        for ref in (
            Reference("transformers", p, Kind.IMPORT, ())
            for p in sorted(set(homes.values()) | named)
        )
        if ref.key not in known
    ]
    more += [Reference(pkg, m, Kind.ATTRIBUTE, ()) for pkg, m in sorted(set(providers.values()))]
    for package in sorted({ref.package for ref in more}):
        everything += resolve(
            [ref for ref in more if ref.package == package],
            {package: cases[package]},
            workspace,
            memo=memo,
            make_tree=make_tree,
            on_error=lambda case, exc: None if case in failed else errors.append((case, exc)),
            decide_only=decide_only,
        )
    if homes or named:
        found = _decide(surfaces, by_key, _absent(everything), baseline, homes)
    if providers:
        outcomes = {
            item.reference.target: item.outcomes
            for item in everything
            if item.reference.kind is Kind.ATTRIBUTE  # a presence: what a provider is asked
        }
        members = {t: (m, outcomes.get(m, {})) for t, (_, m) in providers.items()}
        found = with_inherited(found, members)
    seconds = {"resolve": time.perf_counter() - started}
    result = SurfaceResult(tuple(s.target for s in surfaces), checked, resolved)
    return SurfaceRun(
        result,
        tuple(found),
        errors,
        empty=tuple(s.target.name for s in surfaces if not s.references),
        stale=len(baseline.stale(found)) if baseline is not None else 0,
        seconds=seconds,
        recalled=memo.hits,
        decided=memo.misses,
    )


def _installable(
    surfaces: Sequence[Surface], found: Sequence[Finding], sources: WorkspaceSources
) -> Sequence[Surface]:
    """The surfaces, each target told which releases it has misses on cannot be installed
    beside it (:mod:`canary.surface.coinstall`); ``surfaces`` itself where none is."""
    asked: dict[tuple[str, str], dict[str, str] | None] = {}
    changed = []
    for surface in surfaces:
        target = surface.target
        uninstallable: dict[str, dict[str, str]] = {}
        pins = exact_pins(target.dependencies)
        pinned: dict[str, dict[str, str]] | None = None  # read once a finding needs them
        for finding in found:
            if finding.target != target.name or not target.dependencies:
                continue
            package = finding.reference.package
            for version in finding.missing:
                if (package, version) not in asked:
                    asked[package, version] = sources.requirements(package, version)
                release = asked[package, version]
                why = conflict(target.dependencies, release) if release is not None else None
                if why is None and pins:
                    if pinned is None:
                        pinned = sources.pinned_requirements(pins)
                    why = pinned_out(pinned, pins, package, version)
                if why is not None:
                    uninstallable.setdefault(package, {})[version] = (
                        f"{package} {version} cannot be installed beside {target.name}: {why}"
                    )
        if uninstallable:
            target = replace(target, uninstallable=uninstallable)
        changed.append(replace(surface, target=target) if target is not surface.target else surface)
    if all(a is b for a, b in zip(changed, surfaces, strict=True)):
        return surfaces
    return changed


def _decide(
    surfaces: Sequence[Surface],
    by_key: Mapping[tuple, Resolved],
    absent: ModelPackages,
    baseline: Baseline | None,
    homes: Mapping[str, str] | None = None,
) -> list[Finding]:
    found: list[Finding] = []
    for surface in surfaces:
        accepts = [a for a in (surface.accepts,) if a is not None]
        if baseline is not None:
            accepts.append(baseline.accepts(surface.target.name))
        # its own sites: where this target's code runs is what holds a miss against it
        own = (replace(by_key[ref.key], reference=ref) for ref in surface.references)
        found += findings(own, surface.target, accepts=accepts, absent=absent, homes=homes)
    return found


def _providers(
    found: Sequence[Finding],
    by_key: Mapping[tuple, Resolved],
    sources: WorkspaceSources,
    readable: Collection[Case] | None,
    memo: Memo,
) -> dict[str, tuple[str, str]]:
    """Patched members still counted as removed that their class had, on the last release
    before the miss, only by inheritance from a class of another name: each with (package,
    that class's member), read on that release once, ever (remembered like an outcome)."""
    wanted: dict[tuple[str, str], set[str]] = {}  # (package, release) -> patched members
    for finding in found:
        reference = finding.reference
        item = by_key.get(reference.key)
        if finding.fails and reference.kind is Kind.PATCH and finding.removed and item:
            had = _last_there(item, before=finding.removed[0])
            if had is not None:
                wanted.setdefault((reference.package, had), set()).add(reference.target)
    members = _located_once(
        "provider", wanted, _inherited_from, sources=sources, readable=readable, memo=memo
    )
    return {target: (target.split(".", 1)[0], member) for target, member in members.items()}


def _located_once(
    kind: str,
    wanted: Mapping[tuple[str, str], set[str]],
    answer: Callable[[str, Subject | None], str],
    *,
    sources: WorkspaceSources,
    readable: Collection[Case] | None,
    memo: Memo,
) -> dict[str, str]:
    """What ``answer`` says ("": nothing) of where each dotted name ``wanted`` asks on a
    release is found there, read once, ever: remembered like an outcome under ``kind``; a
    release not ``readable`` this run answers only what was remembered."""
    found: dict[str, str] = {}
    for (package, version), names in sorted(wanted.items()):
        case = sources.cases.get((package, version))
        if case is None:
            continue
        label = release_of(case)
        unknown = []
        for name in sorted(names):
            remembered = memo.recall((kind, name), label)
            if remembered is None:
                unknown.append(name)
            elif remembered[1]:
                found[name] = remembered[1]
        if not unknown or (readable is not None and case not in readable):
            continue
        located = sources.locate_all(
            [Reference(package, name, Kind.ATTRIBUTE, ()) for name in unknown], version
        )
        for name, subject in zip(unknown, located, strict=True):
            said = answer(name, subject)
            if said:
                found[name] = said
            memo.remember((kind, name), label, Outcome.OK, said)
    memo.save()
    return found


def _last_there(item: Resolved, *, before: str) -> str | None:
    """The last release checked before ``before`` where the reference is ok (outcomes are
    kept oldest first)."""
    had = None
    for version, outcome in item.outcomes.items():
        if version == before:
            break
        had = version if outcome is Outcome.OK else had
    return had


def _inherited_from(target: str, subject: Subject | None) -> str:
    """The dotted member ``target`` (``pkg.mod.Class.name``) was found as, where that is a
    member of another class (inherited: ``GenerationMixin.generate`` for
    ``PreTrainedModel.generate`` before 4.50); "" otherwise."""
    if subject is None or not subject.path or not subject.qualname:
        return ""
    if subject.qualname.split(".")[0] == target.rsplit(".", 2)[-2]:
        return ""  # its own
    module = subject.path.removesuffix(".py").removesuffix("/__init__")
    return f"{module.replace('/', '.')}.{subject.qualname}"


def _model_homes(
    found: Sequence[Finding],
    sources: WorkspaceSources,
    readable: Collection[Case] | None,
    memo: Memo,
) -> dict[str, str]:
    """Top-level transformers names of came-later findings still counted or possible,
    each with the model package that defines it on the first release that has it (read
    there once, ever: remembered like an outcome). A possible one too: where that package
    is absent, the miss is excused, not possible (lmdeploy's ``qwen3_5.py`` holds a name
    of a model no release before 5.2 has)."""
    wanted: dict[tuple[str, str], set[str]] = {}  # (package, release) -> top-level names
    for finding in found:
        reference = finding.reference
        parts = reference.target.split(".")
        if (
            finding.new
            and finding.came_later
            and finding.since is not None
            and reference.package == "transformers"
            and model_package(reference.target) is None
            and len(parts) >= 2
        ):
            wanted.setdefault(("transformers", finding.since), set()).add(".".join(parts[:2]))
    return _located_once("home", wanted, _home_of, sources=sources, readable=readable, memo=memo)


def _named_models(found: Sequence[Finding]) -> set[str]:
    """The model packages the modules of counted findings' sites are named for
    (``qwen3_vl.py``): asked of every release only for those, as few are models' names."""
    return {
        site.named_for
        for finding in found
        if finding.fails
        for site in finding.reference.sites
        if site.named_for
    }


def _home_of(name: str, subject: Subject | None) -> str:
    """The model package ``name`` lives in, where it was found ("": none)."""
    if subject is None:
        return ""
    module = subject.path.removesuffix(".py").removesuffix("/__init__")
    return model_package(module.replace("/", ".")) or ""


def _model_packages(references: Sequence[Reference]) -> tuple[Reference, ...]:
    """The model packages of transformers the references lie in, or their sites' model-type
    tests and registrations ask for, as imports to resolve (those the targets do not import
    themselves): whether a release has the package at all is what excuses a came-later miss
    in it, what keeps a model's own branch from running, and what makes a registered one's
    miss possible."""
    known = {ref.key for ref in references}
    packages = sorted(
        {p for ref in references if (p := model_package(ref.target))}
        | {
            part
            for ref in references
            for site in ref.sites
            for required in (*site.requires, *site.registered)
            for part in model_alternatives(required)
        }
    )
    extra = (Reference("transformers", package, Kind.IMPORT, ()) for package in packages)
    return tuple(ref for ref in extra if ref.key not in known)


def _absent(resolved: Iterable[Resolved]) -> ModelPackages:
    """Where each model package was resolved missing (unknown is not absent), and which
    were there on some release."""
    imports = [
        item
        for item in resolved
        if item.reference.kind is Kind.IMPORT and model_package(item.reference.target)
    ]
    return ModelPackages(
        frozenset(
            (item.reference.target, version)
            for item in imports
            for version, outcome in item.outcomes.items()
            if outcome is Outcome.MISSING
        ),
        frozenset(
            item.reference.target
            for item in imports
            if any(outcome is Outcome.OK for outcome in item.outcomes.values())
        ),
    )


def _merged(groups: Iterable[Sequence[Reference]]) -> tuple[Reference, ...]:
    """One reference per key across targets, sites merged, in first-seen order."""
    return merge_references(ref for group in groups for ref in group)


def summary(surface_run: SurfaceRun) -> str:
    """A plain terminal summary: per package, outcomes counted over references x releases;
    then every finding inside a declared range, the failing ones first."""
    result = surface_run.result
    lines = []
    for target in result.targets:
        requires = ", ".join(f"{p}{s}" for p, s in sorted(target.requires.items())) or "nothing"
        lines.append(f"{target.name} {target.version or ''} (requires {requires})".rstrip())
    for package, labels in result.packages.items():
        counts: dict[Outcome, int] = dict.fromkeys(Outcome, 0)
        refs = [r for r in result.references if r.reference.package == package]
        for item in refs:
            for outcome in item.outcomes.values():
                counts[outcome] += 1
        spread = ", ".join(f"{outcome.value} {n:,}" for outcome, n in counts.items())
        lines.append(f"{package}: {len(refs):,} references on {len(labels)} releases: {spread}")
    shown = (f for f in surface_run.findings if f.missing)  # gated away entirely: not a miss
    ordered = sorted(shown, key=lambda f: (not f.fails, f.target, f.reference.key))
    for finding in ordered:
        ref = finding.reference
        site = ref.sites[0] if ref.sites else None
        where = f"{site.path}:{site.line}" if site else "?"
        versions = list(finding.new if finding.fails else finding.missing)
        state = "MISSING" if finding.fails else "accepted"
        if not finding.fails and finding.excused:
            state = f"came later (needs {ref.package}>={finding.since}), not counted"
        first_why = finding.missing[versions[0]]
        anchor = f" anchor {ref.anchor!r:.60}" if ref.anchor is not None else ""
        lines.append(
            f"{state} {ref.target} [{ref.kind.value}{anchor}] {finding.target} {where} "
            f"on {_releases(versions)}: {first_why}"
        )
    return "\n".join(lines) + "\n"


def below_oldest(result: SurfaceResult) -> list[str]:
    """A line per target and package whose declared floor lies below the oldest release
    checked: the releases between are allowed and never read (smolagents' ``>=4.0``). A
    range without a floor says nothing of where the project starts: no line."""
    lines = []
    for target in result.targets:
        for package, spec in sorted(target.requires.items()):
            checked = [v for v in result.packages.get(package, ()) if versions.parse(v)]
            oldest = min(checked, key=versions.parse, default=None)  # type: ignore[arg-type]
            if oldest is None or not _reaches_below(spec, oldest):
                continue
            lines.append(
                f"canary: {target.name} allows {package}{spec}, and the oldest release "
                f"checked is {oldest}: older ones are not checked (list them in a tags file "
                "to check them)"
            )
    return lines


def uninstallable(result: SurfaceResult) -> list[str]:
    """A line per target and package whose releases with misses include some that cannot
    be installed beside it (not counted): how many, and the first conflict."""
    lines = []
    for target in result.targets:
        for package, releases in sorted(target.uninstallable.items()):
            labels = sorted(releases, key=lambda v: versions.parse(v) or Version("0"))
            why = releases[labels[0]].partition(": ")[2]
            lines.append(
                f"canary: {_releases(labels)} of {package} cannot be installed beside "
                f"{target.name} ({why}): their misses are no user's, not counted"
            )
    return lines


def _reaches_below(spec: str, oldest: str) -> bool:
    """Whether ``spec`` has a lower bound below ``oldest``."""
    try:
        floor = Version(oldest)
        lows = [
            Version(s.version.removesuffix(".*"))
            for s in SpecifierSet(spec)
            if s.operator in (">=", ">", "~=", "==", "===")
        ]
    except (InvalidSpecifier, InvalidVersion):
        return False
    return bool(lows) and max(lows) < floor


def verdict(surface_run: SurfaceRun) -> list[str]:
    """The errors grouped by cause, then the one-line verdict (``canary: ...``)."""
    errors = [
        CaseError(case.package, case.label, exc.cause or str(exc))
        for case, exc in surface_run.errors
    ]
    lines = [describe(group) for group in group_errors(errors)]
    lines += [
        f"{name}: no reference to {', '.join(surface_run.result.packages) or 'an upstream package'}"
        " found in its code: nothing of it was checked (is it the target you meant?)"
        for name in surface_run.empty
    ]
    lines += below_oldest(surface_run.result)
    lines += uninstallable(surface_run.result)
    releases = surface_run.releases
    if releases is not None:
        lines.append(f"canary: {releases.describe()}")
        lines += [
            f"canary: cannot ask the package index for {package} releases newer than the list: "
            f"{why}"
            for package, why in releases.failed.items()
        ]
    failing = surface_run.failing
    unchecked = (
        errors
        or surface_run.empty
        or not any(surface_run.result.packages.values())
        or (releases is not None and releases.failed)
    )
    if surface_run.written is not None:
        path, entries = surface_run.written
        checked = sum(len(v) for v in surface_run.result.packages.values())
        lines.append(
            f"canary: wrote {path}: {entries:,} finding(s) accepted from now on, over "
            f"{checked:,} release(s) of {', '.join(surface_run.result.packages) or 'nothing'}"
            + ("; not everything was checked: the releases above are not in it" * bool(unchecked))
        )
    elif failing:
        misses = sum(len(f.new) for f in failing)
        lines.append(
            f"canary: surface broken: {len(failing):,} reference(s) missing inside the declared "
            f"range ({misses:,} reference x release), not accepted"
        )
    elif (
        surface_run.empty
        and not errors
        and len(surface_run.empty) == len(surface_run.result.targets)
    ):
        lines.append("canary: nothing was checked: no target references an upstream package")
    elif unchecked:
        lines.append("canary: not everything was checked")
    else:
        accepted = sum(1 for f in surface_run.findings if f.accepted)
        lines.append(
            "canary: all clear" + (f" ({accepted:,} accepted finding(s))" if accepted else "")
        )
    possible = surface_run.possible
    if possible and not surface_run.strict:
        lines.append(
            f"canary: {len(possible):,} possible finding(s): missing inside the range where "
            "canary cannot prove the site runs; not counted (--strict counts them)"
        )
    excused = [f for f in surface_run.findings if f.excused]
    if excused:
        lines.append(
            f"canary: {len(excused):,} reference(s) came later than the declared floor where they "
            "cannot break (guarded, or in a model package the release lacks): not counted"
        )
    if surface_run.stale:
        lines.append(
            f"canary: {surface_run.stale} baseline entries no longer missing: "
            "drop them with --update-baseline"
        )
    return lines


def _releases(labels: Sequence[str]) -> str:
    if len(labels) == 1:
        return labels[0]
    return f"{labels[0]}{DASH}{labels[-1]} ({len(labels)} releases)"


def render(surface_run: SurfaceRun, fmt: str, *, sources: WorkspaceSources | None = None) -> str:
    """The run in ``fmt``: ``json`` is the contract (:meth:`SurfaceResult.to_json`); the
    others are :mod:`canary.surface.report`'s, or the plain summary where it is absent."""
    releases = surface_run.releases
    if fmt == "json":
        data = surface_run.result.to_json()
        if releases is not None and releases.looked_up:  # a field added, as the contract allows
            data["discovered"] = {p: list(v) for p, v in releases.discovered.items() if v}
        data["findings"] = [f.to_json() for f in surface_run.findings if f.new]
        return json.dumps(data, indent=1) + "\n"
    try:
        from canary.surface.report import render as render_report
    except ImportError:  # the reports are built beside this command
        text = summary(surface_run)
    else:
        text = render_report(
            surface_run.result,
            fmt,
            findings=surface_run.findings,
            sources=sources,
            everything=surface_run.everything,
        )
    if releases is not None and fmt in ("terminal", "markdown"):
        line = releases.describe()
        text += f"\n{line[0].upper()}{line[1:]}\n"
    return text
