"""action.yml, the step a downstream project's CI calls, and the example workflow that calls
it: the inputs the docs promise, the canary options it passes, and actionlint on the example.
(tests/test_workflow_simulation.py runs its steps on a toy downstream project.)"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from test_workflows import actionlint

from canary.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
EXAMPLE = ROOT / "examples" / "downstream-surface.yml"


def test_the_action_is_composite_with_the_promised_inputs_and_defaults():
    assert ACTION["runs"]["using"] == "composite"
    inputs = ACTION["inputs"]
    assert inputs["target"]["default"] == "."
    assert inputs["baseline"]["default"] == ""
    assert inputs["tags"]["default"] == ""
    assert inputs["fail-on"]["default"] == "proven"
    assert set(ACTION["outputs"]) == {"exit-status", "report"}


def test_every_run_step_says_its_shell_and_every_action_is_pinned_to_a_major():
    for step in ACTION["runs"]["steps"]:
        if "run" in step:
            assert step["shell"] == "bash", step["name"]
        else:
            assert re.fullmatch(r"actions/[\w/-]+@v\d+", step["uses"]), step["uses"]


def test_the_canary_command_the_action_builds_parses():
    """The words of ``args=(...)`` and every ``args+=(...)``, variables as X, go through the
    real parser: an unknown option exits 2 here instead of in a downstream project's CI."""
    script = next(s["run"] for s in ACTION["runs"]["steps"] if s.get("id") == "surface")
    words = [
        "X" if word.startswith("$") else word
        for part in re.findall(r"args\+?=\(([^)]*)\)", script)
        for word in shlex.split(part)
    ]
    assert words[:2] == ["surface", "X"]
    assert {"--baseline", "--tags", "--json", "--markdown"} <= set(words)
    try:
        build_parser().parse_args(words)
    except SystemExit as exc:
        pytest.fail(f"canary {' '.join(words)} does not parse (exit {exc.code})")


def test_inputs_reach_the_steps_through_env_never_spliced_into_the_shell():
    # ${{ inputs.x }} inside a run: script is text pasted into bash: a target or tag with
    # a quote in it would run as code. Through env: it is data.
    for step in ACTION["runs"]["steps"]:
        assert "${{ inputs." not in step.get("run", ""), step["name"]


def test_actionlint_accepts_the_example_and_it_calls_the_action():
    done = subprocess.run(
        [actionlint(), "-no-color", str(EXAMPLE)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workflow = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    triggers = workflow[True]  # YAML 1.1 reads the bare key `on` as True
    assert {"pull_request", "schedule"} <= set(triggers)
    (uses,) = [s["uses"] for s in workflow["jobs"]["surface"]["steps"] if "canary" in s["uses"]]
    assert uses == "OWNER/canary@REF"
