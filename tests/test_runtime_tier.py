"""The tier's pytest command inside a venv: the venv's interpreter, the hub offline."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import canary
from canary.runtime.process import Command, Completed, run_command
from canary.runtime.tier import OFFLINE_ENV, TEST_PATH, tier_command, tier_environment
from canary.runtime.venv import venv_python


def test_tier_environment_is_the_venvs_and_offline(tmp_path):
    venv = tmp_path / "oldest-0123456789ab"
    environ = {"PATH": "/bin", "PYTHONPATH": "/leak", "PYTHONHOME": "/x", "HF_HUB_OFFLINE": "0"}
    env = tier_environment(environ, venv)
    assert "PYTHONPATH" not in env
    assert "PYTHONHOME" not in env
    assert env["VIRTUAL_ENV"] == str(venv)
    assert env["PATH"].split(os.pathsep) == [str(venv_python(venv).parent), "/bin"]
    assert {name: env[name] for name in OFFLINE_ENV} == {
        "HF_HUB_OFFLINE": "1",  # the caller's "0" does not win
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    assert environ["HF_HUB_OFFLINE"] == "0"  # the caller's mapping is left alone


def test_tier_command_runs_the_tiers_tests_with_the_venvs_python(tmp_path):
    venv, repo, junit = tmp_path / "v", tmp_path / "repo", tmp_path / "oldest.xml"
    command = tier_command(venv, repo, junit, pytest_args=("-k", "chunked"), env={}, timeout=60)
    assert command.argv == (
        str(venv_python(venv)), "-m", "pytest", TEST_PATH,
        "-p", "no:cacheprovider", f"--junitxml={junit}", "-k", "chunked",
    )  # fmt: skip
    assert command.cwd == repo
    assert command.timeout == 60


def test_the_test_path_is_the_runtime_tier_of_this_checkout():
    checkout = Path(canary.__file__).resolve().parent.parent
    assert (checkout / TEST_PATH / "conftest.py").is_file()


def test_importing_the_offline_variables_loads_no_hub_package():
    # The tier's conftest imports OFFLINE_ENV before it sets the variables: a hub package
    # imported on the way would read them unset.
    hub = ("huggingface_hub", "transformers", "datasets", "torch", "trl", "peft", "accelerate")
    script = (
        "import sys; import canary.runtime.tier; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {hub!r}))"
    )
    result = run_command(Command((sys.executable, "-c", script)))
    assert result == Completed(0, "[]\n")


def test_the_tiers_conftest_loads_none_of_the_runners_modules():
    # The conftest runs inside every pin-set venv (and under gpu_tier.sh, canary not
    # installed): it needs the offline variables, not the venv builder or tags.toml.
    script = (
        "import sys; import canary.runtime.conftest; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'canary'))"
    )
    result = run_command(Command((sys.executable, "-c", script)))
    assert result == Completed(0, "['canary', 'canary.runtime', 'canary.runtime.conftest']\n")
