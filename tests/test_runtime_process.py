"""The subprocess layer: one real command each, no network, no venv."""

from __future__ import annotations

import sys

import pytest

from canary.errors import InfrastructureError
from canary.runtime.process import Command, Completed, run_command, run_step, tail


def test_run_command_keeps_stdout_and_stderr_in_order(tmp_path):
    script = "import sys; print('out', flush=True); print('err', file=sys.stderr, flush=True)"
    result = run_command(Command((sys.executable, "-c", script + "; sys.exit(3)"), cwd=tmp_path))
    assert result == Completed(3, "out\nerr\n")


def test_run_command_passes_exactly_the_environment_given():
    script = "import os; print(sorted(k for k in os.environ if k.startswith('CANARY_T')))"
    env = {"CANARY_T1": "x", "PATH": ""}
    result = run_command(Command((sys.executable, "-c", script), env=env))
    assert result.output.strip() == "['CANARY_T1']"


def test_a_missing_program_is_exit_127_not_an_exception(tmp_path):
    result = run_command(Command((str(tmp_path / "no-such-program"),)))
    assert result.returncode == 127
    assert "cannot run" in result.output


def test_a_failed_step_is_an_infrastructure_error_with_the_output_tail():
    output = "".join(f"line {n}\n" for n in range(100))

    def run(command: Command) -> Completed:
        return Completed(2, output)

    with pytest.raises(InfrastructureError) as excinfo:
        run_step(run, Command(("uv", "pip", "install", "torch==2.13.0")), "install (uv)")
    message = str(excinfo.value)
    assert message.startswith("install (uv) failed (exit 2): uv pip install torch==2.13.0\n")
    assert message.endswith("line 99")
    assert "line 74" not in message  # only the last 25 lines
    assert run_step(lambda command: Completed(0, "ok"), Command(("true",)), "x").output == "ok"


def test_tail():
    assert tail("a\nb\nc\n\n", lines=2) == "b\nc"
    assert tail("") == ""
