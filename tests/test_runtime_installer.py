"""Installers: the uv or pip commands that create and fill a venv, and which one is used."""

from __future__ import annotations

import pytest

from canary.errors import ConfigError
from canary.runtime import installer
from canary.runtime.installer import Installer, choose_installer
from canary.runtime.pipconfig import IndexSettings
from canary.runtime.process import Command, Completed


def test_choose_installer_reads_pip_config_for_uv_only(monkeypatch):
    calls = []

    def run(command: Command) -> Completed:
        calls.append(command.argv)
        return Completed(0, "global.find-links='/srv/wheels'\n")

    uv = choose_installer("auto", run, {}, uv="/bin/uv")
    assert uv.name == "uv"
    assert uv.index.args == ("--find-links", "/srv/wheels")
    assert calls[0][1:] == ("-m", "pip", "config", "list")
    assert choose_installer("pip", run, {}).name == "pip"
    monkeypatch.setattr(installer, "find_uv", lambda: None)
    assert choose_installer("auto", run, {}).name == "pip"
    with pytest.raises(ConfigError, match="uv is not installed"):
        choose_installer("uv", run, {})


def test_installer_commands(tmp_path):
    venv, repo = tmp_path / "v", tmp_path / "repo"
    python = venv / "bin" / "python"
    uv = Installer(uv="/bin/uv", index=IndexSettings(args=("--find-links", "/w")))
    create = uv.create(venv, "/usr/bin/python3")
    assert create.argv[:2] == ("/bin/uv", "venv")
    assert "--relocatable" in create.argv
    install = uv.install(python, ["torch==2.13.0"], repo).argv
    assert install[:3] == ("/bin/uv", "pip", "install")
    assert install[install.index("--python") + 1] == str(python)  # into the venv, not ours
    assert "--compile-bytecode" in install
    assert install[-4:] == ("/w", "torch==2.13.0", "-e", str(repo))
    pip = Installer(uv=None)
    assert pip.create(venv, "/usr/bin/python3").argv == (
        "/usr/bin/python3",
        "-m",
        "venv",
        str(venv),
    )
    assert pip.install(python, ["torch==2.13.0"], repo).argv[:4] == (
        str(python),
        "-m",
        "pip",
        "install",
    )
