"""One surface pipeline: ``python -m canary surface``, ``pytest --canary-surface`` and
``surface --uncovered`` read a project with its own ``[tool.canary.surface]`` alike.

The project below needs its configuration twice: its own ``Version`` wrapper gates a patch
to toy<2 (``version_parsers``), and it reads ``_cached_loss``, which it hangs on toy's
Trainer itself at run time under a name no assignment spells (``own_attributes``). Read
with the configuration, nothing it uses is missing inside its range; read without
(``--config`` of an empty file replaces it), the attribute is a finding and the patch
under an undeclared ``Version`` a possible one.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from test_surface_coverage import catalog_markers  # noqa: F401 - autouse: catalog markers

# Imported before pytester snapshots sys.modules (see tests/test_plugin.py).
import canary.sources.github  # noqa: F401
from canary import cli
from canary.plugin import surface as surface_plugin

pytest_plugins = ["pytester"]

TRAINER = b"class Trainer:\n    def compute_loss(self, model, inputs):\n        return 1\n"
TREES = {
    "1.0": {"toy/__init__.py": b"__version__ = '1.0'\n", "toy/trainer.py": TRAINER},
    "2.0": {
        "toy/__init__.py": b"__version__ = '2.0'\n",
        "toy/trainer.py": TRAINER.replace(b"compute_loss", b"_compute_loss"),
    },
}
TAGS = """\
[packages.toy]
repo = "o/toy"
package_dir = ""
floor = "1.0"
versions = ["1.0", "2.0"]
"""
UTILS = """\
from packaging import version


def Version(text):
    return version.Version(str(text))
"""
PATCH = """\
import toy
from toy.trainer import Trainer

from proj.utils import Version


def compute_loss(self, model, inputs):
    return 0


if Version(toy.__version__) < Version("2.0"):
    Trainer.compute_loss = compute_loss


def last_loss():
    return Trainer._cached_loss  # hung on Trainer at run time, under a name it builds
"""
PYPROJECT = """\
[project]
name = "proj"
version = "0.1"
dependencies = ["toy>=1.0"]

[tool.canary.surface]
version_parsers = ["proj.utils.Version"]
own_attributes = ["_cached_*"]
"""
SURFACE_MODULE = (Path(surface_plugin.__file__).parents[1] / "checks/test_surface.py").read_text()


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project under ``proj/``, toy 1.0 and 2.0 kept as wheels, tags.toml, cwd there."""
    root = pytester.path
    monkeypatch.setenv("CANARY_CACHE_DIR", str(root / "cache"))
    for version, files in TREES.items():
        wheel = root / "cache" / "wheels" / "toy" / f"toy-{version}.whl"
        wheel.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel, "w") as archive:
            for name, content in files.items():
                archive.writestr(name, content)
    (root / "tags.toml").write_text(TAGS)
    (root / "empty.toml").write_text("")
    package = root / "proj" / "proj"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "utils.py").write_text(UTILS)
    (package / "patch.py").write_text(PATCH)
    (root / "proj" / "pyproject.toml").write_text(PYPROJECT)
    return root


def command(*args: str) -> int:
    return cli.main(["surface", "proj", "--offline", "--tags-file", "tags.toml", *args])


def test_the_command_the_plugin_and_the_listing_read_the_configuration_alike(
    project, pytester, capsys
):
    # The command: clear with the project's configuration, two findings without.
    assert command() == 0
    # Without it: the own attribute is a finding, and the patch under the project's own
    # Version (undeclared) only a possible one.
    assert command("--config", "empty.toml") == 1
    err = capsys.readouterr().err
    assert "1 reference(s) missing" in err
    assert "1 possible finding(s)" in err

    # The listing: the project's own attribute is no upstream reference.
    assert command("--uncovered") == 0
    assert "_cached_loss" not in capsys.readouterr().out
    assert command("--uncovered", "--config", "empty.toml") == 0
    assert "toy.trainer.Trainer._cached_loss" in capsys.readouterr().out

    # The plugin: toy 2.0 passes, as the command judged it.
    pytester.makepyfile(test_surface=SURFACE_MODULE)
    result = pytester.runpytest_subprocess(
        *("-p", "no:cacheprovider", "--rootdir", str(project), "--canary-offline"),
        *("--canary-surface", "proj", "-k", "proj-"),
    )
    result.assert_outcomes(passed=2)


def test_a_wheel_whose_code_lies_in_its_data_folder_is_read_as_installed(tmp_path):
    from canary.surface.config import SurfaceConfig
    from canary.surface.model import Target
    from canary.surface.pipeline import open_surface
    from canary.surface.targets import LoadedTarget

    data = tmp_path / "proj-1.0.data" / "purelib" / "proj"
    data.mkdir(parents=True)
    (data / "__init__.py").write_text("")
    (data / "patch.py").write_text("from proj import helpers\nimport toy.trainer\n")
    (data / "helpers.py").write_text("")
    files = ("proj-1.0.data/purelib/proj/__init__.py", "proj-1.0.data/purelib/proj/helpers.py",
             "proj-1.0.data/purelib/proj/patch.py")  # fmt: skip

    def open_target(spec, **options):
        return LoadedTarget(Target("proj", "1.0"), tmp_path, files, SurfaceConfig())

    opened = open_surface("proj==1.0", upstream=("toy",), download_dir=tmp_path,
                          open_target=open_target)  # fmt: skip
    assert opened.files == ("proj/__init__.py", "proj/helpers.py", "proj/patch.py")
    (reference,) = opened.surface.references
    assert [site.path for site in reference.sites] == ["proj/patch.py"]
