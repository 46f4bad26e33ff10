"""The pytest plugin: options, the ``upstream`` fixture, cases, version gates, broken releases.

Each check module says which package it checks (``pytestmark =
pytest.mark.upstream("transformers")``); every check in it runs once per case of that
package, with ids ``<package>_<version with dots as underscores>``, so
``pytest canary -k transformers_5_5`` selects exactly the 5.5.x releases.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from packaging.version import InvalidVersion, Version

import canary
from canary.cache import Cache, default_cache_dir
from canary.catalog import Window
from canary.errors import CheckDrift, ConfigError
from canary.report import progress
from canary.report.record import Recorder
from canary.sources import Source
from canary.sources.index import IndexSource
from canary.sources.local import LocalSource
from canary.tags import Tags, load_tags
from canary.upstream import MAIN, Case, FetchPolicy, Snapshot, Workspace

RUNTIME_DIR = Path(canary.__file__).parent / "runtime"
_RUN_KEY = pytest.StashKey["CanaryRun"]()


# The options that choose what a run checks, with their defaults. Giving any of them makes
# the session a canary run, so bad input is reported before collection.
_RUN_OPTION_DEFAULTS: dict[str, object] = {
    "canary_source": "auto",
    "canary_tags": [],
    "canary_local": [],
    "canary_main": False,
    "canary_offline": False,
    "canary_refresh": False,
    "canary_tags_file": None,
    "canary_workers": 4,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("canary", "canary: upstream compatibility checks")
    group.addoption(
        "--canary-source",
        choices=("auto", "github", "index"),
        default=_RUN_OPTION_DEFAULTS["canary_source"],
        help="where upstream text comes from: auto (releases from the package index, main "
        "from GitHub), github (everything from GitHub raw) or index (releases only)",
    )
    group.addoption(
        "--canary-tags",
        action="append",
        default=_RUN_OPTION_DEFAULTS["canary_tags"],
        metavar="PKG=V1,V2",
        help="check only these versions of PKG (repeatable); 'main' is allowed",
    )
    group.addoption(
        "--canary-local",
        action="append",
        default=_RUN_OPTION_DEFAULTS["canary_local"],
        metavar="PKG[@VERSION]=PATH",
        help="check the tree at PATH as PKG (repository checkout or installed layout) "
        "instead of its releases; its version is read from the tree unless given",
    )
    group.addoption(
        "--canary-main", action="store_true", help="also check each package's main from GitHub"
    )
    group.addoption(
        "--canary-offline",
        action="store_true",
        help="read the cache only; a miss is an error",
    )
    group.addoption(
        "--canary-refresh",
        action="store_true",
        help="refetch mutable refs (main) now instead of after their TTL",
    )
    group.addoption(
        "--canary-tags-file",
        default=_RUN_OPTION_DEFAULTS["canary_tags_file"],
        metavar="PATH",
        help="the tags.toml to read (default: tags.toml in the rootdir)",
    )
    group.addoption(
        "--canary-workers",
        type=int,
        default=_RUN_OPTION_DEFAULTS["canary_workers"],
        metavar="N",
        help="how many cases to fetch in parallel (default 4)",
    )
    group.addoption(
        "--canary-json",
        type=Path,
        default=None,
        metavar="PATH",
        help="write every case's outcome to PATH as JSON for `python -m canary report PATH`",
    )
    group.addoption(
        "--canary-progress",
        nargs="?",
        const="on",
        default="auto",
        choices=progress.CHOICES,
        help="progress of upstream fetches: auto (on a terminal outside CI, the default), "
        "on (--canary-progress alone) or off",
    )
    group.addoption(
        "--canary-runtime",
        action="store_true",
        help="also collect the runtime tier (canary/runtime) when collecting canary/",
    )


def pytest_configure(config: pytest.Config) -> None:
    for line in (
        "upstream(package): the upstream package a canary check module checks",
        "canary_check(reads, fix, window): set by @canary.catalog.check",
        "gpu: needs CUDA; skipped with a reason elsewhere",
    ):
        config.addinivalue_line("markers", line)
    if _is_canary_run(config):
        # Bad tags.toml or options stop the run here, with one clear line, not a traceback.
        _run_or_usage_error(config)
    if (results_path := config.getoption("canary_json")) is not None:
        config.pluginmanager.register(Recorder(config, results_path), "canary-json")


def _is_canary_run(config: pytest.Config) -> bool:
    """Whether this session checks upstream: canary options given, or canary/ collected."""
    if any(config.getoption(name) != default for name, default in _RUN_OPTION_DEFAULTS.items()):
        return True
    package_dir = RUNTIME_DIR.parent
    for target in _arg_paths(config):
        if _inside(target, package_dir):
            return not _inside(target, RUNTIME_DIR)
    return False


def _arg_paths(config: pytest.Config) -> list[Path]:
    """The paths named on the command line (``path::test`` ids cut to their path)."""
    return [Path(arg.split("::", 1)[0]).resolve() for arg in config.args]


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Keep the runtime tier out of ``pytest canary`` unless it was asked for."""
    if collection_path != RUNTIME_DIR or config.getoption("canary_runtime"):
        return None
    if any(_inside(target, RUNTIME_DIR) for target in _arg_paths(config)):
        return None
    return True


