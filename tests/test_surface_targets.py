"""Opening a target: a source folder, a wheel built here, and ``NAME==VERSION`` through a fake
``pip`` (a ``pip`` package first on ``PYTHONPATH``, as in test_faults_index.py)."""

from __future__ import annotations

import textwrap
import zipfile
from pathlib import Path

import pytest
from fake_pip import install_fake_pip

from canary.errors import ConfigError, OfflineMiss, RefNotFound
from canary.surface.extract import extract
from canary.surface.model import Kind
from canary.surface.targets import declared, open_target

METADATA = """\
Metadata-Version: 2.1
Name: toyproj
Version: {version}
Requires-Dist: torch>=2.0
Requires-Dist: transformers!=4.53.0,<=5.17.0,>=4.52.4
Requires-Dist: trl<=1.15.0,>=0.18.2; sys_platform != "nonexistent-os"
Requires-Dist: trl!=0.19.0; platform_machine != "nonexistent-machine"
Requires-Dist: peft>=0.18.0; extra == "huggingface"
Requires-Dist: peft>=0.18.0; extra == "core"
Requires-Dist: transformers>=4.40; extra == "old"

"""
CODE = "from transformers.models.llama import modeling_llama\nmodeling_llama.X.forward = None\n"


def build_wheel(path: Path, version: str = "1.0.0") -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("toyproj/__init__.py", "")
        archive.writestr("toyproj/patch.py", CODE)
        archive.writestr(f"toyproj-{version}.dist-info/METADATA", METADATA.format(version=version))
    return path


def test_a_wheel_gives_name_version_requires_and_files(tmp_path):
    wheel = build_wheel(tmp_path / "toyproj-1.0.0-py3-none-any.whl")
    loaded = open_target(str(wheel), download_dir=tmp_path / "dl")
    assert loaded.target.name == "toyproj"
    assert loaded.target.version == "1.0.0"
    assert dict(loaded.target.requires) == {
        # the extra's looser line does not widen what is always required
        "transformers": "!=4.53.0,<=5.17.0,>=4.52.4",
        # two lines that always apply here are both required
        "trl": "!=0.19.0,<=1.15.0,>=0.18.2",
        # only through extras, which agree
        "peft": ">=0.18.0",
    }
    # each extra's own range, for the code it is installed for
    assert dict(loaded.target.extras) == {
        "huggingface": {"peft": ">=0.18.0"},
        "core": {"peft": ">=0.18.0"},
        "old": {"transformers": ">=4.40"},
    }
    assert loaded.files == ("toyproj/__init__.py", "toyproj/patch.py")
    refs = extract(loaded.root, loaded.files, upstream=("transformers",))
    assert {(r.kind, r.target) for r in refs} >= {
        (Kind.PATCH, "transformers.models.llama.modeling_llama.X.forward")
    }
    again = open_target(str(wheel), download_dir=tmp_path / "dl")  # unpacked once, reused
    assert again.root == loaded.root


def test_a_wheel_that_ships_its_test_suite_leaves_it_out_of_the_surface(tmp_path):
    # tunelabs-zoo's wheel: 117 files of tests beside its package, run by its CI only
    wheel = tmp_path / "toyproj-1.0.0-py3-none-any.whl"
    with zipfile.ZipFile(build_wheel(wheel), "a") as archive:
        archive.writestr("tests/test_patch.py", CODE)
        archive.writestr("tests/unit/helpers.py", CODE)
        archive.writestr("toyproj/test/data.py", CODE)
        archive.writestr("conftest.py", CODE)
        archive.writestr("toyproj/train/test_utils.py", CODE)  # llamafactory's: a module
    loaded = open_target(str(wheel), download_dir=tmp_path / "dl")
    assert loaded.files == (
        "toyproj/__init__.py",
        "toyproj/patch.py",
        "toyproj/train/test_utils.py",
    )


def test_requirement_ranges_rules():
    assert declared(["transformers"], ["transformers"]).ranges == {"transformers": ""}
    # extras that disagree: the smallest range holding each (no install through an extra
    # has a release outside it); unbounded both ways, nothing is declared
    lines = ['peft>=0.18; extra == "a"', 'peft>=0.10,<1; extra == "b"', 'peft<0.9; extra == "c"']
    assert declared(lines[:2], ["peft"]).ranges == {"peft": ">=0.10"}
    assert declared(lines[1:], ["peft"]).ranges == {"peft": "<1"}
    assert declared([*lines, 'peft; extra == "d"'], ["peft"]).ranges == {}
    # for another platform only: not this install's range
    assert declared(['trl<1; sys_platform == "nonexistent-os"'], ["trl"]).ranges == {}
    assert declared(["Transformers>=5", "not a requirement ]["], ["transformers"]).ranges == {
        "transformers": ">=5"
    }


def test_each_extra_has_its_own_range_from_the_lines_that_apply_only_through_it():
    lines = [
        "transformers>=4.56",
        'transformers>=5.9; extra == "RF_DETR"',  # named canonically
        'transformers<6; extra == "rf-detr" and python_version >= "3"',  # joined
        'transformers>=5; extra == "a" or extra == "b"',  # several extras: whose?
        'trl; extra == "rl"',  # no range
        'torch>=2; extra == "rf-detr"',  # not upstream
    ]
    assert declared(lines, ["transformers", "trl"]).extras == {
        "rf-detr": {"transformers": "<6,>=5.9"}
    }


