"""Targets are data: each attack a target spec or a wheel can carry is planted with a
sentinel, and nothing runs and nothing is written outside the cache."""

from __future__ import annotations

import os
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
from fake_pip import install_fake_pip

from canary.errors import ConfigError, FetchError
from canary.sources import index
from canary.sources.health import HostHealth
from canary.sources.index import IndexSource
from canary.sources.pin import parse_pin
from canary.sources.unpack import Limits, WheelRefused, unpacked
from canary.surface.targets import open_target

SETUP_PY = """
from pathlib import Path
Path({sentinel!r}).write_text("setup.py ran")
from setuptools import setup
setup(name="evil", version="0.1")
"""


def files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


@pytest.fixture
def sdist(tmp_path: Path) -> tuple[Path, Path]:
    """An sdist of ``evil 0.1`` whose setup.py writes a sentinel; (the sdist, the sentinel)."""
    sentinel = tmp_path / "SENTINEL"
    source = tmp_path / "evil-0.1"
    source.mkdir()
    (source / "setup.py").write_text(SETUP_PY.format(sentinel=str(sentinel)))
    (source / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 0.1\n")
    links = tmp_path / "links"
    links.mkdir()
    archive = links / "evil-0.1.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source, arcname="evil-0.1")
    return archive, sentinel


@pytest.mark.parametrize(
    "spec",
    [
        "evil @ file:///tmp/evil-0.1.tar.gz#x==0.1",
        "-rreqs==1",
        "--index-url=http://127.0.0.1:9/==1",
        "../../ESCAPED==1",
        "evil[extra]==0.1",
        "evil==0.1; python_version > '3'",
        "evil==0.*",
        "evil===0.1",
        "evil==../../x",
        "evil==0.1 --pre",
        ".hidden==1",
        "==1",
        "evil==",
    ],
)
def test_a_spec_that_is_not_one_name_and_version_stops_before_anything_runs(
    spec, tmp_path, monkeypatch
):
    log = install_fake_pip(tmp_path, monkeypatch, "raise SystemExit('pip ran')\n")
    cache = tmp_path / "cache"
    with pytest.raises(ConfigError, match=r"write NAME==VERSION") as raised:
        open_target(spec, download_dir=cache / "targets")
    assert "\n" not in str(raised.value)
    assert log.read_text() == ""
    assert not cache.exists()
    assert not (tmp_path.parent / "ESCAPED").exists()


def test_one_name_and_version_parses():
    assert parse_pin("Evil_pkg.x==2025.1.1").requirement == "Evil_pkg.x==2025.1.1"
    assert parse_pin("trl==1.10.0.dev0").version == "1.10.0.dev0"
    assert parse_pin("a==1!2.0+local.3").version == "1!2.0+local.3"


def test_pip_is_asked_for_a_wheel_only_with_the_requirement_after_a_double_dash(
    tmp_path, monkeypatch
):
    script = "import os, sys\nopen(os.environ['FAKE_PIP_LOG'], 'a').write(repr(sys.argv))\n"
    log = install_fake_pip(tmp_path, monkeypatch, script)
    with pytest.raises(FetchError):
        IndexSource("evil", "0.1").fetch([])
    argv = eval(log.read_text())  # the fake pip wrote its own argv
    assert argv[-2:] == ["--", "evil==0.1"]
    assert "--only-binary=:all:" in argv
    assert "--no-deps" in argv


def test_a_text_that_is_no_name_and_version_never_reaches_pip_from_a_source(tmp_path, monkeypatch):
    log = install_fake_pip(tmp_path, monkeypatch, "raise SystemExit('pip ran')\n")
    before = files_under(tmp_path)
    source = IndexSource("../../ESCAPED", "1", wheel_dir=tmp_path / "wheels")
    assert source.kept_wheel is None
    with pytest.raises(FetchError, match="not asked of pip"):
        source.fetch(["x.py"])
    assert log.read_text() == ""
    assert files_under(tmp_path) == before
    assert not (tmp_path.parent / "ESCAPED").exists()


def test_the_real_pip_never_builds_an_sdist(sdist, tmp_path, monkeypatch):
    """The release exists only as an sdist whose setup.py writes a sentinel: pip, asked as
    canary asks it, finds no wheel and builds nothing."""
    archive, sentinel = sdist
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(archive.parent))
    monkeypatch.setattr(index, "INDEX_HEALTH", HostHealth())
    cache = tmp_path / "cache"
    with pytest.raises(FetchError, match="no wheel"):
        open_target("evil==0.1", download_dir=cache, pip=(sys.executable, "-m", "pip"))
    assert not sentinel.exists()
    with pytest.raises(ConfigError):
        open_target(f"evil @ {archive.as_uri()}#x==0.1", download_dir=cache)
    assert not sentinel.exists()
    assert not list(cache.rglob("*.whl"))
    assert not list(cache.rglob("*.tar.gz"))


