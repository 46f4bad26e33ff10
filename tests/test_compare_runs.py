"""bench/compare_runs.py: the same run under two Pythons, compared case by case."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import compare_runs


def results(path: Path, outcomes: dict[str, str], duration: float = 0.1) -> Path:
    cases = [
        {
            "package": "transformers",
            "label": "5.5.4",
            "source": "index",
            "check": nodeid.split("::")[-1],
            "nodeid": nodeid,
            "outcome": outcome,
            "fix": "a fix",
            "message": "" if outcome == "pass" else "upstream drift",
            "reads": [],
            "window": "",
            "duration": duration,
        }
        for nodeid, outcome in outcomes.items()
    ]
    path.write_text(json.dumps({"schema": "canary-results/1", "cases": cases}))
    return path


def test_the_same_verdicts_at_other_speeds_are_identical(tmp_path, capsys):
    same = {"c.py::a[t]": "pass", "c.py::b[t]": "fail"}
    left = results(tmp_path / "3.11.json", same)
    right = results(tmp_path / "3.10.json", same, duration=9.0)
    assert compare_runs.main([str(left), str(right)]) == 0
    assert "identical: 2 cases" in capsys.readouterr().out


def test_a_case_whose_outcome_differs_or_is_missing_is_listed(tmp_path, capsys):
    left = results(tmp_path / "3.11.json", {"c.py::a[t]": "fail", "c.py::b[t]": "pass"})
    right = results(tmp_path / "3.10.json", {"c.py::a[t]": "pass"})
    assert compare_runs.main([str(left), str(right)]) == 1
    out = capsys.readouterr().out
    assert "2 of 2 cases differ" in out
    assert "c.py::a[t]: fail" in out
    assert "c.py::b[t]: only in 3.11.json" in out


def test_surface_outcomes_compared_per_reference(tmp_path):
    reference = {"package": "trl", "target": "trl.X", "kind": "import", "anchor": None}
    left, right = tmp_path / "a.json", tmp_path / "b.json"
    left.write_text(json.dumps({"references": [{**reference, "outcomes": {"1.0": "ok"}}]}))
    right.write_text(json.dumps({"references": [{**reference, "outcomes": {"1.0": "missing"}}]}))
    assert compare_runs.main(["--surface", str(left), str(left)]) == 0
    assert compare_runs.main(["--surface", str(left), str(right)]) == 1
    assert compare_runs.main([str(tmp_path / "none.json"), str(left)]) == 2
