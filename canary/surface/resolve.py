"""Each reference on each release: ``ok``, ``missing`` or ``unknown``.

References are resolved through the same workspace the static tier uses (its sources,
cache and code index): a dotted target by :class:`canary.symbols.PackageTree`, one per
release, over that release's files; an anchor on the exact text ``inspect.getsource``
would give for the function it is applied to (:mod:`canary.surface.anchors`). An outcome
on a release is decided once, ever (:mod:`canary.surface.memo`); the releases that still
have references to decide are fetched and parsed ahead, several at a time, as the static
tier's prefetch does, and each release's files are read in one pass.

A release whose files cannot be read or parsed is an error of that release (nothing was
checked there), never an outcome.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from canary import codeindex, symbols
from canary.errors import InfrastructureError, Subject
from canary.surface.anchors import anchor_outcome, getsource_text
from canary.surface.coinstall import metadata_requirements
from canary.surface.memo import Memo, TextsMemo
from canary.surface.model import NOT_READ, Kind, Match, Outcome, ReadFrom, Reference, Resolved
from canary.surface.pins import index_requirements
from canary.symbols import alltext
from canary.workspace import Case, Workspace

_REQUIREMENTS = "surface-requirements"  # the cache's blob namespace: a release's Requires-Dist
_PINS = "surface-pins"  # ... and a project's pinned dependency's, as the index states them
#: Bump when what an outcome means changes in a way the code digest below cannot see.
RESOLUTION_FORMAT = 1
#: Bump when what a remembered reading of a file's ``__all__`` means changes.
TEXTS_FORMAT = 1

# The code that decides an outcome: a result remembered from other code is not reused.
_DECIDING_MODULES = ("canary.symbols", "canary.surface.resolve", "canary.surface.anchors")

Load = Callable[[str], "codeindex.Module | None"]
_CLASSES = (symbols.lookup.CLASS, symbols.lookup.NESTED_CLASS)
Key = tuple[Any, ...]  # Reference.key
Decided = tuple[Outcome, str]


class Lookup(Protocol):
    """What :meth:`canary.symbols.PackageTree.lookup` answers (the fields read here)."""

    found: bool | None  # None: cannot be decided statically
    path: str | None
    qualname: str | None
    kind: str
    why: str
    function: codeindex.Function | None
    cls: codeindex.Class | None


class PackageTree(Protocol):
    def lookup(
        self, dotted: str, *, bound_only: bool = False, imported: bool = False
    ) -> Lookup: ...

    def star_exports(self, dotted: str) -> frozenset[str] | None: ...

    def mro(self, path: str, class_qualname: str) -> tuple[tuple[str, Any] | str, ...]: ...


MakeTree = Callable[[str, Load], PackageTree]


def resolve(
    references: Sequence[Reference],
    cases: Mapping[str, Sequence[Case]],
    workspace: Workspace,
    *,
    memo: Memo | None = None,
    make_tree: MakeTree | None = None,
    on_error: Callable[[Case, InfrastructureError], None] | None = None,
    decide_only: Collection[Case] | None = None,
) -> tuple[Resolved, ...]:
    """Every reference on every case of its package (``cases``: package -> its cases,
    oldest first). A case that cannot be read is handed to ``on_error`` and left out of
    every outcome (without ``on_error`` it is raised). ``decide_only``: the cases that may
    be read; on the others an outcome is what is remembered, or none (not checked)."""
    memo = memo if memo is not None else Memo(workspace.cache, salt())
    texts = TextsMemo(workspace.cache, texts_salt())
    by_package: dict[str, list[Reference]] = {}
    for ref in references:
        by_package.setdefault(ref.package, []).append(ref)
    decided: dict[Case, dict[Key, Decided]] = {}
    tried: set[Case] = set()
    if decide_only is not None:
        for case in (c for listed in cases.values() for c in listed if c not in decide_only):
            tried.add(case)
            release = release_of(case)
            decided[case] = {
                ref.key: known
                for ref in by_package.get(case.package, ())
                if (known := memo.recall(ref.key, release)) is not None
            }
    hints: dict[str, set[str]] = {package: set() for package in by_package}

    def decide(case: Case) -> None:
        tried.add(case)
        try:
            decided[case] = resolve_case(
                by_package[case.package],
                case,
                workspace,
                memo=memo,
                make_tree=make_tree,
                hints=hints[case.package],
                texts=texts,
            )
        except InfrastructureError as exc:
            if on_error is None:
                raise
            on_error(case, exc)

    # Only what is still to decide is read: a warm run reads no upstream file at all.
    # Every release's download starts at once, the newest of each package first; that
    # one is decided first, and what its lookups read is then loaded ahead for every
    # other release too, as soon as its own download is done.
    pending = {
        package: [
            case
            for case in cases.get(package, ())
            if case not in tried and any(not memo.knows(ref.key, release_of(case)) for ref in mine)
        ]
        for package, mine in by_package.items()
    }
    first = [listed[-1] for listed in pending.values() if listed]
    rest = [case for listed in pending.values() for case in listed[:-1]]
    try:
        workspace.prefetch({case: _candidates(by_package[case.package]) for case in first + rest})
        for case in first:
            decide(case)
        workspace.prefetch({case: hints[case.package] for case in rest})
        for package in sorted(by_package):
            for case in cases.get(package, ()):
                if case not in tried:
                    decide(case)
    finally:
        memo.save()  # what was decided before an error is still worth keeping
        texts.save()
    ordered = [case for package in sorted(by_package) for case in cases.get(package, ())]
    return tuple(
        _resolved(ref, [(c, decided[c]) for c in ordered if c in decided]) for ref in references
    )


def _resolved(ref: Reference, decided: Sequence[tuple[Case, Mapping[Key, Decided]]]) -> Resolved:
    outcomes, why = {}, {}
    for case, found in decided:
        if case.package == ref.package and ref.key in found:  # else: not checked there
            outcome, reason = found[ref.key]
            outcomes[case.label] = outcome
            if reason:
                why[case.label] = reason
    return Resolved(ref, outcomes, why)


def _candidates(references: Sequence[Reference]) -> set[str]:
    owners = {o for ref in references if ref.read_from for o in ref.read_from.owners}
    return set().union(
        *(candidate_paths(ref.target, bound_only=_bound_only(ref)) for ref in references),
        *(candidate_paths(owner) for owner in owners),
    )


def _bound_only(ref: Reference) -> bool:
    """Whether only being bound matters (not the object): all but an anchor, which
    needs the source of what it is applied to."""
    return ref.kind is not Kind.ANCHOR


def resolve_case(
    references: Sequence[Reference],
    case: Case,
    workspace: Workspace,
    *,
    memo: Memo | None = None,
    make_tree: MakeTree | None = None,
    hints: set[str] | None = None,
    texts: TextsMemo | None = None,
) -> dict[Key, Decided]:
    """The outcome and why of each reference of ``case.package`` on that case (key ->
    (outcome, why); why is "" for ok). Raises the case's InfrastructureError when its
    files cannot be read or parsed. ``hints``: paths worth reading in one pass before the
    lookups (what the same lookups read on another release); the paths read here are
    added to it. ``texts``: the files' ``__all__`` read off their text on each release,
    remembered (:class:`~canary.surface.memo.TextsMemo`)."""
    own = memo is None
    memo = memo if memo is not None else Memo(workspace.cache, salt())
    own_texts = texts is None
    texts = texts if texts is not None else TextsMemo(workspace.cache, texts_salt())
    release = release_of(case)
    decided: dict[Key, Decided] = {}
    pending = []
    for ref in references:
        if ref.package != case.package:
            continue
        if (known := memo.recall(ref.key, release)) is not None:
            decided[ref.key] = known
        else:
            pending.append(ref)
    if pending:
        files = _CaseFiles(workspace, case, texts)
        files.read(set(hints or ()) | _candidates(pending))
        # One tree per release: what it learns of the package serves every lookup.
        tree = _tree(files, make_tree)
        read_here: dict[ReadFrom, tuple[str | None, str]] = {}
        for ref in pending:
            known = decided[ref.key] = _decide(ref, tree, files, read_here)
            memo.remember(ref.key, release, *known)
        if hints is not None:
            hints.update(files.loaded)
    if own:
        memo.save()
    if own_texts:
        texts.save()
    return decided


def release_of(case: Case) -> str | None:
    """What names the case's files for ever: a release, or a commit; None for a tree
    that can change under its name (a branch, a local checkout)."""
    if case.source == "local" or (case.mutable and case.commit is None):
        return None
    return f"{case.source}:{case.package}:{case.label}"


def candidate_paths(dotted: str, *, bound_only: bool = False) -> set[str]:
    """The files a lookup of ``dotted`` reads first: each prefix as a package or a
    module (``a/__init__.py``, ``a/b/__init__.py``, ``a/b.py``, ...). ``bound_only``: not
    the module that binds the last name, whose text may answer alone (the largest files
    of a package are often read for one class name)."""
    parts = dotted.split(".")
    found = set()
    for end in range(1, len(parts) + 1):
        if not parts[end - 1].isidentifier():
            break
        stem = "/".join(parts[:end])
        found.add(f"{stem}/__init__.py")
        if end > 1 and not (bound_only and end == len(parts) - 1):
            found.add(f"{stem}.py")
    return found


@functools.cache
def texts_salt() -> str:
    """What a remembered reading of ``__all__`` off a file's text depends on: the reader's
    format and source (not the resolver's, which changes far more often)."""
    digest = hashlib.sha256(f"{TEXTS_FORMAT}\0".encode())
    digest.update(Path(alltext.__file__ or "").read_bytes())
    return digest.hexdigest()


@functools.cache
def salt() -> str:
    """What a remembered result depends on besides the release: the code index's
    format, this resolver's format and the source of the code that decides."""
    digest = hashlib.sha256(f"{codeindex.INDEX_KEY}\0{RESOLUTION_FORMAT}".encode())
    for name in _DECIDING_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # not installed: it decides nothing
            continue
        where = Path(module.__file__ or "")
        sources = sorted(where.parent.rglob("*.py")) if where.name == "__init__.py" else [where]
        for source in sources:
            digest.update(source.read_bytes())
    return digest.hexdigest()


class WorkspaceSources:
    """The anchored functions of references on each release, read through the workspace
    (what :mod:`canary.surface.report` diffs between the last release where an anchor
    applied and the first where it does not). A release that cannot be read has no
    function to show: None, as for one that lacks it."""

    def __init__(
        self,
        workspace: Workspace,
        cases: Mapping[str, Sequence[Case]],
        *,
        make_tree: MakeTree | None = None,
    ) -> None:
        self.workspace = workspace
        self.cases = {(c.package, c.label): c for listed in cases.values() for c in listed}
        self.make_tree = make_tree

    def locate(self, reference: Reference, version: str) -> Subject | None:
        return self.locate_all([reference], version)[0]

    def locate_all(self, references: Sequence[Reference], version: str) -> list[Subject | None]:
        """Where each reference (of one package) lives on ``version``, one tree read for
        all of them; None where it is not there or cannot be read."""
        if not references:
            return []
        case = self.cases.get((references[0].package, version))
        if case is None:
            return [None] * len(references)
        try:
            tree = _tree(_CaseFiles(self.workspace, case), self.make_tree)
        except InfrastructureError:
            return [None] * len(references)
        found: list[Subject | None] = []
        for reference in references:
            try:
                lookup = tree.lookup(reference.target)
            except InfrastructureError:
                found.append(None)
                continue
            ok = lookup.found and lookup.path is not None
            found.append(Subject(lookup.path, lookup.qualname) if ok else None)  # type: ignore[arg-type]
        return found

    def requirements(self, package: str, version: str) -> dict[str, str] | None:
        """The release's core requirements on other packages, from its wheel's ``METADATA``
        (:func:`canary.surface.coinstall.metadata_requirements`); None where there is none
        to read (a checkout, a release that cannot be read)."""
        case = self.cases.get((package, version))
        if case is None:
            return None
        # a release's METADATA never changes: what it requires is kept (a read costs ~8 ms)
        cache, release = self.workspace.cache, release_of(case)
        name = _release_key(package, release or "")
        keeps = cache is not None and release is not None
        if keeps and (kept := _kept_requirements(cache.read_blob(_REQUIREMENTS, name))):
            return kept[0]
        path = f"{package.replace('-', '_')}-{version}.dist-info/METADATA"
        try:
            metadata = self.workspace.read(case, [path], keep=False).get(path)
        except InfrastructureError:
            return None  # not kept: the next run reads it again
        text = None if metadata is None else metadata.decode("utf-8", "replace")
        found = None if text is None else metadata_requirements(text)
        if keeps:
            cache.write_blob(_REQUIREMENTS, name, json.dumps(found).encode())
        return found

    def pinned_requirements(self, pins: Mapping[str, str]) -> dict[str, dict[str, str]]:
        """The core requirements of each release ``pins`` names (name -> version), as the
        package index states them (:func:`canary.surface.pins.index_requirements`), kept in
        the cache. Offline, or where pip cannot read them, only those kept: a pin not read
        narrows nothing (its misses count)."""
        cache = self.workspace.cache
        digests = {name: _release_key(name, version) for name, version in pins.items()}
        found: dict[str, dict[str, str]] = {}
        for name, digest in digests.items():
            kept = _kept_requirements(cache.read_blob(_PINS, digest)) if cache else ()
            if kept and kept[0] is not None:
                found[name] = kept[0]
        asked = {name: pins[name] for name in pins if name not in found}
        if not asked or self.workspace.policy.offline:
            return found
        try:
            read = index_requirements(asked)
        except InfrastructureError:
            # one pin pip cannot find fails the batch: ask each alone, keep what reads
            read = {}
            for name, version in asked.items():
                try:
                    read |= index_requirements({name: version})
                except InfrastructureError:
                    continue
        for name, requirements in read.items():
            if name in asked:
                found[name] = requirements
                if cache is not None:
                    cache.write_blob(_PINS, digests[name], json.dumps(requirements).encode())
        return found

    def module(self, package: str, version: str, path: str) -> codeindex.Module | None:
        case = self.cases.get((package, version))
        if case is None:
            return None
        try:
            return _CaseFiles(self.workspace, case).load(path)
        except InfrastructureError:
            return None


def _release_key(package: str, release: str) -> str:
    """The cache's name for what a release of a package requires."""
    return hashlib.sha256(f"{package}\0{release}".encode()).hexdigest()


def _kept_requirements(blob: bytes | None) -> tuple[dict[str, str] | None, ...]:
    """A kept reading of a release's requirements, as a 1-tuple; () where none is kept or
    the blob does not read as one (read the METADATA again)."""
    if blob is None:
        return ()
    try:
        kept = json.loads(blob)
    except ValueError:
        return ()
    if kept is None or (isinstance(kept, dict) and all(isinstance(v, str) for v in kept.values())):
        return (kept,)
    return ()


class _CaseFiles:
    """One case's files as a lookup reads them: modules through the workspace's code
    index, a module's whole text; ``loaded``: every path a lookup asked for."""

    def __init__(self, workspace: Workspace, case: Case, texts: TextsMemo | None = None) -> None:
        self.workspace = workspace
        self.case = case
        self.texts = texts if texts is not None else TextsMemo(None, "")
        self.loaded: set[str] = set()

    def read(self, paths: set[str]) -> None:
        """Load ``paths`` in one go: on a cold release, one pass over its wheel instead of
        one per file. Nothing more where the release is being loaded already (the
        resolution prefetches every release it decides): read again, they would be
        read twice."""
        if paths:
            self.workspace.prefetch({self.case: paths})

    def load(self, path: str) -> codeindex.Module | None:
        self.loaded.add(path)
        return self.workspace.snapshot(self.case, [path]).modules[path]

    def listdir(self, folder: str) -> list[str] | None:
        return self.workspace.listdir(self.case, folder)

    def read_all(self, paths: Sequence[str]) -> dict[str, alltext.TextAll]:
        """Files' ``__all__`` read off their text, unparsed (what a walk over a folder
        reads of most of them), remembered per release."""
        release = release_of(self.case)
        found = self.texts.recall(release, paths)
        if not (unread := [p for p in paths if p not in found]):
            return found
        # Most of them are the same file as on another release: read once.
        fingerprints = self.workspace.fingerprints(self.case, unread)
        found.update(self.texts.recall_same(release, fingerprints))
        if unread := [p for p in unread if p not in found]:
            # Straight from the kept wheel: what is derived is remembered, not the texts.
            read = alltext.read_all_of(self.workspace.read(self.case, unread, keep=False))
            self.texts.remember(release, read, fingerprints)
            found.update(read)
        return found

    def definitions_text(self, path: str) -> str | None:
        """The text to read a module's top-level definitions off, None where its code
        index is at hand or being made anyway (a prefetch named it): that answers too,
        without reading the file a second time."""
        return None if self.workspace.indexed(self.case, path) else self.text(path)

    def text(self, path: str) -> str | None:
        keep = self.workspace.policy.keep_files
        content = self.workspace.read(self.case, [path], keep=keep)[path]
        return None if content is None else content.decode("utf-8", errors="replace")


def _decide(
    ref: Reference,
    tree: PackageTree,
    files: _CaseFiles,
    read_here: dict[ReadFrom, tuple[str | None, str]],
) -> Decided:
    """The reference's outcome on the tree's release; one read from a registry's several
    sources only where its owner is the one read there (elsewhere nothing reads it: ok)."""
    if ref.read_from is not None:
        if ref.read_from not in read_here:
            read_here[ref.read_from] = owner_read(ref.read_from, tree)
        chosen, why = read_here[ref.read_from]
        if chosen is None:
            return Outcome.UNKNOWN, why
        if chosen != ref.target.rpartition(".")[0]:
            return Outcome.OK, f"{NOT_READ}: {why or f'{chosen} is read instead'}"
    if ref.star is not None and (unexported := _not_star_exported(ref.star, ref.target, tree)):
        return Outcome.MISSING, unexported
    found = tree.lookup(ref.target, bound_only=_bound_only(ref), imported=ref.kind is Kind.IMPORT)
    return _outcome(ref, found, files)


def _not_star_exported(star: str, target: str, tree: PackageTree) -> str:
    """Why ``from star import *`` does not bind the first name of ``target`` past it
    ("": it may; the lookup then decides): the module lists what it exports (its literal
    ``__all__``), and not that name. A module's own globals (``math``, ``logger``, the
    classes a model file keeps to itself) are attributes of it, but no star import gives
    them where ``__all__`` leaves them out."""
    name = target[len(star) + 1 :].partition(".")[0]
    exported = tree.star_exports(star)
    if exported is not None and name not in exported:
        return f"from {star} import * does not bind {name!r}: its __all__ does not list it"
    return ""


def owner_read(read_from: ReadFrom, tree: PackageTree) -> tuple[str | None, str]:
    """Which of the owners is read on the tree's release (None, and why, where that cannot
    be told; "", and why, where none exists: the project tries each and finds none, so
    it reads none and applies nothing): the first that exists; with ``follow_shims``, a
    class that derives from a later owner's class is read as that class."""
    present = _first_present(read_from.owners, tree)
    if isinstance(present, tuple):
        return present
    if not read_from.follow_shims:
        return read_from.owners[present], ""
    return _through_shim(read_from.owners, present, tree)


def _first_present(owners: Sequence[str], tree: PackageTree) -> int | tuple[str | None, str]:
    """The index of the first owner there, or what is read instead of any and why."""
    for index, owner in enumerate(owners):
        found = tree.lookup(owner)
        if found.found is None:
            return None, f"which source is read turns on {owner}, unknown here: {found.why}"
        if found.found:
            return index
    return "", f"none of {', '.join(owners)} is there"


def _through_shim(owners: Sequence[str], index: int, tree: PackageTree) -> tuple[str | None, str]:
    """``owners[index]``, or the first later owner its class derives from (a shim left
    where the class was: its base is read)."""
    owner, later = owners[index], owners[index + 1 :]
    if not later:
        return owner, ""
    found = tree.lookup(owner)
    if found.path is None or found.qualname is None or found.kind not in _CLASSES:
        return None, f"{owner} is a {found.kind or 'binding'}, not a class: a shim is not told"
    mro = tree.mro(found.path, found.qualname)
    if not mro:
        return None, f"the bases of {owner} are not known here: whether it forwards is not"
    bases = {(entry[0], entry[1].qualname) for entry in mro[1:] if isinstance(entry, tuple)}
    for candidate in later:
        base = tree.lookup(candidate)
        if base.found and base.path is not None and (base.path, base.qualname) in bases:
            return candidate, ""
    return owner, ""


def _outcome(ref: Reference, lookup: Lookup, files: _CaseFiles) -> Decided:
    if lookup.found is None:
        return Outcome.UNKNOWN, lookup.why
    if not lookup.found:
        return Outcome.MISSING, lookup.why
    if ref.kind is not Kind.ANCHOR or ref.anchor is None:
        return Outcome.OK, ""
    text = _source_of(lookup, files)
    where = f"{lookup.qualname or ref.target} ({lookup.path})"
    if text is None:
        return Outcome.UNKNOWN, f"{where} is a {lookup.kind or 'binding'} with no source indexed"
    outcome, why = anchor_outcome(text, ref.anchor, ref.match or Match.EXACT)
    return outcome, f"{where}: {why}" if why else ""


def _source_of(lookup: Lookup, files: _CaseFiles) -> str | None:
    """What ``inspect.getsource`` gives for the object found."""
    found: Any = lookup.function or lookup.cls
    if found is not None:
        return getsource_text(found.source)
    if lookup.kind == "module" and lookup.path is not None:
        return files.text(lookup.path)
    return None


def _tree(files: _CaseFiles, make_tree: MakeTree | None) -> PackageTree:
    """The case's package tree: ``make_tree``'s (a test's), else the real one, able to
    list its folders where the source can (a kept wheel, a local tree): transformers'
    ``define_import_structure`` reads folders, and only a listing proves a name absent;
    the files of a folder it walks are read as text, not parsed."""
    if make_tree is not None:
        return make_tree(files.case.package, files.load)
    return symbols.PackageTree(
        files.case.package,
        files.load,
        listdir=files.listdir,
        read_all=files.read_all,
        read_text=files.definitions_text,
    )
