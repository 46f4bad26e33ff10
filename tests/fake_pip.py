"""A stand-in ``pip`` for tests that fetch through ``python -m pip``: a package named
``pip`` put first on ``PYTHONPATH``, whose ``__main__`` is the script a test gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from canary.sources import index
from canary.sources.health import HostHealth


def install_fake_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """Make ``python -m pip`` run ``script`` (it reads ``FAKE_PIP_LOG`` to log its calls);
    returns that log. The index starts each test up: in-process runs share its health."""
    folder = tmp_path / "fake-pip"
    (folder / "pip").mkdir(parents=True)
    (folder / "pip" / "__init__.py").write_text("")
    (folder / "pip" / "__main__.py").write_text(script)
    log = tmp_path / "pip.log"
    log.write_text("")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])
    )
    monkeypatch.setenv("FAKE_PIP_LOG", str(log))
    monkeypatch.setattr(index, "INDEX_HEALTH", HostHealth())
    return log
