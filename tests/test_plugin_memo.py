"""Remembered outcomes of the static tier, end to end through pytester: a warm run gives the
same results, report and exit status as a run that checks everything, and a changed file,
check or engine makes exactly the cases that depend on it run again.

Each check writes a line to the file ``CANARY_TEST_RAN`` names when its body runs, so a
test sees which cases ran and which were answered from memory.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from test_plugin import TAGS, cache_dir, github  # noqa: F401 (fixtures)

# Imported before pytester snapshots sys.modules (see tests/test_plugin.py).
import canary.sources.github  # noqa: F401
from canary import cli
from canary.cache import Cache, FileKey
from canary.plugin import checkcode, session
from canary.plugin.memo import OUTCOMES

pytest_plugins = ["pytester"]

RELEASES = ("1.0.0", "1.1.0", "1.1.1", "1.2.0", "2.0.0", "2.10.0")
BASE = b"class Base:\n    def run(self, steps, *, num_items_in_batch=None):\n        pass\n"
DRIFTED_BASE = b"class Base:\n    def run(self, steps):\n        pass\n"
CORE = b"from toy.base import Base\n\nclass Engine(Base):\n    pass\n"
EXTRA = b"class Helper:\n    pass\n"
NO_HELPER = b"class Other:\n    pass\n"
ABSENT = ("toy/core/__init__.py", "toy/base/__init__.py", "toy/__init__.py")

CHECKS = '''
import os

import pytest
from canary.catalog import check, expect_parameters, row

pytestmark = pytest.mark.upstream("toy")


def ran(upstream, name):
    with open(os.environ["CANARY_TEST_RAN"], "a") as ran_file:
        ran_file.write(f"{name} {upstream.case.label}\\n")


EXTRA_CLASS = "Helper"


@check(reads="toy/core.py", fix="chunked NLL loss", since="1.1.0", inherits="Engine")
def test_run_is_inherited(upstream):
    """Engine.run, inherited from Base, takes num_items_in_batch."""
    ran(upstream, "inherited")
    expect_parameters(upstream.method("toy/core.py", "Engine", "run"), "num_items_in_batch")


@check(reads="toy/core.py", fix="chunked NLL loss")
def test_engine_exists(upstream):
    """toy/core.py defines Engine."""
    ran(upstream, "engine")
    if upstream.version.major == 2:
        pytest.skip("toy 2 is checked by the row of the table")
    upstream.module("toy/core.py").cls("Engine")


@check(reads="toy/extra.py", fix="chunked NLL loss", until="2.0.0")
def test_extra_helper(upstream):
    """toy/extra.py defines the helper class."""
    ran(upstream, "extra")
    upstream.module("toy/extra.py").cls(EXTRA_CLASS)


@check.each(
    row("test_row_core", path="toy/core.py", name="Engine"),
    row("test_row_extra", path="toy/extra.py", name="Helper"),
    fix="chunked NLL loss",
)
def defines(upstream, path, name):
    """{path} defines {name}."""
    ran(upstream, name)
    upstream.module(path).cls(name)
'''


@pytest.fixture
def project(pytester: pytest.Pytester, cache_dir: Path, monkeypatch) -> pytest.Pytester:  # noqa: F811
    """Every release cached (1.2.0, listed as broken, lost Helper), and the checks above."""
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_toy=CHECKS)
    cache = Cache(cache_dir)
    for version in RELEASES:
        extra = NO_HELPER if version == "1.2.0" else EXTRA
        base = DRIFTED_BASE if version == "2.10.0" else BASE
        for path, content in (("base", base), ("core", CORE), ("extra", extra)):
            cache.write_file(FileKey("index", "toy", version, f"toy/{path}.py"), content)
        for absent in ABSENT:  # where the static MRO looks for a module before toy/base.py
            cache.write_file(FileKey("index", "toy", version, absent), None)
    monkeypatch.setenv("CANARY_TEST_RAN", str(pytester.path / "ran.txt"))
    return pytester


def run(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, set[str]]:
    """One run over every release, and which check bodies ran on which release."""
    ran = project.path / "ran.txt"
    ran.unlink(missing_ok=True)
    result = project.runpytest("-p", "no:cacheprovider", "--canary-offline", "-rsx", *args)
    return result, set(ran.read_text().splitlines()) if ran.exists() else set()


EVERY_CASE = {
    *(f"inherited {v}" for v in RELEASES if v != "1.0.0"),
    *(f"engine {v}" for v in RELEASES),
    *(f"extra {v}" for v in RELEASES if v < "2.0.0"),
    *(f"Engine {v}" for v in RELEASES),
    *(f"Helper {v}" for v in RELEASES),
}


def results(path: Path) -> dict:
    """A results file without what differs between any two runs (durations, the date)."""
    data = json.loads(path.read_text())
    data.pop("created")
    for case in data["cases"]:
        case.pop("duration")
    return data


def test_a_warm_run_answers_every_case_from_memory_and_says_exactly_what_a_cold_one_does(
    project, capsys
):
    cold, ran = run(project, f"--canary-json={project.path / 'cold.json'}")
    assert ran == EVERY_CASE
    warm, ran = run(project, f"--canary-json={project.path / 'warm.json'}")
    assert ran == set()  # no check body ran
    assert "code indexes: 0 from cache, 0 parsed" in warm.stdout.str()
    assert f"outcomes: {len(EVERY_CASE)} remembered" in warm.stdout.str()

    assert warm.ret == cold.ret == pytest.ExitCode.TESTS_FAILED  # Base.run drifted in 2.10.0
    cold_results, warm_results = (
        results(project.path / "cold.json"),
        results(project.path / "warm.json"),
    )
    assert {c["outcome"] for c in cold_results["cases"]} >= {"pass", "fail", "skip", "xfail"}
    for cold_case, warm_case in zip(cold_results["cases"], warm_results["cases"], strict=True):
        assert warm_case == cold_case
    assert warm_results == cold_results
    summary = [line for line in cold.outlines if line.startswith(("FAILED", "XFAIL", "SKIP"))]
    assert summary
    assert summary == [
        line for line in warm.outlines if line.startswith(("FAILED", "XFAIL", "SKIP"))
    ]
    assert cold.outlines[-1] == warm.outlines[-1]  # the verdict
    reports = []
    for name in ("cold", "warm"):
        capsys.readouterr()
        status = cli.main(["report", "--offline", str(project.path / f"{name}.json")])
        reports.append((status, capsys.readouterr().out))
    assert reports[0] == reports[1]
    assert reports[0][0] == 1
    assert "num_items_in_batch" in reports[0][1]


def test_recompute_runs_every_case_and_the_next_run_is_warm_again(project):
    run(project)
    _, ran = run(project, "--canary-recompute")
    assert ran == EVERY_CASE
    _, ran = run(project)
    assert ran == set()


def test_a_changed_file_reruns_exactly_the_cases_that_read_it(project, tmp_path):
    tree = tmp_path / "checkout" / "src" / "toy"
    tree.mkdir(parents=True)
    (tree / "__init__.py").write_text('__version__ = "1.1.0"\n')
    for name, content in (("base", BASE), ("core", CORE), ("extra", EXTRA)):
        (tree / f"{name}.py").write_bytes(content)
    local = f"--canary-local=toy={tmp_path / 'checkout'}"
    _, ran = run(project, local)
    assert ran == {
        f"{check} 1.1.0" for check in ("inherited", "engine", "extra", "Engine", "Helper")
    }
    _, ran = run(project, local)
    assert ran == set()

    # base.py is read only through Engine's static MRO.
    (tree / "base.py").write_bytes(BASE.replace(b"steps,", b"steps, extra=None,"))
    result, ran = run(project, local)
    assert ran == {"inherited 1.1.0"}
    result.assert_outcomes(passed=5)

    (tree / "extra.py").write_bytes(NO_HELPER)
    result, ran = run(project, local)
    assert ran == {"extra 1.1.0", "Helper 1.1.0"}
    result.assert_outcomes(passed=3, failed=2)
    result, ran = run(project, local)  # a drift is remembered as a drift
    assert ran == set()
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(["*toy/extra.py*", "*found:*Helper*"])


def test_a_changed_release_file_reruns_only_that_release(project, cache_dir):  # noqa: F811
    run(project)
    Cache(cache_dir).write_file(FileKey("index", "toy", "2.10.0", "toy/core.py"), CORE + b"# x\n")
    _, ran = run(project)
    assert ran == {"inherited 2.10.0", "engine 2.10.0", "Engine 2.10.0"}


CHANGES = {
    # one check's body
    "extra": ('ran(upstream, "extra")', 'ran(upstream, "extra")  \n    assert True'),
    # a module-level name only that check reaches
    "extra-constant": ('EXTRA_CLASS = "Helper"', 'EXTRA_CLASS = "Hel" + "per"'),
    # one row of a table
    "row": ('path="toy/core.py", name="Engine"),', 'name="Engine", path="toy/core.py"),'),
    # the helper every check calls
    "helper": ('os.environ["CANARY_TEST_RAN"], "a"', 'os.environ["CANARY_TEST_RAN"], mode="a"'),
}


@pytest.mark.parametrize(
    ("change", "reruns"),
    [
        ("extra", {"extra"}),
        ("extra-constant", {"extra"}),
        ("row", {"Engine"}),
        ("helper", {"inherited", "engine", "extra", "Engine", "Helper"}),
    ],
)
def test_a_changed_check_reruns_exactly_its_cases(project, change, reruns):
    run(project)
    module = project.path / "test_toy.py"
    old, new = CHANGES[change]
    source = module.read_text()
    assert source.count(old) == 1
    module.write_text(source.replace(old, new))
    _, ran = run(project)
    assert ran == {case for case in EVERY_CASE if case.split()[0] in reruns}


def test_a_comment_or_a_moved_check_reruns_nothing(project):
    run(project)
    module = project.path / "test_toy.py"
    module.write_text("# a comment, and every line below moved down\n\n" + module.read_text())
    _, ran = run(project)
    assert ran == set()


def test_a_changed_engine_reruns_everything_and_replaces_what_the_last_one_wrote(
    project,
    cache_dir,  # noqa: F811
    monkeypatch,
):
    run(project)
    blobs = sorted((cache_dir / "blobs" / OUTCOMES).rglob("*.entry"))
    monkeypatch.setattr(session, "engine_digest", lambda: "another canary")
    _, ran = run(project)
    assert ran == EVERY_CASE
    assert sorted((cache_dir / "blobs" / OUTCOMES).rglob("*.entry")) == blobs
    _, ran = run(project)
    assert ran == set()


def test_the_engine_digest_is_canarys_code_less_the_catalog_and_the_python(tmp_path, monkeypatch):
    package = tmp_path / "canary"
    shutil.copytree(checkcode.PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    digest = checkcode.engine_digest.__wrapped__
    before = digest(package)
    (package / "checks" / "test_peft.py").write_text("# another catalog\n")
    assert digest(package) == before
    with (package / "expectations.py").open("a") as source:
        source.write("\n# a change to the engine\n")
    changed = digest(package)
    assert changed != before
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert digest(package) != changed


def test_a_damaged_or_foreign_memo_is_a_miss_never_an_answer(project, cache_dir):  # noqa: F811
    cold, _ = run(project, f"--canary-json={project.path / 'cold.json'}")
    blobs = sorted((cache_dir / "blobs" / OUTCOMES).rglob("*.entry"))
    assert len(blobs) == len(RELEASES)
    blobs[0].write_bytes(blobs[0].read_bytes()[:-20])  # truncated
    blobs[1].write_bytes(b"garbage")
    name = blobs[2].stem  # a well-formed entry of the cache holding no memo of ours
    foreign = {"engine": checkcode.engine_digest(), "checks": {"test_toy.py::x": 1}}
    Cache(cache_dir).write_blob(OUTCOMES, name, json.dumps(foreign).encode())
    warm, ran = run(project, f"--canary-json={project.path / 'warm.json'}")
    # The three releases whose memo is unusable ran whole; the other three not at all.
    rerun = {case.split()[1] for case in ran}
    assert len(rerun) == 3
    assert ran == {case for case in EVERY_CASE if case.split()[1] in rerun}
    assert results(project.path / "warm.json") == results(project.path / "cold.json")
    assert warm.ret == cold.ret


def test_verbosity_reruns_only_the_checks_with_a_plain_assert(project):
    # pytest rewrites a plain assert, and how much its failure explains depends on -v.
    module = project.path / "test_toy.py"
    old = 'ran(upstream, "extra")'
    module.write_text(module.read_text().replace(old, f"{old}\n    assert upstream.case.label"))
    run(project)
    _, ran = run(project, "-v")
    assert ran == {case for case in EVERY_CASE if case.startswith("extra ")}


def test_main_at_a_new_commit_is_keyed_by_its_files_digests(project, github):  # noqa: F811
    for name, content in (("base", BASE), ("core", CORE), ("extra", EXTRA)):
        github.add(f"/example/toy/main/src/toy/{name}.py", content)
    on_main = ("-p", "no:cacheprovider", "--canary-tags=toy=main")
    ran_file = project.path / "ran.txt"

    def run_main() -> set[str]:
        ran_file.unlink(missing_ok=True)
        # main declares 2.11.0.dev0: the extra check's window (<2.0.0) leaves it out.
        project.runpytest(*on_main).assert_outcomes(passed=3, skipped=2)
        return set(ran_file.read_text().splitlines()) if ran_file.exists() else set()

    # engine skips in its body on a 2.x tree: remembered as that skip.
    assert run_main() == {"inherited main", "engine main", "Engine main", "Helper main"}
    assert run_main() == set()
    github.point("example/toy", "main", "b" * 40)  # the same files at another commit
    assert run_main() == set()
    moved = "c" * 40  # a commit where extra.py (read by one check on main) changed
    version = b'__version__ = "2.11.0.dev0"\n'
    changed = EXTRA.replace(b"pass", b"helps = True")
    files = {"__init__": version, "base": BASE, "core": CORE, "extra": changed}
    for name, content in files.items():
        github.add(f"/example/toy/{moved}/src/toy/{name}.py", content)
    github.point("example/toy", "main", moved)
    assert run_main() == {"Helper main"}


ON_DEMAND = '''
import os

import pytest
from canary.catalog import check, expect_parameters

pytestmark = pytest.mark.upstream("toy")


@check(reads="toy/core.py", fix="chunked NLL loss")
def test_run_found_through_the_mro(upstream):
    """Engine.run, found in Base through the static MRO (no inherits=), takes steps."""
    with open(os.environ["CANARY_TEST_RAN"], "a") as ran_file:
        ran_file.write(f"mro {upstream.case.label}\\n")
    run = upstream.module("toy/core.py").cls("Engine").method("run")
    expect_parameters(run, "num_items_in_batch")
'''


def test_a_file_read_on_demand_through_the_mro_is_in_the_key(project, tmp_path):
    # base.py is named nowhere in the check: the MRO walk reads it while the check runs.
    project.makepyfile(test_toy=ON_DEMAND)
    tree = tmp_path / "checkout" / "src" / "toy"
    tree.mkdir(parents=True)
    (tree / "__init__.py").write_text('__version__ = "1.1.0"\n')
    for name, content in (("base", BASE), ("core", CORE)):
        (tree / f"{name}.py").write_bytes(content)
    local = f"--canary-local=toy={tmp_path / 'checkout'}"
    run(project, local)[0].assert_outcomes(passed=1)
    assert run(project, local)[1] == set()
    (tree / "base.py").write_bytes(DRIFTED_BASE)
    result, ran = run(project, local)
    assert ran == {"mro 1.1.0"}
    result.assert_outcomes(failed=1)
