"""The pytest plumbing, end to end through pytester: ids, options, gates, outcomes.

Released versions are served from a cache the tests fill themselves and read with
``--canary-offline``, so nothing here touches the network.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Imported here, before pytester snapshots sys.modules for each in-process run: a module
# first imported inside a run is dropped after it, and requests' cookie classes imported
# twice no longer match each other.
import canary.sources.github  # noqa: F401
from canary.cache import Cache, FileKey
from canary.plugin import RUNTIME_DIR

pytest_plugins = ["pytester"]

TAGS = """
[packages.toy]
repo = "example/toy"
package_dir = "src"
floor = "1.0.0"
anchors = ["1.0.0"]
broken = { "1.2.0" = "ships a syntax error in toy/core.py" }
versions = ["1.0.0", "1.1.0", "1.1.1", "1.2.0", "2.0.0", "2.10.0"]
"""

GOOD = b"class Engine:\n    def run(self, steps, *, num_items_in_batch=None):\n        pass\n"
DRIFTED = b"class Engine:\n    def run(self, steps):\n        pass\n"

CHECKS = '''
import pytest
from canary.catalog import check, expect_parameters

pytestmark = pytest.mark.upstream("toy")

@check(reads="toy/core.py", fix="chunked NLL loss", since="1.1.0")
def test_run_takes_num_items_in_batch(upstream):
    """Engine.run takes num_items_in_batch."""
    run = upstream.module("toy/core.py").cls("Engine").method("run")
    expect_parameters(run, "num_items_in_batch")

@check(reads="toy/core.py", fix="chunked NLL loss", until="2.0.0")
def test_engine_exists(upstream):
    """toy/core.py defines Engine."""
    upstream.module("toy/core.py").cls("Engine")
'''


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("CANARY_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def project(pytester: pytest.Pytester, cache_dir: Path) -> pytest.Pytester:
    """A rootdir with tags.toml, a check module, and every release's file cached."""
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_toy=CHECKS)
    cache = Cache(cache_dir)
    for version in ("1.0.0", "1.1.0", "1.1.1", "1.2.0", "2.0.0", "2.10.0"):
        content = DRIFTED if version == "1.2.0" else GOOD
        cache.write_file(FileKey("index", "toy", version, "toy/core.py"), content)
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest("-p", "no:cacheprovider", "--canary-offline", "-rsx", *args)


def test_every_release_is_a_case_with_a_package_underscore_version_id(project):
    result = run(project, "--collect-only", "-q")
    ids = [line for line in result.outlines if "::" in line]
    assert "test_toy.py::test_engine_exists[toy_1_1_1]" in ids
    assert "test_toy.py::test_run_takes_num_items_in_batch[toy_2_10_0]" in ids
    assert len(ids) == 12


def test_dash_k_selects_one_minor_series_and_nothing_else(project):
    result = run(project, "-k", "toy_1_1", "--collect-only", "-q")
    ids = [line for line in result.outlines if "::" in line]
    assert sorted(i.split("[")[1] for i in ids) == [
        "toy_1_1_0]",
        "toy_1_1_0]",
        "toy_1_1_1]",
        "toy_1_1_1]",
    ]


def test_outcomes_pass_skip_with_window_and_xfail_for_broken(project):
    result = run(project)
    # Engine still exists in the broken release: that check passes there (xpass, not strict).
    result.assert_outcomes(passed=7, skipped=3, xfailed=1, xpassed=1)
    # Skips outside a window are expected: counted by canary, not listed one by one.
    result.stdout.fnmatch_lines(
        [
            "skipped: 3 outside their check's window (expected)",
            "*XFAIL*toy_1_2_0*listed as broken in tags.toml: ships a syntax error*",
        ]
    )
    result.stdout.no_fnmatch_line("SKIPPED*outside the window*")


