"""One site of one upstream reference as the walk records it, and how uses become
references: the project's own attributes left out, the rest merged per reference."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from canary.surface import anchortests
from canary.surface.model import (
    Kind,
    Match,
    ReadFrom,
    Reference,
    Site,
    merge_references,
    model_requirement,
)


@dataclass(frozen=True)
class Use:
    """One site of one reference, with what the own-attribute rules need to know."""

    kind: Kind
    target: str
    path: str
    line: int
    guarded: bool
    anchor: str | None = None
    match: Match | None = None
    scope: int = 0  # the function it is in (0: module level)
    presence: bool = False  # hasattr(x, "y") / getattr(x, "y", default): asks, needs nothing
    unset: bool = False  # under a test that x.y is not there (yet)
    replaces: bool = False  # a PATCH that replaces the object (not an item in it)
    aliases: str = ""  # ... with upstream's own object Y (X.n = Y): Y's dotted path
    exports: bool = False  # ... with the project's own object of that name (X.n = n)
    function: bool = False  # ... to a function of the project's: code it puts in upstream's way
    uncalled: bool = False  # ... a private one of its own name, which the project never calls
    bound_object: str = ""  # ... to a name or attribute: its text (X.a = f; X.b = f)
    stash: str | None = None  # X._orig_f = X.f: the original it keeps beside it (X.f)
    constant: bool = False  # set to a literal (True, a name): a marker
    # ... to a function of the project's: the attributes it reads on its first parameter
    reads_self: frozenset[str] = frozenset()
    versions: tuple[tuple[str, str], ...] = ()  # the window of the version tests around it
    undecided: str = ""  # a test around it canary cannot evaluate decides whether it runs
    fallback_of: tuple[str, ...] = ()  # runs only where one of these upstream imports fails
    requires: tuple[str, ...] = ()  # runs only where these upstream things exist
    lacks: tuple[str, ...] = ()  # ... and only where these do not
    registered: tuple[str, ...] = ()  # reached through a registration under these model types
    spot: anchortests.Spot = (0, 0)  # ANCHOR: where it is applied (line, column)
    partners: tuple[anchortests.Spot, ...] = ()  # ANCHOR: the spots of its alternatives
    after: tuple[str, ...] = ()  # reached only after its function imported these
    handled: str = ""  # an import whose failure its try's handler takes the place of: why
    read_from: ReadFrom | None = None  # an anchor read only where its owner is the one read
    star: str | None = None  # its first name read bare, bound by ``from <star> import *``
    # an anchor the project raises without (a check), an import whose every guard raises
    # its ImportError again: its miss breaks
    raises: bool = False
    deletes: bool = False  # an anchor the project deletes (``re.sub(p, "", s)``)
    within: str = ""  # the module-level function it lies in ("": none; a method's is none)
    named_for: str = ""  # the model package its module is named for (Site.named_for)

    @property
    def backfills(self) -> bool:
        """It runs only where its target is not there: under a test that it is not, or in
        the ``except ImportError`` of an import of that one name (oxrl's ``try: from
        transformers.utils import LossKwargs except ImportError: ...; _tu.LossKwargs =
        LossKwargs``). A handler of several imports runs where any one fails: it may
        replace the others."""
        return self.unset or self.fallback_of == (self.target,)


def own_targets(
    uses: list[Use], tokens: frozenset[str], patterns: tuple[str, ...]
) -> frozenset[str]:
    replaced = {u.target for u in uses if u.kind is Kind.PATCH and u.replaces}
    sets: dict[str, list[Use]] = {}
    for use in uses:
        if use.kind is Kind.PATCH and use.replaces:
            sets.setdefault(use.target, []).append(use)
    own = {
        target
        for target in {u.target for u in uses if u.kind is not Kind.IMPORT}
        if _named_own(target.rpartition(".")[2], tokens, patterns)
    }
    for target, assigned in sets.items():
        owner = target.rpartition(".")[0]
        marker = owner in replaced and all(s.constant for s in assigned)
        stash = any(s.stash for s in assigned)
        if marker or stash or all(s.backfills for s in assigned):
            own.add(target)
    return frozenset(own)


def backfilled(uses: list[Use], own: frozenset[str]) -> frozenset[str]:
    """The project's own targets that are public names it binds only where a test found them
    absent (helical's ``if not hasattr(g, "GreedySearchDecoderOnlyOutput"): g.Greedy... =
    ...``): a name of upstream's API put back, which upstream has on other releases. A test
    of such a name still says something of the release, for the code it gates."""
    sets: dict[str, list[Use]] = {}
    for use in uses:
        if use.kind is Kind.PATCH and use.replaces and use.target in own:
            sets.setdefault(use.target, []).append(use)
    return frozenset(
        target
        for target, assigned in sets.items()
        if not target.rpartition(".")[2].startswith("_")
        and all(s.backfills and not s.stash and not s.constant for s in assigned)
    )


def _named_own(name: str, tokens: frozenset[str], patterns: tuple[str, ...]) -> bool:
    """A private name that carries the project's name (``_unsloth_patched``), or one the
    configuration lists. Public names are left alone: upstream has ``use_liger_kernel``."""
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
        return True
    lowered = name.lower()
    return name.startswith("_") and any(token in lowered for token in tokens)


def is_own(use: Use, own: frozenset[str]) -> bool:
    """Whether ``use`` reads one of the project's own attributes, or something in one. An
    import is only of the attribute itself: ``from m import X`` finds the ``m.X`` the
    project set (axolotl's ``ReplicateParallel`` shim, set where upstream lacks it), but a
    module under it is still upstream's to provide."""
    if use.kind is Kind.IMPORT:
        return use.target in own
    target = use.target
    while target:
        if target in own:
            return True
        target = target.rpartition(".")[0]
    return False


def named_for_models(uses: Iterable[Use], imported_eagerly: Callable[[str], bool]) -> list[Use]:
    """Each transformers use with the model package its module is named for, where its name
    could be one (``qwen3_vl.py``, ``qwen3_vl/__init__.py``): a package no release has is
    never gone (findings.py), so a name that is no model's says nothing. Not one that runs
    when its module is imported where the project imports that module at a module's level
    (``imported_eagerly``: brute-force-training's package imports every model's trainer):
    it breaks whoever imports the package, the model aside."""
    return [replace(use, named_for=_model_named(use, imported_eagerly)) for use in uses]


def _model_named(use: Use, imported_eagerly: Callable[[str], bool]) -> str:
    if not use.target.startswith("transformers."):
        return ""
    path = PurePosixPath(use.path)
    name = path.parent.name if path.stem == "__init__" else path.stem
    if not (name.isidentifier() and name.islower()):
        return ""
    if use.scope == 0 and imported_eagerly(name):
        return ""
    return model_requirement([name])


def merge(uses: Iterable[Use]) -> tuple[Reference, ...]:
    uses = list(uses)
    alternatives = _alternatives(uses)
    elsewhere = _elsewhere(uses)
    read_by = _read_by(uses)
    merged = merge_references(
        Reference(
            use.target.split(".", 1)[0],
            use.target,
            use.kind,
            (
                Site(
                    use.path,
                    use.line,
                    use.guarded,
                    use.versions,
                    at_import=use.scope == 0,
                    undecided=use.undecided,
                    fallback_of=use.fallback_of,
                    requires=use.requires,
                    lacks=use.lacks,
                    registered=use.registered,
                    named_for=use.named_for,
                    replaces=use.kind is Kind.PATCH and use.replaces,
                    aliases=use.aliases if use.kind is Kind.PATCH else "",
                    alternatives=alternatives.get(use, ()),
                    after=use.after,
                    handled=use.handled,
                    exports=use.kind is Kind.PATCH and use.exports,
                    function=use.kind is Kind.PATCH and use.replaces and use.function,
                    uncalled=use.kind is Kind.PATCH and use.uncalled,
                    raises=use.kind in (Kind.ANCHOR, Kind.IMPORT) and use.raises,
                    deletes=use.kind is Kind.ANCHOR and use.deletes,
                    constant=use.kind is Kind.PATCH and use.replaces and use.constant,
                    read_by=read_by.get(use, ()),
                    elsewhere=elsewhere.get(use, ()),
                ),
            ),
            use.anchor,
            use.match,
            use.read_from,
            use.star,
        )
        for use in uses
    )
    return tuple(sorted(merged, key=lambda r: (r.key[:3], r.anchor or "")))


def _alternatives(uses: list[Use]) -> dict[Use, tuple[str, ...]]:
    """Each anchor use's alternatives (:mod:`canary.surface.anchortests`): the anchors
    applied at its partners' spots to the same source, as the walk found them; and each
    patch's: the other names of the same owner its function binds the same object to."""
    at: dict[tuple[str, str, anchortests.Spot], set[str]] = {}
    for use in uses:
        if use.kind is Kind.ANCHOR and use.anchor is not None:
            at.setdefault((use.path, use.target, use.spot), set()).add(use.anchor)
    found = _bound_beside(uses, _one_patch)
    for use in uses:
        if use.partners:
            anchors = set().union(*(at.get((use.path, use.target, p), ()) for p in use.partners))
            anchors.discard(use.anchor)
            if anchors:
                found[use] = tuple(sorted(anchors))
    return found


def _elsewhere(uses: list[Use]) -> dict[Use, tuple[str, ...]]:
    """Each binding of ``X.n`` -> the other owners' ``Y.n`` its function binds the same
    object to (auto-round's ``conversion_mapping.get_checkpoint_conversion_mapping =
    ..._ar`` beside ``modeling_utils.get_checkpoint_conversion_mapping = ..._ar``)."""
    return _bound_beside(uses, _one_name)


def _bound_beside(
    uses: list[Use], group: Callable[[Use], tuple[str, int, str, str]]
) -> dict[Use, tuple[str, ...]]:
    """Each patch binding a named object -> the other targets of its ``group`` (a patch
    binds a named object only where it binds the name: ``bound_object`` says so)."""
    targets: dict[tuple[str, int, str, str], set[str]] = {}
    for use in uses:
        if use.kind is Kind.PATCH and use.bound_object:
            targets.setdefault(group(use), set()).add(use.target)
    return {
        use: tuple(sorted(others))
        for use in uses
        if use.kind is Kind.PATCH
        and use.bound_object
        and (others := targets[group(use)] - {use.target})
    }


def _one_name(use: Use) -> tuple[str, int, str, str]:
    """What makes bindings one name put on several owners: the file, the function, the
    name bound, the object bound."""
    return (use.path, use.scope, use.target.rpartition(".")[2], use.bound_object)


def _read_by(uses: list[Use]) -> dict[Use, tuple[str, ...]]:
    """Each binding of ``X.n`` -> the other names of ``X`` the project binds its own
    functions to that read ``self.n`` (axolotl's ``FalconH1Mixer.forward`` replacement
    calling the ``cuda_kernels_forward`` it binds beside it)."""
    readers: dict[str, dict[str, set[str]]] = {}  # owner -> name read -> the bindings reading
    for use in uses:
        if use.kind is Kind.PATCH and use.replaces and use.reads_self:
            owner, _, name = use.target.rpartition(".")
            for read in use.reads_self - {name}:
                readers.setdefault(owner, {}).setdefault(read, set()).add(use.target)
    found = {}
    for use in uses:
        if use.kind is Kind.PATCH and use.replaces:
            owner, _, name = use.target.rpartition(".")
            if by := readers.get(owner, {}).get(name):
                found[use] = tuple(sorted(by))
    return found


def _one_patch(use: Use) -> tuple[str, int, str, str]:
    """What makes bindings one patch: the file, the function, the owner, the object bound."""
    return (use.path, use.scope, use.target.rpartition(".")[0], use.bound_object)
