"""Which missing references are held against a project.

A reference is a finding on a release where it is missing, when that release is inside
the project's declared requirement on the package (``Target.requires``: a project that
says ``transformers<4.50`` is not broken by 5.0 removing something) and the miss is not
accepted (``expected_absent`` in its configuration, or a baseline). A package the project
does not declare constrains nothing: it imports it, so every release of it counts. A
release that cannot be installed beside the project (``Target.uninstallable``: a shared
dependency both require with no version in common, :mod:`canary.surface.coinstall`, or a
dependency it pins requires another, :mod:`canary.surface.pins`) is outside it as well: no
user of the project has it. ``unknown`` is never a finding.

Three narrowings, each exactly as wide as its reason:

- **Gated away.** A miss on a release where no site of the reference runs is nobody's
  problem: it is recorded (``gated``), never held. A site does not run where the version
  tests of its branches exclude the release (``Site.versions``), nor after an import, in
  its function or in its module's importer, of something that came later in a model
  package the release lacks (``Site.after``; that import raises first, and is excused
  itself: 2. below), nor in a branch only models of some types reach (a ``model_type``
  test: ``Site.requires`` holds ``transformers.models.a|transformers.models.b``) where
  every one of those model packages is missing and each is there on some release checked:
  no checkpoint of those types loads there. A type no release has (``internvl_chat``) may be
  a checkpoint's own code, loadable anywhere: it narrows nothing. Behind an import of
  anything else that is missing, it still runs as far as its finding goes: both break, and
  the project fixes both.
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
  it is handled (below).

- **Handled.** A missing import whose every site that runs there sits in a ``try`` whose
  ``except ImportError`` takes its place (:attr:`Site.handled`: it gives the names other
  values, or leaves silently; :mod:`canary.surface.fallbacks`) breaks nothing there: it is
  recorded (``handled``), never held. What the project does with the names afterwards is
  held at those uses.

- **Adds a name, never replaced one.** An assignment that binds an upstream name (``X.n =
  v``, every site of it: an item assignment or ``+=`` reads ``X.n`` first) cannot raise
  while ``X`` is there. Where no release checked ever had ``n`` and the project reads it
  back itself, binds only upstream's own objects to it, or binds only its own object of
  that very name (``m.Version = Version``: an export, named for what it is, not for what
  it would replace), ``n`` is the project's own attribute: its bindings and its reads and
  imports of it (and of what lies in it) are the same on every release, recorded
  (``added``), never held. Where every binding puts
  upstream's own ``n`` back from its new home (``X.n = Z.n``) and upstream lacks ``X.n``
  on every release of the declared range where one binds (a version test keeps it off
  the others, or ``Z.n`` is missing there: reading it raises first), it is a compat
  re-export: it adds the name and puts no code of the project's in upstream's way, and on
  no release the project supports did it redirect a name upstream had, so nothing stops
  applying. So is upstream's object under another name (``X.a = X.b``) where no binding
  runs on a release that has ``X.a`` (a test keeps it off them): upstream reads no ``X.a``
  where it binds, so it redirects nothing. A binding of a dunder (``trl.__all__ =
  [...]``) is read by the interpreter itself, whatever upstream defines: it takes effect on
  every release. A binding of the
  project's own code under another name there, never read back, is still held: a patch
  of a name upstream dropped (before the project's floor, or before the oldest release
  checked) silently does nothing on every release it runs on.

**Alternatives of an anchor** (:attr:`Site.alternatives`, read by
:mod:`canary.surface.anchortests`): a site whose alternative anchor is there on a release
does not miss there (the project applies the other spelling, or does not reach this one):
counted with the gated releases. Its *since* is the first release where it or an
alternative is ok, so a spelling that never existed alone is held only where no spelling
is there, and as came later or removed by the first spelling that was. Where no
alternative is there but one cannot be decided, the miss is only possible.

**Alternatives of a patch**: a function that binds one object to two names of one owner
(liger: ``vl.Qwen2RMSNorm = LigerRMSNorm; vl.Qwen2_5_VLRMSNorm = LigerRMSNorm``, "< 5.2
reads the first, >= 5.2 the second") patches whichever of them upstream reads. A name's
miss changes nothing where another is there that upstream did not have beside it (missing
on some release where this one is there: a rename); two names upstream has side by side
are two things, each counted where it goes. Another owner (another model's module) or
another function is another patch; a literal bound to two names is two stubs.

**A tested anchor** (every site that runs there guarded: the project asks whether the text
is there, or catches the rewrite's failure) that vanished is only *possible*: the rewrite
stops applying, a state the project's own code provides for, and whether upstream still
needs it there (or fixed what it rewrote) is a fact of upstream's behaviour, not of either
side's source. So, for the same reason, is an anchor every running site deletes where no
name of its text is left in the source (:func:`_nothing_to_delete`), and one missing only
before the release its text came in (:func:`_anchor_came_later`). An anchor a site applies
untested (a plain ``replace``) is assumed there: its miss is counted, the rewrite silently
stops applying. A guarded *use* of a name is not an anchor: its removal still counts (the
patch used to apply and stopped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from canary import versions
from canary.errors import ConfigError
from canary.surface.model import (
    MODEL_PACKAGES,
    TEXT_GONE,
    Kind,
    Outcome,
    Reference,
    Resolved,
    Site,
    SurfaceResult,
    Target,
    model_alternatives,
)
from canary.symbols.lookup import is_member_miss

# Operators that exclude every newer release, so ``main`` too.
_UPPER_BOUNDS = ("<", "<=", "==", "===", "~=")

Inherited = tuple[str, Mapping[str, Outcome]]
"""A member a class had only by inheritance (``pkg.mod.Base.n``), and its outcomes."""

Accepts = Callable[[Reference, str], "str | None"]
"""Why a miss of the reference on that release is accepted, or None (it counts)."""


@dataclass(frozen=True)
class ModelPackages:
    """transformers' model packages (``transformers.models.gemma4``) as resolved on each
    release: called, whether one is known to be absent there (unknown is not absent)."""

    missing: frozenset[tuple[str, str]] = frozenset()  # (package, release)
    present: frozenset[str] = frozenset()  # those some release checked has

    def __call__(self, package: str, version: str) -> bool:
        return (package, version) in self.missing


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
    # missing inside the range where a site runs, on a name the project itself adds there
    # (a compat shim, its own attribute): never held -> why
    added: Mapping[str, str] = field(default_factory=dict)
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
    absent: ModelPackages | None = None,
    homes: Mapping[str, str] | None = None,
) -> tuple[Finding, ...]:
    """The findings of ``target`` among ``resolved`` (its own references, with its own
    sites): one per reference missing somewhere inside its range; ``accepts`` are asked in
    order; ``absent`` says which model packages a release lacks (None: none is known to be
    absent, so only guarded came-later misses are excused)."""
    ranges: dict[str, SpecifierSet | None] = {}
    found = []
    resolved = list(resolved)
    spellings = _spellings(resolved)
    gone = _gone(resolved, absent)
    runs = _runs(resolved, gone, spellings, absent, homes)
    own = _own_attributes(resolved)
    known = _outcomes(resolved)
    patches = {r.reference.target: r.reference for r in resolved if r.reference.kind is Kind.PATCH}
    for item in resolved:
        reference = item.reference
        package = reference.package
        if package not in ranges:
            ranges[package] = _declared(target, package)
        inside = [
            version
            for version, outcome in item.outcomes.items()
            if outcome is Outcome.MISSING
            and in_range(version, ranges[package])
            and target.installable(package, version)  # else: no user of it has that release
        ]
        if not inside:
            continue
        owner = _owner_missing(reference, known) if reference.kind is not Kind.IMPORT else set()
        missing = {
            v: item.why.get(v, "")
            for v in inside
            if v not in owner
            and (not reference.sites or any(runs(reference, site, v) for site in reference.sites))
        }
        gated = tuple(v for v in inside if v not in missing)
        added = _added(item, missing, runs, own, known, declared=ranges[package])
        added |= _read_back(reference, missing, known, runs, patches)
        missing = {v: why for v, why in missing.items() if v not in added}
        accepted = {}
        for version in missing:
            reason = next((r for accept in accepts if (r := accept(reference, version))), None)
            if reason:
                accepted[version] = reason
        # ok where it is read (a release where a registry reads another source says
        # nothing), or where an alternative spelling of one of its sites is there
        since = next(
            (v for v, o in item.outcomes.items() if item.read_on(v) and _ok(item, v, o, spellings)),
            None,
        )
        finding = Finding(
            target.name, reference, missing, accepted, since, gated=gated, added=added
        )
        home = _home(reference.target, homes)
        excused = {
            v: why for v in finding.came_later if (why := _excused(finding, v, absent, home, runs))
        }
        if excused:
            finding = replace(finding, excused=excused)
        handled = {v: why for v in missing if (why := _handled(reference, v, runs))}
        if handled:
            finding = replace(finding, handled=handled)
        possible = (
            _undecided(finding, runs, gone)
            or _outside_extra(finding, runs, target)
            or _unknown_spelling(finding, runs, spellings)
            or _tested_anchor(finding, runs)
            or _nothing_to_delete(finding, item, runs)
            or _never_had(item, finding)
            or _recreated(item, finding, runs)
            or _below_floor(item, ranges[package])
            or _anchor_came_later(finding)
            or _bound_elsewhere(finding, runs, known)
        )
        finding = replace(finding, possible=possible, proof=_proof(finding, runs))
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
    finding: Finding, version: str, absent: ModelPackages | None, package: str | None, runs: Runs
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


def _after_absent(
    site: Site,
    version: str,
    absent: ModelPackages,
    homes: Mapping[str, str] | None,
    first_ok: Mapping[str, str],
) -> str | None:
    """The model package, absent on ``version`` (of transformers: only its references
    ask), of an import made before the site that came later than ``version``; None if
    there is none."""
    for target in site.after:
        package = _home(target, homes)
        since = first_ok.get(target)
        if package and since and _older(version, since) and absent(package, version):
            return package
    return None


def _first_ok(resolved: Sequence[Resolved]) -> dict[str, str]:
    """Each import's first release checked where it is ok."""
    first: dict[str, str] = {}
    for item in resolved:
        if item.reference.kind is Kind.IMPORT:
            since = next((v for v, o in item.outcomes.items() if o is Outcome.OK), None)
            if since is not None:
                first[item.reference.target] = since
    return first


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


