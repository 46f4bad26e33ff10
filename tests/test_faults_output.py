"""What a run prints when things go wrong: one line per error, the verdict last, and what an
interrupted or empty run proves (nothing).

Runs the toy catalog of test_plugin, its releases served from a cache filled there and
read with ``--canary-offline``, so nothing touches the network.
"""

from __future__ import annotations

import json
import re

import pytest
from test_plugin import cache_dir, project, run  # noqa: F401 (fixtures)

from canary import cli
from canary.errors import FetchError
from canary.report.verdict import CaseError, describe, group_errors

pytest_plugins = ["pytester"]

MISSING = "--canary-tags=toy=3.0.0,3.1.0"  # not in the cache: offline misses, 2 checks each


def _error_sections(output: str) -> list[list[str]]:
    """Each "ERROR at setup of ..." section's lines, header excluded."""
    errors = re.split(r"\n-+ canary -+\n", output.split("= ERRORS =", 1)[1], maxsplit=1)[0]
    sections = re.split(r"\n_+ ERROR at setup of [^\n]+ _+\n", errors)[1:]
    return [section.strip("\n").splitlines() for section in sections]


def test_canary_errors_are_one_line_each_in_their_section_and_the_short_summary(project):  # noqa: F811
    result = run(project, MISSING, "-rE")
    result.assert_outcomes(errors=2, skipped=2)
    sections = _error_sections(result.stdout.str())
    assert [len(lines) for lines in sections] == [1, 1]
    assert all(lines[0].startswith("OfflineMiss: --canary-offline: toy 3.") for lines in sections)
    result.stdout.fnmatch_lines(["ERROR test_toy.py::*[[]toy_3_0_0] - OfflineMiss*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("asked", ["--tb=long", "-v"])
def test_the_traceback_is_still_there_when_asked_for(project, asked):  # noqa: F811
    result = run(project, MISSING, asked)
    result.assert_outcomes(errors=2, skipped=2)
    # The fetch's own frames, where the miss was found, then the check's.
    result.stdout.fnmatch_lines(
        ["*def _fetch(self*", "E  *OfflineMiss: --canary-offline*", "*direct cause*"]
    )


def test_every_check_of_a_failed_case_gets_a_fresh_error_not_a_longer_traceback(project):  # noqa: F811
    # One case, several checks waiting on its failed fetch: re-raising one exception object
    # would add every raise's frames to it (473 errors made 6.5 MB).
    checks = "\n".join(
        f'''
@check(reads="toy/core.py", fix="chunked NLL loss")
def test_{n}(upstream):
    """Reads toy/core.py."""
    upstream.module("toy/core.py")
'''
        for n in range(6)
    )
    project.makepyfile(
        test_toy="import pytest\nfrom canary.catalog import check\n"
        'pytestmark = pytest.mark.upstream("toy")\n' + checks
    )
    result = run(project, "--canary-tags=toy=3.0.0", "--tb=long")
    result.assert_outcomes(errors=6)
    lengths = [len(lines) for lines in _error_sections(result.stdout.str())]
    assert len(set(lengths)) == 1, lengths


def test_a_fresh_error_keeps_its_kind_message_and_cause():
    first = FetchError("toy 1.0.0: connection refused", cause="connection refused")
    try:
        raise first
    except FetchError:
        pass
    again = first.again()
    assert again is not first
    assert type(again) is FetchError
    assert (again.args, again.cause) == (first.args, first.cause)
    assert again.__traceback__ is None
    assert first.__traceback__ is not None


def test_errors_are_grouped_by_cause_with_counts_and_the_versions_hit():
    errors = [
        *(CaseError("transformers", v, "cannot reach the index") for v in ("5.10.0", "4.46.1")),
        CaseError("transformers", "5.2.0", "cannot reach the index"),
        CaseError("trl", "1.16.0", "cannot reach the index"),
        CaseError("peft", "0.17.1", "ParseError: peft/tuners/lora.py"),
    ]
    assert [describe(group) for group in group_errors(errors)] == [
        "4 errors: cannot reach the index: transformers 4.46.1\N{EN DASH}5.10.0 (3 versions), "
        "trl 1.16.0",
        "1 error: ParseError: peft/tuners/lora.py: peft 0.17.1",
    ]


def test_grouped_errors_list_main_and_commits_after_the_releases_as_the_report_does():
    commit = "a" * 40
    errors = [CaseError("toy", label, "offline") for label in ("main", commit, "1.10.0", "1.2.0")]
    (group,) = group_errors(errors)
    assert group.labels == {"toy": ["1.2.0", "1.10.0", commit, "main"]}


def test_the_verdict_is_the_last_line_and_window_skips_are_counted_not_listed(project):  # noqa: F811
    result = run(project, "-ra")  # what pyproject's addopts give
    result.assert_outcomes(passed=7, skipped=3, xfailed=1, xpassed=1)
    result.stdout.fnmatch_lines(["skipped: 3 outside their check's window (expected)"])
    result.stdout.no_fnmatch_line("SKIPPED*")
    assert re.match(r"=+ 7 passed, 3 skipped, 1 xfailed, 1 xpassed in ", result.outlines[-2])
    assert result.outlines[-1] == (
        "canary: all clear: 7 passed, 3 outside their window, 1 xfailed as known drift"
    )


INTERRUPTS = '''
import pytest
from canary.catalog import check

pytestmark = pytest.mark.upstream("toy")

@check(reads="toy/core.py", fix="chunked NLL loss")
def test_reads_core(upstream):
    """Stands for Ctrl-C on the fourth case."""
    if upstream.case.label == "1.2.0":
        raise KeyboardInterrupt
    upstream.module("toy/core.py")
'''


def test_ctrl_c_says_how_far_it_got_and_that_nothing_is_proven(project, tmp_path):  # noqa: F811
    project.makepyfile(test_toy=INTERRUPTS)
    results = tmp_path / "results.json"
    result = project.runpytest(
        "-p", "no:cacheprovider", "--canary-offline", f"--canary-json={results}",
        no_reraise_ctrlc=True,  # the Ctrl-C is the inner run's, not this session's
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert result.outlines[-1] == "canary: interrupted: 3 of 6 cases run, nothing is proven"
    # The results file of that run says the same, not "infrastructure errors".
    assert cli.main(["report", str(results), "--no-diff"]) == 2


def test_report_of_an_interrupted_or_empty_results_file_says_so(tmp_path, capsys):
    path = tmp_path / "results.json"
    case = {"package": "toy", "label": "1.0.0", "source": "index", "check": "test_a",
            "nodeid": "t.py::test_a", "outcome": "pass", "fix": "f", "reads": []}  # fmt: skip
    interrupted = {"schema": "canary-results/1", "exitstatus": 2, "selected": 40, "cases": [case]}
    path.write_text(json.dumps(interrupted))
    assert cli.main(["report", str(path), "--no-diff"]) == 2
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("canary: interrupted: 1 of 40 cases run, nothing is proven")

    path.write_text(json.dumps({"schema": "canary-results/1", "exitstatus": 0, "cases": []}))
    assert cli.main(["report", str(path), "--no-diff"]) == 2
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("canary: nothing checked: the run recorded no cases")


def test_dash_k_that_selects_nothing_says_so_last(project):  # noqa: F811
    result = run(project, "-k", "transformers_5_5")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert result.outlines[-1] == (
        "canary: nothing checked: -k 'transformers_5_5' selected none of the 12 cases "
        "(ids are <package>_<version>, e.g. transformers_5_5_4, transformers_5_5 for a series)"
    )


def test_a_check_that_crashes_keeps_its_traceback(project):  # noqa: F811
    project.makepyfile(
        test_toy='''
import pytest
from canary.catalog import check

pytestmark = pytest.mark.upstream("toy")

@check(reads="toy/core.py", fix="chunked NLL loss")
def test_reads_core(upstream):
    """A check with a bug in it."""
    upstream.modules["toy/core.py"].nothing_here
'''
    )
    result = run(project, "--canary-tags=toy=1.1.0,2.0.0")
    result.assert_outcomes(failed=2)
    # Not canary's error but a bug in the check: read in its code, so not cut to one line.
    result.stdout.fnmatch_lines(["*def test_reads_core(upstream):*", "E  *AttributeError*"])
    # A crash is no finding about upstream: canary counts it with the errors, by its cause.
    result.stdout.fnmatch_lines(
        ["2 errors: a check crashed: AttributeError: *nothing_here*: toy 1.1.0*2.0.0*"]
    )
    assert result.outlines[-1] == (
        "canary: not everything was checked: 2 error(s), no drift in the rest"
    )


def test_a_check_module_that_does_not_collect_says_nothing_was_checked(project):  # noqa: F811
    project.makepyfile(test_broken="import pytest\nthis is not python\n")
    result = run(project)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert result.outlines[-1] == (
        "canary: nothing checked: 1 error while collecting the checks (see above)"
    )
