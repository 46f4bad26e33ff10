"""The tier's JUnit XML counted by outcome."""

from __future__ import annotations

import pytest
from runtime_fakes import JUNIT

from canary.errors import InfrastructureError
from canary.runtime.junit import parse_junit


def test_parse_junit_counts_each_case_once(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text(JUNIT)
    counts = parse_junit(path)
    assert (counts.passed, counts.failed, counts.skipped, counts.errors) == (2, 2, 2, 1)
    assert counts.problems[0] == (
        "FAILED canary.runtime.test_a::test_bad: AssertionError: 1.0 != 2.0"
    )
    assert counts.problems[1].startswith("ERROR canary.runtime.test_b::test_fixture")


def test_parse_junit_bare_testsuite_and_garbage(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text('<testsuite><testcase classname="c" name="t"/></testsuite>')
    assert parse_junit(path).passed == 1
    path.write_text("<testsuite>")
    with pytest.raises(InfrastructureError, match="no readable JUnit XML"):
        parse_junit(path)
    with pytest.raises(InfrastructureError):
        parse_junit(tmp_path / "missing.xml")
