"""Each workflow's ``run:`` steps, run here in order as a runner would (tests/workflow_runner.py).

Lint cannot show that a step's quoting, paths and outputs work; running them can. The
checkout is a toy project (one package, ``toy``, with the real plugin and report), the
matrix's package list is replaced by ``toy``, the package index by a fake ``pip`` (as in
tests/test_faults_index.py), GitHub by the loopback server (tests/http_fixture.py), and
``gh`` by a stand-in that keeps the repository's issues in a file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_fixture import LoopbackServer, Status
from workflow_runner import Runner

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
TOY = {"package": ["toy"]}
TITLE = "canary: upstream drift in toy"

GOOD = "class Engine:\n    def run(self, steps, *, num_items_in_batch=None):\n        pass\n"
DRIFTED = "class Engine:\n    def run(self, steps):\n        pass\n"

TAGS = """
[packages.toy]
repo = "example/toy"
package_dir = "src"
floor = "1.0.0"
versions = ["1.0.0", "1.1.0"]
"""

CHECKS = '''
import pytest
from canary.catalog import check, expect_parameters

pytestmark = pytest.mark.upstream("toy")


@check(reads="toy/core.py", fix="chunked NLL loss", since="1.0.0")
def test_run_takes_num_items_in_batch(upstream):
    """Engine.run takes num_items_in_batch."""
    run = upstream.module("toy/core.py").cls("Engine").method("run")
    expect_parameters(run, "num_items_in_batch")
'''

# Stands in for pip in every `python -m pip` of the steps: the index lists FAKE_INDEX's
# releases and serves them as wheels; `install` has nothing to do (canary is installed in
# the interpreter the steps run).
FAKE_PIP = """
import json, os, sys, zipfile
args = sys.argv[1:]
index = json.loads(os.environ["FAKE_INDEX"])
if args[0] == "install":
    print("fake pip: canary is already installed in this interpreter")
elif args[:2] == ["index", "versions"]:
    releases = sorted(index.get(args[2], {}), key=lambda v: tuple(map(int, v.split("."))))
    if not releases:
        sys.exit(f"ERROR: No matching distribution found for {args[2]}")
    print(f"{args[2]} ({releases[-1]})")
    print("Available versions: " + ", ".join(reversed(releases)))