KNOWN_DRIFT = '''
import pytest
from canary.catalog import check, expect_parameters

pytestmark = pytest.mark.upstream("toy")

@check(reads="toy/core.py", fix="chunked NLL loss", known_drift={"1.1.1": "lost it, back in 1.2"})
def test_run_takes_num_items_in_batch(upstream):
    """Engine.run takes num_items_in_batch."""
    run = upstream.module("toy/core.py").cls("Engine").method("run")
    expect_parameters(run, "num_items_in_batch")
'''


def test_known_drift_of_one_check_xfails_there_and_a_stale_entry_fails(project, cache_dir):
    project.makepyfile(test_toy=KNOWN_DRIFT)
    cache = Cache(cache_dir)
    cache.write_file(FileKey("index", "toy", "1.1.1", "toy/core.py"), DRIFTED)
    result = run(project, "-k", "toy_1_1")
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*XFAIL*toy_1_1_1*known drift in toy 1.1.1: lost it, back in 1.2"])

    cache.write_file(FileKey("index", "toy", "1.1.1", "toy/core.py"), GOOD)
    result = run(project, "-k", "toy_1_1")
    result.assert_outcomes(passed=1, failed=1)  # XPASS(strict): the entry is stale
    result.stdout.fnmatch_lines(["*XPASS(strict)*known drift in toy 1.1.1*"])


def test_drift_names_the_fix_the_file_and_what_was_found(project, cache_dir):
    Cache(cache_dir).write_file(FileKey("index", "toy", "2.10.0", "toy/core.py"), DRIFTED)
    result = run(project, "-k", "toy_2_10_0 and run_takes")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*upstream drift in toy 2.10.0 breaks the fix 'chunked NLL loss'",
            "*file: toy/core.py",
            "*expected: Engine.run takes num_items_in_batch.",
            "*found: Engine.run has no parameter 'num_items_in_batch'; "
            "its signature is (self, steps)",
        ]
    )


TABLE = '''
import pytest
from canary.catalog import check, expect_parameters, row

pytestmark = pytest.mark.upstream("toy")

@check.each(
    row("test_run_takes_num_items_in_batch", path="toy/core.py", since="1.1.0",
        name="num_items_in_batch"),
    row("test_run_takes_steps", path="toy/core.py", until="2.0.0", name="steps"),
    fix="chunked NLL loss",
)
def run_takes(upstream, path, name):
    """Engine.run takes {name}."""
    expect_parameters(upstream.module(path).cls("Engine").method("run"), name)
'''


def test_a_check_table_is_one_parametrized_check_per_row(project, cache_dir):
    project.makepyfile(test_toy=TABLE)
    ids = [line for line in run(project, "--collect-only", "-q").outlines if "::" in line]
    assert len(ids) == 12
    assert "test_toy.py::test_run_takes_steps[toy_1_0_0]" in ids
    assert "test_toy.py::test_run_takes_num_items_in_batch[toy_2_10_0]" in ids
    # Each row keeps its own window; -k selects rows by their own names.
    result = run(project, "-k", "steps and toy_2", "--canary-json", "steps.json")
    result.assert_outcomes(skipped=2)
    cases = json.loads((project.path / "steps.json").read_text())["cases"]
    assert {case["message"] for case in cases} == {
        "outside the window of test_run_takes_steps (toy <2.0.0)"
    }
    Cache(cache_dir).write_file(FileKey("index", "toy", "2.10.0", "toy/core.py"), DRIFTED)
    result = run(project)
    result.assert_outcomes(passed=6, failed=1, skipped=3, xfailed=1, xpassed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_run_takes_num_items_in_batch[[]toy_2_10_0[]] _*",
            "*expected: Engine.run takes num_items_in_batch.",
        ]
    )


SHADOWED_ROW = '''
@check(reads="toy/core.py", fix="chunked NLL loss")
def test_run_takes_steps(upstream):
    """Engine.run takes steps."""
'''


