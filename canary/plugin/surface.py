"""The dependency surface as pytest cases: canary's own fixes in every static run, and each
``--canary-surface TARGET``.

One item per (target, case): ``canary/checks/test_surface.py::test_surface[canary-
transformers_5_5_4]``, so ``-k transformers_5_5`` selects the 5.5.x releases as it does for
the catalog, and a full run adds one item per release, not one per reference and release.
An item resolves the target's references to that package on that release and fails with
one line per reference missing where the target says it works: the downstream site, the
upstream target, what upstream has instead. It skips where nothing applies (outside the
target's declared range); ``unknown`` never fails.

Where a reference must exist:

* a ``--canary-surface`` target: on the releases inside its declared requirement on that
  package (``Requires-Dist``); a package it declares nothing on constrains nothing (it
  uses it all the same): every release;
* canary's own fixes (:data:`OWN`): on the releases inside the window the fix whose module
  uses it declares for that package (:attr:`canary.fixes.Fix.windows`). Code under
  ``canary/fixes/`` that uses a package outside every fix's window (a module no fix owns,
  or a fix that declares no window for that package) is a finding on every release of that
  package, not a skip: the window is what says where the fix works.

Extraction happens on the first item of a target (never at collection: ``--collect-only``
and ``-k`` stay instant), once per process. The pieces it uses (``open_target``,
``extract``, ``resolve_case``) come in an :class:`Engine`, so tests give fakes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest
from packaging.version import Version

import canary
from canary.errors import CheckDrift, Drift, InfrastructureError, Subject
from canary.fixes.registry import fix_at
from canary.report.verdict import OUTSIDE_WINDOW
from canary.run import Run
from canary.surface.model import Outcome, Reference, Target
from canary.surface.pipeline import TARGETS_FOLDER, Surface, open_surface
from canary.surface.report import declared_range, heading, inside, sites
from canary.workspace import MAIN, Case, Workspace

OPTION = "--canary-surface"
OWN = "canary"  # the target id of canary's own fixes
FIXES_DIR = "canary/fixes"
PLUGIN_NAME = "canary-surface"
FIXTURE = "canary_surface"  # the fixture (and argument) of a surface check

Key = tuple[Any, ...]  # Reference.key


class LoadedTarget(Protocol):
    """What ``canary.surface.targets.open_target`` gives (the fields read here)."""

    target: Target
    root: Path
    files: tuple[str, ...]
    config: Any  # its SurfaceConfig (None: the defaults)


# (a target's surface, the workspace, a package's cases, the cases that may be read (None:
# all)) -> key -> the releases whose miss counts
Judge = Callable[
    ["Surface", Workspace, Callable[[str], Sequence[Case]], "Collection[Case] | None"],
    Mapping[Key, tuple[str, ...]],
]


@dataclass(frozen=True)
class Engine:
    """The surface pipeline's pieces (extraction, resolution) as this plugin calls them."""

    # (spec, *, download_dir, offline, config, packages), as canary.surface.targets'
    open_target: Callable[..., LoadedTarget]
    # (root, files, *, upstream, own_attributes, registries, version_parsers), as extract's
    extract: Callable[..., tuple[Reference, ...]]
    resolve_case: Callable[[Sequence[Reference], Case, Workspace], Mapping[Key, tuple[Any, str]]]
    # Where a reference lives on a case (an anchor's function): the subject the matrix
    # report diffs; None where it cannot be found there.
    locate: Callable[[Reference, Case, Workspace], Subject | None] | None = None
    # A target's references judged over every case of their packages, as ``python -m
    # canary surface`` judges them (key -> the releases whose miss counts): a miss that
    # came later than the target's floor needs the other releases' outcomes to be told
    # from a removal. None: every miss on a release counts.
    judge: Judge | None = None