Spellings = Callable[[Reference, Site, str], "Outcome | None"]
"""How a site's alternative anchors fare on a release: ok where one is there, unknown where
none is but one cannot be decided, missing where none is; None: it has none."""


def _spellings(resolved: Sequence[Resolved]) -> Spellings:
    anchors = {
        (item.reference.target, item.reference.anchor): item.outcomes
        for item in resolved
        if item.reference.kind is Kind.ANCHOR
    }
    patches = {
        item.reference.target: item.outcomes
        for item in resolved
        if item.reference.kind is Kind.PATCH
    }

    def spellings(reference: Reference, site: Site, version: str) -> Outcome | None:
        if not site.alternatives:
            return None
        if reference.kind is Kind.PATCH:  # other names its object is bound to, if renames
            own = patches.get(reference.target, {})
            outcomes = [
                patches[a].get(version)
                for a in site.alternatives
                if a in patches and _succeeds(patches[a], own)
            ]
        else:
            outcomes = [
                anchors.get((reference.target, a), {}).get(version) for a in site.alternatives
            ]
        if Outcome.OK in outcomes:
            return Outcome.OK
        return Outcome.UNKNOWN if Outcome.UNKNOWN in outcomes else Outcome.MISSING

    return spellings


def _succeeds(other: Mapping[str, Outcome], own: Mapping[str, Outcome]) -> bool:
    """Whether a name is missing on some release where another one is there: two names of
    one owner upstream did not have together, as a renamed one and its new name. Two names
    it has side by side are two things, each patched in its own right."""
    return any(
        outcome is Outcome.MISSING and own.get(version) is Outcome.OK
        for version, outcome in other.items()
    )