def test_a_source_folder_reads_pyproject_and_its_surface_table(tmp_path):
    (tmp_path / "proj" / "src" / "proj").mkdir(parents=True)
    (tmp_path / "proj" / "src" / "proj" / "__init__.py").write_text(CODE)
    (tmp_path / "proj" / "src" / "proj" / "template.py").write_text("{{ not python }}\n")
    (tmp_path / "proj" / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / "proj" / ".venv" / "lib" / "x.py").write_text("import transformers\n")
    (tmp_path / "proj" / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "proj"
            version = "0.3.0"
            dependencies = ["transformers>=4.50,<6", "torch"]
            [project.optional-dependencies]
            rl = ["trl>=0.20"]
            [tool.canary.surface]
            exclude = ["src/proj/template.py"]
            own_attributes = ["_proj_*"]
            """
        )
    )
    loaded = open_target(str(tmp_path / "proj"), download_dir=tmp_path / "dl")
    assert loaded.target.name == "proj"
    assert loaded.target.version == "0.3.0"
    assert dict(loaded.target.requires) == {"transformers": "<6,>=4.50", "trl": ">=0.20"}
    assert dict(loaded.target.extras) == {"rl": {"trl": ">=0.20"}}
    assert loaded.files == ("src/proj/__init__.py",)  # excluded, and .venv skipped
    assert loaded.config.own_attributes == ("_proj_*",)


def test_a_source_folder_with_setup_cfg(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "m.py").write_text(CODE)
    (tmp_path / "p" / "setup.cfg").write_text(
        textwrap.dedent(
            """\
            [metadata]
            name = legacy
            version = 2.0
            [options]
            install_requires =
                transformers>=4.46
                numpy
            [options.extras_require]
            peft = peft>=0.10
            """
        )
    )
    loaded = open_target(str(tmp_path / "p"), download_dir=tmp_path / "dl")
    assert (loaded.target.name, loaded.target.version) == ("legacy", "2.0")
    assert dict(loaded.target.requires) == {"transformers": ">=4.46", "peft": ">=0.10"}


def folder(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "p"
    for name, text in {"m.py": CODE, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def test_an_unpacked_sdist_reads_its_pkg_info(tmp_path):
    root = folder(tmp_path, {"PKG-INFO": METADATA.format(version="3.1")})
    loaded = open_target(str(root), download_dir=tmp_path / "dl")
    assert (loaded.target.name, loaded.target.version) == ("toyproj", "3.1")
    assert dict(loaded.target.requires)["transformers"] == "!=4.53.0,<=5.17.0,>=4.52.4"


def test_a_source_folder_reads_egg_info_requires_txt(tmp_path):
    # llm2vec 0.2.3's sdist: PKG-INFO without Requires-Dist, the ranges in requires.txt
    requires = """\
        numpy
        transformers<=4.44.2,>=4.43.1

        [evaluation]
        peft>=0.10

        [:sys_platform == "nonexistent-os"]
        trl>=0.20
    """
    pkg_info = "Metadata-Version: 2.1\nName: llm2vec\nVersion: 0.2.3\n"
    root = folder(tmp_path, {"PKG-INFO": pkg_info, "llm2vec.egg-info/requires.txt": requires})
    loaded = open_target(str(root), download_dir=tmp_path / "dl")
    assert (loaded.target.name, loaded.target.version) == ("llm2vec", "0.2.3")
    assert dict(loaded.target.requires) == {"transformers": "<=4.44.2,>=4.43.1", "peft": ">=0.10"}


def test_a_source_folder_reads_setup_py_literals_without_running_it(tmp_path):
    setup = """\
        import sys
        from setuptools import setup
        sys.exit("setup.py was run")
        EXTRAS = {"rl": ["trl>=0.20"]}
        setup(
            name="legacy",
            version="1.2",
            install_requires=["numpy", "transformers>=4.43.1,<=4.44.2", compute()],
            extras_require=EXTRAS,
        )
    """
    loaded = open_target(str(folder(tmp_path, {"setup.py": setup})), download_dir=tmp_path / "dl")
    assert loaded.target.version == "1.2"
    assert dict(loaded.target.requires) == {"transformers": "<=4.44.2,>=4.43.1", "trl": ">=0.20"}


def test_a_config_file_given_replaces_the_projects_table(tmp_path):
    wheel = build_wheel(tmp_path / "toyproj-1.0.0-py3-none-any.whl")
    config = tmp_path / "surface.toml"
    config.write_text('exclude = ["toyproj/patch.py"]\n')
    loaded = open_target(str(wheel), download_dir=tmp_path / "dl", config=config)
    assert loaded.files == ("toyproj/__init__.py",)
    assert loaded.config.origin == str(config)


def test_a_spec_that_is_nothing_known_says_what_a_target_is(tmp_path):
    with pytest.raises(ConfigError, match=r"not a folder, a \.whl file or NAME==VERSION"):
        open_target(str(tmp_path / "nothing-here"), download_dir=tmp_path)


FAKE_PIP = """
import os, sys, zipfile
args = sys.argv[1:]
dest, requirement = args[args.index("--dest") + 1], args[-1]
name, version = requirement.split("==")
with open(os.environ["FAKE_PIP_LOG"], "a") as log:
    log.write(requirement + "\\n")
if version == "2.0.0" and "--ignore-requires-python" not in args:  # a wheel for Python >= 3.99
    sys.stderr.write("ERROR: Ignored the following versions that require a different python "
                     "version: 2.0.0 Requires-Python >=3.99\\n"
                     "ERROR: Could not find a version that satisfies the requirement "
                     + requirement + " (from versions: 1.0.0)\\n"
                     "ERROR: No matching distribution found for " + requirement + "\\n")
    sys.exit(1)
if version not in ("1.0.0", "2.0.0"):
    sys.stderr.write("ERROR: Could not find a version that satisfies the requirement "
                     + requirement + " (from versions: 1.0.0)\\n"
                     "ERROR: No matching distribution found for " + requirement + "\\n")
    sys.exit(1)
with zipfile.ZipFile(os.path.join(dest, f"{name}-{version}-py3-none-any.whl"), "w") as wheel:
    wheel.writestr(f"{name}/patch.py", os.environ["FAKE_PIP_CODE"])
    wheel.writestr(f"{name}-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n"
                   + ("Requires-Python: >=3.99\\n" if version == "2.0.0" else "")
                   + "Requires-Dist: transformers>=5\\n\\n")
"""


@pytest.fixture
def fake_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FAKE_PIP_CODE", CODE)
    return install_fake_pip(tmp_path, monkeypatch, FAKE_PIP)


def test_name_and_version_are_downloaded_once_and_read_offline_after(tmp_path, fake_pip):
    downloads = tmp_path / "dl"
    with pytest.raises(OfflineMiss, match="not in the cache"):
        open_target("toyproj==1.0.0", download_dir=downloads, offline=True)
    assert fake_pip.read_text() == ""  # offline never starts pip
    loaded = open_target("toyproj==1.0.0", download_dir=downloads)
    assert (loaded.target.name, loaded.target.version) == ("toyproj", "1.0.0")
    assert dict(loaded.target.requires) == {"transformers": ">=5"}
    assert loaded.files == ("toyproj/patch.py",)
    offline = open_target("toyproj==1.0.0", download_dir=downloads, offline=True)
    assert offline.root == loaded.root
    assert fake_pip.read_text().split() == ["toyproj==1.0.0"]


def test_a_version_the_index_does_not_have_is_named(tmp_path, fake_pip):
    with pytest.raises(RefNotFound, match=r"toyproj==9\.9\.9 has no wheel"):
        open_target("toyproj==9.9.9", download_dir=tmp_path / "dl")


def test_a_release_for_a_newer_python_is_fetched_and_read(tmp_path, fake_pip):
    # canary reads the source and never installs it: the wheel's Requires-Python is no bar
    loaded = open_target("toyproj==2.0.0", download_dir=tmp_path / "dl")
    assert (loaded.target.name, loaded.target.version) == ("toyproj", "2.0.0")
    assert loaded.files == ("toyproj/patch.py",)
    refs = extract(loaded.root, loaded.files, upstream=("transformers",))
    assert "transformers.models.llama.modeling_llama.X.forward" in {r.target for r in refs}


def test_a_failed_download_names_the_target_in_its_cause(tmp_path, fake_pip):
    # grouped by cause under pytest, the target's failure is listed against the upstream
    # cases it stopped: the cause itself must say whose download failed
    with pytest.raises(RefNotFound) as failed:
        open_target("toyproj==9.9.9", download_dir=tmp_path / "dl")
    assert failed.value.cause == (
        "target toyproj==9.9.9: no wheel of that version of toyproj on the package index"
    )
    with pytest.raises(OfflineMiss) as missed:
        open_target("toyproj==1.0.0", download_dir=tmp_path / "dl", offline=True)
    assert missed.value.cause == "target toyproj==1.0.0: not in the cache (offline)"


def test_a_wheel_rebuilt_under_the_same_name_is_read_again(tmp_path):
    wheel = build_wheel(tmp_path / "toyproj-1.0.0-py3-none-any.whl")
    first = open_target(str(wheel), download_dir=tmp_path / "dl")
    with zipfile.ZipFile(wheel, "w") as archive:  # the same file name, another build
        archive.writestr("toyproj/patch.py", "from transformers import Rebuilt\n")
        archive.writestr("toyproj-1.0.0.dist-info/METADATA", METADATA.format(version="1.0.0"))
    rebuilt = open_target(str(wheel), download_dir=tmp_path / "dl")
    assert rebuilt.root != first.root
    assert rebuilt.files == ("toyproj/patch.py",)  # not the old build's __init__.py
    refs = extract(rebuilt.root, rebuilt.files, upstream=("transformers",))
    assert {r.target for r in refs} == {"transformers.Rebuilt"}