def default_engine() -> Engine:
    """The real pieces, imported when the first surface item runs."""
    from canary.surface import command
    from canary.surface.extract import extract
    from canary.surface.resolve import WorkspaceSources, resolve_case
    from canary.surface.targets import open_target

    def locate(reference: Reference, case: Case, workspace: Workspace) -> Subject | None:
        return WorkspaceSources(workspace, {case.package: [case]}).locate(reference, case.label)

    def judge(
        surface: Surface,
        workspace: Workspace,
        cases_of: Callable[[str], Sequence[Case]],
        selected: Collection[Case] | None,
    ) -> Mapping[Key, tuple[str, ...]]:
        run = command.check_surfaces([surface], workspace, cases_of, decide_only=selected)
        # a possible finding (canary cannot prove its site runs) fails no case
        return {f.reference.key: f.new for f in run.findings if not f.possible}

    return Engine(open_target, extract, resolve_case, locate, judge)


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        OPTION,
        action="append",
        default=[],
        metavar="TARGET",
        help="also check TARGET's use of upstream (a source folder, a wheel or NAME==VERSION) "
        "on every release, as one case per release (repeatable)",
    )


@dataclass(frozen=True)
class SurfaceCase:
    """One target on one case: one pytest item."""

    target: str  # OWN, or a --canary-surface TARGET as given
    name: str  # the target's part of the id
    case: Case

    @property
    def id(self) -> str:
        return f"{self.name}-{self.case.id}"


def target_ids(specs: Sequence[str]) -> list[str]:
    """Each target's part of the test ids: its project name, normalised (``unsloth_zoo``
    -> ``unsloth-zoo``) so it never spells ``<package>_<digit>`` and ``-k transformers_5``
    keeps selecting exactly transformers' cases; a repeated name is numbered."""
    ids: list[str] = []
    for spec in specs:
        name = _project_name(spec)
        base, n = name, 2
        while name in ids or name == OWN:
            name, n = f"{base}-{n}", n + 1
        ids.append(name)
    return ids


def _project_name(spec: str) -> str:
    path = Path(spec)
    if path.suffix == ".whl":
        name = path.name.split("-", 1)[0]
    elif re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*\s*(==|===)", spec):
        name = re.split(r"\s*===?", spec, maxsplit=1)[0]
    else:
        name = path.resolve().name or "target"
    return re.sub(r"[-_.]+", "-", name).lower()