# -- the run: tags, cases, workspace ----------------------------------------------------


@dataclass
class CanaryRun:
    tags: Tags
    workspace: Workspace
    source_mode: str
    only: dict[str, list[str]]
    local: dict[str, LocalSource]
    include_main: bool
    _cases: dict[str, list[Case]] = field(default_factory=dict)

    def cases(self, package: str) -> list[Case]:
        if package not in self._cases:
            self._cases[package] = list(self._resolve(package))
        return self._cases[package]

    def _resolve(self, package: str) -> Iterator[Case]:
        tags = self.tags.package(package)
        if package in self.local:
            yield Case(package, self.local[package].ref, "local")
            return
        labels = self.only.get(package, list(tags.versions))
        if self.include_main and MAIN not in labels:
            labels = [*labels, MAIN]
        for label in labels:
            if label == MAIN:
                yield Case(package, MAIN, "github")
            else:
                yield Case(package, label, "github" if self.source_mode == "github" else "index")


def source_for(
    case: Case, tags: Tags, local: dict[str, LocalSource], wheel_dir: Path | None = None
) -> Source:
    """Where a case's files come from: its local tree, its wheel, or GitHub at its tag."""
    if case.source == "local":
        return local[case.package]
    if case.source == "index":
        return IndexSource(case.package, case.label, wheel_dir=wheel_dir)
    from canary.sources.github import GitHubSource  # requests is imported only when needed

    package = tags.package(case.package)
    ref = MAIN if case.label == MAIN else f"v{case.label}"
    return GitHubSource(case.package, package.repo, ref, package.package_dir)


def current_run(config: pytest.Config) -> CanaryRun | None:
    """The session's run if it has one (a canary run), without building it."""
    return config.stash.get(_RUN_KEY, None)


def tags_path(config: pytest.Config) -> Path:
    return Path(config.getoption("canary_tags_file") or config.rootpath / "tags.toml")


def canary_run(config: pytest.Config) -> CanaryRun:
    """The session's run, built on first use so unit-test sessions never read tags.toml."""
    if _RUN_KEY not in config.stash:
        config.stash[_RUN_KEY] = _build_run(config)
    return config.stash[_RUN_KEY]


