"""How the runtime tier is started inside a built venv: ``pytest canary/runtime``, hub offline.

:data:`~canary.runtime.OFFLINE_ENV` is shared with the tier's conftest, which sets the same
variables for a ``pytest canary/runtime`` started by hand.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from canary.runtime import OFFLINE_ENV
from canary.runtime.process import Command
from canary.runtime.venv import venv_python

# The tier's tests, relative to the checkout.
TEST_PATH = "canary/runtime"


def tier_environment(environ: Mapping[str, str], venv: Path) -> dict[str, str]:
    """``environ`` as if ``venv`` were activated, without the caller's Python paths, offline."""
    env = {k: v for k, v in environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = os.pathsep.join([str(venv_python(venv).parent), environ.get("PATH", "")])
    env.update(OFFLINE_ENV)
    return env


def tier_command(
    venv: Path,
    repo: Path,
    junit: Path,
    *,
    pytest_args: Sequence[str],
    env: Mapping[str, str],
    timeout: float | None = None,
) -> Command:
    """pytest over the tier's tests in the checkout at ``repo``, writing JUnit XML to ``junit``."""
    argv = (
        str(venv_python(venv)), "-m", "pytest", TEST_PATH,
        "-p", "no:cacheprovider", f"--junitxml={junit}", *pytest_args,
    )  # fmt: skip
    return Command(argv, cwd=repo, env=env, timeout=timeout)
