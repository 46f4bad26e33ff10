"""Bad input and bad upstream files: each stops with a message naming the thing and the fix,
or is the error of its case; and the run's last line counts drift and errors apart.

Runs the toy catalog of test_plugin (releases served from a cache filled here, read with
``--canary-offline``), so nothing touches the network.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest
from packaging.licenses import canonicalize_license_expression
from test_plugin import GOOD, TAGS, cache_dir, project, run  # noqa: F401 (fixtures)

from canary import cli
from canary.cache import Cache, FileKey
from canary.errors import ConfigError
from canary.runtime import installer
from canary.tags import load_tags
from canary.versions import requested_releases

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

pytest_plugins = ["pytester"]


def test_unsorted_versions_in_tags_toml_say_which_and_how_to_fix(tmp_path: Path):
    path = tmp_path / "tags.toml"
    path.write_text(TAGS.replace('"1.1.0", "1.1.1"', '"1.1.1", "1.1.0"'))
    with pytest.raises(ConfigError) as caught:
        load_tags(path)
    message = str(caught.value)
    assert str(path) in message
    assert "[packages.toy]" in message
    assert "sorted oldest first, but '1.1.0' comes after '1.1.1'" in message
    assert "python -m canary tags --update" in message


def test_a_local_tree_of_another_package_is_refused_naming_the_flag(project, tmp_path):  # noqa: F811
    other = tmp_path / "checkout" / "src" / "other"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text('__version__ = "1.0.0"\n')
    result = run(project, f"--canary-local=toy={tmp_path / 'checkout'}", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--canary-local toy=*this is not a toy tree*"])


def test_a_local_path_that_is_a_file_is_refused(project, tmp_path):  # noqa: F811
    file = tmp_path / "toy.py"
    file.write_text("")
    result = run(project, f"--canary-local=toy={file}", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{file} is not a folder*"])


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"# -*- coding: latin-1 -*-\nclass Engine:\n    name = '\xe9'\n\x00\n", "line 4"),
        (b"class Engine:\n    x = '\xff\xfe'\n", "cannot decode as utf-8"),
        (b"class Engine(:\n", "line 1"),
    ],
    ids=["null byte", "bad encoding", "syntax error"],
)
def test_an_upstream_file_the_parser_cannot_read_is_a_parse_error_of_that_case(
    project,  # noqa: F811
    cache_dir,  # noqa: F811
    content,
    why,
):
    Cache(cache_dir).write_file(FileKey("index", "toy", "1.1.0", "toy/core.py"), content)
    result = run(project, "--canary-tags=toy=1.1.0,1.1.1")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines([f"*ParseError*toy/core.py*toy 1.1.0*{why}*"])
    result.stdout.no_fnmatch_line("*upstream drift*")


def test_the_last_line_counts_drift_and_infrastructure_errors_apart(project, cache_dir):  # noqa: F811
    # 1.2.0 drifted (broken in tags.toml: xfail, not counted), 2.0.0 drifted (failed),
    # 1.1.1 cannot be read (error), 2.10.0's file is not in the cache (offline: error).
    cache = Cache(cache_dir)
    drifted = GOOD.replace(b", *, num_items_in_batch=None", b"")
    cache.write_file(FileKey("index", "toy", "2.0.0", "toy/core.py"), drifted)
    cache.write_file(FileKey("index", "toy", "1.1.1", "toy/core.py"), b"def (:\n")
    for path in (cache_dir / "files" / "index" / "toy" / "2.10.0").rglob("*.entry"):
        path.unlink()
    result = run(project)
    # 1.2.0's other check still holds: xpassed (the xfail is not strict).
    result.assert_outcomes(passed=3, failed=1, errors=3, skipped=3, xfailed=1, xpassed=1)
    assert result.outlines[-1] == (
        "canary: drift found: 1 failing check(s); 3 error(s): not everything was checked"
    )
    assert result.ret == 1  # drift wins over errors: it is the finding


# -- versions: one version, one spelling; a series is its releases ---------------------------


def _ids(result: pytest.RunResult) -> list[str]:
    return sorted({line.split("[")[1].rstrip("]") for line in result.outlines if "::" in line})


def test_a_series_in_canary_tags_is_every_listed_release_of_it(project):  # noqa: F811
    result = run(project, "--canary-tags=toy=1.1", "--collect-only", "-q")
    assert _ids(result) == ["toy_1_1_0", "toy_1_1_1"]  # not a new toy_1_1 case


def test_two_spellings_of_one_version_are_one_case_and_one_cache_entry(project):  # noqa: F811
    result = run(project, "--canary-tags=toy=2.0.0,2.00.0,2.0.0.0", "--collect-only", "-q")
    assert _ids(result) == ["toy_2_0_0"]
    # The listed spelling is the one the cache keys use: it is read, not missed.
    run(project, "--canary-tags=toy=2.00.0").assert_outcomes(passed=1, skipped=1)


def test_a_version_not_listed_keeps_one_canonical_spelling():
    listed = ["1.0.0", "1.1.0"]
    assert requested_releases("1.2.0", listed) == ["1.2.0"]  # e.g. from `tags --new`
    assert requested_releases("1.02.0RC1", listed) == ["1.2.0rc1"]
    assert requested_releases("1", listed) == listed


def test_a_series_with_no_listed_release_is_a_usage_error(project):  # noqa: F811
    result = run(project, "--canary-tags=toy=1.5", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--canary-tags 'toy=1.5': no release in tags.toml starts with 1.5; give a full "
         "version (e.g. 1.5.0) to check one it does not list"]
    )  # fmt: skip


# -- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", ["0", "-2", "many"])
def test_canary_workers_below_one_is_a_usage_error(project, workers):  # noqa: F811
    result = run(project, f"--canary-workers={workers}", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--canary-workers: *give a whole number of at least 1"])


def test_a_tilde_in_canary_local_is_the_home_folder(project, tmp_path, monkeypatch):  # noqa: F811
    home = tmp_path / "home"
    tree = home / "src" / "toy" / "src" / "toy"
    tree.mkdir(parents=True)
    (tree / "__init__.py").write_text('__version__ = "2.10.0"\n')
    (tree / "core.py").write_bytes(GOOD)
    monkeypatch.setenv("HOME", str(home))
    # zsh (and bash, quoted) leave the ~ after "=" as it is.
    result = run(project, "--canary-local=toy=~/src/toy")
    result.assert_outcomes(passed=1, skipped=1)


def test_every_command_spells_the_tags_file_option_the_same(tmp_path, capsys):
    missing = tmp_path / "absent.toml"
    for argv in (["tags", "--tags-file", str(missing)], ["runtime", "--tags-file", str(missing)]):
        assert cli.main(argv) == 2
        # The advice names this command's option, not the pytest one.
        assert capsys.readouterr().err.strip() == (
            f"canary: error: {missing}: file not found; pass --tags-file PATH or run from the "
            f"repository root"
        )
    with pytest.raises(ConfigError, match="pass --canary-tags-file PATH"):
        load_tags(missing)  # what pytest canary says
    assert cli.main(["tags", "--tags-file", str(ROOT / "tags.toml")]) == 0
    assert cli.main(["tags", "--file", str(ROOT / "tags.toml")]) == 0  # the old spelling


def test_tags_new_says_when_nothing_is_new_on_stderr_leaving_stdout_for_pytest(
    tmp_path, monkeypatch, capsys
):
    tags = tmp_path / "tags.toml"
    tags.write_text(TAGS)
    releases = ["1.0.0", "1.1.0", "1.1.1", "1.2.0", "2.0.0", "2.10.0"]
    monkeypatch.setattr(cli, "stable_releases", lambda package, floor: releases)
    assert cli.main(["tags", "--tags-file", str(tags), "--new"]) == 0
    out, err = capsys.readouterr()
    assert out == ""  # read by `mapfile -t args` as pytest arguments
    assert err == f"canary: every stable release on the index is listed in {tags}\n"


def test_output_into_a_closed_pipe_ends_quietly(monkeypatch, capsys):
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head` that has read what it wanted
    closed = io.TextIOWrapper(io.FileIO(write_end, "w"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", closed)
    assert cli.main(["runtime", "--list"]) == 0  # no BrokenPipeError traceback
    assert cli.main(["tags", "--tags-file", str(ROOT / "tags.toml")]) == 0


def test_the_uv_hint_names_an_install_that_works_from_the_checkout(monkeypatch):
    monkeypatch.setattr(installer, "find_uv", lambda: None)
    with pytest.raises(ConfigError) as caught:
        installer.choose_installer("uv", run=None, environ={})
    assert "pip install -e '.[runtime]'" in str(caught.value)
    assert "canary[runtime]" not in str(caught.value)  # not on any index


def test_the_results_file_is_written_with_the_users_umask(project, tmp_path):  # noqa: F811
    results = tmp_path / "results.json"
    previous = os.umask(0o022)
    try:
        run(project, f"--canary-json={results}").assert_outcomes(
            passed=7, skipped=3, xfailed=1, xpassed=1
        )
    finally:
        os.umask(previous)
    assert stat.S_IMODE(results.stat().st_mode) == 0o644  # not mkstemp's 0600
    assert json.loads(results.read_text())["selected"] == 12


# -- packaging and documentation ------------------------------------------------------------


def test_the_license_is_an_spdx_expression_and_the_build_backend_accepts_it():
    project_toml = tomllib.loads((ROOT / "pyproject.toml").read_text())
    license_ = project_toml["project"]["license"]
    assert isinstance(license_, str)  # a table is deprecated by setuptools from 2027-02-18
    assert canonicalize_license_expression(license_) == license_
    # PEP 639 license expressions need setuptools 77.
    assert "setuptools>=77" in project_toml["build-system"]["requires"]
    dependencies = " ".join(project_toml["project"]["dependencies"])
    assert "filelock" in dependencies
    assert "platformdirs" in dependencies


def test_the_docs_say_where_runtime_venvs_live_and_what_they_cost():
    runtime_doc = (ROOT / "docs" / "runtime.md").read_text()
    assert re.search(r"`runtime-venvs/`, about [\d.]+ GB each", runtime_doc)


def test_version_prefixed_k_selects_exactly_one_package_in_the_catalog():
    # -k transformers_5 must not also pick a peft or trl check whose name has
    # "transformers_5..." in it: no check name contains <package>_<digit> or <package>_main.
    packages = load_tags(ROOT / "tags.toml").packages
    pattern = re.compile(rf"(?:{'|'.join(packages)})_(?:\d|main)")
    names = [
        name
        for module in (ROOT / "canary" / "checks").glob("test_*.py")
        for name in re.findall(r"^def (test_\w+)\(", module.read_text(), re.M)
    ]
    assert len(names) >= 100  # the glob found the catalog
    assert [name for name in names if pattern.search(name)] == []
