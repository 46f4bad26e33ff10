"""One canary run: what it checks (its options), the cases of each package, and where each
case's files come from.

The pytest plugin builds a :class:`Run` from the command line and registers it; the
after-run report builds the same sources from a results file. Neither direction reaches
back: this module knows nothing of pytest.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion

from canary.cache import Cache, default_cache_dir
from canary.errors import ConfigError, MissingDependency
from canary.sources import Source
from canary.sources.index import IndexSource
from canary.sources.local import LocalSource
from canary.tags import SHIPPED_TAGS, Tags, load_tags
from canary.versions import canonical_version, is_commit, requested_releases
from canary.workspace import MAIN, Case, FetchPolicy, Workspace


@dataclass(frozen=True)
class RunOptions:
    """What a run checks and how it fetches: the ``--canary-*`` options, as given."""

    source: str = "auto"  # "auto", "github" or "index"
    tags: tuple[str, ...] = ()  # "PKG=V1,V2" filters
    local: tuple[str, ...] = ()  # "PKG[@VERSION]=PATH" trees
    main: bool = False
    offline: bool = False
    refresh: bool = False
    tags_file: Path | None = None
    workers: int = 4
    keep_files: bool = True  # as FetchPolicy.keep_files

    def tags_path(self, rootpath: Path) -> Path:
        """The tags.toml to read: the one given, else the one in the rootdir, else the one
        this canary ships (a downstream project's own repository has none)."""
        if self.tags_file:
            return Path(self.tags_file)
        own = rootpath / "tags.toml"
        return own if own.is_file() else SHIPPED_TAGS


@dataclass
class Run:
    """The cases of every package, and the workspace that loads them."""

    options: RunOptions
    tags_path: Path
    tags: Tags
    workspace: Workspace
    only: dict[str, list[str]]
    local: dict[str, LocalSource]
    _cases: dict[str, list[Case]] = field(default_factory=dict)

    def cases(self, package: str) -> list[Case]:
        """The package's cases in the order they were asked for: every release in
        tags.toml (or the ``--canary-tags`` subset), then ``main``; or its local tree."""
        if package not in self._cases:
            self._cases[package] = list(self._resolve(package))
        return self._cases[package]

    def close(self) -> None:
        self.workspace.close()

    def pin(self, tags: Tags, filters: tuple[str, ...]) -> None:
        """Check ``tags``'s releases (tags.toml's, with those found since), filtered as
        ``--canary-tags`` filters them; before any case is asked for."""
        if self._cases:
            raise RuntimeError("Run.pin after cases were resolved")
        self.only = _parse_tag_filters(filters, tags)
        self.tags = tags

    def _resolve(self, package: str) -> Iterator[Case]:
        tags = self.tags.package(package)
        if package in self.local:
            yield Case(package, self.local[package].ref, "local")
            return
        labels = self.only.get(package, list(tags.versions))
        if self.options.main and MAIN not in labels:
            labels = [*labels, MAIN]
        for label in labels:
            from_github = _only_on_github(label) or self.options.source == "github"
            yield Case(package, label, "github" if from_github else "index")


def open_run(options: RunOptions, rootpath: Path, *, run_id: str | None = None) -> Run:
    """The run these options describe; bad input is a :class:`ConfigError` naming the
    option or file and how to fix it. ``run_id`` names the run where several processes
    share it (xdist workers), so they read ``main`` at one commit."""
    tags_path = options.tags_path(rootpath)
    tags = load_tags(tags_path)
    only = _parse_tag_filters(options.tags, tags)
    local = _parse_local_trees(options.local, tags)
    wants_main = options.main or any(
        _only_on_github(label) for labels in only.values() for label in labels
    )
    if wants_main and options.source == "index":
        raise ConfigError(
            "--canary-source index cannot check main or a commit (they are not on the package "
            "index); use --canary-source auto or github"
        )
    cache = Cache(default_cache_dir())
    workspace = Workspace(
        functools.partial(
            source_for, tags=tags, local=local, wheel_dir=cache.wheel_dir, offline=options.offline
        ),
        cache,
        FetchPolicy(
            offline=options.offline, refresh=options.refresh, keep_files=options.keep_files
        ),
        workers=options.workers,
        run_id=run_id,
    )
    return Run(options, tags_path, tags, workspace, only, local)


def source_for(
    case: Case,
    tags: Tags,
    local: dict[str, LocalSource],
    wheel_dir: Path | None = None,
    *,
    offline: bool = False,
) -> Source:
    """Where a case's files come from: its local tree, its wheel, or GitHub at its tag
    (``main`` and a commit at themselves)."""
    if case.source == "local":
        return local[case.package]
    if case.source == "index":  # offline: the kept wheel only, pip is never started
        return IndexSource(case.package, case.label, wheel_dir=wheel_dir, offline=offline)
    try:
        from canary.sources.github import GitHubSource  # requests is imported only when needed
    except ImportError as exc:
        raise MissingDependency.of(exc, needed_for="reading GitHub") from None

    package = tags.package(case.package)
    ref = case.label if _only_on_github(case.label) else f"v{case.label}"
    return GitHubSource(case.package, package.repo, ref, package.package_dir)


def _only_on_github(label: str) -> bool:
    """``main`` or a commit id: a tree read at itself on GitHub, never a release (so never
    on the package index, and never ``v<label>``)."""
    return label == MAIN or is_commit(label)


def _parse_tag_filters(values: tuple[str, ...], tags: Tags) -> dict[str, list[str]]:
    only: dict[str, list[str]] = {}
    for value in values:
        package, sep, versions = value.partition("=")
        if not sep or not versions.strip():
            raise ConfigError(
                f"--canary-tags {value!r}: expected PKG=V1,V2 (e.g. trl=0.25.1,1.0.0)"
            )
        listed = tags.package(package).versions  # names the known packages on a typo
        for version in (v.strip() for v in versions.split(",")):
            try:
                # 5.5.0 and 5.05.0 are one case; 5.5 is the 5.5.x releases listed; main and
                # a commit id (replaying a run of main) are themselves.
                if _only_on_github(version):
                    found = [version]
                else:
                    found = requested_releases(version, listed)
            except InvalidVersion:
                raise ConfigError(
                    f"--canary-tags {value!r}: {version!r} is not a version, 'main' or a "
                    f"full 40-hex commit id (to replay a run of main)"
                ) from None
            if not found:
                raise ConfigError(
                    f"--canary-tags {value!r}: no release in tags.toml starts with {version}; "
                    f"give a full version (e.g. {version}.0) to check one it does not list"
                )
            chosen = only.setdefault(package, [])
            chosen += [label for label in found if label not in chosen]
    return only


def _parse_local_trees(values: tuple[str, ...], tags: Tags) -> dict[str, LocalSource]:
    local: dict[str, LocalSource] = {}
    for value in values:
        spec, sep, path = value.partition("=")
        if not sep or not path:
            raise ConfigError(f"--canary-local {value!r}: expected PKG=PATH or PKG@VERSION=PATH")
        package, _, version = spec.partition("@")
        tags.package(package)
        if version:
            try:
                version = canonical_version(version)  # 5.05.0 is 5.5.0: one id, one cache
            except InvalidVersion:
                raise ConfigError(
                    f"--canary-local {value!r}: {version!r} is not a version"
                ) from None
        # ~ after "=" is left alone by most shells (zsh, and bash inside quotes).
        tree = Path(path).expanduser()
        local[package] = LocalSource.from_path(package, tree, version=version or None)
    return local
