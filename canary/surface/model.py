"""The data of a surface run, and its JSON form (the contract in DESIGN.md).

Extraction produces :class:`Reference` values (one per distinct upstream thing a target
uses, with every site that uses it); resolution adds an :class:`Outcome` per release;
a :class:`SurfaceResult` holds both and reads/writes the JSON other tools rely on::

    {"targets": [{"name", "version", "requires": {pkg: specifier}}],
     "packages": {pkg: [versions checked]},
     "references": [{"package", "target", "kind", "anchor",
                     "read_from"?: {"owners", "follow_shims"}, "star"?: module,
                     "sites": [{"path", "line",
                     "guarded", "versions", "at_import", "undecided",
                     "fallback_of", "requires", "replaces", "aliases",
                     "alternatives", "after", "handled", "exports", "raises", "constant",
                     "read_by", "lacks", "elsewhere", "function", "registered",
                     "named_for", "deletes", "uncalled"}],
                     "outcomes": {version: "ok" | "missing" | "unknown"}}]}
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.version import InvalidVersion, Version

from canary import versions as _versions

SCHEMA_KEYS = ("targets", "packages", "references")

MODEL_PACKAGES = "transformers.models"
# Joins the model packages a model-type test asks for in a site's ``requires``: one of them
# (``transformers.models.qwen3_5|transformers.models.qwen3_5_moe``).
MODEL_ALTERNATIVES = "|"


class Kind(str, enum.Enum):
    """What a project does with an upstream thing."""

    IMPORT = "import"  # import x / from x import y / importlib.import_module("x")
    ATTRIBUTE = "attribute"  # an attribute chain rooted at an upstream binding, read
    PATCH = "patch"  # assigned to: x.y.forward = ..., setattr(x, "y", ...), mapping[k] = ...
    SOURCE = "source"  # inspect.getsource(<upstream object>)
    ANCHOR = "anchor"  # a text the project looks for in that source (.replace, in, re...)

    def __str__(self) -> str:
        return self.value


class Outcome(str, enum.Enum):
    """One reference on one release. UNKNOWN (cannot be decided statically) is never
    reported as missing."""

    OK = "ok"
    MISSING = "missing"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


class Match(str, enum.Enum):
    """How an anchor is applied to the source text, so resolution matches it the same way."""

    EXACT = "exact"  # str.replace / in / find / count / split: the exact text
    DEDENTED = "dedented"  # the same, on textwrap.dedent(source)
    REGEX = "regex"  # re.sub / re.search / a compiled pattern, on the raw text
    REGEX_DEDENTED = "regex_dedented"

    def __str__(self) -> str:
        return self.value


_OPERATORS = ("<=", ">=", "!=", "==", "<", ">")  # two-character ones first


def model_requirement(types: Iterable[str]) -> str:
    """A ``requires`` entry for a model of one of ``types``: one of their model packages
    (``transformers.models.a|transformers.models.b``)."""
    return MODEL_ALTERNATIVES.join(f"{MODEL_PACKAGES}.{t}" for t in sorted(types))


def model_alternatives(required: str) -> tuple[str, ...]:
    """The model packages of a site's ``requires`` entry that a model-type test made (one
    of them is there where the site runs); () for any other entry."""
    parts = tuple(required.split(MODEL_ALTERNATIVES))
    if all(p.count(".") == 2 and p.startswith(f"{MODEL_PACKAGES}.") for p in parts):
        return parts
    return ()


@dataclass(frozen=True, order=True)
class Site:
    """Where the target uses the reference. ``guarded``: inside ``try/except``, or under a
    ``hasattr``/``getattr(..., default)``/version/``is_*_available`` test: a miss there does
    not crash, it silently skips the patch. ``versions``: the releases the site can run on,
    per package, from the version tests of the branches it sits in (``("transformers",
    ">=5.0.0")``; a package absent: every release). ``at_import``: it runs when its module is
    imported (module level, or a class body there), not only when a function is called."""

    path: str  # relative to the target's root, "/"-separated
    line: int
    guarded: bool = False
    versions: tuple[tuple[str, str], ...] = ()  # (package, "op version[,op version...]")
    at_import: bool = False
    # why canary cannot tell where it runs: a test it cannot evaluate decides (a project
    # helper named for versions it cannot read); "": decided
    undecided: str = ""
    # the upstream imports of the ``try`` whose ``except ImportError`` it sits in: it runs
    # only where one of them fails (empty: not in such a fallback)
    fallback_of: tuple[str, ...] = ()
    # upstream things a test before it found present (hasattr, ``X is not None`` of an
    # upstream binding, an import whose ImportError leaves): where one is missing, it does
    # not run; a presence test requires what it tests. A model-type test requires one of
    # its model packages: ``transformers.models.a|transformers.models.b``
    requires: tuple[str, ...] = ()
    # a PATCH site that binds the name (``X.n = v``, ``setattr(X, "n", v)``): it cannot
    # raise while ``X`` is there, and where upstream lacks ``n`` it adds it; an item
    # assignment (``X.n[k] = v``) reads ``X.n`` first
    replaces: bool = False
    # a binding of upstream's own object (``X.n = Y``): ``Y``'s dotted path (""; none); it
    # puts no code of the project's in upstream's way, and binds only where ``Y`` is there
    aliases: str = ""
    # ANCHOR: other anchors on the same source the project tries instead of this one (or
    # that decide it does not run): where one of them is there, this miss changes nothing.
    # PATCH: the other names of the same owner its function binds the same object to
    alternatives: tuple[str, ...] = ()
    # upstream imports its function made before it, in the blocks around it: where one
    # fails, it raises there and the site is not reached
    after: tuple[str, ...] = ()
    # an import whose failure the handler of its ``try`` takes the place of (it gives the
    # names other values, or leaves silently): why its miss breaks nothing ("": it may)
    handled: str = ""
    # a PATCH site that binds the project's own object under the name it has in the project
    # (``m.Version = Version``): where upstream never had the name, an export, not a patch
    exports: bool = False
    # an ANCHOR the project raises without (``if A not in src: raise``, ``assert``): a
    # check, so its miss breaks there instead of silently skipping a rewrite; an IMPORT
    # whose every guard raises its ImportError again (``except ImportError: raise
    # ImportError("install trl>=0.8")``): guarded, and still a break
    raises: bool = False
    # a PATCH site that binds a literal (``X.flag = True``): data, no code of the project's
    constant: bool = False
    # a PATCH site binding ``X.n`` that the project's own functions bound as ``X.m`` (these)
    # read as ``self.n``: where upstream still calls ``X.m``, the binding takes effect
    read_by: tuple[str, ...] = ()
    # upstream things a test before it found absent (the ``else`` of ``hasattr``, ``x is
    # None`` of a ``getattr(..., None)``): where one is there, it does not run
    lacks: tuple[str, ...] = ()
    # a PATCH site whose function binds the same object under the same name on other
    # owners (``conversion_mapping.f = g; modeling_utils.f = g``): those targets. Where one
    # of them is there, upstream may read the name there: this miss alone proves nothing
    elsewhere: tuple[str, ...] = ()
    # a PATCH site that binds one of the project's functions (``m.f = f``): code it puts
    # in the place of upstream's, to be called as upstream calls what it replaces
    function: bool = False
    # the model types a registration it is reached only through is keyed by, as a
    # model-type test's ``requires`` entry (``@register_loader("qwen3_5_moe")``): where
    # one's packages are all gone, it runs only if the registry is looked up by model type
    registered: tuple[str, ...] = ()
    # the model its module is named for, as a model-type test's ``requires`` entry
    # (``transformers.models.qwen3_vl`` of ``graph_lowering/qwen3_vl.py``): where that
    # package is gone, the module holds code of a model no checkpoint of the release loads
    named_for: str = ""
    # an ANCHOR the project deletes (``re.sub(p, "", s)``, ``s.replace(a, "")``): where no
    # spelling of the text is left, upstream dropped it or renamed it; either way the
    # rewrite has nothing to do, and whether it should have, the source does not say
    deletes: bool = False
    # a PATCH site binding a private function of the project's under its own name, which
    # the project's text names nowhere else but in prose: the project never calls it, so
    # only upstream runs it, through the name bound. Where no release has that name on the
    # class, nothing does: the binding is a patch of a method upstream dropped
    uncalled: bool = False

    def runs_on(self, package: str, label: str) -> bool:
        """Whether the site can run on release ``label`` of ``package``: every bound of its
        window holds there, compared as the project's own test compares (``packaging``
        versions, exactly). On ``main`` (its version is not in the label) it can."""
        return all(
            _holds(bound, label)
            for name, spec in self.versions
            if name == package
            for bound in spec.split(",")
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "guarded": self.guarded,
            "versions": dict(self.versions),
            "at_import": self.at_import,
        }
        # only where they say something: most sites are decided and in no fallback
        for name in _SAID_WHERE_SET:
            value = getattr(self, name)
            if value:
                data[name] = list(value) if isinstance(value, tuple) else value
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Site:
        window = tuple(sorted((str(p), str(s)) for p, s in (data.get("versions") or {}).items()))
        return cls(
            str(data["path"]),
            int(data["line"]),
            bool(data["guarded"]),
            window,
            bool(data.get("at_import", False)),
            str(data.get("undecided") or ""),
            tuple(str(t) for t in data.get("fallback_of") or ()),
            tuple(str(t) for t in data.get("requires") or ()),
            bool(data.get("replaces", False)),
            str(data.get("aliases") or ""),
            tuple(str(t) for t in data.get("alternatives") or ()),
            tuple(str(t) for t in data.get("after") or ()),
            str(data.get("handled") or ""),
            bool(data.get("exports", False)),
            bool(data.get("raises", False)),
            bool(data.get("constant", False)),
            tuple(str(t) for t in data.get("read_by") or ()),
            tuple(str(t) for t in data.get("lacks") or ()),
            tuple(str(t) for t in data.get("elsewhere") or ()),
            bool(data.get("function", False)),
            tuple(str(t) for t in data.get("registered") or ()),
            str(data.get("named_for") or ""),
            bool(data.get("deletes", False)),
            bool(data.get("uncalled", False)),
        )


# The fields of a site its JSON carries only where they are set, in the contract's order.
_SAID_WHERE_SET = (
    "undecided",
    "fallback_of",
    "requires",
    "replaces",
    "aliases",
    "alternatives",
    "after",
    "handled",
    "exports",
    "raises",
    "constant",
    "read_by",
    "lacks",
    "elsewhere",
    "function",
    "registered",
    "named_for",
    "deletes",
    "uncalled",
)


def _holds(bound: str, label: str) -> bool:
    """``label`` satisfies one bound (``>=5.0.0``). A bound that does not read as one holds,
    and so does every bound on a label that is no version (``main``, a commit: its version
    is not known here): a window only ever leaves out releases where the site certainly
    does not run."""
    operator = next((op for op in _OPERATORS if bound.startswith(op)), None)
    if operator is None:
        return True
    try:
        limit = Version(bound[len(operator) :])
    except InvalidVersion:
        return True
    version = _versions.parse(label)
    if version is None:
        return True
    return {
        "<": version < limit,
        "<=": version <= limit,
        ">": version > limit,
        ">=": version >= limit,
        "==": version == limit,
        "!=": version != limit,
    }[operator]


@dataclass(frozen=True, order=True)
class ReadFrom:
    """Where a declared source registry reads a source from (its ``source`` templates): on
    each release the first of ``owners`` (what the method is looked up on: a class) that
    exists is read, and none where none does (the project tries each: it applies
    nothing there). With
    ``follow_shims``, an owner that derives from a later owner's class (a forwarding shim
    left where the class used to be) is read as that class."""

    owners: tuple[str, ...]  # dotted, in the order they are tried
    follow_shims: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"owners": list(self.owners), "follow_shims": self.follow_shims}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReadFrom:
        return cls(tuple(str(o) for o in data["owners"]), bool(data.get("follow_shims")))


@dataclass(frozen=True)
class Reference:
    """One upstream thing a target depends on: ``target`` is the dotted upstream path
    (``transformers.trainer.Trainer.compute_loss``; for an anchor, the function whose source
    it is applied to) and ``package`` its distribution (``transformers``)."""

    package: str
    target: str
    kind: Kind
    sites: tuple[Site, ...]
    anchor: str | None = None  # ANCHOR only: the literal text or pattern
    match: Match | None = None  # ANCHOR only
    # ANCHOR of a registry with several sources: read only on the releases where its
    # owner is the one read (None: read wherever it is)
    read_from: ReadFrom | None = None
    # a name the project reads bare, bound by its ``from <star> import *``: the star import
    # gives it only where ``star`` exports it (its ``__all__``), not wherever ``star`` binds it
    star: str | None = None

    @property
    def key(self) -> tuple[Any, ...]:
        """What makes two references the same one (their sites are merged): where it is
        read from, and through which star import, too, as those decide its outcomes."""
        plain = (self.package, self.target, self.kind.value, self.anchor)
        if self.star is not None:
            plain = (*plain, f"*{self.star}")
        if self.read_from is None:
            return plain  # as before: what was remembered under it still applies
        return (*plain, self.read_from.owners, self.read_from.follow_shims)

    @property
    def guarded(self) -> bool:
        """Every site is guarded: a miss silently disables the patch instead of crashing."""
        return bool(self.sites) and all(site.guarded for site in self.sites)

    def runs_on(self, label: str) -> bool:
        """Whether some site can run on release ``label`` of the package (a reference
        without sites: every release). A miss where none runs is no one's problem."""
        return not self.sites or any(site.runs_on(self.package, label) for site in self.sites)

    @property
    def private(self) -> bool:
        """Reaches a private name (a ``_``-prefixed part) or patches/anchors upstream code:
        the part of a surface upstream promises nothing about."""
        if self.kind in (Kind.PATCH, Kind.SOURCE, Kind.ANCHOR):
            return True
        return any(part.startswith("_") for part in self.target.split("."))

    def merged(self, other: Reference) -> Reference:
        """This reference with ``other``'s sites too (same key)."""
        if other.key != self.key:
            raise ValueError(f"cannot merge {other.key} into {self.key}")
        return merge_references((self, other))[0]


