"""The version of a repository-layout tree, as each package's release ranges declare it.

trl keeps ``VERSION`` at the repository root from 0.22 on: setup.cfg points at it in
0.22 and 0.23 (``version = file: VERSION``), pyproject from 0.24 (``dynamic =
["version"]`` and ``[tool.setuptools.dynamic] version = { file = "VERSION" }``), and its
``__init__.py`` asks the installed metadata. transformers and peft keep a literal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from canary.sources import version as versions
from canary.sources.github import GitHubSource
from canary.sources.local import LocalSource

# trl's own files, cut to what decides the version (trl 1.x main and 0.22.0).
TRL_INIT_METADATA = (
    "from importlib.metadata import PackageNotFoundError, version\n"
    "try:\n    __version__ = version('trl')\nexcept PackageNotFoundError:\n"
    "    __version__ = 'unknown'\n"
)
TRL_INIT_022 = (
    "from pathlib import Path\n"
    "_version_file = Path(__file__).parent.parent / 'VERSION'\n"
    "try:\n    with open(_version_file) as f:\n        __version__ = f.read().strip()\n"
    "except FileNotFoundError:\n    __version__ = 'unknown'\n"
)
TRL_PYPROJECT = (
    '[project]\nname = "trl"\ndynamic = ["version"]\n\n'
    '[tool.setuptools.dynamic]\nversion = { file = "VERSION" }\n'
)
TRL_SETUP_CFG_022 = "[metadata]\nname = trl\nversion = file: VERSION\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"trl/__init__.py": TRL_INIT_METADATA, "pyproject.toml": TRL_PYPROJECT},
            "1.15.0.dev0",
            id="trl 0.24+ pyproject dynamic",
        ),
        pytest.param(
            {
                "trl/__init__.py": TRL_INIT_022,
                "setup.cfg": TRL_SETUP_CFG_022,
                "setup.py": "from setuptools import setup\nsetup()\n",
            },
            "1.15.0.dev0",
            id="trl 0.22-0.23 setup.cfg file:",
        ),
    ],
)
def test_local_trl_checkout_reads_the_root_version_file_its_packaging_points_at(
    tmp_path, files, expected
):
    root = write(tmp_path / "trl", {**files, "VERSION": "1.15.0.dev0\n"})
    assert LocalSource.from_path("trl", root).ref == expected


def test_a_root_version_file_nobody_points_at_is_not_the_version(tmp_path):
    root = write(tmp_path / "x", {"pkg/__init__.py": "", "VERSION": "9.9.9\n"})
    source = LocalSource("pkg", root, version="0")
    assert versions.version_from_repository(lambda path: source.fetch([path])[path]) is None


def test_src_layout_reads_packaging_files_above_src(tmp_path):
    root = write(
        tmp_path / "repo",
        {
            "src/pkg/__init__.py": "from ._v import __version__\n",
            "pyproject.toml": TRL_PYPROJECT.replace("trl", "pkg").replace("VERSION", "pkg.txt"),
            "pkg.txt": "2.0.0rc1\n",
        },
    )
    assert LocalSource.from_path("pkg", root).ref == "2.0.0rc1"


@pytest.mark.parametrize(
    "pointer",
    ['{ file = "../VERSION" }', '{ file = "/etc/VERSION" }', '{ attr = "pkg.__version__" }'],
)
def test_packaging_pointing_outside_the_repository_or_at_code_is_not_followed(pointer):
    pyproject = '[project]\ndynamic = ["version"]\n[tool.setuptools.dynamic]\nversion = ' + pointer
    asked: list[str] = []

    def read(path: str) -> bytes | None:
        asked.append(path)
        return pyproject.encode() if path == "repo:pyproject.toml" else b"6.6.6\n"

    assert versions.version_from_repository(read) is None
    assert all(path.startswith("repo:") and ".." not in path for path in asked)


def test_a_list_of_version_files_takes_the_first():
    text = (
        '[project]\ndynamic = ["version"]\n[tool.setuptools.dynamic]\nversion = {file = ["V", "W"]}'
    )
    assert versions.pyproject_version_file(text) == "V"
    assert versions.pyproject_version_file(text.replace('"version"', '"readme"')) is None


def test_one_batch_holds_every_file_trl_needs():
    batch = versions.version_files("trl")
    assert {"trl/__init__.py", "repo:pyproject.toml", "repo:VERSION", "repo:setup.cfg"} <= set(
        batch
    )


def test_github_maps_repo_paths_to_the_repository_root_not_the_package_dir():
    source = GitHubSource("transformers", "huggingface/transformers", "main", "src")
    assert source.url_for("repo:pyproject.toml").endswith("/transformers/main/pyproject.toml")
    assert source.url_for("transformers/__init__.py").endswith("/main/src/transformers/__init__.py")
    with pytest.raises(ValueError, match="not a relative path"):
        source.url_for("repo:../x")