def _ok(item: Resolved, version: str, outcome: Outcome, spellings: Spellings) -> bool:
    """Whether the reference, or an alternative of one of its sites, is there."""
    reference = item.reference
    return outcome is Outcome.OK or any(
        spellings(reference, site, version) is Outcome.OK for site in reference.sites
    )


def _unknown_spelling(finding: Finding, runs: Runs, spellings: Spellings) -> str:
    """Why a miss is only possible: on each of its releases, every site that runs there has
    an alternative anchor that cannot be decided ("": some site certainly misses)."""
    reference = finding.reference
    for version in finding.new:
        running = [s for s in reference.sites if runs(reference, s, version)]
        if not running or any(
            spellings(reference, s, version) is not Outcome.UNKNOWN for s in running
        ):
            return ""
    return "an alternative anchor the project tries instead cannot be decided there"


Gone = Callable[[str, str], bool]
"""Whether what a test before a site found present (a ``requires`` entry) is missing on
that release."""


def _gone(resolved: Sequence[Resolved], absent: ModelPackages | None = None) -> Gone:
    """What a test before a site found present is missing on a release, as resolved. A
    model-type test's packages (``a|b``: one of them) are gone only where each is missing
    and each is there on some release checked: a model type no release has may be a
    checkpoint's own code (``trust_remote_code``), loadable anywhere."""
    first_ok = _first_ok(resolved)
    missing: dict[str, set[str]] = {}  # what an object's absence is read from
    for item in resolved:
        if item.reference.kind in (Kind.IMPORT, Kind.ATTRIBUTE, Kind.PATCH):
            found = {v for v, o in item.outcomes.items() if o is Outcome.MISSING}
            missing.setdefault(item.reference.target, set()).update(found)
    known = absent or ModelPackages()  # the packages the project does not import itself

    def gone(required: str, version: str) -> bool:
        packages = model_alternatives(required)
        if not packages:
            return version in missing.get(required, ())
        return all(
            (version in missing.get(p, ()) or known(p, version))
            and (p in first_ok or p in known.present)
            for p in packages
        )

    return gone


