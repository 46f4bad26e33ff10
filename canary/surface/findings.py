"""Which missing references are held against a project.

A reference is a finding on a release where it is missing, when that release is inside
the project's declared requirement on the package (``Target.requires``: a project that
says ``transformers<4.50`` is not broken by 5.0 removing something) and the miss is not
accepted (``expected_absent`` in its configuration, or a baseline). A package the project
does not declare constrains nothing: it imports it, so every release of it counts.
``unknown`` is never a finding.

Three narrowings, each exactly as wide as its reason:

- **Gated away.** A miss on a release where no site of the reference runs (every site sits
  in a branch whose version test excludes that release: ``Site.versions``) is nobody's
  problem: it is recorded (``gated``), never held.
- **Came later, where it cannot break.** A miss on a release older than the first one
  where the reference is ok (:attr:`Finding.since`) *came later*: the project needs a newer
  upstream for it, a real break wherever the code runs unguarded. It is not counted
  (``excused``) in two cases, and only on that release:

  1. every site of it that runs there is guarded (a ``try``, a ``hasattr``, a test): the
     miss does not crash, and it undoes no patch that ever applied on that release (the
     thing never existed there): the project's code expects it absent. A *removed*
     guarded miss still counts (there the patch used to apply and silently stopped)
     unless it is handled (below);
  2. it lies in a model package of transformers (``transformers.models.<name>``) that the
     release does not have at all, as resolved for that release (``absent``), and no
     site of it runs at import unguarded: a model type a release lacks cannot be loaded
     on it, so code that patches that model runs for no user of the release, while a
     module-level import would fail for every user.

  A miss *after* an ok release (removed) is held, as is one that never was ok, unless
  it is handled:
- **Handled.** A missing import whose every site that runs there sits in a ``try`` whose
  ``except ImportError`` takes its place (:attr:`Site.handled`: it gives the names other
  values, or leaves silently; :mod:`canary.surface.fallbacks`) breaks nothing there: it is
  recorded (``handled``), never held. What the project does with the names afterwards is
  held at those uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from canary import versions
from canary.errors import ConfigError
from canary.surface.model import Kind, Outcome, Reference, Resolved, Site, SurfaceResult, Target

# Operators that exclude every newer release, so ``main`` too.
_UPPER_BOUNDS = ("<", "<=", "==", "===", "~=")

Accepts = Callable[[Reference, str], "str | None"]
"""Why a miss of the reference on that release is accepted, or None (it counts)."""

Absent = Callable[[str, str], bool]
"""Whether a module (``transformers.models.gemma4``) is known to be absent on a release."""

MODEL_PACKAGES = "transformers.models"


@dataclass(frozen=True)
class Finding:
    """A reference of ``target`` missing on releases inside its declared range."""

    target: str
    reference: Reference
    missing: Mapping[str, str]  # release -> why, oldest first (where some site runs)
    accepted: Mapping[str, str]  # the releases among them whose miss is accepted -> why
    since: str | None = None  # the first release checked where it is ok (None: none is)
    excused: Mapping[str, str] = field(default_factory=dict)  # came later, not counted -> why
    gated: tuple[str, ...] = ()  # missing inside the range where no site runs: never held
    # why it is only *possible*: every site that runs there may not (a test canary cannot
    # evaluate decides); "": proven, the site runs there
    possible: str = ""
    proof: str = ""  # what makes it true: upstream lacks it there, and where a site runs
    # missing where every site that runs is an import whose failure is handled -> why
    handled: Mapping[str, str] = field(default_factory=dict)

    @property
    def confidence(self) -> str:
        """``proven`` (counted) or ``possible`` (reported, counted only with --strict)."""
        return "possible" if self.possible else "proven"

    @property
    def new(self) -> tuple[str, ...]:
        """The releases whose miss is neither accepted, excused nor handled: these fail the
        run."""
        return tuple(
            version
            for version in self.missing
            if version not in self.accepted
            and version not in self.excused
            and version not in self.handled
        )

    @property
    def fails(self) -> bool:
        """Proven and not accepted on some release: it fails the run."""
        return bool(self.new) and not self.possible

    def to_json(self) -> dict[str, object]:
        ref = self.reference
        return {
            "target": self.target,
            "package": ref.package,
            "reference": ref.target,
            "kind": ref.kind.value,
            "anchor": ref.anchor,
            "releases": list(self.new),
            "accepted": dict(self.accepted),
            "excused": dict(self.excused),
            "handled": dict(self.handled),
            "confidence": self.confidence,
            "why": self.possible or self.proof,
        }

    @property
    def came_later(self) -> tuple[str, ...]:
        """The misses on releases older than :attr:`since`: upstream added it later."""
        if self.since is None:
            return ()
        return tuple(v for v in self.missing if _older(v, self.since))

    @property
    def removed(self) -> tuple[str, ...]:
        """The other misses: after a release where it was ok, or on every release."""
        later = set(self.came_later)
        return tuple(v for v in self.missing if v not in later)


def findings(
    resolved: Iterable[Resolved],
    target: Target,
    *,
    accepts: Sequence[Accepts] = (),
    absent: Absent | None = None,
    homes: Mapping[str, str] | None = None,
) -> tuple[Finding, ...]:
    """The findings of ``target`` among ``resolved`` (its own references, with its own
    sites): one per reference missing somewhere inside its range; ``accepts`` are asked in
    order; ``absent`` says which model packages a release lacks (None: none is known to be
    absent, so only guarded came-later misses are excused)."""
    ranges: dict[str, SpecifierSet | None] = {}
    found = []
    resolved = list(resolved)
    runs = _runs(resolved)
    for item in resolved:
        reference = item.reference
        package = reference.package
        if package not in ranges:
            ranges[package] = _declared(target, package)
        inside = [
            version
            for version, outcome in item.outcomes.items()
            if outcome is Outcome.MISSING and in_range(version, ranges[package])
        ]
        if not inside:
            continue
        missing = {
            v: item.why.get(v, "")
            for v in inside
            if not reference.sites or any(runs(reference, site, v) for site in reference.sites)
        }
        gated = tuple(v for v in inside if v not in missing)
        accepted = {}
        for version in missing:
            reason = next((r for accept in accepts if (r := accept(reference, version))), None)
            if reason:
                accepted[version] = reason
        since = next((v for v, o in item.outcomes.items() if o is Outcome.OK), None)
        finding = Finding(target.name, reference, missing, accepted, since, gated=gated)
        home = _home(reference.target, homes)
        excused = {
            v: why for v in finding.came_later if (why := _excused(finding, v, absent, home, runs))
        }
        if excused:
            finding = Finding(target.name, reference, missing, accepted, since, excused, gated)
        handled = {v: why for v in missing if (why := _handled(reference, v, runs))}
        if handled:
            finding = replace(finding, handled=handled)
        finding = replace(finding, possible=_undecided(finding, runs), proof=_proof(finding, runs))
        found.append(finding)
    return tuple(found)


def findings_of_result(result: SurfaceResult) -> tuple[Finding, ...]:
    """Each target's findings among a result's references, from the result alone: nothing
    accepted, and no model package known absent (the result does not say)."""
    return tuple(f for target in result.targets for f in findings(result.references, target))


def model_package(target: str) -> str | None:
    """The model package of transformers a dotted target lies in
    (``transformers.models.gemma4``), or None."""
    parts = target.split(".")
    if len(parts) < 3 or ".".join(parts[:2]) != MODEL_PACKAGES:
        return None
    return ".".join(parts[:3])


def _home(target: str, homes: Mapping[str, str] | None) -> str | None:
    """The model package ``target`` lies in: by its path, or where the top-level name it
    starts with is defined (``homes``: ``transformers.Gemma3Model`` -> its package)."""
    package = model_package(target)
    if package is not None or not homes:
        return package
    return homes.get(".".join(target.split(".")[:2]))


def _excused(
    finding: Finding, version: str, absent: Absent | None, package: str | None, runs: Runs
) -> str | None:
    """Why a came-later miss on ``version`` does not count (None: it does)."""
    reference = finding.reference
    running = [site for site in reference.sites if runs(reference, site, version)]
    if running and all(site.guarded for site in running):
        return (
            "every site that runs there is guarded: the project expects it absent before "
            f"{finding.since}"
        )
    if package is None or absent is None or not absent(package, version):
        return None
    if any(site.at_import and not site.guarded for site in running):
        return None  # imported with its module: fails for every user of the release
    return f"{package} is not in the release: none of its users runs that model"


def _handled(reference: Reference, version: str, runs: Runs) -> str:
    """Why a miss breaks nothing on ``version``: every site that runs there is an import
    whose failure is handled ("": some site may break)."""
    running = [site for site in reference.sites if runs(reference, site, version)]
    if not running or not all(site.handled for site in running):
        return ""
    site = running[0]
    return f"{site.path}:{site.line}: {site.handled}"


Runs = Callable[[Reference, Site, str], bool]
"""Whether a site of the reference runs on that release of its package."""


def _runs(resolved: Sequence[Resolved]) -> Runs:
    """A site runs where its version window holds; where what a test before it found
    present (:attr:`Site.requires`) is missing, it does not; in the ``except ImportError``
    of upstream imports (:attr:`Site.fallback_of`), only where one of them is not ok (an
    unknown may fail: it may run)."""
    ok = {
        item.reference.target: {v for v, o in item.outcomes.items() if o is Outcome.OK}
        for item in resolved
        if item.reference.kind is Kind.IMPORT
    }
    missing: dict[str, set[str]] = {}  # what an object's absence is read from
    for item in resolved:
        if item.reference.kind in (Kind.IMPORT, Kind.ATTRIBUTE, Kind.PATCH):
            gone = {v for v, o in item.outcomes.items() if o is Outcome.MISSING}
            missing.setdefault(item.reference.target, set()).update(gone)

    def runs(reference: Reference, site: Site, version: str) -> bool:
        if not site.runs_on(reference.package, version):
            return False
        same = reference.package
        if any(r.split(".", 1)[0] == same and version in missing.get(r, ()) for r in site.requires):
            return False  # a test before it found that absent: it does not run there
        fallback = site.fallback_of
        inside = all(t.split(".", 1)[0] == same for t in fallback)
        return not (fallback and inside and all(version in ok.get(t, ()) for t in fallback))

    return runs


def _undecided(finding: Finding, runs: Runs) -> str:
    """Why a miss is only possible: every site that runs on its releases sits where a
    test canary cannot evaluate decides whether it runs ("": some site certainly runs)."""
    reference = finding.reference
    running = [
        site for site in reference.sites if any(runs(reference, site, v) for v in finding.new)
    ]
    if running and all(site.undecided for site in running):
        return running[0].undecided
    return ""


def _proof(finding: Finding, runs: Runs) -> str:
    """What makes a counted finding true: upstream lacks it there, and a site runs there."""
    if not finding.new:
        return ""
    first = finding.new[0]
    reference = finding.reference
    site = next((s for s in reference.sites if runs(reference, s, first)), None)
    lacks = finding.missing.get(first) or f"{reference.package} {first} lacks it"
    where = f"{site.path}:{site.line} runs on {first}" if site else f"it is used on {first}"
    return f"{lacks}; {where}"


def _older(label: str, than: str) -> bool:
    """Whether release ``label`` is older than ``than`` (``main`` is newer than any)."""
    first, second = versions.parse(label), versions.parse(than)
    if first is None:
        return False
    return second is None or first < second


def in_range(label: str, declared: SpecifierSet | None) -> bool:
    """Whether the release ``label`` satisfies ``declared`` (None: nothing declared). A
    pre-release or dev release of X counts as X, as everywhere in canary; a tree without a
    release version (``main``) is newer than every release: inside a range with no upper
    bound."""
    if declared is None:
        return True
    version = versions.parse(label)
    if version is None:
        return not any(spec.operator in _UPPER_BOUNDS for spec in declared)
    return declared.contains(versions.release_of(version), prereleases=True)


def _declared(target: Target, package: str) -> SpecifierSet | None:
    spec = target.requires.get(package)
    if spec is None:
        return None
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        raise ConfigError(
            f"{target.name} declares {package}{spec!r}, which is not a PEP 440 specifier; "
            "fix its requirement (e.g. >=4.46,<5)"
        ) from None
