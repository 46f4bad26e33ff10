"""The GitHub Actions workflows: valid for actionlint, and holding the contract CI relies on.

Nothing here reaches GitHub: actionlint checks syntax, expressions, action inputs, runner
labels and (with shellcheck on PATH) the shell of every ``run:``; the tests below check
what actionlint cannot know: timeouts, permissions, that the per-package matrix covers
tags.toml, and that every canary option and command a workflow runs exists.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from canary.cli import build_parser
from canary.tags import load_tags

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
WORKFLOW_IDS = [path.name for path in WORKFLOWS]


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text("utf-8"))
    # YAML 1.1 reads the bare key `on` as True.
    if True in data:
        data["on"] = data.pop(True)
    return data


def jobs(workflow: str) -> dict[str, dict]:
    return load(ROOT / ".github" / "workflows" / workflow)["jobs"]


def run_lines() -> Iterator[tuple[str, str, str]]:
    """(workflow, job, one shell command) for every ``run:`` step, continuation lines
    joined and folded scalars already one line."""
    for path in WORKFLOWS:
        for name, job in load(path)["jobs"].items():
            for step in job.get("steps", []):
                script = step.get("run", "").replace("\\\n", " ")
                for line in script.splitlines():
                    if line.strip():
                        yield path.name, name, line.strip()


def actionlint() -> str:
    """The actionlint binary: $ACTIONLINT, else the one the dev extra installs beside the
    interpreter, else PATH. Missing is a failure, not a skip: the lint is the point."""
    if configured := os.environ.get("ACTIONLINT"):
        return configured
    beside = Path(sys.executable).parent / "actionlint"
    found = str(beside) if beside.is_file() else shutil.which("actionlint")
    if found is None:
        pytest.fail("actionlint not found: pip install -e '.[dev]' (or set ACTIONLINT)")
    return found


def test_there_are_the_four_workflows():
    assert WORKFLOW_IDS == ["daily.yml", "runtime.yml", "static.yml", "unit.yml"]


def test_the_unit_tests_run_under_every_python_canary_supports():
    """3.10 (requires-python's floor) to 3.13, the newest the project is tested on."""
    floor = re.search(r'requires-python = ">=3\.(\d+)"', (ROOT / "pyproject.toml").read_text())
    assert floor is not None
    unit = jobs("unit.yml")["unit"]
    versions = unit["strategy"]["matrix"]["python"]
    assert versions == [f"3.{minor}" for minor in range(int(floor.group(1)), 14)]
    assert unit["strategy"]["fail-fast"] is False  # one Python's failure hides no other's
    assert any(step.get("run", "").startswith("pytest") for step in unit["steps"])


@pytest.mark.parametrize("path", WORKFLOWS, ids=WORKFLOW_IDS)
def test_actionlint_accepts_the_workflow(path):
    binary = actionlint()
    done = subprocess.run(
        [binary, "-no-color", str(path)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_a_broken_workflow(tmp_path):
    """The lint above can fail: a typo in an expression and an unknown runner label."""
    binary = actionlint()
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    text = (ROOT / ".github" / "workflows" / "static.yml").read_text("utf-8")
    broken.write_text(text.replace("matrix.package }}", "matrix.packge }}", 1), "utf-8")
    command = [binary, "-no-color", str(broken)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "packge" in done.stdout


# The one job that may write: the daily drift issue. Nothing else runs with its token.
WRITERS = {("daily.yml", "issue"): {"contents": "read", "issues": "write"}}


@pytest.mark.parametrize("path", WORKFLOWS, ids=WORKFLOW_IDS)
def test_permissions_are_read_only_and_only_the_issue_job_widens_them(path):
    workflow = load(path)
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        expected = WRITERS.get((path.name, name))
        assert job.get("permissions") == expected, f"{path.name}: job {name} permissions"


def test_the_daily_main_job_runs_the_newest_release_beside_main():
    steps = jobs("daily.yml")["main"]["steps"]
    commands = " ".join(step.get("run", "") for step in steps)
    assert "--canary-tags=${{ matrix.package }}=${{ steps.newest.outputs.version }},main" in (
        commands
    )
    assert any(step.get("id") == "newest" for step in steps)


def test_the_drift_issue_job_reads_the_main_jobs_report_and_nothing_else_writes_issues():
    issue = jobs("daily.yml")["issue"]
    assert issue["needs"] == "main"
    assert "always()" in issue["if"]
    assert issue["strategy"]["matrix"] == jobs("daily.yml")["main"]["strategy"]["matrix"]
    script = " ".join(step.get("run", "") for step in issue["steps"])
    for command in ("gh issue create", "gh issue comment", "gh issue close"):
        assert command in script
    for workflow, job, line in run_lines():
        if (workflow, job) != ("daily.yml", "issue"):
            assert "gh issue" not in line, f"{workflow} {job} writes issues"


@pytest.mark.parametrize("path", WORKFLOWS, ids=WORKFLOW_IDS)
def test_every_job_has_a_timeout_and_the_workflow_a_concurrency_group(path):
    workflow = load(path)
    assert workflow["concurrency"]["group"]
    for name, job in workflow["jobs"].items():
        minutes = job.get("timeout-minutes")
        assert isinstance(minutes, int), f"{path.name}: job {name} has no timeout-minutes"
        assert 0 < minutes <= 60, f"{path.name}: job {name} may run {minutes} minutes"


@pytest.mark.parametrize(
    ("workflow", "job"),
    [("static.yml", "releases"), ("static.yml", "main"), ("daily.yml", "main")],
)
def test_per_package_matrix_covers_every_package_in_tags_toml(workflow, job):
    packages = jobs(workflow)[job]["strategy"]["matrix"]["package"]
    assert sorted(packages) == sorted(load_tags(ROOT / "tags.toml").packages)
    for package in packages:
        assert (ROOT / "canary" / "checks" / f"test_{package}.py").is_file()


def test_runtime_matrix_is_every_pin_set_in_tags_toml():
    from canary.runtime.pins import load_pin_sets

    pins = jobs("runtime.yml")["cpu"]["strategy"]["matrix"]["pins"]
    assert sorted(pins) == sorted(load_pin_sets(ROOT / "tags.toml"))


def test_the_daily_sweep_covers_every_base_and_package_within_15_minutes_per_job():
    from canary.runtime.pins import load_pin_sets

    sweep = jobs("runtime.yml")["sweep"]
    matrix = sweep["strategy"]["matrix"]
    assert sorted(matrix["base"]) == sorted(load_pin_sets(ROOT / "tags.toml"))
    assert sorted(matrix["package"]) == sorted(load_tags(ROOT / "tags.toml").packages)
    assert sweep["timeout-minutes"] <= 15
    assert "schedule" in sweep["if"]
    steps = {step.get("name"): step for step in sweep["steps"]}
    restore, save = steps["Restore the wheel caches"], steps["Save the wheel caches"]
    assert "hashFiles('tags.toml')" in restore["with"]["key"]
    assert "~/.cache/uv" in restore["with"]["path"]
    assert save["with"]["key"] == restore["with"]["key"]
    assert "always()" in save["if"]
    run = steps["Behaviour sweep"]["run"]
    assert "--base ${{ matrix.base }}" in run
    assert "--drop-overlays" in run
    assert f"--shard ${{{{ matrix.shard }}}}/{len(matrix['shard'])}" in run
    assert "--json" in run


def test_a_pull_request_touching_the_fixes_sweeps_each_windows_ends():
    workflow = load(ROOT / ".github" / "workflows" / "runtime.yml")
    assert "canary/fixes/**" in workflow["on"]["pull_request"]["paths"]
    spread = jobs("runtime.yml")["sweep-spread"]
    assert "pull_request" in spread["if"]
    commands = " ".join(step.get("run", "") for step in spread["steps"])
    assert "--spread" in commands


def test_the_main_lane_does_not_block_and_checks_only_main():
    lane = jobs("static.yml")["main"]
    assert lane["continue-on-error"] is True
    commands = " ".join(step.get("run", "") for step in lane["steps"])
    assert "--canary-tags=${{ matrix.package }}=main" in commands


def test_the_pr_workflow_runs_when_what_decides_the_outcome_changes():
    triggers = load(ROOT / ".github" / "workflows" / "static.yml")["on"]
    for event in ("pull_request", "push"):
        paths = triggers[event]["paths"]
        for needed in ("canary/**", "tags.toml", "pyproject.toml", ".github/workflows/static.yml"):
            assert needed in paths, f"{event} misses {needed}"


def test_the_upstream_cache_is_keyed_on_tags_toml_and_saved_even_on_drift():
    steps = {step.get("name"): step for step in jobs("static.yml")["releases"]["steps"]}
    restore, save = steps["Restore the upstream cache"], steps["Save the upstream cache"]
    assert restore["uses"].startswith("actions/cache/restore@")
    assert "hashFiles('tags.toml')" in restore["with"]["key"]
    assert restore["with"]["restore-keys"]
    assert save["with"]["key"] == restore["with"]["key"]
    assert "always()" in save["if"]
    assert restore["with"]["path"] == "${{ env.CANARY_CACHE_DIR }}"


def test_reports_are_uploaded_and_summarised_whatever_the_outcome():
    for workflow, job in [
        ("static.yml", "releases"),
        ("static.yml", "main"),
        ("daily.yml", "main"),
    ]:
        steps = jobs(workflow)[job]["steps"]
        upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
        report = [s for s in steps if "python -m canary report" in s.get("run", "")]
        assert upload, f"{workflow} {job} uploads nothing"
        assert report, f"{workflow} {job} renders no report"
        assert "always()" in upload[0]["if"]
        assert "always()" in report[0]["if"]
        assert "$GITHUB_STEP_SUMMARY" in report[0]["run"]
        assert "--format github" in report[0]["run"]


def test_the_gpu_job_runs_only_on_schedule_or_demand_on_a_gpu_runner():
    gpu = jobs("runtime.yml")["gpu"]
    assert gpu["runs-on"] == ["self-hosted", "gpu"]
    assert "schedule" in gpu["if"]
    assert "workflow_dispatch" in gpu["if"]
    assert any("canary/runtime/gpu_tier.sh" in s.get("run", "") for s in gpu["steps"])
    assert (ROOT / "canary" / "runtime" / "gpu_tier.sh").is_file()


def test_every_option_a_workflow_passes_to_pytest_is_registered(pytestconfig):
    registered = {
        name
        for group in pytestconfig._parser._groups
        for option in group.options
        for name in option.names()
    } | {name for option in pytestconfig._parser._anonymous.options for name in option.names()}
    used = set()
    for workflow, job, line in run_lines():
        if not re.match(r"^(python -m )?pytest\b", line):
            continue
        for word in shlex.split(line.replace("${{", "").replace("}}", "")):
            if word.startswith("--"):
                used.add(word.split("=", 1)[0])
                assert word.split("=", 1)[0] in registered, f"{workflow} {job}: {word}"
    assert {"--canary-json", "--canary-tags", "--junitxml"} <= used


def test_every_canary_command_a_workflow_runs_parses():
    """Each ``python -m canary ...`` line goes through the real parser: an unknown option
    or choice exits 2 here instead of in CI."""
    from canary.runtime.runner import build_parser as runtime_parser

    seen = set()
    for workflow, job, line in run_lines():
        # A command at the start of the line or of a $(...), not one quoted in an echo.
        match = re.search(r"(?:^|\$\()(?:[\w./-]*/)?python3? -m canary ([^|>)]+)", line)
        if not match:
            continue
        words = shlex.split(re.sub(r"\$\{\{[^}]*\}\}", "X", match.group(1)))
        words = [word if not word.startswith("$") else "X" for word in words]
        parser = runtime_parser() if words[0] == "runtime" else build_parser()
        try:
            parser.parse_args(words[1:] if words[0] == "runtime" else words)
        except SystemExit as exc:
            pytest.fail(f"{workflow} {job}: `{line}` does not parse (exit {exc.code})")
        seen.add(words[0])
    assert seen == {"report", "runtime", "tags"}
