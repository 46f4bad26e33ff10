"""Failures of the machine, not of upstream, are said once: a cache folder that cannot be
written, a full disk, a missing dependency are one line per case and one line per cause in
the run's summary, never a traceback."""

from __future__ import annotations

import sys

import pytest
from test_plugin import cache_dir, project, run  # noqa: F401 (fixtures)

from canary.cache import Cache
from canary.errors import MissingDependency, WriteFailed
from canary.run import RunOptions, open_run, source_for
from canary.sources import pipfailure
from canary.workspace import Case

pytest_plugins = ["pytester"]
TAGS = '[packages.toy]\nrepo = "example/toy"\nfloor = "1.0.0"\nversions = ["1.0.0"]\n'


def test_a_cache_folder_that_cannot_be_written_is_one_error_naming_it(tmp_path):
    root = tmp_path / "cache"
    root.write_text("a file where the cache folder should be")
    with pytest.raises(WriteFailed) as raised, Cache(root).lock("index-toy-1.0.0"):
        pass
    assert raised.value.cause.startswith(f"cannot write under {root}: ")


def test_a_run_on_an_unwritable_cache_says_it_once_per_cause(project, cache_dir):  # noqa: F811
    for entry in sorted(cache_dir.rglob("*"), reverse=True):
        entry.unlink() if entry.is_file() else entry.rmdir()
    cache_dir.rmdir()
    cache_dir.write_text("not a folder")
    result = run(project)
    assert result.ret == 2  # not everything checked: not 1, which says drift
    output = result.stdout.str()
    assert "Traceback" not in output
    assert "OSError" not in output
    summary = [line for line in result.outlines if "errors: cannot write under" in line]
    assert len(summary) == 1
    assert summary[0].startswith(f"9 errors: cannot write under {cache_dir}: ")


def test_a_full_disk_under_pip_is_named_as_such():
    output = (
        "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on "
        "device: '/cache/wheels/toy/.download-x/toy-1.0.0-py3-none-any.whl'\n"
    )
    failure = pipfailure.classify(output)
    assert failure.kind == pipfailure.NO_SPACE
    assert "No space left on device" in failure.evidence


def test_a_missing_dependency_is_one_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "tags.toml").write_text(TAGS)
    run_ = open_run(RunOptions(), tmp_path)
    run_.close()
    monkeypatch.setitem(sys.modules, "canary.sources.github", None)  # import fails
    with pytest.raises(MissingDependency) as raised:
        source_for(Case("toy", "main", "github"), run_.tags, {})
    assert raised.value.cause == "missing dependency: canary.sources.github is not installed"
