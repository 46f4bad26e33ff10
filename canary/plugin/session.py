"""One canary run inside pytest: the hooks and the fixture that turn the run's cases into
checks, registered as a plugin object for canary runs only (as pytest-xdist registers its
``DSession``)."""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.version import Version

import canary
from canary.catalog import CheckSpec, CheckTable, Window, table_items
from canary.errors import CheckDrift, InfrastructureError
from canary.plugin import endofrun, progress
from canary.plugin.checkcode import CheckCode, engine_digest
from canary.plugin.memo import Outcome, OutcomeMemo, outcome_key
from canary.plugin.record import case_of
from canary.report.verdict import OUTSIDE_WINDOW
from canary.run import Run
from canary.tags import PackageTags
from canary.versions import listed_for
from canary.workspace import Case, Snapshot, Stats

RUNTIME_DIR = Path(canary.__file__).parent / "runtime"


def arg_paths(config: pytest.Config) -> list[Path]:
    """The paths named on the command line (``path::test`` ids cut to their path)."""
    return [Path(arg.split("::", 1)[0]).resolve() for arg in config.args]


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class CanarySession:
    """The hooks and the fixture of one canary run; registered only in canary runs."""

    def __init__(self, config: pytest.Config, run: Run) -> None:
        self.config = config
        self.run = run
        self.stats: Stats = run.workspace.stats
        self.workers_reported = 0  # xdist workers whose counters were added
        # What earlier runs decided (canary.plugin.memo); --canary-recompute asks nothing
        # of it, and what this run decides is remembered all the same.
        self.memo = OutcomeMemo(run.workspace.cache, engine_digest())
        self.recall = not config.getoption("canary_recompute")
        self.code = CheckCode(_judging(config))
        self._recalled: dict[str, Outcome | None] = {}  # nodeid -> what the memo answered

    # -- collection ---------------------------------------------------------------------

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """Keep the runtime tier out of ``pytest canary`` unless it was asked for."""
        if collection_path != RUNTIME_DIR or config.getoption("canary_runtime"):
            return None
        if any(inside(target, RUNTIME_DIR) for target in arg_paths(config)):
            return None
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(
        self, collector: pytest.Module | pytest.Class, name: str, obj: object
    ) -> list[pytest.Item] | None:
        """A check table (``@check.each``) in a check module: one parametrized check per row."""
        if isinstance(obj, CheckTable):
            return table_items(collector, obj)
        return None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "upstream" not in metafunc.fixturenames:
            return
        package_marker = metafunc.definition.get_closest_marker("upstream")
        if package_marker is None or not package_marker.args:
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid} takes `upstream` but its module does not say "
                f"which package: add pytestmark = pytest.mark.upstream('<package>')"
            )
        package = package_marker.args[0]
        spec = CheckSpec.of(metafunc.definition) or _UNCHECKED
        tags = self.run.tags.package(package)
        params = []
        for case in self.run.cases(package):
            version = case.known_version  # parsed from the label on each call: once a case
            marks = _expected_drift(case, version, tags, spec.known_drift)
            if version is not None and spec.window.excludes(version):
                marks.append(
                    pytest.mark.skip(reason=_outside(metafunc.definition.name, case, spec.window))
                )
            params.append(pytest.param(case, id=case.id, marks=marks))
        metafunc.parametrize("upstream", params, indirect=True)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Start fetching every selected case's files while the first checks run."""
        if self.config.option.collectonly or hasattr(self.config, "workerinput"):
            return  # an xdist worker runs a share of the items; the cache lock stops double fetches
        plan: dict[Case, set[str]] = {}
        for item in session.items:
            case = case_of(item)
            spec = CheckSpec.of(item)
            if case is None or spec is None or item.get_closest_marker("skip"):
                continue
            # A release whose outcome is remembered reads nothing: its files are not
            # loaded (main's version is read first, by its fixture).
            if case.known_version is not None and self._remembered(item, case) is not None:
                continue
            plan.setdefault(case, set()).update(spec.reads)
        self.run.workspace.prefetch(plan)
        capture = self.config.pluginmanager.getplugin("capturemanager")
        uncaptured = capture.global_and_fixture_disabled if capture else contextlib.nullcontext
        choice = self.config.getoption("canary_progress")
        writer = self.config.get_terminal_writer()
        shown = progress.start(
            choice, self.stats, plan, uncaptured, column=lambda: writer.width_of_current_line
        )
        if shown is not None:
            self.config.add_cleanup(shown.stop)

    # -- running ------------------------------------------------------------------------

    @pytest.fixture
    def upstream(self, request: pytest.FixtureRequest) -> Snapshot:
        """The case's upstream files this check declared, parsed: a :class:`Snapshot`."""
        case = getattr(request, "param", None)
        if not isinstance(case, Case):
            raise pytest.UsageError(
                f"{request.node.nodeid}: the upstream fixture is parametrized by canary; "
                f"mark the module with pytest.mark.upstream('<package>')"
            )
        spec = CheckSpec.of(request.node) or _UNCHECKED
        workspace = self.run.workspace
        if case.known_version is None:  # main: the gate needs the version the tree declares
            version = workspace.version(case)
            if spec.window.excludes(version):
                pytest.skip(_main_outside(case, spec.window, version))
            tags = self.run.tags.package(case.package)
            for mark in _expected_drift(case, version, tags, spec.known_drift):
                request.applymarker(mark)
        if (outcome := self._remembered(request.node, case)) is not None:
            return Remembered(case, outcome)  # the call gives it again: no snapshot
        version = workspace.version(case) if spec.split is not None else None
        reads, inherits = spec.reads_for(version), spec.inherits_for(version)
        return workspace.snapshot(case, reads, inherits=inherits)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """A remembered outcome is given again instead of running the check."""
        remembered = pyfuncitem.funcargs.get("upstream")
        if not isinstance(remembered, Remembered):
            return None
        self.stats.add(outcomes_remembered=1)
        remembered.outcome.replay()
        return True

    def _remembered(self, item: pytest.Item, case: Case) -> Outcome | None:
        """What an earlier run decided for this check on this case, where nothing it
        depends on changed (asked once per item)."""
        if not self.recall:
            return None
        if item.nodeid not in self._recalled:
            workspace = self.run.workspace
            self._recalled[item.nodeid] = self.memo.recall(
                case,
                _check_name(item),
                self._outcome_key(item, case),
                lambda paths: workspace.digests(case, paths),
            )
        return self._recalled[item.nodeid]

    def _outcome_key(self, item: pytest.Item, case: Case) -> str:
        version = case.known_version
        if version is None:  # main: what its tree declares (read by its fixture first)
            version = self.run.workspace.version(case)
        return outcome_key(self.code.digest(item), version)

    def _remember(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        """Keep what a check's call decided on a snapshot, with the digests of the files
        that snapshot was made from."""
        snapshot = getattr(item, "funcargs", {}).get("upstream")
        outcome = Outcome.of_call(call.excinfo)
        if not isinstance(snapshot, Snapshot) or outcome is None:
            return
        if snapshot.notes:  # a pre-release matched on the old side of a split: the note
            return  # belongs to the results, and a replay would give the outcome without it
        case, workspace = snapshot.case, self.run.workspace
        try:
            files = workspace.digests(case, [*snapshot.modules, *sorted(snapshot.loaded)])
            key = self._outcome_key(item, case)
        except InfrastructureError:
            return
        self.memo.remember(case, _check_name(item), key, files, outcome)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """A check's drift is shown as its message alone: the finding, not a traceback;
        canary's own errors are one line too (see :mod:`canary.plugin.endofrun`)."""
        report = yield
        if call.when == "call":
            self._remember(item, call)
        if report.failed and call.excinfo is not None and call.excinfo.errisinstance(CheckDrift):
            report.longrepr = str(call.excinfo.value)
        elif report.failed and call.excinfo is not None:
            endofrun.note_error(report, call.excinfo, case_of(item))
        return report

    @pytest.hookimpl(tryfirst=True, specname="pytest_runtest_makereport")
    def pytest_runtest_makereport_one_line(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> pytest.TestReport | None:
        """canary's own errors (fetch, cache, offline, parse) are one line: the reason."""
        return endofrun.one_line_report(item, call)

    # -- the end ------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """An xdist worker hands its counters over (before xdist sends them); the
        controller prints canary's verdict after everything else, pytest's counts included."""
        self.memo.save()
        if hasattr(self.config, "workerinput"):
            self.config.workeroutput["canary_stats"] = self.stats.as_dict()
        yield
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not self.config.option.collectonly:
            endofrun.write_verdict(reporter, session)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: object, error: object) -> None:
        """Add an xdist worker's fetch and parse counters to the controller's summary."""
        worker_stats = getattr(node, "workeroutput", {}).get("canary_stats")
        if worker_stats:
            self.stats.add(**worker_stats)
            self.workers_reported += 1

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        endofrun.write_section(
            terminalreporter,
            self.stats.as_dict(),
            fetch_threads=self.run.workspace.workers,
            workers=self.workers_reported,
        )


@dataclass(frozen=True)
class Remembered:
    """What the ``upstream`` fixture gives a check whose outcome on the case is
    remembered: the call gives the outcome again and never runs the check."""

    case: Case
    outcome: Outcome


def _check_name(item: pytest.Item) -> str:
    """The check an item runs, whatever its case: its node id without the parameters."""
    return item.nodeid.partition("[")[0]


def _judging(config: pytest.Config) -> str:
    """The options that change how a check's failure reads: pytest's assertion rewriting
    and how much of a failed plain ``assert`` it explains."""
    if hasattr(pytest.Config, "VERBOSITY_ASSERTIONS"):  # pytest 8.0 on
        verbosity = config.get_verbosity(pytest.Config.VERBOSITY_ASSERTIONS)
    else:
        verbosity = config.option.verbose
    return f"assert={config.option.assertmode} verbosity={verbosity}"


# A test that takes ``upstream`` without ``@check``: every release, no files declared
# (the snapshot refuses any file it reads, saying a check must declare it).
_UNCHECKED = CheckSpec(reads=(), fix="", window=Window(), known_drift={}, inherits=())


def _expected_drift(
    case: Case, version: Version | None, tags: PackageTags, known_drift: dict[str, str]
) -> list[pytest.MarkDecorator]:
    """The xfail marks a case gets from tags.toml's ``broken`` and the check's
    ``known_drift``; a pre-release of a listed release shares its entry (canary.versions)."""
    if case.source == "local":
        return []
    marks = []
    if reason := tags.broken_reason(case.label, version):
        # Not strict: the checks a broken release still passes are fine there.
        marks.append(_drift_expected(f"{case} is listed as broken in tags.toml: {reason}"))
    reason, exact = listed_for(known_drift, case.label, version)
    if reason:
        # Strict on the release itself: once it passes, the known_drift entry is stale. A
        # pre-release of it may not have reached that drift yet.
        marks.append(_drift_expected(f"known drift in {case}: {reason}", strict=exact))
    return marks


def _drift_expected(reason: str, *, strict: bool = False) -> pytest.MarkDecorator:
    # Only drift is expected: an infrastructure error stays an error.
    return pytest.mark.xfail(reason=reason, raises=CheckDrift, strict=strict)


def _outside(check: str, case: Case, window: Window) -> str:
    # The same words for every release outside the window: pytest's -ra summary folds
    # them into one line per check ("SKIPPED [82] ...") instead of one per case; the
    # release is in the test id.
    return f"{OUTSIDE_WINDOW} {check} ({case.package} {window})"


def _main_outside(case: Case, window: Window, version: Version | None) -> str:
    shown = version if version is not None else "an unreadable version"
    return f"{case} is {shown}, outside this check's window ({window})"