def _runs(
    resolved: Sequence[Resolved],
    gone: Gone,
    spellings: Spellings | None = None,
    absent: ModelPackages | None = None,
    homes: Mapping[str, str] | None = None,
) -> Runs:
    """A site runs where its version window holds; where what a test before it found
    present (:attr:`Site.requires`) is missing, it does not; in the ``except ImportError``
    of upstream imports, or the ``except AttributeError`` of upstream reads
    (:attr:`Site.fallback_of`), only where one of them is not ok (an
    unknown may fail: it may run); an anchor's site misses nothing where one of its
    alternatives is there (``spellings``); after an import that came later in a model
    package the release lacks (:attr:`Site.after`), it does not (``absent``: which those
    are)."""
    first_ok = _first_ok(resolved)
    ok: dict[str, set[str]] = {}  # where each import, or read, a fallback is of works
    for item in resolved:
        if item.reference.kind in (Kind.IMPORT, Kind.ATTRIBUTE):
            found = {v for v, o in item.outcomes.items() if o is Outcome.OK}
            ok.setdefault(item.reference.target, set()).update(found)
    there: dict[str, set[str]] = {}  # what an object's presence is read from
    for item in resolved:
        if item.reference.kind in (Kind.IMPORT, Kind.ATTRIBUTE, Kind.PATCH):
            found = {v for v, o in item.outcomes.items() if o is Outcome.OK}
            there.setdefault(item.reference.target, set()).update(found)

    def runs(reference: Reference, site: Site, version: str) -> bool:
        if not site.runs_on(reference.package, version):
            return False
        if spellings is not None and spellings(reference, site, version) is Outcome.OK:
            return False  # the project applies another spelling there
        same = reference.package
        if any(r.split(".", 1)[0] == same and gone(r, version) for r in site.requires) or any(
            r.split(".", 1)[0] == same and version in there.get(r, ()) for r in site.lacks
        ):
            return False  # a test before it found that absent (there): it does not run there
        fallback = site.fallback_of
        inside = all(t.split(".", 1)[0] == same for t in fallback)
        if fallback and inside and all(version in ok.get(t, ()) for t in fallback):
            return False
        if absent is None or same != MODEL_PACKAGES.split(".", 1)[0]:
            return True  # a release of another package says nothing of transformers' models
        return not _after_absent(site, version, absent, homes, first_ok)

    return runs


def _replaces(reference: Reference) -> bool:
    """A patch every site of which binds the name: it cannot raise while what it binds on
    is there, and adds the name where upstream lacks it."""
    return (
        reference.kind is Kind.PATCH
        and bool(reference.sites)
        and all(site.replaces for site in reference.sites)
    )


Outcomes = Mapping[str, Mapping[str, Outcome]]
"""Per upstream target the project uses, its outcome per release."""


def _outcomes(resolved: Sequence[Resolved]) -> Outcomes:
    known: dict[str, Mapping[str, Outcome]] = {}
    for item in resolved:
        if item.reference.kind in (Kind.IMPORT, Kind.ATTRIBUTE, Kind.PATCH):
            known.setdefault(item.reference.target, item.outcomes)
    return known


def _own_attributes(resolved: Sequence[Resolved]) -> frozenset[str]:
    """The names the project binds on upstream objects that no release checked ever had
    (missing on every one: an unknown may have it) and that are its own: it reads them
    back itself (not a presence test: ``getattr(x, "n", None)`` before a patch is how a
    patch keeps upstream's original), or binds only upstream's own objects to them (no code
    of its own that upstream was meant to run). A binding of its own code that it never
    reads is a patch of a name upstream dropped before the oldest release checked, and so is
    one of its private functions it binds under its own name and calls nowhere itself
    (:attr:`Site.uncalled`): an export is named for what it is, but a private function is
    no one else's to call."""
    read = {
        item.reference.target
        for item in resolved
        if item.reference.kind in (Kind.IMPORT, Kind.ATTRIBUTE)
        and any(item.reference.target not in site.requires for site in item.reference.sites)
    }
    return frozenset(
        reference.target
        for item in resolved
        if _replaces(reference := item.reference)
        and item.outcomes
        and all(outcome is Outcome.MISSING for outcome in item.outcomes.values())
        and (
            reference.target in read
            or all(site.aliases or (site.exports and not site.uncalled) for site in reference.sites)
        )
    )


def _added(
    item: Resolved,
    missing: Iterable[str],
    runs: Runs,
    own: frozenset[str],
    known: Outcomes,
    *,
    declared: SpecifierSet | None,
) -> dict[str, str]:
    """The misses of ``item`` that are of a name the project adds -> why: a use of the
    project's own attribute (or of what lies in it), a compat re-export, or a binding of
    a dunder. Only where what the name is bound on is there (``X`` of ``X.n``: a binding
    on a missing ``X`` raises), or is itself a use of the project missing there (the miss
    is that use's, found and judged as its own)."""
    reference = item.reference
    mine = next((t for t in _prefixes(reference.target) if t in own), None)
    if mine is not None and reference.kind in (Kind.IMPORT, Kind.ATTRIBUTE, Kind.PATCH):
        why = f"{mine} is the project's own: it binds it there, and no release checked has it"
    elif (
        _replaces(reference)
        and (
            all(_reexports(reference, site) for site in reference.sites)
            or _alias_where_absent(item, runs)
        )
        and all(
            outcome is Outcome.MISSING
            for version, outcome in item.outcomes.items()
            if in_range(version, declared)
            and any(_binds(reference, site, version, runs, known) for site in reference.sites)
        )
    ):
        mine = reference.target
        why = (
            "a compat re-export: it puts upstream's own object under a name upstream lacks on "
            "every release of the range where it binds (and has where it does not): it "
            "replaces nothing"
        )
    elif _replaces(reference) and _dunder(reference.target.rpartition(".")[2]):
        mine = reference.target
        why = (
            "the interpreter reads a dunder itself (``__all__`` for a star import, "
            "``__init__`` for a call), whatever upstream defines: the binding takes effect"
        )
    else:
        return {}
    owner = mine.rpartition(".")[0]
    there = _there(owner, known)
    gone = {v for v, outcome in known.get(owner, {}).items() if outcome is Outcome.MISSING}
    added = {}
    for version in missing:
        if version in there:
            added[version] = why
        elif version in gone:
            added[version] = f"{owner} is missing there too: the miss is that use's own"
    return added


