"""The pytest plugin: canary's options, and the run registered as a plugin object.

The entry point only adds the ``--canary-*`` options. A session that is a canary run (a
canary option given, or the catalog under ``canary/`` collected) gets a
:class:`~canary.plugin.session.CanarySession` registered for it, as pytest-xdist registers
its ``DSession``: the ``upstream`` fixture, the cases and the summary exist in canary runs
only, so a downstream project's own test session (with canary installed) sees nothing of
canary but its options.

The package holds what talks to pytest during a run: this entry point, the session
(:mod:`.session`), the results recorder (:mod:`.record`), the progress line
(:mod:`.progress`) and the end-of-run section (:mod:`.endofrun`). After-run code
(:mod:`canary.report`) never imports it.

Each check module says which package it checks (``pytestmark =
pytest.mark.upstream("transformers")``); every check in it runs once per case of that
package, with ids ``<package>_<version with dots as underscores>``, so
``pytest canary -k transformers_5_5`` selects exactly the 5.5.x releases.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from canary.errors import ConfigError
from canary.plugin import progress, surface
from canary.plugin.record import Recorder, RunFacts
from canary.plugin.session import RUNTIME_DIR, CanarySession, arg_paths, inside
from canary.run import Run, RunOptions, open_run

RUN_PLUGIN_NAME = "canary-run"

# The options that choose what a run checks, as RunOptions fields, with their defaults.
# Giving any of them makes the session a canary run, so bad input is reported before
# collection.
_RUN_DEFAULTS = RunOptions()
_RUN_OPTIONS = {
    "canary_source": "source",
    "canary_tags": "tags",
    "canary_local": "local",
    "canary_main": "main",
    "canary_offline": "offline",
    "canary_refresh": "refresh",
    "canary_tags_file": "tags_file",
    "canary_workers": "workers",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("canary", "canary: upstream compatibility checks")
    group.addoption(
        "--canary-source",
        choices=("auto", "github", "index"),
        default=_RUN_DEFAULTS.source,
        help="where upstream text comes from: auto (releases from the package index, main "
        "from GitHub), github (everything from GitHub raw) or index (releases only)",
    )
    group.addoption(
        "--canary-tags",
        action="append",
        default=[],
        metavar="PKG=V1,V2",
        help="check only these versions of PKG (repeatable); 'main' and a full commit id "
        "(a run's main, replayed) are allowed",
    )
    group.addoption(
        "--canary-local",
        action="append",
        default=[],
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
        default=_RUN_DEFAULTS.tags_file,
        metavar="PATH",
        help="the tags.toml to read (default: tags.toml in the rootdir)",
    )
    group.addoption(
        "--canary-workers",
        type=_at_least_one,
        default=_RUN_DEFAULTS.workers,
        metavar="N",
        help="how many cases to fetch in parallel (default 4)",
    )
    group.addoption(
        "--canary-recompute",
        action="store_true",
        help="check every case again, ignoring the outcomes earlier runs remembered "
        "(what this run decides is remembered as usual)",
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
    surface.add_options(group)
    group.addoption(
        "--canary-runtime",
        action="store_true",
        help="also collect the runtime tier (canary/runtime) when collecting canary/",
    )


def _at_least_one(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of at least 1")
    return number


def pytest_configure(config: pytest.Config) -> None:
    options = _run_options(config)
    if not _is_canary_run(config, options):
        return
    for line in (
        "upstream(package): the upstream package a canary check module checks",
        "canary_check(spec): set by @canary.catalog.check",
    ):
        config.addinivalue_line("markers", line)
    try:
        # xdist workers of one run share its id: each reads main at the same commit.
        run_id = getattr(config, "workerinput", {}).get("testrunuid")
        run = open_run(options, config.rootpath, run_id=run_id)
    except ConfigError as exc:
        # Bad tags.toml or options stop the run here, with one clear line, not a traceback.
        raise pytest.UsageError(str(exc)) from None
    config.add_cleanup(run.close)
    config.pluginmanager.register(CanarySession(config, run), RUN_PLUGIN_NAME)
    config.pluginmanager.register(surface.SurfacePlugin(config, run), surface.PLUGIN_NAME)
    if (results_path := config.getoption("canary_json")) is not None:
        facts = RunFacts(
            tags_file=str(run.tags_path.resolve()),
            source=run.options.source,
            cache_dir=str(run.workspace.cache.root) if run.workspace.cache else None,
            local={
                package: {"path": str(tree.root), "version": tree.ref}
                for package, tree in run.local.items()
            },
        )
        recorder = Recorder(
            results_path,
            facts,
            version_of=run.workspace.version,
            commit_of=run.workspace.commit,
        )
        config.pluginmanager.register(recorder, "canary-json")


def run_of(config: pytest.Config) -> Run | None:
    """The session's canary run; None in a session that is not one."""
    plugin = config.pluginmanager.get_plugin(RUN_PLUGIN_NAME)
    return plugin.run if isinstance(plugin, CanarySession) else None


def _run_options(config: pytest.Config) -> RunOptions:
    given = {field: config.getoption(option) for option, field in _RUN_OPTIONS.items()}
    return RunOptions(**{**given, "tags": tuple(given["tags"]), "local": tuple(given["local"])})


def _is_canary_run(config: pytest.Config, options: RunOptions) -> bool:
    """Whether this session checks upstream: a run option given, or canary/ collected."""
    if options != _RUN_DEFAULTS or config.getoption("canary_surface"):
        return True
    package_dir = RUNTIME_DIR.parent
    for target in arg_paths(config):
        if inside(target, package_dir):
            return not inside(target, RUNTIME_DIR)
    return False