def merge_references(references: Iterable[Reference]) -> tuple[Reference, ...]:
    """One reference per key, in first-seen order, the first's fields and every site, each
    reference's sites sorted once: merging one at a time sorted them all again each time,
    quadratic in a module's definitions (4,000 functions patching one method: 12 s)."""
    first: dict[tuple[Any, ...], Reference] = {}
    sites: dict[tuple[Any, ...], set[Site]] = {}
    for reference in references:
        key = reference.key
        first.setdefault(key, reference)
        sites.setdefault(key, set()).update(reference.sites)
    return tuple(replace(r, sites=tuple(sorted(sites[key]))) for key, r in first.items())


@dataclass(frozen=True)
class Target:
    """A project whose surface was extracted: its name, version and declared requirement
    on each upstream package (``Requires-Dist``; a package it does not declare is absent);
    its core requirements on every package (``dependencies``: canonical name -> specifier,
    :mod:`canary.surface.coinstall`), and the upstream releases those leave out: none can
    be installed beside it (``uninstallable``: pkg -> release -> the conflict)."""

    name: str
    version: str | None
    requires: Mapping[str, str] = field(default_factory=dict)  # pkg -> PEP 440 specifier
    dependencies: Mapping[str, str] = field(default_factory=dict)
    uninstallable: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # each extra's own range on the upstream packages it requires (canonical extra name ->
    # pkg -> specifier): what the code the project installs that extra for needs
    extras: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def installable(self, package: str, version: str) -> bool:
        return version not in self.uninstallable.get(package, {})

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "version": self.version,
            "requires": dict(self.requires),
        }
        if self.uninstallable:  # (its dependencies are what decided this: not repeated)
            data["uninstallable"] = {p: dict(v) for p, v in self.uninstallable.items()}
        if self.extras:
            data["extras"] = {e: dict(r) for e, r in self.extras.items()}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Target:
        return cls(
            str(data["name"]),
            data.get("version"),
            dict(data.get("requires") or {}),
            uninstallable={p: dict(v) for p, v in (data.get("uninstallable") or {}).items()},
            extras={e: dict(r) for e, r in (data.get("extras") or {}).items()},
        )