def _read_back(
    reference: Reference,
    missing: Iterable[str],
    known: Outcomes,
    runs: Runs,
    patches: Mapping[str, Reference],
) -> dict[str, str]:
    """The misses of a binding of ``X.n`` that the project's own functions, bound beside it
    as ``X.m``, read as ``self.n`` -> why: wherever upstream still has ``X.m`` (so calls the
    project's replacement in its place) and that binding runs, the binding takes effect
    through it, whatever upstream itself reads. Where ``X.m`` is gone too, or its binding
    does not run, both stopped applying: held."""
    if not _replaces(reference) or not all(site.read_by for site in reference.sites):
        return {}
    readers = sorted({t for site in reference.sites for t in site.read_by})
    name = reference.target.rpartition(".")[2]
    return {
        version: (
            f"read back as self.{name} by the project's own {', '.join(readers)}, which "
            "upstream has there: it takes effect through it"
        )
        for version in missing
        if any(
            known.get(t, {}).get(version) is Outcome.OK
            and any(runs(patches[t], site, version) for site in patches[t].sites)
            for t in readers
            if t in patches
        )
    }


def _alias_where_absent(item: Resolved, runs: Runs) -> bool:
    """Every site binds upstream's own object under another name (``X.a = X.b``), and on no
    release that has ``X.a`` does one run: a test keeps the binding off wherever upstream
    has the name (helical's ``if not hasattr(generation, "GreedySearch..."):
    generation.SampleDecoderOnlyOutput = GenerateDecoderOnlyOutput``, for a third party
    still importing the old name). Where it binds, upstream has no ``X.a`` to read, so it
    redirects nothing: it serves the readers that are not upstream, as a re-export does."""
    reference = item.reference
    there = [v for v, outcome in item.outcomes.items() if outcome is Outcome.OK]
    return (
        bool(there)
        and all(site.aliases for site in reference.sites)
        and not any(runs(reference, site, v) for v in there for site in reference.sites)
    )


def _owner_missing(reference: Reference, known: Outcomes) -> set[str]:
    """The releases where something a read or patch lies in (``x.y`` of ``x.y.f``), itself
    used by the project, is missing: reaching ``x.y.f`` fails at ``x.y`` first (the name
    its chain starts from was never bound there, or ``x.y`` raises), so the miss is that
    use's, found and counted as its own (fschat's ``from transformers import deepspeed`` and
    its ``deepspeed.is_deepspeed_zero3_enabled``). An import of ``x.y.f`` is its own
    statement: it fails at its own site, and counts there."""
    target = reference.target
    while "." in (target := target.rpartition(".")[0]):
        if target in known:
            return {v for v, outcome in known[target].items() if outcome is Outcome.MISSING}
    return set()


def _reexports(reference: Reference, site: Site) -> bool:
    """The site binds upstream's own ``n`` from another home at this one (``X.n = Z.n``):
    a moved name put back where it was. A different name (``X.a = X.b``) would redirect
    upstream's reads of ``a`` to ``b``: a patch, dead wherever ``a`` is gone."""
    return (
        bool(site.aliases)
        and site.aliases.rpartition(".")[2] == reference.target.rpartition(".")[2]
    )


def _binds(reference: Reference, site: Site, version: str, runs: Runs, known: Outcomes) -> bool:
    """Whether a re-export site binds on that release: it runs there, and what it binds is
    not missing there (reading it raises first, or its import did). Only what is of the
    same package is asked: another package's releases are other labels."""
    if not runs(reference, site, version):
        return False
    if site.aliases.split(".", 1)[0] != reference.package:
        return True
    return known.get(site.aliases, {}).get(version) is not Outcome.MISSING


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _there(owner: str, known: Outcomes) -> set[str]:
    """The releases where ``owner`` is known to be there: it, or something in it, is ok."""
    inside = f"{owner}."
    return {
        version
        for target, outcomes in known.items()
        if target == owner or target.startswith(inside)
        for version, outcome in outcomes.items()
        if outcome is Outcome.OK
    }


def _prefixes(target: str) -> Iterator[str]:
    """``a.b.c``, ``a.b``, ``a``."""
    while target:
        yield target
        target = target.rpartition(".")[0]


