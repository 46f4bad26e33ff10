"""The run object: options in, cases out, bad input as ConfigError naming the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from canary.errors import ConfigError
from canary.run import RunOptions, open_run, source_for
from canary.sources.index import IndexSource
from canary.sources.local import LocalSource
from canary.workspace import Case

TAGS = """
[packages.toy]
repo = "example/toy"
package_dir = "src"
floor = "1.0.0"
versions = ["1.0.0", "1.1.0", "2.0.0"]
"""


@pytest.fixture
def rootdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "tags.toml").write_text(TAGS)
    return tmp_path


def labels(options: RunOptions, rootdir: Path) -> list[tuple[str, str]]:
    run = open_run(options, rootdir)
    try:
        return [(case.label, case.source) for case in run.cases("toy")]
    finally:
        run.close()


def test_every_release_in_tags_toml_then_main_when_asked(rootdir):
    assert labels(RunOptions(), rootdir) == [
        ("1.0.0", "index"),
        ("1.1.0", "index"),
        ("2.0.0", "index"),
    ]
    with_main = labels(RunOptions(main=True), rootdir)
    assert with_main[-1] == ("main", "github")
    assert len(with_main) == 4


def test_tag_filters_keep_their_order_and_github_source_reads_releases_from_tags(rootdir):
    options = RunOptions(tags=("toy=2.0.0,1.0.0",), source="github")
    assert labels(options, rootdir) == [("2.0.0", "github"), ("1.0.0", "github")]


def test_a_local_tree_replaces_the_releases(rootdir, tmp_path):
    (tmp_path / "tree" / "toy").mkdir(parents=True)
    (tmp_path / "tree" / "toy" / "__init__.py").write_text('__version__ = "2.1.0.dev0"\n')
    options = RunOptions(local=(f"toy={tmp_path / 'tree'}",))
    assert labels(options, rootdir) == [("2.1.0.dev0", "local")]


def test_a_local_trees_stated_version_is_spelled_once_and_checked(rootdir, tmp_path):
    (tmp_path / "tree" / "toy").mkdir(parents=True)
    (tmp_path / "tree" / "toy" / "__init__.py").write_text('__version__ = "2.1.0.dev0"\n')
    options = RunOptions(local=(f"toy@2.05.0={tmp_path / 'tree'}",))
    assert labels(options, rootdir) == [("2.5.0", "local")]
    with pytest.raises(ConfigError, match=r"--canary-local 'toy@two=.*': 'two' is not a version"):
        open_run(RunOptions(local=(f"toy@two={tmp_path / 'tree'}",)), rootdir)


def test_the_tags_file_given_wins_over_the_rootdir(rootdir, tmp_path):
    other = tmp_path / "other.toml"
    other.write_text(TAGS.replace('"1.0.0", "1.1.0", ', ""))
    assert labels(RunOptions(tags_file=other), rootdir) == [("2.0.0", "index")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            RunOptions(
                tags=("toy",),
            ),
            "expected PKG=V1,V2",
        ),
        (
            RunOptions(
                tags=("toy=one",),
            ),
            "'one' is not a version, 'main' or a full 40-hex commit",
        ),
        (
            RunOptions(
                tags=("nope=1.0.0",),
            ),
            "nope",
        ),
        (
            RunOptions(
                local=("toy=/no/such/tree",),
            ),
            "/no/such/tree",
        ),
        (RunOptions(main=True, source="index"), "--canary-source index cannot check main"),
    ],
)
def test_bad_options_are_config_errors_naming_the_option(rootdir, options, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        open_run(options, rootdir)


def test_sources_follow_the_case(rootdir, tmp_path):
    run = open_run(RunOptions(), rootdir)
    run.close()
    released = source_for(Case("toy", "1.0.0", "index"), run.tags, {})
    assert isinstance(released, IndexSource)
    assert released.ref == "1.0.0"
    tree = tmp_path / "tree"
    (tree / "toy").mkdir(parents=True)
    local = {"toy": LocalSource("toy", tree, version="9.0")}
    assert source_for(Case("toy", "9.0", "local"), run.tags, local) is local["toy"]
    github = source_for(Case("toy", "main", "github"), run.tags, {})
    assert github.ref == "main"
    assert github.repo == "example/toy"