# The why of an ``ok`` on a release where a registry reads another of its sources: nothing
# reads the reference there, so nothing fails through it, and it was not found there either.
NOT_READ = "not read on this release"
# in a missing anchor's ``why``: none of its spellings is there either (a word of it is gone)
TEXT_GONE = "no spelling of the text is there"


@dataclass(frozen=True)
class Resolved:
    """A reference and its outcome on every release checked (``why`` says, per release,
    what was found instead for a miss, or what could not be decided)."""

    reference: Reference
    outcomes: Mapping[str, Outcome]  # version label -> outcome
    why: Mapping[str, str] = field(default_factory=dict)

    def read_on(self, version: str) -> bool:
        """Whether the reference is read on that release (one of a registry's several
        sources is not, where another is read: :data:`NOT_READ`)."""
        return not self.why.get(version, "").startswith(NOT_READ)

    def to_json(self) -> dict[str, Any]:
        ref = self.reference
        return {
            "package": ref.package,
            "target": ref.target,
            "kind": ref.kind.value,
            "anchor": ref.anchor,
            "match": ref.match.value if ref.match else None,
            **({"read_from": ref.read_from.to_json()} if ref.read_from else {}),
            **({"star": ref.star} if ref.star else {}),
            "sites": [site.to_json() for site in ref.sites],
            "outcomes": {version: outcome.value for version, outcome in self.outcomes.items()},
            "why": dict(self.why),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Resolved:
        match = data.get("match")
        reference = Reference(
            package=str(data["package"]),
            target=str(data["target"]),
            kind=Kind(data["kind"]),
            sites=tuple(Site.from_json(s) for s in data["sites"]),
            anchor=data.get("anchor"),
            match=Match(match) if match else None,
            read_from=ReadFrom.from_json(data["read_from"]) if data.get("read_from") else None,
            star=str(data["star"]) if data.get("star") else None,
        )
        outcomes = {str(v): Outcome(o) for v, o in data["outcomes"].items()}
        return cls(reference, outcomes, dict(data.get("why") or {}))


@dataclass(frozen=True)
class SurfaceResult:
    """What ``python -m canary surface`` found: the JSON contract's three keys."""

    targets: tuple[Target, ...]
    packages: Mapping[str, tuple[str, ...]]  # pkg -> versions checked, oldest first
    references: tuple[Resolved, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "targets": [t.to_json() for t in self.targets],
            "packages": {pkg: list(versions) for pkg, versions in self.packages.items()},
            "references": [r.to_json() for r in self.references],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SurfaceResult:
        missing = [key for key in SCHEMA_KEYS if key not in data]
        if missing:
            raise ValueError(f"not a canary surface result: no {', '.join(missing)} key")
        return cls(
            targets=tuple(Target.from_json(t) for t in data["targets"]),
            packages={pkg: tuple(v) for pkg, v in data["packages"].items()},
            references=tuple(Resolved.from_json(r) for r in data["references"]),
        )