elif args[0] == "download":
    dest, requirement = args[args.index("--dest") + 1], args[-1]
    package, version = requirement.split("==")
    files = index.get(package, {}).get(version)
    if files is None:
        sys.exit(f"ERROR: Could not find a version that satisfies the requirement {requirement}")
    wheel = os.path.join(dest, f"{package}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
else:
    sys.exit(f"fake pip: unexpected {args}")
"""

# Stands in for the GitHub CLI: the repository's issues live in GH_STUB_STATE.
FAKE_GH = """
import json, os, sys
state_file = os.environ["GH_STUB_STATE"]
state = json.load(open(state_file))
args = sys.argv[1:]
state["calls"].append(args)
if not os.environ.get("GH_TOKEN") or not os.environ.get("GH_REPO"):
    sys.exit("gh: set GH_TOKEN and GH_REPO to use GitHub CLI in a GitHub Actions workflow")
def option(name):
    return args[args.index(name) + 1]
issues = state["issues"]
labels = state.setdefault("labels", [])
if args[:2] == ["issue", "list"]:
    assert option("--state") == "open" and option("--json") == "number,title"
    label = option("--label") if "--label" in args else None
    print(json.dumps([{"number": i["number"], "title": i["title"]} for i in issues
                      if i["state"] == "open" and (label is None or label in i["labels"])]))
elif args[:2] == ["label", "create"]:
    if args[2] in labels and "--force" not in args:
        sys.exit(f"label with name {args[2]!r} already exists; use `--force` to update")
    labels.append(args[2]) if args[2] not in labels else None
elif args[:2] == ["issue", "create"]:
    wanted = [args[i + 1] for i, a in enumerate(args) if a == "--label"]
    if missing := [label for label in wanted if label not in labels]:
        sys.exit(f"could not add label: {missing[0]!r} not found")
    number = len(issues) + 1
    body = open(option("--body-file")).read()
    issues.append({"number": number, "title": option("--title"), "state": "open",
                   "body": body, "comments": [], "labels": wanted})
    print(f"https://github.example/{os.environ['GH_REPO']}/issues/{number}")
elif args[:2] == ["issue", "comment"]:
    issues[int(args[2]) - 1]["comments"].append(open(option("--body-file")).read())
elif args[:2] == ["issue", "close"]:
    issue = issues[int(args[2]) - 1]
    issue["state"] = "closed"
    issue["comments"].append(option("--comment"))
else:
    sys.exit(f"gh stub: unexpected {args}")
json.dump(state, open(state_file, "w"))
"""


def wheel(version: str, core: str) -> dict[str, str]:
    return {
        "toy/__init__.py": f'__version__ = "{version}"\n',
        "toy/core.py": core,
        f"toy-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: toy\nVersion: {version}\n"
        ),
    }


def make_checkout(folder: Path) -> None:
    """A checkout of canary whose tags.toml lists one toy package with its catalog module.

    The steps import canary from here (``PYTHONPATH``), as they would from the checkout
    ``pip install -e .`` installed on a runner.
    """
    # The real catalog's modules are left out: this tags.toml lists none of their packages.
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "test_*.py")
    shutil.copytree(ROOT / "canary", folder / "canary", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", folder / "pyproject.toml")
    (folder / "tags.toml").write_text(TAGS)
    (folder / "canary" / "checks" / "test_toy.py").write_text(CHECKS)
    # The surface module the release lane also names: canary's own fixes use none of toy.
    shutil.copy2(ROOT / "canary" / "checks" / "test_surface.py", folder / "canary" / "checks")


@pytest.fixture
def github() -> Iterator[LoopbackServer]:
    tree = {
        "/example/toy/main/src/toy/__init__.py": b'__version__ = "1.2.0.dev0"\n',
        "/example/toy/main/src/toy/core.py": DRIFTED.encode(),
    }
    with LoopbackServer(tree) as server:
        yield server


@pytest.fixture
def index() -> dict[str, dict[str, dict[str, str]]]:
    return {"toy": {"1.0.0": wheel("1.0.0", GOOD), "1.1.0": wheel("1.1.0", GOOD)}}


@pytest.fixture
def world(tmp_path: Path, github: LoopbackServer, index) -> dict[str, object]:
    """What the steps' processes see instead of the network and the hosted runner."""
    stubs = tmp_path / "stubs"
    (stubs / "bin").mkdir(parents=True)
    (stubs / "pip").mkdir()
    (stubs / "pip" / "__init__.py").write_text("")
    (stubs / "pip" / "__main__.py").write_text(FAKE_PIP)
    gh = stubs / "bin" / "gh"
    gh.write_text(f"#!{sys.executable}\n{FAKE_GH}")
    gh.chmod(0o755)
    state = tmp_path / "gh-state.json"
    state.write_text(json.dumps({"issues": [], "calls": []}))
    environ = {
        "PATH": os.pathsep.join(
            [str(stubs / "bin"), str(Path(sys.executable).parent), "/usr/bin:/bin"]
        ),
        "HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join(["$GITHUB_WORKSPACE", str(stubs)]),
        "FAKE_INDEX": json.dumps(index),
        "GH_STUB_STATE": str(state),
        "CANARY_GITHUB_RAW_URL": github.url,
        "CANARY_GITHUB_API_URL": github.url,
        "NO_PROXY": "127.0.0.1,localhost",
        "NETRC": str(tmp_path / "no-netrc"),
        "LANG": "C.UTF-8",
    }
    return {"environ": environ, "state": state, "root": tmp_path}


def runner(world: dict[str, object], workflow: str, day: int = 1) -> Runner:
    root = Path(str(world["root"])) / f"{workflow}-run-{day}"
    environ = dict(world["environ"])  # type: ignore[call-overload]
    return Runner(
        WORKFLOWS / workflow,
        root,
        make_checkout,
        environ=environ,
        github={"run_id": str(1000 + day)},
    )


def issues(world: dict[str, object]) -> list[dict]:
    return json.loads(Path(str(world["state"])).read_text())["issues"]


def daily(world: dict[str, object], day: int) -> tuple[Runner, str]:
    run = runner(world, "daily.yml", day)
    (main,) = run.run_job("main", TOY)
    (issue,) = run.run_job("issue", TOY)
    assert issue.result == "success", issue.log
    return run, main.summary


# -- daily.yml ----------------------------------------------------------------------------


def test_daily_drift_opens_one_issue_comments_while_it_lasts_and_closes_when_green(world, github):
    commit = github.commit_of("example/toy", "main")
    run, summary = daily(world, day=1)
    (main,) = run.results["main"]
    assert main.step("Newest release in tags.toml").outputs == {"version": "1.1.0"}
    tier = main.step("Static tier against the newest release and main")
    assert tier.outcome == "failure", main.log
    assert "1 failed, 1 passed" in tier.output
    report = main.step("Matrix report (job summary and annotations)")
    assert report.outcome == "success", report.output
    # The job summary shows the transition, main at its commit.
    assert f"main@{commit[:7]}" in summary
    assert "last pass 1.1.0" in summary
    (opened,) = issues(world)
    assert opened["title"] == TITLE
    assert opened["state"] == "open"
    assert "https://github.example/example/canary/actions/runs/1001" in opened["body"]
    assert f"main@{commit[:7]}" in opened["body"]
    assert opened["labels"] == ["canary-drift"]
    # The replay selects only toy's checks, at the canary commit that judged them.
    sha = "c0ffee" + "0" * 34
    assert f"Judged by canary at {sha}" in opened["body"]
    replay = f"git checkout {sha} && pytest canary/checks/test_toy.py --canary-tags=toy={commit}"
    assert replay in opened["body"]
    assert "-    def run(self, steps, *, num_items_in_batch=None):" in opened["body"]  # the diff

    daily(world, day=2)
    (still,) = issues(world)
    assert still["state"] == "open"
    assert len(still["comments"]) == 1
    assert "actions/runs/1002" in still["comments"][0]

    github.add("/example/toy/main/src/toy/core.py", GOOD.encode())
    github.point("example/toy", "main", "d" * 40)
    run, summary = daily(world, day=3)
    (main,) = run.results["main"]
    assert main.result == "success", main.log
    assert "main@ddddddd" in summary
    (closed,) = issues(world)
    assert closed["state"] == "closed"
    assert "toy main is green again" in closed["comments"][-1]


def test_daily_infrastructure_error_never_opens_a_drift_issue(world, github):
    github.script("/repos/example/toy/commits/main", [Status(401)] * 5)  # a rejected token
    run, _ = daily(world, day=1)
    (main,) = run.results["main"]
    assert main.step("Static tier against the newest release and main").outcome == "failure"
    (issue,) = run.results["issue"]
    step = issue.step("Open, update or close the drift issue")
    assert "nothing was checked (results: unchecked, report status: 2)" in step.output
    assert issues(world) == []
    calls = json.loads(Path(str(world["state"])).read_text())["calls"]
    assert all(call[:2] == ["issue", "list"] for call in calls)


def test_daily_a_main_job_that_left_no_report_opens_nothing(world):
    run = runner(world, "daily.yml")
    run.results["main"] = []  # the main job died before uploading anything
    (issue,) = run.run_job("issue", TOY)
    assert issue.step("Download the report").outcome == "failure"
    assert issue.result == "success"  # continue-on-error: the next step decides
    output = issue.step("Open, update or close the drift issue").output
    assert "nothing was checked (results: unchecked, report status: none)" in output
    assert issues(world) == []


def green_main(github: LoopbackServer) -> None:
    github.add("/example/toy/main/src/toy/core.py", GOOD.encode())
    github.point("example/toy", "main", "d" * 40)


def open_issue(world: dict[str, object]) -> None:
    """An issue a drift opened on an earlier day, still open."""
    state = json.loads(Path(str(world["state"])).read_text())
    state["labels"] = ["canary-drift"]
    state["issues"].append(
        {"number": 1, "title": TITLE, "state": "open", "body": "", "comments": [],
         "labels": ["canary-drift"]}
    )  # fmt: skip
    Path(str(world["state"])).write_text(json.dumps(state))


def broken_checkout(change: str):
    """make_checkout, then ``change`` applied to the copy: a failed install, a bug."""

    def make(folder: Path) -> None:
        make_checkout(folder)
        if change == "not importable":
            (folder / "canary" / "__init__.py").write_text("raise ImportError('half installed')\n")
        elif change == "report crashes":
            with (folder / "canary" / "report" / "render.py").open("a") as module:
                module.write("\ndef build(*args, **kwargs):\n    raise RuntimeError('bug')\n")

    return make


@pytest.mark.parametrize("main_is", ["green", "drifted"])
def test_daily_canary_not_importable_never_opens_or_closes_an_issue(world, github, main_is):
    if main_is == "green":
        green_main(github)
    open_issue(world)
    run = runner(world, "daily.yml")
    run.make_workspace = broken_checkout("not importable")
    run.run_job("main", TOY)
    assert not (run.artifacts / "daily-toy-main" / "results-toy-main.json").exists()
    assert (run.artifacts / "daily-toy-main" / "status-toy").read_text().strip() == "1"
    (issue,) = run.run_job("issue", TOY)
    assert issue.result == "success", issue.log
    assert "results: unchecked, report status: 1" in issue.log
    (still,) = issues(world)
    assert (still["state"], still["comments"]) == ("open", [])


def test_daily_a_report_that_crashes_exits_2_and_the_results_still_decide(world, github):
    run = runner(world, "daily.yml")
    run.make_workspace = broken_checkout("report crashes")
    (main,) = run.run_job("main", TOY)
    report = main.step("Matrix report (job summary and annotations)")
    assert "canary: error: report crashed (RuntimeError: bug)" in report.output
    assert (run.artifacts / "daily-toy-main" / "status-toy").read_text().strip() == "2"
    (issue,) = run.run_job("issue", TOY)
    assert issue.result == "success", issue.log
    (opened,) = issues(world)  # main drifted: the results say so, whatever the report did
    assert "The report could not be rendered (status 2)" in opened["body"]

    green_main(github)
    run = runner(world, "daily.yml", day=2)
    run.make_workspace = broken_checkout("report crashes")
    run.run_job("main", TOY)
    run.run_job("issue", TOY)
    (closed,) = issues(world)
    assert closed["state"] == "closed"  # green by the results, though the report crashed


def test_daily_a_missing_results_file_opens_nothing_whatever_the_status_says(world):
    run = runner(world, "daily.yml")
    run.run_job("main", TOY)
    artifact = run.artifacts / "daily-toy-main"
    (artifact / "results-toy-main.json").unlink()
    (artifact / "status-toy").write_text("1\n")  # an exit status that reads as drift
    (issue,) = run.run_job("issue", TOY)
    assert issue.result == "success", issue.log
    assert "results: unchecked, report status: 1" in issue.log
    assert issues(world) == []


def test_daily_the_issue_is_found_by_its_label_not_by_search(world, github):
    open_issue(world)
    daily(world, day=1)
    (still,) = issues(world)
    assert len(still["comments"]) == 1  # the labelled issue was found and commented on
    calls = json.loads(Path(str(world["state"])).read_text())["calls"]
    lists = [call for call in calls if call[:2] == ["issue", "list"]]
    assert all("--label" in call and "--search" not in call for call in lists)


def test_daily_main_also_runs_canarys_own_surface_against_main(world, github):
    run, _ = daily(world, day=1)
    results = json.loads((run.artifacts / "daily-toy-main" / "results-toy-main.json").read_text())
    surface = {
        (c["check"], c["label"]) for c in results["cases"] if c["check"].startswith("surface")
    }
    assert surface == {("surface[canary]", "main")}


def test_daily_new_releases_on_the_index_are_checked_and_listed(world, index):
    index["toy"]["1.2.0"] = wheel("1.2.0", DRIFTED)
    world["environ"]["FAKE_INDEX"] = json.dumps(index)  # type: ignore[index]
    run = runner(world, "daily.yml")
    (job,) = run.run_job("new-releases")
    assert job.step("Find new releases on the index").outputs == {"found": "true"}, job.log
    assert "- toy=1.2.0" in job.summary
    assert job.step("Static tier against the new releases").outcome == "failure"
    assert "1 failed" in job.step("Static tier against the new releases").output
    results = json.loads((run.artifacts / "daily-new-releases" / "results-new.json").read_text())
    outcomes = {(case["check"], case["label"], case["outcome"]) for case in results["cases"]}
    # canary's own surface is recorded too: it uses nothing of toy, so it skips there.
    assert ("surface[canary]", "1.2.0", "skip") in outcomes
    assert {
        (label, outcome) for check, label, outcome in outcomes if not check.startswith("surface[")
    } == {("1.2.0", "fail")}


def test_daily_no_new_release_skips_the_run_and_says_so(world):
    run = runner(world, "daily.yml")
    (job,) = run.run_job("new-releases")
    assert job.result == "success", job.log
    assert job.step("Static tier against the new releases").outcome == "skipped"
    assert "none: tags.toml lists every stable release" in job.summary


# -- static.yml ---------------------------------------------------------------------------


def test_static_release_lane_checks_every_listed_release_and_reports(world):
    run = runner(world, "static.yml")
    (job,) = run.run_job("releases", TOY)
    assert job.result == "success", job.log
    assert "2 passed" in job.step("Static tier").output
    assert "toy" in job.summary
    assert (run.artifacts / "static-toy" / "results-toy.json").is_file()


def test_static_main_lane_reports_drift_without_failing_the_workflow(world, github):
    run = runner(world, "static.yml")
    (job,) = run.run_job("main", TOY)
    assert job.step("Static tier against main").outcome == "failure"
    commit = github.commit_of("example/toy", "main")
    assert f"main@{commit[:7]}" in job.summary
    results = json.loads((run.artifacts / "static-toy-main" / "results-toy-main.json").read_text())
    assert {case["commit"] for case in results["cases"]} == {commit}


def test_the_simulation_reads_expressions_as_github_does():
    from workflow_runner import _read_outputs, _to_python

    assert _to_python("always() && steps.new.outputs.found == 'true'") == (
        "always() and _get('steps.new.outputs.found') == 'true'"
    )
    assert _to_python("!cancelled() || github.event_name == 'it''s'") == (
        " not cancelled() or _get('github.event_name') == \"it's\""
    )
    assert _read_outputs("a=1\nbody<<EOF\nx\ny\nEOF\nb=c=d\n") == {
        "a": "1",
        "body": "x\ny",
        "b": "c=d",
    }


def test_every_workflow_step_the_simulation_runs_is_one_it_knows(world):
    """An unknown action fails the simulation instead of being skipped."""
    workflow = Path(str(world["root"])) / "unknown.yml"
    workflow.write_text(
        textwrap.dedent(
            """
            on: push
            jobs:
              job:
                runs-on: ubuntu-latest
                steps:
                  - uses: someone/else@v1
            """
        )
    )
    run = Runner(workflow, Path(str(world["root"])) / "u", make_checkout, environ=world["environ"])
    with pytest.raises(AssertionError, match="no stub for someone/else@v1"):
        run.run_job("job")


# -- action.yml: one step in a downstream project's CI ------------------------------------

ACTION = "OWNER/canary"  # as examples/downstream-surface.yml names it
EXAMPLE = ROOT / "examples" / "downstream-surface.yml"
PATCH = """\
from toy.core import Engine


def run(self, steps, *, num_items_in_batch=None):
    return None


Engine.run = run
"""
RENAMED = GOOD.replace("class Engine", "class Motor")  # 1.2.0: Engine is gone


def make_downstream(folder: Path) -> None:
    """A downstream repository: a project patching toy's Engine.run, toy>=1.0.0."""
    (folder / "downstream").mkdir()
    (folder / "downstream" / "__init__.py").write_text("")
    (folder / "downstream" / "patch.py").write_text(PATCH)
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "downstream"\nversion = "0.3.0"\ndependencies = ["toy>=1.0.0"]\n'
    )


