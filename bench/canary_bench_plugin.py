"""A pytest plugin the benchmark loads into the runs it times (``-p canary_bench_plugin``).

It writes, to the JSON file named by ``CANARY_BENCH_OUT``: when collection ended, the
time the tests spent in setup (waiting for their files) and in the check itself, the
outcomes, the canary workspace's counters, and which files each package's checks read
(so the install-and-import comparison imports the same modules the catalog reads).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter, defaultdict

import pytest

from canary.catalog import CheckSpec

_STARTED = time.perf_counter()
_state: dict[str, object] = {"collection_s": None}
_phases: Counter[str] = Counter()
_outcomes: Counter[str] = Counter()
_reads: defaultdict[str, set[str]] = defaultdict(set)


def pytest_collection_finish(session: pytest.Session) -> None:
    _state["collection_s"] = time.perf_counter() - _STARTED
    _state["items"] = len(session.items)
    for item in session.items:
        package = item.get_closest_marker("upstream")
        spec = CheckSpec.of(item)
        if package and package.args and spec:
            _reads[package.args[0]].update(spec.reads)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _phases[report.when] += report.duration
    if report.when == "setup" and not report.passed:
        _outcomes["error" if report.failed else "skipped"] += 1
    elif report.when == "call":
        if hasattr(report, "wasxfail"):
            _outcomes["xfailed" if report.skipped else "xpassed"] += 1
        else:
            _outcomes[report.outcome] += 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("CANARY_BENCH_OUT")
    if not out:
        return
    from canary.plugin import run_of

    run = run_of(session.config)
    stats = run.workspace.stats.as_dict() if run is not None else {}
    with open(out, "w", encoding="utf-8") as stream:
        json.dump(
            {
                "collection_s": _state["collection_s"],
                "items": _state.get("items", 0),
                "session_s": time.perf_counter() - _STARTED,
                "setup_s": _phases["setup"],
                "call_s": _phases["call"],
                "teardown_s": _phases["teardown"],
                "outcomes": dict(_outcomes),
                "stats": stats,
                "reads": {package: sorted(paths) for package, paths in _reads.items()},
            },
            stream,
        )
