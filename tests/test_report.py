"""The matrix report: --canary-json from a real pytester run of toy checks, then
``python -m canary report`` over it (folding, transitions, the upstream diff, formats,
exit statuses), offline: the toy releases are served from a cache the tests fill."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest

# Imported before pytester snapshots sys.modules (see tests/test_plugin.py).
import canary.sources.github  # noqa: F401
from canary import cli
from canary.cache import Cache, FileKey
from canary.plugin.progress import Progress
from canary.report.matrix import DASH
from canary.report.render import diff_excerpt
from canary.report.results import CaseResult, RunResults, exit_status, load
from canary.workspace import Case, Stats

pytest_plugins = ["pytester"]

TAGS = """
[packages.toy]
repo = "example/toy"
package_dir = "src"
floor = "1.0.0"
anchors = ["1.0.0"]
broken = { "1.2.0" = "ships a broken Engine" }
versions = ["1.0.0", "1.1.0", "1.1.1", "1.2.0", "2.0.0", "2.10.0"]
"""

GOOD = b"class Engine:\n    def run(self, steps, *, num_items_in_batch=None):\n        pass\n"
DRIFTED = b"class Engine:\n    def run(self, steps):\n        return steps\n"

CHECKS = '''
import pytest
from canary.catalog import check, expect_parameters

pytestmark = pytest.mark.upstream("toy")

@check(reads="toy/core.py", fix="chunked NLL loss", since="1.1.0")
def test_run_takes_num_items_in_batch(upstream):
    """Engine.run takes num_items_in_batch."""
    run = upstream.module("toy/core.py").cls("Engine").method("run")
    expect_parameters(run, "num_items_in_batch")

@check(reads="toy/core.py", fix="chunked NLL loss")
def test_engine_exists(upstream):
    """toy/core.py defines Engine."""
    upstream.module("toy/core.py").cls("Engine")
'''
CONTENT = {
    "1.0.0": GOOD,
    "1.1.0": GOOD,
    "1.1.1": GOOD,
    "1.2.0": DRIFTED,
    "2.0.0": DRIFTED,
    "2.10.0": DRIFTED,
}


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("CANARY_CACHE_DIR", str(cache_dir))
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_toy=CHECKS)
    cache = Cache(cache_dir)
    for version, content in CONTENT.items():
        cache.write_file(FileKey("index", "toy", version, "toy/core.py"), content)
    return pytester


def run_json(project: pytest.Pytester, *args: str) -> Path:
    path = project.path / "results.json"
    project.runpytest("-p", "no:cacheprovider", "--canary-offline", f"--canary-json={path}", *args)
    return path


def report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()  # drop what the pytester run printed
    status = cli.main(["report", "--offline", *args])
    return status, capsys.readouterr().out


def test_json_records_every_case_with_its_outcome_fix_window_and_subject(project):
    data = json.loads(run_json(project).read_text())
    assert data["schema"] == "canary-results/1"
    assert data["exitstatus"] == 1
    cases = {(c["check"], c["label"]): c for c in data["cases"]}
    assert len(cases) == 12
    run = "test_run_takes_num_items_in_batch"
    outcomes = [cases[(run, v)]["outcome"] for v in CONTENT]
    assert outcomes == ["skip", "pass", "pass", "xfail", "fail", "fail"]
    drift = cases[(run, "2.0.0")]
    assert drift["fix"] == "chunked NLL loss"
    assert drift["window"] == ">=1.1.0"
    assert drift["reads"] == ["toy/core.py"]
    assert drift["subject"] == {"path": "toy/core.py", "qualname": "Engine.run"}
    assert "has no parameter 'num_items_in_batch'" in drift["message"]
    assert (
        "outside the window of test_run_takes_num_items_in_batch (toy >=1.1.0)"
        in (cases[(run, "1.0.0")]["message"])
    )
    assert "ships a broken Engine" in cases[(run, "1.2.0")]["message"]
    assert cases[("test_engine_exists", "1.2.0")]["outcome"] == "pass"  # xpass


def test_terminal_report_folds_runs_into_ranges_and_exits_1_on_drift(project, capsys):
    status, out = report(capsys, str(run_json(project)))
    assert status == 1
    assert "canary: drift found: 2 checks, 12 cases" in out
    assert (
        f"test_run_takes_num_items_in_batch  1.0.0: skip, 1.1.0{DASH}1.1.1: pass (2), "
        f"1.2.0: xfail, 2.0.0{DASH}2.10.0: FAIL (2)"
    ) in out
    assert re.search(rf"test_engine_exists +1\.0\.0{DASH}2\.10\.0: pass \(6\)", out)


def test_drift_names_last_pass_first_fail_fix_and_shows_the_upstream_diff(project, capsys):
    _, out = report(capsys, str(run_json(project)))
    assert (
        "DRIFT toy test_run_takes_num_items_in_batch: last pass 1.1.1, first fail 2.0.0, "
        "failing through 2.10.0"
    ) in out
    assert "fix at risk: chunked NLL loss" in out
    assert "upstream: Engine.run changed between 1.1.1 and 2.0.0" in out
    assert "--- toy/core.py:2 Engine.run @ 1.1.1" in out
    assert "-    def run(self, steps, *, num_items_in_batch=None):" in out
    assert "+    def run(self, steps):" in out
    assert "+        return steps" in out


def test_a_vanished_file_is_said_not_diffed(project, capsys):
    Cache(Path(os.environ["CANARY_CACHE_DIR"])).write_file(
        FileKey("index", "toy", "2.0.0", "toy/core.py"), None
    )
    _, out = report(capsys, str(run_json(project)))
    assert "upstream: toy/core.py no longer exists in 2.0.0 (it did in 1.1.1)" in out


def test_markdown_is_a_table_with_the_diff_folded_away(project, capsys):
    _, out = report(capsys, str(run_json(project)), "--format", "markdown")
    assert out.startswith("## canary: drift found")
    assert "| check | fix | outcomes in version order |" in out
    assert (
        f"`1.1.0{DASH}1.1.1` ✅ pass (2) · `1.2.0` ⚠️ xfail · `2.0.0{DASH}2.10.0` ❌ fail (2)" in out
    )
    assert "<details><summary>upstream diff</summary>" in out
    assert "```diff\n--- toy/core.py:2 Engine.run @ 1.1.1" in out


def test_github_format_is_one_escaped_error_annotation_per_drift(project, capsys):
    status, out = report(capsys, str(run_json(project)), "--format", "github", "--no-diff")
    assert status == 1
    errors = [line for line in out.splitlines() if line.startswith("::error")]
    assert len(errors) == 1
    assert errors[0].startswith(
        f"::error file=test_toy.py,line=7,title=canary drift%3A toy 2.0.0{DASH}2.10.0 breaks the "
        "fix 'chunked NLL loss'::test_run_takes_num_items_in_batch: last pass 1.1.1"
    )
    assert "%0A" in errors[0]
    assert "\n" not in errors[0]


def test_json_format_carries_spans_drift_and_diff(project, capsys):
    _, out = report(capsys, str(run_json(project)), "--format", "json")
    data = json.loads(out)
    assert data["exit_status"] == 1
    assert data["counts"] == {"pass": 8, "fail": 2, "skip": 1, "xfail": 1, "error": 0}
    checks = {c["check"]: c for c in data["packages"]["toy"]["checks"]}
    spans = checks["test_run_takes_num_items_in_batch"]["spans"]
    assert [(s["outcome"], s["from"], s["to"], s["count"]) for s in spans] == [
        ("skip", "1.0.0", "1.0.0", 1),
        ("pass", "1.1.0", "1.1.1", 2),
        ("xfail", "1.2.0", "1.2.0", 1),
        ("fail", "2.0.0", "2.10.0", 2),
    ]
    (drift,) = data["drift"]
    assert (drift["last_pass"], drift["first_fail"]) == ("1.1.1", "2.0.0")
    assert "+    def run(self, steps):" in drift["upstream_diff"]


def test_all_clear_exits_0(project, capsys):
    status, out = report(capsys, str(run_json(project, "--canary-tags=toy=1.1.0,1.1.1")))
    assert status == 0
    assert out.startswith("canary: all clear: 2 checks, 4 cases (4 pass)")


def test_an_infrastructure_error_exits_2_and_is_shown_once(project, capsys):
    status, out = report(capsys, str(run_json(project, "--canary-tags=toy=1.1.0,3.0.0")))
    assert status == 2
    assert (
        "ERROR in 2 case(s), e.g. test_toy.py::test_run_takes_num_items_in_batch[toy_3_0_0]" in out
    )
    assert "OfflineMiss: --canary-offline: toy 3.0.0" in out


def test_exit_zero_keeps_the_report_but_not_the_verdict(project, capsys):
    status, out = report(capsys, str(run_json(project)), "--exit-zero", "--no-diff")
    assert status == 0
    assert "DRIFT toy" in out


def test_a_local_tree_run_merges_in_as_its_own_column(project, capsys, tmp_path):
    releases = run_json(project, "--canary-tags=toy=1.1.0,1.1.1")
    releases = releases.rename(releases.with_name("releases.json"))
    tree = tmp_path / "tree"
    (tree / "toy").mkdir(parents=True)
    (tree / "toy" / "core.py").write_bytes(DRIFTED)
    (tree / "toy" / "__init__.py").write_text("")
    local = run_json(project, f"--canary-local=toy@1.2.0.dev0={tree}")
    status, out = report(capsys, str(releases), str(local))
    assert status == 1
    assert f"1.1.0{DASH}1.1.1: pass (2), 1.2.0.dev0 (local): FAIL" in out
    assert "last pass 1.1.1, first fail 1.2.0.dev0 (local)" in out
    assert "+    def run(self, steps):" in out


def test_a_missing_or_foreign_results_file_is_exit_2_with_what_to_do(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path / "none.json")]) == 2
    assert "no such results file; write it with `pytest canary --canary-json PATH`" in (
        capsys.readouterr().err
    )
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"schema": "other"}')
    assert cli.main(["report", str(foreign)]) == 2
    assert "expected schema 'canary-results/1', found 'other'" in capsys.readouterr().err


def test_no_cases_or_an_interrupted_run_is_never_all_clear():
    case = CaseResult("toy", "1.0.0", "index", "t", "t.py::t[toy_1_0_0]", "pass", "f", "", (), "")
    assert exit_status(RunResults(cases=[])) == 2
    assert exit_status(RunResults(cases=[case], exitstatus=2)) == 2
    assert exit_status(RunResults(cases=[case], exitstatus=0)) == 0
    assert exit_status(RunResults(cases=[case, _with(case, outcome="fail")], exitstatus=1)) == 1


def _with(case: CaseResult, **changes: object) -> CaseResult:
    import dataclasses

    return dataclasses.replace(case, **changes)


def test_load_rejects_an_unknown_outcome(tmp_path):
    path = tmp_path / "bad.json"
    entry = {"package": "toy", "label": "1", "source": "index", "check": "t", "nodeid": "n",
             "outcome": "maybe", "fix": "f", "reads": []}  # fmt: skip
    path.write_text(json.dumps({"schema": "canary-results/1", "cases": [entry]}))
    with pytest.raises(Exception, match="outcome 'maybe' of n is not one of"):
        load([path])


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_progress_counts_files_and_megabytes_and_ends_when_the_plan_is_read():
    stats = Stats()
    plan = {Case("toy", "1.0.0", "index"): {"a.py", "b.py"}, Case("two", "1", "index"): {"c"}}
    stream = _Stream(tty=True)
    shown = Progress(stats, plan, stream, interval=0.01, delay=0.0)
    assert shown.line().startswith("canary: 2 releases of 2 package(s): 0/3 files, 0.0 MB")
    shown.start()
    stats.add(files_fetched=2, bytes_downloaded=5_000_000)
    stats.add(files_from_cache=1)
    shown._thread.join(timeout=5)
    assert not shown._thread.is_alive()
    assert "3/3 files, 5.0 MB downloaded" in shown.line()


def test_progress_draws_below_pytests_row_returns_to_its_column_and_is_erased_at_the_end():
    stats = Stats()
    stream = _Stream(tty=True)
    plan = {Case("toy", "1.0.0", "index"): {"a.py"}}
    shown = Progress(stats, plan, stream, interval=0.01, delay=0.0, column=lambda: 17)
    shown.start()
    stats.add(files_fetched=1)
    shown._thread.join(timeout=5)
    draws = stream.getvalue().split("\n")[1:]  # each draw starts by going down a row
    assert draws, "nothing was drawn"
    # Every draw erases the row below, writes there, and goes back up to column 17,
    # where pytest's dots continue; the last one leaves that row erased.
    for draw in draws[:-1]:
        assert draw.startswith("\x1b[2Kcanary: 1 releases")
        assert draw.endswith("\x1b[1A\r\x1b[17C")
    assert draws[-1] == "\x1b[2K\x1b[1A\r\x1b[17C"


def test_progress_in_a_log_starts_its_own_line_after_a_row_of_dots():
    stats = Stats()
    stream = _Stream(tty=False)
    shown = Progress(stats, {Case("toy", "1.0.0", "index"): {"a.py"}}, stream, column=lambda: 5)
    shown._draw(final=False)
    assert stream.getvalue() == "\n" + shown.line() + "\n"


def test_progress_stays_silent_when_everything_was_cached():
    stats = Stats()
    stream = _Stream(tty=True)
    shown = Progress(stats, {Case("toy", "1.0.0", "index"): {"a.py"}}, stream, delay=0.05)
    stats.add(files_from_cache=1)
    shown.start()
    shown._thread.join(timeout=5)
    assert stream.getvalue() == ""


def test_progress_is_off_in_ci_and_off_the_terminal_unless_asked(monkeypatch):
    from canary.plugin.progress import wanted

    monkeypatch.setenv("CI", "true")
    assert not wanted("auto", _Stream(tty=True))
    assert wanted("on", _Stream(tty=False))
    monkeypatch.delenv("CI")
    assert wanted("auto", _Stream(tty=True))
    assert not wanted("auto", _Stream(tty=False))
    assert not wanted("off", _Stream(tty=True))


def test_tags_new_prints_pytest_arguments_for_unlisted_releases(tmp_path, monkeypatch, capsys):
    tags = tmp_path / "tags.toml"
    tags.write_text(TAGS)
    monkeypatch.setattr(
        cli, "stable_releases", lambda package, floor: ["1.0.0", "2.10.0", "2.11.0", "3.0.0"]
    )
    assert cli.main(["tags", "--file", str(tags), "--new"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "--canary-tags=toy=2.11.0,3.0.0",
        "-k",
        "toy_2_11_0 or toy_3_0_0",
    ]
    monkeypatch.setattr(cli, "stable_releases", lambda package, floor: ["1.0.0"])
    assert cli.main(["tags", "--file", str(tags), "--new"]) == 0
    assert capsys.readouterr().out == ""


def test_a_module_level_subject_is_diffed_as_its_binding():
    """A check about a module-level name (``__version__``, an import) is diffed as the
    statement that binds it, not called missing."""
    from canary.codeindex import parse_module
    from canary.errors import Subject
    from canary.report.diff import _diff_subject

    old = parse_module(b'__version__ = "1.0"\nfrom .x import helper\n', path="toy/__init__.py")
    new = parse_module(b"from importlib.metadata import version\n", path="toy/__init__.py")
    changed = _diff_subject(Subject("toy/__init__.py", "__version__"), old, new, "1.0", "2.0")
    assert "-__version__ = '1.0'" in changed.diff  # normalised text
    assert changed.note == "__version__ is gone from toy/__init__.py in 2.0"
    moved = parse_module(b"from .y import helper\n", path="toy/__init__.py")
    imported = _diff_subject(Subject("toy/__init__.py", "helper"), old, moved, "1.0", "2.0")
    assert "-from .x import helper" in imported.diff
    assert "+from .y import helper" in imported.diff
    dotted = parse_module(b"import os.path\nimport numpy as np\n", path="toy/__init__.py")
    plain = parse_module(b"", path="toy/__init__.py")
    assert (
        "-import os.path\n"
        in _diff_subject(Subject("toy/__init__.py", "os"), dotted, plain, "1", "2").diff
    )
    assert (
        "-import numpy as np\n"
        in _diff_subject(Subject("toy/__init__.py", "np"), dotted, plain, "1", "2").diff
    )


def test_a_long_upstream_diff_is_cut_in_the_terminal_saying_how_much_is_left_and_where():
    diff = "\n".join(f"+line {i}" for i in range(5))
    assert diff_excerpt(diff, 5, "--format json") == [f"    +line {i}" for i in range(5)]
    cut = diff_excerpt(diff, 2, "--format json")
    more = "    ... 3 more lines (--format json has them all)"
    assert cut == ["    +line 0", "    +line 1", more]
