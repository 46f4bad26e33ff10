"""Subprocesses behind one replaceable function, so the runner is testable without building.

Everything the runtime runner starts (uv, pip, a venv's python, pytest) is a
:class:`Command` handed to a :data:`RunFn`. :func:`run_command` is the real one; tests
pass a fake that plays the installer and pytest.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from canary.errors import InfrastructureError

# Enough of a failed command's output to show why, short enough for a table's details.
TAIL_LINES = 25


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    timeout: float | None = None


@dataclass(frozen=True)
class Completed:
    returncode: int
    output: str  # stdout and stderr together, in order


RunFn = Callable[[Command], Completed]


def run_command(command: Command) -> Completed:
    """Run ``command`` with stdout and stderr captured together; a timeout is exit 124."""
    try:
        proc = subprocess.run(
            command.argv,
            cwd=command.cwd,
            env=dict(command.env) if command.env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=command.timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout if isinstance(exc.stdout, str) else ""
        return Completed(124, f"{output}\ntimed out after {command.timeout:g} s")
    except OSError as exc:
        return Completed(127, f"cannot run {command.argv[0]}: {exc}")
    return Completed(proc.returncode, proc.stdout)


def run_step(run: RunFn, command: Command, what: str) -> Completed:
    """Run a step nothing can be checked without; its failure is an InfrastructureError
    that names ``what`` failed, the command line and the tail of its output."""
    result = run(command)
    if result.returncode != 0:
        raise InfrastructureError(
            f"{what} failed (exit {result.returncode}): {shlex.join(command.argv)}\n"
            + tail(result.output)
        )
    return result


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of a command's output: where its error usually is."""
    return "\n".join(text.rstrip().splitlines()[-lines:])
