"""What an installed canary carries: its distribution name, its command and plugin, and the
release lists (the repository's tags.toml, inside the package)."""

from __future__ import annotations

import sys
from pathlib import Path

from canary.run import RunOptions
from canary.tags import SHIPPED_TAGS, load_tags

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_distribution_has_a_name_of_its_own_and_keeps_canary_for_the_rest():
    project = PROJECT["project"]
    # "canary" on the package index is an unrelated project (checked with pip index versions).
    assert project["name"] == "patch-canary"
    assert project["scripts"] == {"canary": "canary.cli:main"}
    assert project["entry-points"]["pytest11"] == {"canary": "canary.plugin"}


def test_the_shipped_release_lists_are_the_repositorys_tags_toml_not_a_copy():
    # One file: the package's is a link to the root's, so `tags --update` and a hand edit
    # of either change both, and the wheel carries that content (.ci/run compares it).
    assert SHIPPED_TAGS.is_symlink()
    assert SHIPPED_TAGS.resolve() == (ROOT / "tags.toml").resolve()
    assert SHIPPED_TAGS.read_bytes() == (ROOT / "tags.toml").read_bytes()
    assert load_tags(SHIPPED_TAGS).packages.keys() == {"transformers", "trl", "peft"}


def test_the_wheel_is_told_to_carry_the_release_lists():
    package_data = PROJECT["tool"]["setuptools"]["package-data"]
    assert "tags.toml" in package_data["canary"]
    assert SHIPPED_TAGS.parent.name == "canary"


def test_a_run_reads_the_rootdirs_tags_toml_else_the_shipped_one(tmp_path):
    assert RunOptions().tags_path(tmp_path) == SHIPPED_TAGS  # a downstream repository
    (tmp_path / "tags.toml").write_text("")
    assert RunOptions().tags_path(tmp_path) == tmp_path / "tags.toml"  # canary's checkout
    assert RunOptions(tags_file=Path("x.toml")).tags_path(tmp_path) == Path("x.toml")