def test_a_table_row_may_not_shadow_a_check_of_the_same_name(project):
    project.makepyfile(test_toy=TABLE + SHADOWED_ROW)
    result = run(project, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*a table row and another object are both test_run_takes_steps*"])


def test_a_file_missing_upstream_is_drift_not_a_pass(project, cache_dir):
    Cache(cache_dir).write_file(FileKey("index", "toy", "2.10.0", "toy/core.py"), None)
    result = run(project, "-k", "toy_2_10_0")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*found: toy/core.py does not exist in toy 2.10.0*"])
    assert result.ret == 1  # drift


def test_offline_cache_miss_is_an_error_never_a_pass(project, cache_dir):
    result = run(project, "--canary-tags", "toy=3.0.0")
    result.assert_outcomes(errors=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*OfflineMiss*--canary-offline: toy 3.0.0 from the package index*"]
    )
    verdict = "canary: not everything was checked: 1 error(s), no drift in the rest"
    assert result.outlines[-1] == verdict
    # As `canary report` and `canary surface`: 2, not pytest's 1 for a failure.
    assert result.ret == 2


def test_an_unparsable_upstream_file_is_an_error_naming_file_and_version(project, cache_dir):
    Cache(cache_dir).write_file(FileKey("index", "toy", "2.10.0", "toy/core.py"), b"def (:\n")
    result = run(project, "-k", "toy_2_10_0 and run_takes")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ParseError*toy/core.py*toy 2.10.0*"])


def test_canary_tags_limits_a_package_to_the_versions_named(project):
    result = run(project, "--canary-tags", "toy=1.1.0,2.10.0", "--collect-only", "-q")
    cases = {line.split("[")[1] for line in result.outlines if "::" in line}
    assert cases == {"toy_1_1_0]", "toy_2_10_0]"}


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--canary-tags=nope=1.0.0", "unknown package 'nope'; tags.toml lists: toy"),
        ("--canary-tags=toy=banana", "'banana' is not a version, 'main' or a full 40-hex commit"),
        ("--canary-tags=toy", "expected PKG=V1,V2"),
        ("--canary-local=toy=/does/not/exist", "/does/not/exist does not exist"),
        ("--canary-source=index", None),  # valid on its own
    ],
)
def test_bad_options_stop_the_run_with_what_to_fix(project, option, message):
    result = run(project, option, "--collect-only", "-q")
    if message is None:
        assert result.ret == 0
    else:
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*{message}*"])