def _build_run(config: pytest.Config) -> CanaryRun:
    tags = load_tags(tags_path(config))
    only = _parse_tag_filters(config.getoption("canary_tags"), tags)
    local = _parse_local_trees(config.getoption("canary_local"), tags)
    wants_main = config.getoption("canary_main") or any(MAIN in v for v in only.values())
    if wants_main and config.getoption("canary_source") == "index":
        raise ConfigError(
            "--canary-source index cannot check main (it is not on the package index); "
            "use --canary-source auto or github"
        )
    policy = FetchPolicy(
        offline=config.getoption("canary_offline"),
        refresh=config.getoption("canary_refresh"),
    )
    cache = Cache(default_cache_dir())
    workspace = Workspace(
        functools.partial(source_for, tags=tags, local=local, wheel_dir=cache.wheel_dir),
        cache,
        policy,
        workers=max(1, config.getoption("canary_workers")),
    )
    config.add_cleanup(workspace.close)
    return CanaryRun(
        tags=tags,
        workspace=workspace,
        source_mode=config.getoption("canary_source"),
        only=only,
        local=local,
        include_main=config.getoption("canary_main"),
    )


def _parse_tag_filters(values: list[str], tags: Tags) -> dict[str, list[str]]:
    only: dict[str, list[str]] = {}
    for value in values:
        package, sep, versions = value.partition("=")
        if not sep or not versions.strip():
            raise ConfigError(
                f"--canary-tags {value!r}: expected PKG=V1,V2 (e.g. trl=0.25.1,1.0.0)"
            )
        tags.package(package)  # names the known packages on a typo
        for version in (v.strip() for v in versions.split(",")):
            if version != MAIN:
                try:
                    Version(version)
                except InvalidVersion:
                    raise ConfigError(
                        f"--canary-tags {value!r}: {version!r} is not a version or 'main'"
                    ) from None
            only.setdefault(package, []).append(version)
    return only


def _parse_local_trees(values: list[str], tags: Tags) -> dict[str, LocalSource]:
    local: dict[str, LocalSource] = {}
    for value in values:
        spec, sep, path = value.partition("=")
        if not sep or not path:
            raise ConfigError(f"--canary-local {value!r}: expected PKG=PATH or PKG@VERSION=PATH")
        package, _, version = spec.partition("@")
        tags.package(package)
        if version:
            try:
                Version(version)
            except InvalidVersion:
                raise ConfigError(
                    f"--canary-local {value!r}: {version!r} is not a version"
                ) from None
        local[package] = LocalSource.from_path(package, Path(path), version=version or None)
    return local


# -- parametrizing checks ---------------------------------------------------------------


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "upstream" not in metafunc.fixturenames:
        return
    package_marker = metafunc.definition.get_closest_marker("upstream")
    if package_marker is None or not package_marker.args:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} takes `upstream` but its module does not say which "
            f"package: add pytestmark = pytest.mark.upstream('<package>')"
        )
    package = package_marker.args[0]
    run = _run_or_usage_error(metafunc.config)
    window = _window(metafunc.definition)
    known_drift = _known_drift(metafunc.definition)
    tags = run.tags.package(package)
    params = []
    for case in run.cases(package):
        marks = []
        if case.source != "local" and (reason := tags.broken_reason(case.label)):
            # Not strict: the checks a broken release still passes are fine there.
            marks.append(_drift_expected(f"{case} is listed as broken in tags.toml: {reason}"))
        if case.source != "local" and (reason := known_drift.get(case.label)):
            # Strict: once that release passes, the known_drift entry is stale.
            marks.append(_drift_expected(f"known drift in {case}: {reason}", strict=True))
        if (version := case.known_version) is not None and window.excludes(version):
            marks.append(pytest.mark.skip(reason=_outside(metafunc.definition.name, case, window)))
        params.append(pytest.param(case, id=case.id, marks=marks))
    metafunc.parametrize("upstream", params, indirect=True)


def _run_or_usage_error(config: pytest.Config) -> CanaryRun:
    try:
        return canary_run(config)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def _drift_expected(reason: str, *, strict: bool = False) -> pytest.MarkDecorator:
    # Only drift is expected: an infrastructure error stays an error.
    return pytest.mark.xfail(reason=reason, raises=CheckDrift, strict=strict)


def _declared(item: pytest.Item, key: str, default: Any) -> Any:
    """What the item's ``@check`` declared under ``key`` (its ``canary_check`` marker)."""
    marker = item.get_closest_marker("canary_check")
    return marker.kwargs.get(key, default) if marker else default