def _undecided(finding: Finding, runs: Runs, gone: Gone) -> str:
    """Why a miss is only possible: on each of its releases, every site that runs there and
    may break (its import's failure is not handled) sits where a test canary cannot evaluate
    decides whether it runs, or is reached only through a registration under model types
    the release lacks ("": some such site certainly runs there).

    Code filed under a model type's name (``@register_loader("qwen3_5_moe")``) is that
    model's, which no checkpoint of such a release loads; but whether the registry is looked
    up by a model's type, or by a name a user gives, is not in the source."""
    reference = finding.reference
    undecided = ""
    types: set[str] = set()
    named: set[str] = set()
    for version in finding.new:
        for site in _may_break(reference, runs, version):
            lacking = next((r for r in site.registered if gone(r, version)), "")
            model = site.named_for if site.named_for and gone(site.named_for, version) else ""
            if not site.undecided and not lacking and not model:
                return ""
            undecided = undecided or site.undecided
            if site.undecided:
                continue
            if lacking:
                types.update(p.rsplit(".", 1)[1] for p in model_alternatives(lacking))
            else:
                named.add(model.rsplit(".", 1)[1])
    if types:
        return (
            f"reached only through a registration under model type {' or '.join(sorted(types))}"
            ", which those releases lack: it runs there only if the registry is looked up by"
            " another name than the model's type"
        )
    if named:
        return (
            f"in a module named for model {' and '.join(sorted(named))}, which those releases"
            " lack: it holds that model's code, which no checkpoint of theirs loads, unless"
            " the name says otherwise"
        )
    return undecided  # "" where it misses nowhere new


def _may_break(reference: Reference, runs: Runs, version: str) -> Iterator[Site]:
    """The sites of ``reference`` that run on ``version`` and may break there (an import
    whose failure is handled breaks nothing)."""
    return (s for s in reference.sites if not s.handled and runs(reference, s, version))


def with_inherited(found: Iterable[Finding], inherited: Mapping[str, Inherited]) -> list[Finding]:
    """``found``, each counted patch of a member its class had only by inheritance from
    another class (``inherited``: the patched member -> that class's member and its
    outcomes) made possible where that class still has it (:func:`_inherited_still`)."""
    return [
        replace(finding, possible=why)
        if finding.fails
        and (why := _inherited_still(finding, inherited.get(finding.reference.target)))
        else finding
        for finding in found
    ]


def _inherited_still(finding: Finding, provider: Inherited | None) -> str:
    """Why a patch's miss is only possible: the class it binds the member on had it only by
    inheritance, and the class it inherited it from still has it on each of its releases
    (``PreTrainedModel.generate``, ``GenerationMixin``'s until 4.50). Upstream moved the
    member to a base its subclasses list beside this class: where they list it after, the
    project's binding comes first in their MRO and still applies (transformers' models
    derive from their ``PreTrainedModel``, then ``GenerationMixin``); where before, it is
    shadowed. Which, the class alone does not say ("": not such a patch, or that member is
    gone too, where nothing calls the binding)."""
    reference = finding.reference
    if reference.kind is not Kind.PATCH or provider is None or not finding.new:
        return ""
    if not all(site.replaces for site in reference.sites):
        return ""  # an item assignment or += reads the member first: that raises
    member, outcomes = provider
    if any(outcomes.get(version) is not Outcome.OK for version in finding.new):
        return ""
    return (
        f"the class had it only by inheritance, from {member}, which is still there:"
        " subclasses deriving from both find the project's binding first where this class"
        " comes first in their bases, and the inherited member where it does not"
    )


def _outside_extra(finding: Finding, runs: Runs, target: Target) -> str:
    """Why a miss is only possible: on each of its releases, every site that runs there and
    may break lies in modules named for one of the project's extras (a folder or file
    ``rfdetr`` for the extra ``rfdetr``) whose own range on the package leaves that release
    out. Installed as the project says for that code, the release is not there; whether
    that code is reached only with the extra installed is not in the metadata ("": some
    such site lies elsewhere, or its extra allows the release)."""
    reference = finding.reference
    package = reference.package
    named: set[str] = set()
    for version in finding.new:
        for site in _may_break(reference, runs, version):
            extra = next(
                (
                    e
                    for e in _extras_named(site.path, target)
                    if not _allows(target.extras[e].get(package), version)
                ),
                "",
            )
            if not extra:
                return ""
            named.add(extra)
    if not named:
        return ""
    spelled = " and ".join(f"[{e}] ({package}{target.extras[e][package]})" for e in sorted(named))
    return (
        f"it lies in modules named for the project's extra {spelled}: installed with that"
        " extra, as the project says that code needs, these releases are not there"
    )


def _extras_named(path: str, target: Target) -> list[str]:
    """The project's extras a folder or file of ``path`` is named for (``.../rfdetr/x.py``,
    ``.../rfdetr.py``: ``rfdetr``)."""
    if not target.extras:
        return []
    parts = path.removesuffix(".py").split("/")
    return [e for e in target.extras if any(canonicalize_name(p) == e for p in parts)]