def test_index_source_cannot_check_main(project):
    result = run(project, "--canary-source=index", "--canary-main", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--canary-source index cannot check main*"])


def test_bad_tags_file_stops_collection_naming_file_key_and_problem(project):
    (project.path / "tags.toml").write_text(TAGS.replace("floor", "flor"))
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "tags.toml: [packages.toy]: unknown key(s) ['flor']" in result.stderr.str()


def make_tree(root: Path, version_line: str, core: bytes) -> Path:
    package = root / "src" / "toy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(version_line)
    (package / "core.py").write_bytes(core)
    return root


def test_local_tree_replaces_the_releases_and_its_version_drives_the_gates(project, tmp_path):
    tree = make_tree(tmp_path / "checkout", '__version__ = "1.0.5"\n', DRIFTED)
    result = run(project, f"--canary-local=toy={tree}", "-v")
    # 1.0.5 is below the first check's window and inside the second's.
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*test_engine_exists[[]toy_1_0_5[]] PASSED*"])


def test_local_tree_with_a_stated_version_shows_its_drift(project, tmp_path):
    tree = make_tree(tmp_path / "checkout", "__version__ = compute()\n", DRIFTED)
    result = run(project, f"--canary-local=toy@2.11.0.dev0={tree}", "-k", "run_takes")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*upstream drift in toy 2.11.0.dev0 breaks*"])


def test_a_pre_release_tree_of_a_split_version_runs_the_new_shapes_checks(project, tmp_path):
    # 1.1.0.dev0 is building 1.1.0: the check that starts at 1.1.0 runs, none is skipped.
    tree = make_tree(tmp_path / "checkout", '__version__ = "1.1.0.dev0"\n', GOOD)
    result = run(project, f"--canary-local=toy={tree}", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_run_takes_num_items_in_batch[[]toy_1_1_0_dev0[]] PASSED*"])


def test_a_pre_release_of_a_listed_release_shares_its_entries_loosely(project, cache_dir):
    project.makepyfile(test_toy=KNOWN_DRIFT)
    cache = Cache(cache_dir)
    cache.write_file(FileKey("index", "toy", "1.1.1rc1", "toy/core.py"), GOOD)
    cache.write_file(FileKey("index", "toy", "1.2.0rc1", "toy/core.py"), DRIFTED)
    result = run(project, "--canary-tags=toy=1.1.1rc1,1.2.0rc1")
    # 1.1.1rc1 may not have 1.1.1's drift yet: a pass is fine (not strict); 1.2.0rc1
    # shares 1.2.0's broken entry.
    result.assert_outcomes(xpassed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*XFAIL*toy_1_2_0rc1*listed as broken in tags.toml*"])


REPO_LAYOUT_INIT = (
    "from importlib.metadata import version\n__version__ = version('toy')\n"  # as trl 0.24+
)
DYNAMIC_PYPROJECT = (
    '[project]\nname = "toy"\ndynamic = ["version"]\n'
    '[tool.setuptools.dynamic]\nversion = { file = "VERSION" }\n'
)


def test_a_repository_layout_tree_reads_its_root_version_file_and_is_checked(project, tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "toy").mkdir(parents=True)
    (checkout / "toy" / "__init__.py").write_text(REPO_LAYOUT_INIT)
    (checkout / "toy" / "core.py").write_bytes(DRIFTED)
    (checkout / "pyproject.toml").write_text(DYNAMIC_PYPROJECT)
    (checkout / "VERSION").write_text("2.11.0.dev0\n")
    result = run(project, f"--canary-local=toy={checkout}", "-v")
    # 2.11.0.dev0: inside the first check's window (drifted), past the second's.
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*upstream drift in toy 2.11.0.dev0 breaks*"])


def test_local_tree_without_a_readable_version_asks_for_one(project, tmp_path):
    tree = make_tree(tmp_path / "checkout", "__version__ = compute()\n", GOOD)
    result = run(project, f"--canary-local=toy={tree}", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*state it: --canary-local toy@VERSION=*"])


def test_a_check_reading_an_undeclared_file_is_told_to_declare_it(project):
    project.makepyfile(
        test_undeclared=textwrap.dedent(
            '''
            import pytest
            from canary.catalog import check

            pytestmark = pytest.mark.upstream("toy")

            @check(reads="toy/core.py", fix="chunked NLL loss")
            def test_reads_other(upstream):
                """reads a file it did not declare."""
                upstream.module("toy/other.py")
            '''
        )
    )
    result = run(project, "test_undeclared.py", "-k", "toy_2_10_0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*'toy/other.py' was not declared by this check: add it to reads=*"]
    )


def test_a_check_naming_an_unknown_fix_fails_collection(project):
    project.makepyfile(
        test_typo='''
import pytest
from canary.catalog import check

pytestmark = pytest.mark.upstream("toy")

@check(reads="toy/core.py", fix="chunked NLL los")
def test_typo(upstream):
    """typo in the fix name."""
'''
    )
    result = run(project, "test_typo.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*unknown fix 'chunked NLL los'; known fixes:*"])


def test_the_runtime_tier_is_not_collected_by_the_static_run():
    repo = Path(__file__).resolve().parents[1]
    assert repo / "canary" / "runtime" == RUNTIME_DIR
    listing = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "canary",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--canary-offline",
            "--canary-tags",
            "peft=0.17.1",
            "--canary-tags",
            "trl=0.25.1",
            "--canary-tags",
            "transformers=5.5.4",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert "canary/checks/" in listing
    assert "canary/runtime/" not in listing


# -- main and --canary-source github, from a GitHub raw stand-in on loopback ---------------


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch):
    from http_fixture import LoopbackServer

    tree = {
        "/example/toy/main/src/toy/__init__.py": b'__version__ = "2.11.0.dev0"\n',
        "/example/toy/main/src/toy/core.py": DRIFTED,
        "/example/toy/v1.1.0/src/toy/__init__.py": b'__version__ = "1.1.0"\n',
        "/example/toy/v1.1.0/src/toy/core.py": GOOD,
    }
    with LoopbackServer(tree) as server:
        monkeypatch.setenv("CANARY_GITHUB_RAW_URL", server.url)
        monkeypatch.setenv("CANARY_GITHUB_API_URL", server.url)
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
        yield server


def test_main_comes_from_github_and_its_declared_version_drives_the_gates(project, github):
    result = project.runpytest("-p", "no:cacheprovider", "--canary-tags=toy=main", "-rs")
    # main declares 2.11.0.dev0: inside the first check's window (drifted), past the second's.
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*upstream drift in toy main breaks the fix 'chunked NLL loss'*",
            "*toy main is 2.11.0.dev0, outside this check's window (<2.0.0)*",
        ]
    )
    assert github.hits("/example/toy/main/src/toy/core.py") == 1


