"""Bad input and bad upstream files: each stops with a message naming the thing and the fix,
or is the error of its case; and the run's last line counts drift and errors apart.

Runs the toy catalog of test_plugin (releases served from a cache filled here, read with
``--canary-offline``), so nothing touches the network.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_plugin import GOOD, TAGS, cache_dir, project, run  # noqa: F401 (fixtures)

from canary.cache import Cache, FileKey
from canary.errors import ConfigError
from canary.tags import load_tags

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