def bomb(path: Path, megabytes: int = 64, name: str = "evil/bomb.py") -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("evil/__init__.py", "")
        with archive.open(name, "w", force_zip64=True) as member:
            block = b"\0" * (1 << 20)
            for _ in range(megabytes):
                member.write(block)
        archive.writestr("evil-0.1.dist-info/METADATA", "Name: evil\nVersion: 0.1\n\n")
    return path


def test_a_zip_bomb_is_refused_and_leaves_nothing(tmp_path):
    wheel = bomb(tmp_path / "evil-0.1-py3-none-any.whl")
    assert wheel.stat().st_size < 200_000
    cache = tmp_path / "cache"
    with pytest.raises(WheelRefused, match=r"'evil/bomb\.py' unpacks to .* over 100:1"):
        open_target(str(wheel), download_dir=cache)
    assert files_under(cache) == {"unpacked"}  # the folder it would go in, empty
    assert wheel.is_file()  # the user's own file is never removed


def test_a_bomb_under_the_ratio_is_stopped_by_the_bytes_it_really_inflates(tmp_path):
    wheel = bomb(tmp_path / "evil-0.1-py3-none-any.whl", megabytes=3)
    limits = Limits(total_bytes=2 << 20, ratio=10**6)
    with pytest.raises(WheelRefused, match="over canary's limit"):
        unpacked(wheel, tmp_path / "out", limits)
    assert files_under(tmp_path / "out") == set()


def test_a_bomb_downloaded_for_name_and_version_is_not_kept(tmp_path, monkeypatch):
    script = textwrap.dedent(
        f"""
        import shutil, sys
        dest = sys.argv[sys.argv.index("--dest") + 1]
        shutil.copy({str(bomb(tmp_path / "evil-0.1-py3-none-any.whl"))!r}, dest)
        """
    )
    install_fake_pip(tmp_path, monkeypatch, script)
    cache = tmp_path / "cache"
    with pytest.raises(WheelRefused):
        open_target("evil==0.1", download_dir=cache)
    assert not list(cache.rglob("*.whl"))
    assert not [p for p in cache.rglob("*") if p.is_file()]


@pytest.mark.parametrize(
    "member", ["../../ESCAPED.py", "/tmp/ESCAPED.py", "evil/../../ESCAPED.py", "C:/x.py"]
)
def test_a_member_outside_the_wheel_is_refused_and_nothing_is_written(member, tmp_path):
    wheel = tmp_path / "w" / "evil-0.1-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("evil/ok.py", "x = 1\n")
        archive.writestr(member, "raise SystemExit\n")
    before = files_under(tmp_path)
    with pytest.raises(WheelRefused, match="outside the wheel"):
        unpacked(wheel, tmp_path / "cache" / "unpacked")
    assert files_under(tmp_path) - before == {"cache", "cache/unpacked"}
    assert not Path("/tmp/ESCAPED.py").exists()


def test_only_python_files_and_metadata_are_unpacked(tmp_path):
    wheel = tmp_path / "evil-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("evil/__init__.py", "")
        archive.writestr("evil/lib.so", b"\x7fELF")
        archive.writestr("evil-0.1.data/scripts/run.sh", "#!/bin/sh\n")
        archive.writestr("evil-0.1.dist-info/METADATA", "Name: evil\nVersion: 0.1\n\n")
        archive.writestr("evil-0.1.dist-info/entry_points.txt", "[console_scripts]\n")
    root = unpacked(wheel, tmp_path / "out")
    assert files_under(root) == {
        "evil",
        "evil/__init__.py",
        "evil-0.1.dist-info",
        "evil-0.1.dist-info/METADATA",
    }


def test_too_many_members_are_refused(tmp_path):
    wheel = tmp_path / "evil-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for n in range(5):
            archive.writestr(f"evil/m{n}.py", "")
    with pytest.raises(WheelRefused, match="5 members, over the limit of 4"):
        unpacked(wheel, tmp_path / "out", Limits(members=4))
    assert files_under(tmp_path / "out") == set()


def test_a_wheel_rebuilt_under_the_same_name_is_unpacked_again(tmp_path):
    wheel = tmp_path / "evil-0.1-py3-none-any.whl"
    for text in ("x = 1\n", "x = 2\n"):
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr("evil/m.py", text)
        root = unpacked(wheel, tmp_path / "out")
        assert (root / "evil" / "m.py").read_text() == text
    assert os.path.commonpath([root, tmp_path / "out"]) == str(tmp_path / "out")