def test_main_in_a_repository_layout_reads_the_version_its_pyproject_points_at(project, github):
    github.add("/example/toy/main/src/toy/__init__.py", REPO_LAYOUT_INIT.encode())
    github.add("/example/toy/main/pyproject.toml", DYNAMIC_PYPROJECT.encode())
    github.add("/example/toy/main/VERSION", b"1.1.0.dev0\n")
    result = project.runpytest("-p", "no:cacheprovider", "--canary-tags=toy=main", "-rs")
    # 1.1.0.dev0 builds 1.1.0: both checks apply (an unread version would skip the second).
    result.assert_outcomes(failed=1, passed=1)


MAIN_CORE = "/example/toy/main/src/toy/core.py"


def main_commit(github) -> str:
    commit = github.commit_of("example/toy", "main")
    assert commit is not None
    return commit


def test_main_is_read_at_the_commit_it_names_and_a_moved_main_is_read_anew(project, github):
    first = main_commit(github)
    for _ in range(2):
        project.runpytest("-p", "no:cacheprovider", "--canary-tags=toy=main").assert_outcomes(
            failed=1, skipped=1
        )
    # Both runs asked which commit main is (once each) and read its files at that commit,
    # the second from the cache: a commit's files never change.
    assert github.hits("/repos/example/toy/commits/main") == 2
    assert [r.requested for r in github.requests_for(MAIN_CORE)] == [
        f"/example/toy/{first}/src/toy/core.py"
    ]
    moved = "b" * 40
    github.add(MAIN_CORE, GOOD)
    github.point("example/toy", "main", moved)
    result = project.runpytest("-p", "no:cacheprovider", "--canary-tags=toy=main")
    result.assert_outcomes(passed=1, skipped=1)
    assert github.requests_for(MAIN_CORE)[-1].requested == f"/example/toy/{moved}/src/toy/core.py"


def test_main_moving_during_a_run_is_still_read_at_one_commit(project, github):
    first, moved = main_commit(github), "c" * 40
    from http_fixture import Status

    # The first answer names the commit of the tree; any later one would name another.
    github.script("/repos/example/toy/commits/main", [Status(200, body=first.encode())])
    github.point("example/toy", "main", moved)
    project.makepyfile(test_more=CHECKS.replace("def test_", "def test_more_"))
    result = project.runpytest("-p", "no:cacheprovider", "--canary-tags=toy=main", "-n", "2")
    result.assert_outcomes(failed=2, skipped=2)
    assert github.hits("/repos/example/toy/commits/main") == 1
    assert {r.requested.split("/")[3] for r in github.requests if "/src/" in r.requested} == {first}