def _window(item: pytest.Item) -> Window:
    return _declared(item, "window", Window())


def _known_drift(item: pytest.Item) -> dict[str, str]:
    return _declared(item, "known_drift", {})


def _reads(item: pytest.Item) -> tuple[str, ...]:
    return _declared(item, "reads", ())


def _outside(check: str, case: Case, window: Window) -> str:
    # The same words for every release outside the window: pytest's -ra summary folds
    # them into one line per check ("SKIPPED [82] ...") instead of one per case; the
    # release is in the test id.
    return f"outside the window of {check} ({case.package} {window})"


def _main_outside(case: Case, window: Window, version: Version | None) -> str:
    shown = version if version is not None else "an unreadable version"
    return f"{case} is {shown}, outside this check's window ({window})"


@pytest.fixture
def upstream(request: pytest.FixtureRequest) -> Snapshot:
    """The case's upstream files this check declared, parsed: a :class:`Snapshot`."""
    case = getattr(request, "param", None)
    if not isinstance(case, Case):
        raise pytest.UsageError(
            f"{request.node.nodeid}: the upstream fixture is parametrized by canary; "
            f"mark the module with pytest.mark.upstream('<package>')"
        )
    run = canary_run(request.config)
    window = _window(request.node)
    if case.known_version is None:  # main: the gate needs the version the tree declares
        version = run.workspace.version(case)
        if window.excludes(version):
            pytest.skip(_main_outside(case, window, version))
    return run.workspace.snapshot(case, _reads(request.node))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A check's drift is shown as its message alone: the finding, not canary's traceback."""
    report = yield
    if report.failed and call.excinfo is not None and call.excinfo.errisinstance(CheckDrift):
        report.longrepr = str(call.excinfo.value)
    return report


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start fetching every selected case's files while the first checks run."""
    config = session.config
    if _RUN_KEY not in config.stash or config.option.collectonly:
        return
    if hasattr(config, "workerinput"):
        return  # an xdist worker runs a share of the items; the cache lock stops double fetches
    plan: dict[Case, set[str]] = {}
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("upstream") if callspec else None
        if isinstance(case, Case) and not item.get_closest_marker("skip"):
            plan.setdefault(case, set()).update(_reads(item))
    workspace = canary_run(session.config).workspace
    workspace.prefetch(plan)
    capture = config.pluginmanager.getplugin("capturemanager")
    uncaptured = capture.global_and_fixture_disabled if capture else contextlib.nullcontext
    shown = progress.start(config.getoption("canary_progress"), workspace.stats, plan, uncaptured)
    if shown is not None:
        config.add_cleanup(shown.stop)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") and _RUN_KEY in config.stash:
        config.workeroutput["canary_stats"] = canary_run(config).workspace.stats.as_dict()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """Add an xdist worker's fetch and parse counters to the controller's summary."""
    worker_stats = getattr(node, "workeroutput", {}).get("canary_stats")
    config = getattr(node, "config", None)
    if worker_stats and config is not None and _RUN_KEY in config.stash:
        canary_run(config).workspace.stats.add(**worker_stats)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    if _RUN_KEY not in config.stash:
        return
    stats = canary_run(config).workspace.stats
    terminalreporter.write_sep("-", "canary")
    terminalreporter.write_line(
        f"files: {stats.files_from_cache} from cache, {stats.files_fetched} fetched "
        f"({stats.bytes_downloaded / 1e6:.1f} MB downloaded, "
        f"{stats.fetch_seconds:.1f} s fetching); "
        f"code indexes: {stats.modules_from_cache} from cache, {stats.modules_parsed} parsed "
        f"({stats.parse_seconds:.1f} s)"
    )
    drift = len(terminalreporter.stats.get("failed", []))
    errors = len(terminalreporter.stats.get("error", []))
    terminalreporter.write_line(
        f"drift: {drift} failing check(s); infrastructure or input errors: {errors}"
    )
