"""Releases newer than the shipped list, found on a fake package index (a stand-in ``pip``
answering ``pip index versions``), and the surface command checking them."""

from __future__ import annotations

import json
import zipfile

import pytest
from fake_pip import install_fake_pip

from canary import cli, discovery
from canary.discovery import discover, listed_only
from canary.errors import InfrastructureError
from canary.surface import command
from canary.tags import load_tags

TAGS = """\
[packages.toy]
repo = "o/toy"
package_dir = ""
floor = "1.0"
versions = ["1.0"]
"""
# `pip index versions toy`, as pip prints it: one answer per package, from INDEX_ANSWERS.
FAKE_PIP = """\
import json, os, sys
with open(os.environ["FAKE_PIP_LOG"], "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
answers = json.loads(os.environ["INDEX_ANSWERS"])
package = sys.argv[-1]
if sys.argv[1:3] != ["index", "versions"] or package not in answers:
    sys.stderr.write("ERROR: No matching distribution found for " + package + "\\n")
    sys.exit(1)
versions = answers[package]
print(f"{package} ({versions[0]})")
print("Available versions: " + ", ".join(versions))
"""
TRAINER = b"class Trainer:\n    def compute_loss(self, model, inputs):\n        return 1\n"
RELEASES = {
    "1.0": {"toy/__init__.py": b"", "toy/trainer.py": TRAINER},
    "2.0": {"toy/__init__.py": b"", "toy/trainer.py": TRAINER.replace(b"compute", b"_compute")},
}
PATCH = "from toy.trainer import Trainer\n\nTrainer.compute_loss = lambda self, *a: 0\n"


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A fake index: ``index({"toy": ["2.0", "1.0"]})`` sets its answers; returns the log."""
    log = install_fake_pip(tmp_path, monkeypatch, FAKE_PIP)

    def answer(answers: dict[str, list[str]]):
        monkeypatch.setenv("INDEX_ANSWERS", json.dumps(answers))
        return log

    return answer


@pytest.fixture
def tags(tmp_path):
    path = tmp_path / "tags.toml"
    path.write_text(TAGS)
    return load_tags(path)


def test_a_release_newer_than_the_list_is_discovered_and_appended(index, tags):
    log = index({"toy": ["2.1.0rc1", "2.0", "1.0", "0.9"]})
    releases = discover(tags)
    assert releases.discovered == {"toy": ("2.0",)}  # stable, newer than 1.0: not 0.9 or rc1
    assert releases.tags.package("toy").versions == ("1.0", "2.0")
    assert releases.listed("toy") == ("1.0",)
    assert "discovered on the package index: toy 2.0" in releases.describe()
    assert log.read_text().split() == ["index", "versions", "toy"]


def test_a_pinned_package_is_not_looked_up(index, tags):
    log = index({"toy": ["2.0", "1.0"]})
    releases = discover(tags, pinned={"toy"})
    assert releases.tags.package("toy").versions == ("1.0",)
    assert log.read_text() == ""


def test_an_index_that_cannot_answer_keeps_the_list_and_says_why(index, tags):
    index({})  # the fake index knows no toy: pip exits 1
    releases = discover(tags)
    assert releases.tags.package("toy").versions == ("1.0",)
    assert "No matching distribution found for toy" in releases.failed["toy"]

    def unreachable(package, floor):
        raise InfrastructureError("cannot reach the package index")

    assert discover(tags, lister=unreachable).failed == {"toy": "cannot reach the package index"}


def test_listed_only_never_asks(tags):
    assert "the index was not asked" in listed_only(tags).describe()


# -- the command: the shipped list, and what the index has since ------------------------


@pytest.fixture
def project(tmp_path, monkeypatch, tags):
    """A project patching toy's Trainer.compute_loss; toy 1.0 and 2.0 kept as wheels (2.0
    renamed it); the shipped list knows 1.0 only."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(command, "SHIPPED_TAGS", tags.path)  # as if canary shipped it
    monkeypatch.setattr(discovery, "SHIPPED_TAGS", tags.path)
    for version, files in RELEASES.items():
        wheel = tmp_path / "cache" / "wheels" / "toy" / f"toy-{version}.whl"
        wheel.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel, "w") as archive:
            for name, content in files.items():
                archive.writestr(name, content)
    root = tmp_path / "proj"
    (root / "proj").mkdir(parents=True)
    (root / "proj" / "__init__.py").write_text("")
    (root / "proj" / "patch.py").write_text(PATCH)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "proj"\nversion = "0.1"\ndependencies = ["toy>=1.0"]\n'
    )
    return root


def test_the_surface_checks_a_release_the_shipped_list_does_not_know(project, index, capsys):
    index({"toy": ["2.0", "1.0"]})
    assert cli.main(["surface", "proj", "--format", "json", "-o", "out.json"]) == 1
    data = json.loads((project.parent / "out.json").read_text())
    assert data["packages"] == {"toy": ["1.0", "2.0"]}
    assert data["discovered"] == {"toy": ["2.0"]}
    err = capsys.readouterr().err
    assert "releases: listed in canary's own list; discovered on the package index: toy 2.0" in err


def test_tags_on_the_command_line_or_in_the_project_pin_the_list(project, index, capsys):
    log = index({"toy": ["2.0", "1.0"]})
    assert cli.main(["surface", "proj", "--tags", "toy=1.0"]) == 0
    with (project / "pyproject.toml").open("a") as toml:
        toml.write('[tool.canary.surface]\ntags = ["toy=1.0"]\n')
    assert cli.main(["surface", "proj"]) == 0
    assert log.read_text() == ""  # neither asked the index
    assert "none newer on the package index" in capsys.readouterr().err


def test_a_tags_file_given_or_offline_is_the_whole_list(project, index, tmp_path):
    log = index({"toy": ["2.0", "1.0"]})
    assert cli.main(["surface", "proj", "--tags-file", str(tmp_path / "tags.toml")]) == 0
    assert cli.main(["surface", "proj", "--offline"]) == 0
    assert log.read_text() == ""


def test_an_index_that_cannot_list_releases_is_not_everything_checked(project, index, capsys):
    index({})
    assert cli.main(["surface", "proj"]) == 2
    err = capsys.readouterr().err
    assert "cannot ask the package index for toy releases newer than the list" in err
    assert err.rstrip().endswith("canary: not everything was checked")
