"""Each reference on each release: ``ok``, ``missing`` or ``unknown``.

References are resolved through the same workspace the static tier uses (its sources,
cache and code index): a dotted target by :class:`canary.symbols.PackageTree` over the
release's files, an anchor on the exact text ``inspect.getsource`` would give for the
function it is applied to (:mod:`canary.surface.anchors`). A lookup's outcome depends only
on the files it read, so it is remembered by their digests (:mod:`canary.surface.memo`):
identical files across patch releases are resolved once, ever.

A release whose files cannot be read or parsed is an error of that release (nothing was
checked there), never an outcome.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from canary import codeindex
from canary.errors import InfrastructureError, Subject
from canary.surface.anchors import anchor_outcome, getsource_text
from canary.surface.memo import Memo, ReleaseDigests
from canary.surface.model import Kind, Match, Outcome, Reference, Resolved
from canary.workspace import Case, Workspace

#: Bump when what an outcome means changes in a way the code digest below cannot see.
RESOLUTION_FORMAT = 1

# The code that decides an outcome: a result remembered from other code is not reused.
_DECIDING_MODULES = ("canary.symbols", "canary.surface.resolve", "canary.surface.anchors")

Load = Callable[[str], "codeindex.Module | None"]
Key = tuple[str, str, str, "str | None"]
Decided = tuple[Outcome, str]


class Lookup(Protocol):
    """What :meth:`canary.symbols.PackageTree.lookup` answers (the fields read here)."""

    found: bool | None  # None: cannot be decided statically
    path: str | None
    qualname: str | None
    kind: str | None
    why: str
    function: codeindex.Function | None
    cls: codeindex.Class | None


class PackageTree(Protocol):
    def lookup(self, dotted: str) -> Lookup: ...


MakeTree = Callable[[str, Load], PackageTree]


def resolve(
    references: Sequence[Reference],
    cases: Mapping[str, Sequence[Case]],
    workspace: Workspace,
    *,
    memo: Memo | None = None,
    make_tree: MakeTree | None = None,
    on_error: Callable[[Case, InfrastructureError], None] | None = None,
) -> tuple[Resolved, ...]:
    """Every reference on every case of its package (``cases``: package -> its cases,
    oldest first). A case that cannot be read is handed to ``on_error`` and left out of
    every outcome (without ``on_error`` it is raised)."""
    memo = memo if memo is not None else Memo(workspace.cache, salt())
    outcomes: dict[Key, dict[str, Outcome]] = {ref.key: {} for ref in references}
    why: dict[Key, dict[str, str]] = {ref.key: {} for ref in references}
    try:
        for package in sorted({ref.package for ref in references}):
            for case in cases.get(package, ()):
                try:
                    decided = resolve_case(
                        references, case, workspace, memo=memo, make_tree=make_tree
                    )
                except InfrastructureError as exc:
                    if on_error is None:
                        raise
                    on_error(case, exc)
                    continue
                for key, (outcome, reason) in decided.items():
                    outcomes[key][case.label] = outcome
                    if reason:
                        why[key][case.label] = reason
    finally:
        memo.save()  # what was decided before an error is still worth keeping
    return tuple(Resolved(ref, outcomes[ref.key], why[ref.key]) for ref in references)


def resolve_case(
    references: Sequence[Reference],
    case: Case,
    workspace: Workspace,
    *,
    memo: Memo | None = None,
    make_tree: MakeTree | None = None,
) -> dict[Key, Decided]:
    """The outcome and why of each reference of ``case.package`` on that case (key ->
    (outcome, why); why is "" for ok). Raises the case's InfrastructureError when its
    files cannot be read or parsed."""
    own = memo is None
    memo = memo if memo is not None else Memo(workspace.cache, salt())
    files = _CaseFiles(workspace, case)
    mine = [ref for ref in references if ref.package == case.package]
    # A warm run reads every file its remembered results depend on in one go.
    files.read({path for ref in mine for path in memo.paths(ref.key)})
    decided: dict[Key, Decided] = {}
    for ref in mine:
        if (known := memo.recall(ref.key, files.digest)) is None:
            read, known = _decide(ref, files, make_tree or _package_tree)
            memo.remember(ref.key, read, *known)
        decided[ref.key] = known
    files.known.save()
    if own:
        memo.save()
    return decided


@functools.cache
def salt() -> str:
    """What a remembered result depends on besides the files: the code index's format,
    this resolver's format and the source of the code that decides."""
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
        self.make_tree = make_tree or _package_tree

    def locate(self, reference: Reference, version: str) -> Subject | None:
        case = self.cases.get((reference.package, version))
        if case is None:
            return None
        files = _CaseFiles(self.workspace, case)
        try:
            lookup = self.make_tree(reference.target.partition(".")[0], files.module).lookup(
                reference.target
            )
        except InfrastructureError:
            return None
        if not lookup.found or lookup.path is None:
            return None
        return Subject(lookup.path, lookup.qualname)

    def module(self, package: str, version: str, path: str) -> codeindex.Module | None:
        case = self.cases.get((package, version))
        if case is None:
            return None
        try:
            return _CaseFiles(self.workspace, case).module(path)
        except InfrastructureError:
            return None


class _CaseFiles:
    """One case's files as a lookup sees them: digests (read once per release, ever,
    for a release; once per run for a branch or a local tree), modules (through the
    workspace's code index) and text."""

    def __init__(self, workspace: Workspace, case: Case) -> None:
        self.workspace = workspace
        self.case = case
        released = case.source == "index" and not case.mutable
        key = f"{case.source}\0{case.package}\0{case.label}" if released else None
        self.known = ReleaseDigests(workspace.cache, key)
        self._digests = self.known.digests

    def read(self, paths: set[str]) -> None:
        wanted = sorted(paths - self._digests.keys())
        if wanted:
            for path, content in self.workspace.read(self.case, wanted).items():
                self._digests[path] = _sha256(content)

    def digest(self, path: str) -> str | None:
        if path not in self._digests:
            self.read({path})
        return self._digests[path]

    def module(self, path: str) -> codeindex.Module | None:
        if self.digest(path) is None:
            return None
        return self.workspace.snapshot(self.case, [path]).modules[path]

    def text(self, path: str) -> str | None:
        content = self.workspace.read(self.case, [path])[path]
        return None if content is None else content.decode("utf-8", errors="replace")


def _decide(
    ref: Reference, files: _CaseFiles, make_tree: MakeTree
) -> tuple[dict[str, str | None], Decided]:
    """Resolve ``ref`` afresh; also returns every file the lookup read (path -> digest)."""
    read: dict[str, str | None] = {}

    def load(path: str) -> codeindex.Module | None:
        read[path] = files.digest(path)
        return files.module(path)

    # A tree per lookup: the files it reads are exactly those this outcome depends on.
    lookup = make_tree(ref.target.partition(".")[0], load).lookup(ref.target)
    decided = _outcome(ref, lookup, files)
    if lookup.path is not None and ref.kind is Kind.ANCHOR:
        read.setdefault(lookup.path, files.digest(lookup.path))  # a module's whole text
    return read, decided


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


def _package_tree(import_name: str, load: Load) -> PackageTree:
    from canary.symbols import PackageTree as Tree  # until the engine is on every branch

    return Tree(import_name, load)


def _sha256(content: bytes | None) -> str | None:
    return None if content is None else hashlib.sha256(content).hexdigest()