def _allows(specifier: str | None, version: str) -> bool:
    """Whether an extra's range on the package (None: it has none) holds the release."""
    if not specifier:
        return True
    try:
        return in_range(version, SpecifierSet(specifier))
    except InvalidSpecifier:
        return True  # unread: it may allow it


def _bound_elsewhere(finding: Finding, runs: Runs, known: Outcomes) -> str:
    """Why a patch's miss is only possible: on each of its releases, every site that runs
    there binds the same object under the same name on another owner that has the name
    there (auto-round's ``conversion_mapping.get_checkpoint_conversion_mapping`` beside
    ``modeling_utils.``'s, which 5.x no longer imports). An owner that stopped binding a
    name no longer reads it under that name; whether upstream now reads the other binding
    (patched) or one the project never patched is not in the source of either ("": some
    site misses alone)."""
    reference = finding.reference
    if reference.kind is not Kind.PATCH:
        return ""
    there = ""
    for version in finding.new:
        running = [s for s in reference.sites if runs(reference, s, version)]
        bound = [
            next((t for t in s.elsewhere if known.get(t, {}).get(version) is Outcome.OK), "")
            for s in running
        ]
        if not running or not all(bound):
            return ""
        there = there or bound[0]
    return (
        f"the project binds the same object as {there}, which upstream has there: "
        "upstream may read the name there"
    )


def _below_floor(item: Resolved, declared: SpecifierSet | None) -> str:
    """Why an anchor's miss is only possible: its text is on no release of the declared
    range. Where it is on older ones, the rewrite targets code of releases the project no
    longer supports (a fix for a bug upstream fixed since), or stopped applying before the
    floor moved; where it is on none checked, it targets older code still, or never
    matched (unsloth's gradient-accumulation rewrite of 4.46's ``training_step``, whose
    pattern needs a flag it is not given). Either way nothing stopped applying inside the
    range, and the releases checked prove neither reading. A rewrite the project raises
    without is no silent one: missing on every release it supports, it breaks there."""
    reference = item.reference
    if reference.kind is not Kind.ANCHOR or declared is None:
        return ""
    # a release where the project reads another source (a registry's) says nothing here
    read = {v: o for v, o in item.outcomes.items() if item.read_on(v)}
    there = [v for v, outcome in read.items() if outcome is Outcome.OK]
    if there:
        if any(in_range(v, declared) for v in there):
            return ""
        return (
            f"the text is only on releases below the declared range ({there[-1]} the last): "
            "a rewrite for releases the project no longer supports, or one that stopped "
            "applying before its floor"
        )
    inside = [o for v, o in read.items() if in_range(v, declared)]
    if not inside or any(o is not Outcome.MISSING for o in inside):
        return ""
    if any(site.raises for site in reference.sites):
        return ""
    return (
        "the text is on no release checked inside the declared range or below it: a "
        "rewrite for releases older than those, or one that never matched"
    )


def _anchor_came_later(finding: Finding) -> str:
    """Why an anchor's miss is only possible: its text came in a release of the declared
    range, and it is missing only on releases before that one. There the rewrite has
    nothing of that text to rewrite: upstream's older code lacks what it changes (a fix of
    code that release introduced), or says it otherwise and the project has no spelling for
    it. Which, no reading of source decides; nothing stopped applying that once applied
    (the other side of :func:`_below_floor`). A rewrite the project raises without is no
    silent one: it breaks there, and counts."""
    reference = finding.reference
    if reference.kind is not Kind.ANCHOR or finding.since is None or not finding.new:
        return ""
    later = set(finding.came_later)
    if any(v not in later for v in finding.new) or any(s.raises for s in reference.sites):
        return ""
    return (
        f"the text came in {finding.since}: before it the rewrite has nothing of it to "
        "rewrite, as upstream's older code lacks what it changes or spells it otherwise"
    )