class SurfacePlugin:
    """The ``surface`` fixture and its parametrization; registered in canary runs."""

    def __init__(
        self, config: pytest.Config, run: Run, engine: Callable[[], Engine] | None = None
    ) -> None:
        self.config = config
        self.run = run
        self.specs: list[str] = list(config.getoption("canary_surface") or [])
        self._engine_factory = engine
        self._engine: Engine | None = None
        self._surfaces: dict[str, Surface | InfrastructureError] = {}
        self._judgements: dict[str, Mapping[Key, tuple[str, ...]]] = {}
        self._selected: dict[str, set[Case]] = {}  # target -> its cases the run selected
        self._lock = threading.Lock()

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if FIXTURE not in metafunc.fixturenames:
            return
        names = [OWN, *target_ids(self.specs)]
        params = [
            SurfaceCase(spec, name, case)
            for spec, name in zip([OWN, *self.specs], names, strict=True)
            for package in self.run.tags.packages
            for case in self.run.cases(package)
        ]
        metafunc.parametrize(FIXTURE, params, ids=[p.id for p in params], indirect=True)

    @pytest.fixture
    def canary_surface(self, request: pytest.FixtureRequest) -> Callable[[], None]:
        """One target on one case, resolved (in setup: a fetch, parse or extraction problem
        is this case's error, never a pass); calling it asserts what was found."""
        item: SurfaceCase = request.param
        missing, unowned, surface = self.resolve(item)
        if not missing and not unowned:
            return lambda: None
        message = failure(surface.target, item.case, missing, unowned, own=item.target == OWN)
        fixes = ", ".join(sorted(_fixes_of(ref for ref, _ in missing))) or surface.target.name
        subject = self.subject(missing, unowned, item.case)

        def found() -> None:
            raise CheckDrift(message, fix=fixes, subject=subject, kind=Drift.MISSING)

        return found

    # -- one item -----------------------------------------------------------------------

    def resolve(
        self, item: SurfaceCase
    ) -> tuple[list[tuple[Reference, str]], list[tuple[Reference, str]], Surface]:
        """The target's references missing on this case where they must exist (with what
        upstream has instead), those no window covers, and the target; skips the case
        where nothing applies."""
        case, workspace = item.case, self.run.workspace
        surface = self._surface(item.target)
        mine = [ref for ref in surface.references if ref.package == case.package]
        if not mine:  # the window words: counted with the catalog's, not listed
            pytest.skip(
                f"{OUTSIDE_WINDOW} {surface.target.name}: it uses nothing of {case.package}"
            )
        version = workspace.version(case)
        if item.target == OWN:
            due, unowned = own_gate(mine, case.package, version)
        else:
            due, unowned = declared_gate(surface.target, mine, version), []
        if not due and not unowned:
            pytest.skip(_outside(surface.target, case, item.target == OWN, version))
        # A site in a branch whose version test excludes this release does not run here.
        due = [ref for ref in due if ref.runs_on(case.label)]
        decided = self.engine.resolve_case(due, case, workspace) if due else {}
        missing = []
        for ref in due:
            outcome, why = decided.get(ref.key, (Outcome.UNKNOWN, ""))
            if Outcome(outcome) is not Outcome.MISSING:
                continue  # unknown is never a miss
            if surface.accepts is not None and surface.accepts(ref, case.label) is not None:
                continue
            missing.append((ref, why))
        if missing and item.target != OWN and self.engine.judge is not None:
            counted = self._judged(item.target, surface)
            missing = [(ref, why) for ref, why in missing if case.label in counted.get(ref.key, ())]
        return missing, unowned, surface

    def subject(
        self,
        missing: Collection[tuple[Reference, str]],
        unowned: Collection[tuple[Reference, str]],
        case: Case,
    ) -> Subject | None:
        """What the matrix report diffs for a failing case: where its one missing reference
        lives here (an anchor's function, whose text no longer holds the anchor); None for
        several findings (the message lists them) or a name that is gone."""
        locate = self.engine.locate
        if len(missing) != 1 or unowned or locate is None:
            return None
        [(reference, _)] = missing
        found = locate(reference, case, self.run.workspace)
        if found is None or found.qualname:
            return found
        # A whole module (an anchor in a module's source): the report diffs no function.
        return Subject(found.path, None)

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = (self._engine_factory or default_engine)()
        return self._engine

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Which of each target's cases the run selected (``-k``, node ids): a target is
        judged over those only, so a run of one series never fetches every release."""
        for item in session.items:
            callspec = getattr(item, "callspec", None)
            param = callspec.params.get(FIXTURE) if callspec is not None else None
            if isinstance(param, SurfaceCase):
                self._selected.setdefault(param.target, set()).add(param.case)

    def _judged(self, spec: str, surface: Surface) -> Mapping[Key, tuple[str, ...]]:
        """The target judged over every release, once, by whichever case first misses
        something: the releases the run selected are read, the others count with what is
        remembered of them (so a run of one series never fetches every release). Warm,
        this is the surface command's judgement; cold, a miss that came later than a
        release not yet checked counts (it cannot be told from a removal)."""
        with self._lock:
            if spec not in self._judgements:
                judge = self.engine.judge
                assert judge is not None
                selected = self._selected.get(spec)
                self._judgements[spec] = judge(
                    surface, self.run.workspace, self.run.cases, selected
                )
            return self._judgements[spec]

    def _surface(self, spec: str) -> Surface:
        with self._lock:  # one extraction per target, whichever item asks first
            if spec not in self._surfaces:
                try:
                    self._surfaces[spec] = self._load(spec)
                except InfrastructureError as exc:
                    self._surfaces[spec] = exc  # every case of the target fails fast with it
                    raise
            found = self._surfaces[spec]
        if isinstance(found, InfrastructureError):
            raise found.again() from found
        return found

    def _load(self, spec: str) -> Surface:
        upstream = tuple(self.run.tags.packages)
        if spec == OWN:
            root = Path(canary.__file__).parent.parent
            files = sorted(p.relative_to(root).as_posix() for p in (root / FIXES_DIR).glob("*.py"))
            target = Target(OWN, canary.__version__, {})
            return Surface(target, tuple(self.engine.extract(root, files, upstream=upstream)))
        cache = self.run.workspace.cache
        download_dir = (cache.root if cache else Path.cwd()) / TARGETS_FOLDER
        return open_surface(
            spec,
            upstream=upstream,
            download_dir=download_dir,
            offline=self.run.options.offline,
            open_target=self.engine.open_target,
            extract=self.engine.extract,
        ).surface


# -- where a reference must exist ------------------------------------------------------


def declared_gate(
    target: Target, references: list[Reference], version: Version | None
) -> list[Reference]:
    """The references that must exist on this release: all of them inside the target's
    declared range on the package, none outside it."""
    ranges = declared_range((target,), references[0].package)
    return references if inside(ranges, str(version) if version is not None else MAIN) else []


def own_gate(
    references: list[Reference], package: str, version: Version | None
) -> tuple[list[Reference], list[tuple[Reference, str]]]:
    """canary's own references that must exist on this release (a site inside its fix's
    window), and those no window covers (with why): a finding on every release."""
    due, unowned = [], []
    for ref in references:
        fixes = [fix_at(site.path) for site in ref.sites]
        stray = next(
            (
                (site, fix)
                for site, fix in zip(ref.sites, fixes, strict=True)
                if fix is None or fix.window(package) is None
            ),
            None,
        )
        if stray is not None:
            site, fix = stray
            owner = f"fix {fix.name!r} declares no {package} window" if fix else "no fix"
            unowned.append((ref, f"{site.path}:{site.line}: {owner}"))
        elif any(fix is not None and fix.supports(package, version) for fix in fixes):
            due.append(ref)
    return due, unowned


def _fixes_of(references: Iterable[Reference]) -> set[str]:
    return {fix.name for ref in references for site in ref.sites if (fix := fix_at(site.path))}


def failure(
    target: Target,
    case: Case,
    missing: Collection[tuple[Reference, str]],
    unowned: Collection[tuple[Reference, str]],
    *,
    own: bool,
) -> str:
    """The message of a failing item: one line per missing reference (sites, target, what
    upstream has instead), then the references no window covers."""
    where = "inside its fixes' windows" if own else _range(target, case.package)
    lines = []
    if missing:
        lines.append(
            f"canary surface: {_name(target)} on {case}: {len(missing)} reference(s) missing "
            f"{where}:"
        )
        for ref, why in missing:
            instead = f": {why}" if why else ""
            fixes = ", ".join(f"{name!r}" for name in sorted(_fixes_of([ref])))
            at_risk = f" (breaks the fix {fixes})" if own and fixes else ""
            lines.append(f"  {sites(ref)}{at_risk} uses {heading(ref)}{instead}")
    if unowned:
        lines.append(
            f"canary surface: {_name(target)} uses {case.package} outside every fix's window "
            f"({len(unowned)} reference(s)); declare the window in canary/fixes/registry.py:"
        )
        lines.extend(f"  {why} uses {heading(ref)}" for ref, why in unowned)
    return "\n".join(lines)


def _name(target: Target) -> str:
    return f"{target.name} {target.version}" if target.version else target.name


def _range(target: Target, package: str) -> str:
    if package not in target.requires:
        return f"(it declares nothing on {package}: every release counts)"
    return f"inside its declared range ({package}{target.requires[package]})"


def _outside(target: Target, case: Case, own: bool, version: Version | None) -> str:
    # The window-skip words, so the end of the run counts these with the catalog's.
    if own:
        return f"{OUTSIDE_WINDOW} every canary fix using {case.package}"
    declared = target.requires.get(case.package, "")
    release = f"{case.package} {version if version is not None else case.label}"
    # The release and the range first: -v cuts a long reason to the terminal's width.
    return (
        f"{release} is outside {target.name}'s declared range ({case.package}{declared}): "
        f"{OUTSIDE_WINDOW} its requirement"
    )
