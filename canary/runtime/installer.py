"""Who creates and fills a venv: uv when it is available, else ``python -m venv`` + pip.

An :class:`Installer` only composes commands; the venv module runs them. uv is told the
user's pip configuration (:mod:`canary.runtime.pipconfig`); pip reads it itself.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from canary.errors import ConfigError
from canary.runtime.pipconfig import IndexSettings, read_pip_config, uv_index_settings
from canary.runtime.process import Command, RunFn


@dataclass(frozen=True)
class Installer:
    """uv (``uv`` is the binary) or pip in the new venv (``uv`` is None)."""

    uv: str | None
    index: IndexSettings = field(default_factory=IndexSettings)

    @property
    def name(self) -> str:
        return "uv" if self.uv else "pip"

    def create(self, venv: Path, base_python: str) -> Command:
        """Create an empty venv at ``venv`` from the interpreter ``base_python``."""
        if self.uv:
            # Relocatable: the venv is built in a temporary folder and renamed into place.
            argv = (self.uv, "venv", "--quiet", "--relocatable", "--python", base_python, str(venv))
            return Command(argv, timeout=300)
        # pip venvs are not relocatable (scripts keep absolute shebangs), but the runner
        # only ever calls bin/python, which finds its pyvenv.cfg wherever it lives.
        return Command((base_python, "-m", "venv", str(venv)), timeout=300)

    def install(self, python: Path, requirements: Sequence[str], repo: Path) -> Command:
        """Install ``requirements`` and the checkout at ``repo`` (editable) into the venv
        whose interpreter is ``python``, in one resolver run."""
        if self.uv:
            argv = (
                self.uv, "pip", "install", "--python", str(python),
                # Without it the first import of torch/transformers compiles for minutes.
                "--compile-bytecode",
                *self.index.args, *requirements, "-e", str(repo),
            )  # fmt: skip
        else:
            argv = (
                str(python), "-m", "pip", "install", "--disable-pip-version-check",
                *requirements, "-e", str(repo),
            )  # fmt: skip
        return Command(argv, timeout=3600)


def find_uv() -> str | None:
    """The uv binary: from the ``uv`` Python package (the runtime extra), else on PATH."""
    try:
        from uv import find_uv_bin
    except ImportError:
        return shutil.which("uv")
    try:
        return find_uv_bin()
    except FileNotFoundError:
        return shutil.which("uv")


def choose_installer(
    kind: str, run: RunFn, environ: Mapping[str, str], uv: str | None = None
) -> Installer:
    """``auto`` takes uv when present; ``uv`` insists on it; ``pip`` never uses it."""
    if kind == "pip":
        return Installer(uv=None)
    uv = uv or find_uv()
    if uv is None:
        if kind == "uv":
            raise ConfigError("--installer uv: uv is not installed (pip install -e '.[runtime]')")
        return Installer(uv=None)
    pip = read_pip_config(run, sys.executable, environ)
    return Installer(uv=uv, index=uv_index_settings(pip, environ))