def _never_had(item: Resolved, finding: Finding) -> str:
    """Why a binding of a name no release checked ever had is only possible: it cannot
    raise (what it binds on is there, or the miss is that owner's), and nothing upstream
    defined there stops being replaced. A literal is a flag of the project's own, read back
    through ``self`` by code it installs (unsloth_zoo's ``Llama4TextExperts.has_bias =
    False``), or one upstream dropped before the oldest release checked (a renamed
    ``_supports_flash_attn_2``). Code bound on a class is a member anyone holding an
    instance may call (lightning-thunder's ``LlamaRMSNorm.reset_parameters``, called by its
    meta-device materialization), or a method upstream dropped before then. The releases
    checked prove neither, except of a private function the project binds under its own
    name and never calls (:attr:`Site.uncalled`): no one else calls a private member, and
    upstream, lacking the name, does not; it is held (fastckpt's
    ``LlamaModel._prepare_decoder_attention_mask``, a method 4.36 dropped). Code bound on
    a module is held: only that module's code reads its names, so nothing but upstream
    would run it there (liger's ``CrossEntropyLoss``). A member is judged on the releases
    of the finding: where the class itself is missing (trl's
    ``GenericForSequenceClassification`` before 4.56), the miss is its module's."""
    reference = item.reference
    if not _replaces(reference) or not item.outcomes:
        return ""
    if any(outcome is not Outcome.MISSING for outcome in item.outcomes.values()):
        return ""
    if all(site.constant for site in reference.sites):
        return (
            "no release checked ever had it: the literal is a flag of the project's own, or "
            "one upstream dropped before the oldest release checked"
        )
    if all(site.uncalled for site in reference.sites):
        return ""  # a private method nothing calls where no release has the name
    # on the class where the finding is (releases without the class are that import's)
    if finding.missing and all(
        is_member_miss(item.why.get(version, "")) for version in finding.missing
    ):
        return (
            "no release checked ever had it on the class: a member the project adds, called "
            "through instances by whoever holds one (its own code, torch), or one upstream "
            "dropped before the oldest release checked"
        )
    return ""  # a module's name: only that module's code reads it (liger's CrossEntropyLoss)


def _recreated(item: Resolved, finding: Finding, runs: Runs) -> str:
    """Why a binding of the project's own object under its own name on an upstream module
    (``modeling_llama.LlamaLinearScalingRotaryEmbedding = LlamaLinearScalingRotaryEmbedding``)
    is only possible where the module dropped a name it had on other releases: the project
    puts the name back for code that still imports it from there (a compat export), or
    replaces an object upstream no longer has, so stopped applying. Which one, the source of
    neither side says. A function of the name is a patch: a fixed copy of upstream's put in
    its place (nemo-automodel's ``fa_utils.prepare_fa2_from_position_ids``, renamed upstream
    in 5.18), as is a member of a class (``Mixer.torch_forward = torch_forward``): upstream
    calls its classes' members, and one it dropped it no longer calls."""
    reference = item.reference
    if not _replaces(reference) or not any(o is Outcome.OK for o in item.outcomes.values()):
        return ""  # a name no release had is _never_had's
    if any(is_member_miss(item.why.get(version, "")) for version in finding.new):
        return ""
    running = [s for s in reference.sites if any(runs(reference, s, v) for v in finding.new)]
    if not running or not all(site.exports and not site.function for site in running):
        return ""  # a function of the name is a fixed copy of upstream's, put in its place
    return (
        "it binds the project's own object of that name where upstream dropped it: a name put "
        "back for code that still imports it, or a replacement of an object upstream no longer "
        "has"
    )


def _tested_anchor(finding: Finding, runs: Runs) -> str:
    """Why an anchor's miss is only possible: on each of its releases, every site that runs
    there is one the project guards (it asks whether the text is there, or catches the
    rewrite's failure) and goes on without it ("": some site assumes the text). Where the
    text is gone the rewrite stops applying, a state the project's own code provides for;
    whether upstream still needs the rewrite there is a fact about upstream's behaviour,
    which no reading of either side's source decides."""
    reference = finding.reference
    if reference.kind is not Kind.ANCHOR:
        return ""
    for version in finding.new:
        running = [s for s in reference.sites if runs(reference, s, version)]
        if not running or not all(site.guarded for site in running):
            return ""
    site = next(s for s in reference.sites if s.guarded)
    return (
        f"the project tests for this text ({site.path}:{site.line}) and goes on without it: "
        "the rewrite stops applying there, which its code provides for"
    )


def _nothing_to_delete(finding: Finding, item: Resolved, runs: Runs) -> str:
    """Why an anchor's miss is only possible: on each of its releases, every site that runs
    there deletes the text (``re.sub(p, "", s)``) and no spelling of it is left in the
    source. Upstream dropped what the project removes (the rewrite has nothing left to do)
    or renamed it (the rewrite stops applying): which, no reading of the source decides.
    Where one of its names is still there the text may only be reformatted or edited, and
    it counts."""
    reference = finding.reference
    if reference.kind is not Kind.ANCHOR:
        return ""
    for version in finding.new:
        running = [s for s in reference.sites if runs(reference, s, version)]
        gone = TEXT_GONE in item.why.get(version, "")
        if not gone or not running or not all(site.deletes for site in running):
            return ""
    site = next(s for s in reference.sites if s.deletes)
    first = finding.new[0]
    return (
        f"the project deletes this text ({site.path}:{site.line}), and on {first} "
        f"{TEXT_GONE}: upstream dropped it (nothing is left to delete) or renamed it"
    )


def _proof(finding: Finding, runs: Runs) -> str:
    """What makes a counted finding true: upstream lacks it there, and a site runs there."""
    if not finding.new:
        return ""
    first = finding.new[0]
    reference = finding.reference
    running = [s for s in reference.sites if runs(reference, s, first)]
    # the site that makes it count: one whose miss is not handled, unguarded if there is one
    site = min(running, key=lambda s: (bool(s.handled), s.guarded), default=None)
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