def test_the_results_record_mains_commit_and_it_replays_offline(project, github, tmp_path):
    results = tmp_path / "results.json"
    project.runpytest(
        "-p", "no:cacheprovider", "--canary-tags=toy=main", f"--canary-json={results}"
    )
    commit = main_commit(github)
    cases = json.loads(results.read_text())["cases"]
    assert {case["commit"] for case in cases} == {commit}
    report = subprocess.run(
        [sys.executable, "-m", "canary", "report", str(results), "--format", "markdown"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert f"main@{commit[:7]}" in report.stdout

    hits = github.hits()
    replay = run(project, f"--canary-tags=toy={commit}", "-v")
    replay.assert_outcomes(failed=1, skipped=1)
    replay.stdout.fnmatch_lines([f"*test_run_takes_num_items_in_batch[[]toy_{commit}[]] FAILED*"])
    # Offline, main itself is the commit the last online run resolved.
    run(project, "--canary-tags=toy=main").assert_outcomes(failed=1, skipped=1)
    assert github.hits() == hits


def test_a_main_never_resolved_here_is_an_offline_error_naming_the_replay(project, github):
    result = run(project, "--canary-tags=toy=main")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*never resolved to a commit*--canary-tags toy=<40-hex commit>*"])
    assert github.hits() == 0


def test_github_source_reads_releases_at_their_tags(project, github):
    result = project.runpytest(
        "-p", "no:cacheprovider", "--canary-source=github", "--canary-tags=toy=1.1.0"
    )
    result.assert_outcomes(passed=2)
    assert github.hits("/example/toy/v1.1.0/src/toy/core.py") == 1


def test_a_ref_github_does_not_have_is_an_error_not_drift(project, github):
    result = project.runpytest(
        "-p", "no:cacheprovider", "--canary-source=github", "--canary-tags=toy=1.1.1"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*RefNotFound*example/toy has no ref 'v1.1.1'*"])


# -- a session that is not a canary run ---------------------------------------------------

OWN_UPSTREAM = """
import pytest

@pytest.fixture
def upstream():
    return "the project's own upstream fixture"

def test_uses_its_own_upstream(upstream):
    assert upstream == "the project's own upstream fixture"
"""


def test_a_downstream_test_session_sees_nothing_of_canary_but_its_options(pytester):
    """canary installed beside a project's own suite: no fixture of canary's shadows or
    collides with the project's, no summary section, no tags.toml read."""
    pytester.makepyfile(test_own=OWN_UPSTREAM)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*- canary -*")  # no summary section
    result.stdout.no_fnmatch_line("*drift:*")
    fixtures = pytester.runpytest("-p", "no:cacheprovider", "--fixtures")
    fixtures.stdout.no_fnmatch_line("*Snapshot*")  # canary's upstream fixture is not there
    assert "--canary-tags" in pytester.runpytest("--help").stdout.str()


def test_any_run_option_makes_a_canary_run(project):
    """A check module outside canary/ is checked once an option says this is a canary run;
    the project's tags.toml is then read (here: its cases are parametrized)."""
    result = project.runpytest("-p", "no:cacheprovider", "--canary-offline", "--co", "-q")
    result.stdout.fnmatch_lines(["*test_engine_exists[[]toy_1_0_0[]]*"])


def test_a_results_file_on_a_full_disk_is_one_line_and_keeps_the_previous_one(project, monkeypatch):
    from test_atomic import full_disk

    results = project.path / "results.json"
    results.write_text("previous\n")
    full_disk(monkeypatch, project.path)
    result = run(project, "--canary-json", "results.json")
    assert result.ret == 2
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(
        ["canary: error: --canary-json: cannot write *results.json: No space*"]
    )
    assert results.read_text() == "previous\n"
