"""A pre-release of X on the old side of a check split at X: it passes when either side
holds and the results say which side it matched; a release of X is judged strictly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_plugin import cache_dir, project, run  # noqa: F401 (fixtures)

from canary import cli

pytest_plugins = ["pytester"]

MOVED = '''
import pytest
from canary.catalog import check, expect_parameters, row

pytestmark = pytest.mark.upstream("toy")

@check.each(
    row("test_old_engine_takes_steps", path="toy/old/core.py", until="2.0.0"),
    row("test_engine_takes_steps", path="toy/core.py", since="2.0.0"),
    fix="chunked NLL loss",
)
def engine_takes_steps(upstream, path):
    """Engine.run ({path}) takes steps."""
    expect_parameters(upstream.module(path).cls("Engine").method("run"), "steps")
'''
ENGINE = b"class Engine:\n    def run(self, steps):\n        pass\n"


def tree(root: Path, version: str, *, old: bool = False, new: bool = False) -> Path:
    package = root / "src" / "toy"
    (package / "old").mkdir(parents=True)
    (package / "__init__.py").write_text(f'__version__ = "{version}"\n')
    if old:
        (package / "old" / "core.py").write_bytes(ENGINE)
    if new:
        (package / "core.py").write_bytes(ENGINE)
    return root


def cases(project) -> dict[str, dict]:  # noqa: F811
    return {c["check"]: c for c in json.loads((project.path / "r.json").read_text())["cases"]}


def test_a_dev_build_still_on_the_old_side_passes_and_says_so(project, tmp_path):  # noqa: F811
    project.makepyfile(test_toy=MOVED)
    checkout = tree(tmp_path / "checkout", "2.0.0.dev0", old=True)
    result = run(project, f"--canary-local=toy={checkout}", "--canary-json", "r.json")
    result.assert_outcomes(passed=1, skipped=1)
    new_side = cases(project)["test_engine_takes_steps"]
    assert new_side["outcome"] == "pass"
    assert new_side["message"].startswith(
        "toy 2.0.0.dev0 is a pre-release of 2.0.0 still on the old side of the split "
        "at 2.0.0: test_old_engine_takes_steps holds, test_engine_takes_steps does not"
    )


def test_a_second_run_keeps_the_note(project, tmp_path):  # noqa: F811
    project.makepyfile(test_toy=MOVED)
    checkout = tree(tmp_path / "checkout", "2.0.0.dev0", old=True)
    for _ in range(2):  # the second run may answer from what the first remembered
        run(project, f"--canary-local=toy={checkout}", "--canary-json", "r.json")
        new_side = cases(project)["test_engine_takes_steps"]
        assert new_side["outcome"] == "pass"
        assert "still on the old side of the split" in new_side["message"]


def test_the_report_says_which_side_matched(project, tmp_path, capsys):  # noqa: F811
    project.makepyfile(test_toy=MOVED)
    checkout = tree(tmp_path / "checkout", "2.0.0.dev0", old=True)
    run(project, f"--canary-local=toy={checkout}", "--canary-json", "r.json")
    assert cli.main(["report", str(project.path / "r.json"), "--no-diff"]) == 0
    out = capsys.readouterr().out
    assert "NOTE toy test_engine_takes_steps: toy 2.0.0.dev0 is a pre-release of 2.0.0" in out


def test_a_dev_build_on_the_new_side_passes_without_a_note(project, tmp_path):  # noqa: F811
    project.makepyfile(test_toy=MOVED)
    checkout = tree(tmp_path / "checkout", "2.0.0.dev0", new=True)
    run(project, f"--canary-local=toy={checkout}", "--canary-json", "r.json")
    new_side = cases(project)["test_engine_takes_steps"]
    assert (new_side["outcome"], new_side["message"]) == ("pass", "")


@pytest.mark.parametrize(
    ("version", "old"),
    [("2.0.0", True), ("2.0.0rc1", False), ("2.1.0.dev0", True)],
    ids=["a-release-of-the-split-is-strict", "neither-side-holds", "not-the-split-version"],
)
def test_otherwise_the_new_side_is_judged_strictly(project, tmp_path, version, old):  # noqa: F811
    project.makepyfile(test_toy=MOVED)
    checkout = tree(tmp_path / "checkout", version, old=old)
    result = run(project, f"--canary-local=toy={checkout}", "--canary-json", "r.json")
    result.assert_outcomes(failed=1, skipped=1)
    assert "toy/core.py does not exist" in cases(project)["test_engine_takes_steps"]["message"]
