"""The upstream change behind a drift: the subject's source in the last passing version
against the first failing one, read through the same cache as the run (a kept wheel
makes it a zip read) and diffed with difflib."""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from pathlib import Path

from canary import codeindex
from canary.cache import Cache, default_cache_dir
from canary.errors import CanaryError, Drift, Subject
from canary.report.matrix import Transition
from canary.report.results import CaseResult, RunResults
from canary.run import source_for
from canary.sources import Source
from canary.sources.local import LocalSource
from canary.tags import Tags, load_tags
from canary.workspace import Case, FetchPolicy, Workspace


@dataclass(frozen=True)
class UpstreamDiff:
    """``diff`` is a unified diff (empty when there is nothing to diff); ``note`` says in
    words what happened to the subject (gone, moved, unchanged, unreadable)."""

    subject: Subject | None
    diff: str
    note: str


class Differ:
    """Reads both sides of every transition through one workspace."""

    def __init__(self, results: RunResults, *, offline: bool = False) -> None:
        self.results = results
        self.offline = offline
        self._workspace: Workspace | None = None

    def close(self) -> None:
        if self._workspace is not None:
            self._workspace.close()

    def diff(self, transition: Transition) -> UpstreamDiff:
        bad, good = transition.bad, transition.good
        subject = bad.subject
        if good is None:
            first = bad.column_name
            why = f"fails from the first version checked ({first}): nothing passing to diff"
            return UpstreamDiff(subject, "", why)
        if subject is None or subject.path is None:
            why = "the check recorded no file it was reading (it reads several): see the message"
            return UpstreamDiff(subject, "", why)
        try:
            old_module, new_module = (self._module(case, subject.path) for case in (good, bad))
        except (CanaryError, OSError) as exc:
            return UpstreamDiff(subject, "", f"diff unavailable: {exc}")
        return diff_subject(subject, old_module, new_module, good.column_name, bad.column_name)

    def _module(self, result: CaseResult, path: str) -> codeindex.Module | None:
        # main is read at the commit the run read, not at whatever main names now.
        case = Case(result.package, result.commit or result.label, result.source)
        return self.workspace.snapshot(case, [path]).modules[path]

    @property
    def workspace(self) -> Workspace:
        if self._workspace is None:
            cache_dir = self.results.cache_dir
            cache = Cache(Path(cache_dir)) if cache_dir else Cache(default_cache_dir())
            local = {
                package: LocalSource.from_path(package, tree["path"], version=tree["version"])
                for package, tree in self.results.local.items()
            }
            self._workspace = Workspace(
                functools.partial(self._source, local=local, wheel_dir=cache.wheel_dir),
                cache,
                FetchPolicy(offline=self.offline),
                workers=1,
            )
        return self._workspace

    def _source(self, case: Case, *, local: dict[str, LocalSource], wheel_dir: Path) -> Source:
        return source_for(case, self._tags, local, wheel_dir, offline=self.offline)

    @functools.cached_property
    def _tags(self) -> Tags:
        # Only cases from GitHub (main) need it: the repository and package folder.
        return load_tags(self.results.tags_file or "tags.toml")


def diff_subject(
    subject: Subject,
    old_module: codeindex.Module | None,
    new_module: codeindex.Module | None,
    old: str,
    new: str,
) -> UpstreamDiff:
    """The subject's source in ``old_module`` (release ``old``) against ``new_module``
    (release ``new``): both are the subject's file, None where that release lacks it. The
    caller reads them (the matrix through its results' cache, the surface report through
    whatever it is given), so this never fetches."""
    if old_module is None:
        return UpstreamDiff(subject, "", f"{subject.path} does not exist in {old} either")
    if new_module is None:
        why = f"{subject.path} no longer exists in {new} (it did in {old})"
        return UpstreamDiff(subject, "", why)
    return _diff_subject(subject, old_module, new_module, old, new)


def _diff_subject(
    subject: Subject, old_module: codeindex.Module, new_module: codeindex.Module, old: str, new: str
) -> UpstreamDiff:
    path, qualname = subject.path, subject.qualname
    if qualname is None:
        why = f"{path} changed between {old} and {new}; the check names no function in it"
        return UpstreamDiff(subject, "", why)
    before, after = _text(old_module, qualname), _text(new_module, qualname)
    if before is None:
        return UpstreamDiff(subject, "", f"{qualname} is in neither {old} nor {new} of {path}")
    old_name = f"{path}:{before[0]} {qualname} @ {old}"
    if after is None:
        diff = _unified(before[1], "", old_name, f"{path} @ {new}")
        return UpstreamDiff(subject, diff, f"{qualname} is gone from {path} in {new}")
    new_name = f"{path}:{after[0]} {qualname} @ {new}"
    diff = _unified(before[1], after[1], old_name, new_name)
    if not diff:
        why = f"{qualname} is the same in {old} and {new}: the drift lies outside it (see above)"
        return UpstreamDiff(subject, "", why)
    return UpstreamDiff(subject, diff, f"{qualname} changed between {old} and {new}")


def _text(module: codeindex.Module, qualname: str) -> tuple[int, str] | None:
    """Where ``qualname`` starts in ``module`` and its text: a class's or function's source,
    or the statement binding a module-level name (``__version__ = "1.0"``, an import)."""
    try:
        found = module.find(qualname)
    except Drift:
        pass
    else:
        return found.line, found.source
    if (assignment := module.assignments.get(qualname)) is not None:
        return assignment.line, _statement(qualname, assignment.op, assignment.value)
    if (imported := module.imports.get(qualname)) is not None:
        name = imported.imported or ""
        # ``from m import x`` binds x; ``import os.path`` binds os: no alias in either.
        bound = name if imported.module is not None else name.split(".")[0]
        alias = f" as {qualname}" if bound != qualname else ""
        return imported.line, f"{imported.statement}{alias}\n"
    return None


def _statement(name: str, op: str | None, value: str) -> str:
    """The statement that binds ``name`` as the summary keeps it (op as Assignment's)."""
    if op == "type":
        return f"type {name} = {value}\n"
    if op == "for":
        return f"for {name} in {value}: ...\n"
    if op == "with":
        return f"with {value} as {name}: ...\n"
    return f"{name} {op or ''}= {value}\n"


def _unified(old: str, new: str, old_name: str, new_name: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), old_name, new_name
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