@pytest.fixture
def action(world: dict[str, object]) -> Path:
    """canary's checkout as the action's folder: its shipped release list knows toy 1.0.0
    and 1.1.0; the steps import canary from it."""
    folder = Path(str(world["root"])) / "canary-action"
    make_checkout(folder)
    (folder / "canary" / "tags.toml").unlink()  # the copy of the repository's list
    (folder / "canary" / "tags.toml").write_text(TAGS)
    shutil.copy2(ROOT / "action.yml", folder / "action.yml")
    environ: dict[str, str] = world["environ"]  # type: ignore[assignment]
    environ["PYTHONPATH"] = environ["PYTHONPATH"].replace("$GITHUB_WORKSPACE", str(folder))
    return folder


def downstream_run(world, action: Path, workflow: Path = EXAMPLE, day: int = 1, make=None):
    root = Path(str(world["root"])) / f"downstream-run-{day}"
    run = Runner(
        workflow,
        root,
        make or make_downstream,
        environ=dict(world["environ"]),
        github={"run_id": str(2000 + day), "event_name": "pull_request"},
        actions={ACTION: action},
    )
    (job,) = run.run_job("surface")
    return run, job


def test_the_action_on_a_downstream_project_all_clear(world, action):
    _, job = downstream_run(world, action)
    # The example names a baseline the project has not written: canary says how, exit 2.
    assert job.result == "failure"
    assert "write it with --baseline canary-baseline.json --update-baseline" in job.log

    plain = Path(str(world["root"])) / "plain.yml"
    plain.write_text(EXAMPLE.read_text().replace("          baseline: canary-baseline.json\n", ""))
    run, job = downstream_run(world, action, plain, day=2)
    assert job.result == "success", job.log
    assert job.step("canary surface: Run the surface").outputs["status"] == "0"
    assert "canary surface of downstream 0.3.0" in job.summary  # the Markdown report
    assert "canary: all clear" in job.summary
    assert "none newer on the package index" in job.summary
    report = json.loads((run.artifacts / "canary-surface" / "surface.json").read_text())
    assert report["packages"] == {"toy": ["1.0.0", "1.1.0"]}
    assert "::error" not in job.log


