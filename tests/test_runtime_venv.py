"""Venv identity, build and reuse, with every subprocess faked."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from runtime_fakes import PINS, PROJECT, PYTHON, FakeInstaller, make_set

from canary.errors import InfrastructureError
from canary.runtime import venv
from canary.runtime.installer import Installer
from canary.runtime.pins import PinSet
from canary.runtime.venv import Python, ensure_venv, venv_digest, venv_python


def test_venv_digest_covers_pins_python_and_project_only():
    base = venv_digest(make_set(), PYTHON, PROJECT)
    assert base == venv_digest(make_set(), PYTHON, PROJECT)
    assert len(base) == 12
    renamed_summary = PinSet("oldest", "other words", make_set().pins)
    assert venv_digest(renamed_summary, PYTHON, PROJECT) == base
    assert venv_digest(make_set(trl="0.26.2"), PYTHON, PROJECT) != base
    assert venv_digest(make_set(), Python("/other/python", PYTHON.version), PROJECT) != base
    assert venv_digest(make_set(), Python(PYTHON.executable, "3.11.8"), PROJECT) != base
    assert venv_digest(make_set(), PYTHON, {**PROJECT, "dependencies": []}) != base


def build(fake: FakeInstaller, root: Path, pin_set: PinSet | None = None, **kwargs):
    pin_set = pin_set or make_set()
    return ensure_venv(
        pin_set,
        root=root,
        digest=venv_digest(pin_set, PYTHON, PROJECT),
        repo=root.parent,
        python=PYTHON,
        installer=Installer(uv="/bin/uv"),
        run=fake,
        environ={"PATH": "/bin"},
        **kwargs,
    )


def test_build_then_reuse_then_rebuild(tmp_path):
    root = tmp_path / "venvs"
    fake = FakeInstaller()
    first = build(fake, root)
    assert not first.reused
    assert fake.kinds() == ["create", "install", "probe"]
    assert first.installed["torch"] == "2.13.0+cpu"
    assert first.path.parent == root
    assert first.path.name.startswith("oldest-")
    assert json.loads((first.path / venv.MARKER).read_text())["pins"]["trl"] == "0.25.1"
    assert [p.name for p in root.iterdir()] == [first.path.name]  # no build folder left

    second = build(fake, root)
    assert second.reused
    assert second.path == first.path
    assert second.installed == first.installed
    assert len(fake.calls) == 3  # nothing ran

    third = build(fake, root, rebuild=True)
    assert not third.reused
    assert len(fake.calls) == 6
    assert [p.name for p in root.iterdir()] == [first.path.name]


def test_new_pins_build_a_new_venv_and_drop_the_old_one(tmp_path):
    root = tmp_path / "venvs"
    old = build(FakeInstaller(), root)
    other = build(FakeInstaller(), root, make_set("other"))
    new = build(FakeInstaller(), root, make_set(trl="0.26.2"))
    assert new.path != old.path
    assert sorted(p.name for p in root.iterdir()) == sorted([new.path.name, other.path.name])


def test_a_folder_without_marker_is_never_reused(tmp_path):
    # What a build killed mid-install would look like had it been built in place.
    root = tmp_path / "venvs"
    pin_set = make_set()
    final = venv.venv_dir(root, pin_set, venv_digest(pin_set, PYTHON, PROJECT))
    venv_python(final).parent.mkdir(parents=True)
    venv_python(final).write_text("")
    fake = FakeInstaller()
    built = build(fake, root)
    assert not built.reused
    assert (final / venv.MARKER).is_file()


def test_old_build_folders_of_killed_runs_are_removed(tmp_path):
    root = tmp_path / "venvs"
    root.mkdir()
    old = root / ".build-oldest-0123456789ab-deadbeef"
    recent = root / ".build-oldest-0123456789ab-cafef00d"
    other = root / ".build-newest-0123456789ab-deadbeef"
    for path in (old, recent, other):
        path.mkdir()
    long_ago = time.time() - venv.STALE_BUILD_SECONDS - 60
    os.utime(old, (long_ago, long_ago))
    os.utime(other, (long_ago, long_ago))
    build(FakeInstaller(), root)
    assert not old.exists()
    assert recent.exists()  # may be a concurrent run's
    assert other.exists()  # another set's: left to that set's next build


def test_failed_install_leaves_nothing_behind(tmp_path):
    root = tmp_path / "venvs"
    with pytest.raises(InfrastructureError, match=r"install \(uv\) failed \(exit 1\)"):
        build(FakeInstaller(install_rc=1), root)
    assert list(root.iterdir()) == []


def test_installed_versions_must_match_the_pins(tmp_path):
    wrong = {**PINS, "torch": "2.14.0"}
    with pytest.raises(InfrastructureError, match=r"torch: pinned 2\.13\.0, installed 2\.14\.0"):
        build(FakeInstaller(installed=wrong), tmp_path / "venvs")