def test_the_action_fails_on_a_release_newer_than_canary_with_an_annotation(world, action, index):
    index["toy"]["1.2.0"] = wheel("1.2.0", RENAMED)  # out this morning: canary lists 1.1.0
    world["environ"]["FAKE_INDEX"] = json.dumps(index)  # type: ignore[index]
    plain = Path(str(world["root"])) / "plain.yml"
    plain.write_text(EXAMPLE.read_text().replace("          baseline: canary-baseline.json\n", ""))
    run, job = downstream_run(world, action, plain)
    assert job.result == "failure"
    surface = job.step("canary surface: Run the surface")
    assert surface.outputs["status"] == "1"
    # One annotation per finding, at the project's own file and line.
    annotations = [line for line in surface.output.splitlines() if line.startswith("::error")]
    assert annotations, surface.output
    assert all("file=downstream/patch.py,line=" in line for line in annotations)
    assert "discovered on the package index: toy 1.2.0" in job.summary
    report = json.loads((run.artifacts / "canary-surface" / "surface.json").read_text())
    assert report["discovered"] == {"toy": ["1.2.0"]}
    assert job.step("canary surface: Decide").outcome == "failure"


def test_the_action_with_a_baseline_fails_only_on_new_findings(world, action, index, tmp_path):
    index["toy"]["1.2.0"] = wheel("1.2.0", RENAMED)
    world["environ"]["FAKE_INDEX"] = json.dumps(index)  # type: ignore[index]
    # The maintainer accepts today's findings once, with the command the example names.
    project = tmp_path / "maintainer"
    project.mkdir()
    make_downstream(project)
    environ = {
        **world["environ"],  # type: ignore[dict-item]
        "CANARY_CACHE_DIR": str(tmp_path / "maintainer-cache"),
        "PYTHONPATH": world["environ"]["PYTHONPATH"],  # type: ignore[index]
    }
    command = [sys.executable, "-m", "canary", "surface", ".", "--baseline"]
    done = subprocess.run(
        [*command, "canary-baseline.json", "--update-baseline"],
        cwd=project,
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # Engine gone, and Engine.run with it: one finding, Engine's (a miss inside its owner)
    assert "canary: wrote canary-baseline.json: 1 finding(s)" in done.stderr

    def with_baseline(folder: Path) -> None:
        make_downstream(folder)
        shutil.copy2(project / "canary-baseline.json", folder)

    _, job = downstream_run(world, action, make=with_baseline)
    assert job.result == "success", job.log
    assert "canary: all clear (1 accepted finding(s))" in job.summary

    # A break the baseline never saw fails: the project now also imports toy.core.Gear,
    # which no release has.
    def new_break(folder: Path) -> None:
        with_baseline(folder)
        with (folder / "downstream" / "patch.py").open("a") as patch:
            patch.write("\n\nfrom toy.core import Gear\n")

    _, job = downstream_run(world, action, day=2, make=new_break)
    assert job.result == "failure"
    surface = job.step("canary surface: Run the surface")
    assert "file=downstream/patch.py,line=11" in surface.output, surface.output
    assert "toy.core.Gear" in surface.output
