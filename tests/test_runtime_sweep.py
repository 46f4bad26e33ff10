"""The sweep's machinery offline: overlays resolved against a fake uv, JUnit into cases,
the results file the report reads, --local trees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from runtime_fakes import make_set

from canary.errors import ConfigError
from canary.report.results import load
from canary.runtime.installer import Installer
from canary.runtime.overlay import ensure_overlay
from canary.runtime.process import Command, Completed
from canary.runtime.sweep import (
    ReleaseResult,
    Status,
    Target,
    junit_cases,
    local_target,
    plan,
    shard,
    spread,
    write_json,
)
from canary.runtime.sweepenv import environment_for
from canary.runtime.venv import venv_python

SETS = [make_set("oldest", transformers="4.57.6", trl="0.25.1", peft="0.18.0")]
VERSIONS = {"transformers": ["4.57.5", "4.57.6", "5.0.0"], "trl": ["0.25.1"]}


def no_requirements(name: str, version: str) -> list[Requirement]:
    return []


def env_for(release: str = "5.0.0", **kw):
    return environment_for("transformers", release, SETS, no_requirements, VERSIONS["transformers"])


class FakeUv:
    """Plays the base venv's python (its distributions) and uv pip compile/install."""

    def __init__(self, resolved: str, installed: dict[str, str], compile_rc: int = 0) -> None:
        self.resolved = resolved
        self.installed = installed
        self.compile_rc = compile_rc
        self.calls: list[Command] = []

    def __call__(self, command: Command) -> Completed:
        self.calls.append(command)
        argv = command.argv
        if "-c" in argv and "compile" not in argv:
            return Completed(0, json.dumps(self.installed))
        if "compile" in argv:
            with_constraints = "-c" in argv
            if with_constraints and self.compile_rc:
                return Completed(self.compile_rc, "no solution")
            return Completed(0, self.resolved)
        if "install" in argv:
            target = Path(argv[argv.index("--target") + 1])
            for spec in argv:
                if "==" in spec:
                    name = spec.split("==")[0].replace("-", "_")
                    (target / name).mkdir()
                    (target / name / "__init__.py").write_text("")
            return Completed(0, "")
        raise AssertionError(argv)


def base_venv(tmp_path: Path) -> Path:
    base = tmp_path / "oldest-abc"
    venv_python(base).parent.mkdir(parents=True, exist_ok=True)
    venv_python(base).write_text("")
    return base


INSTALLED = {"torch": "2.13.0+cpu", "transformers": "4.57.6", "tokenizers": "0.22.1",
             "numpy": "2.3.0", "trl": "0.25.1"}  # fmt: skip


def test_overlay_holds_only_what_the_resolution_changes(tmp_path):
    resolved = "numpy==2.3.0\ntokenizers==0.22.2\ntorch==2.13.0\ntransformers==5.0.0\n"
    uv = FakeUv(resolved, INSTALLED)
    overlay = ensure_overlay(env_for(), base_venv(tmp_path), installer=Installer("uv"),
                             run=uv, environ={})  # fmt: skip
    # torch is pinned by the set (never overlaid); numpy is the base's own version.
    assert overlay.packages == {"tokenizers": "0.22.2", "transformers": "5.0.0"}
    install = next(c for c in uv.calls if "install" in c.argv)
    assert "--no-deps" in install.argv
    assert not overlay.reused
    again = ensure_overlay(env_for(), base_venv(tmp_path), installer=Installer("uv"),
                           run=FakeUv("", {}), environ={})  # fmt: skip
    assert again.reused
    assert again.path == overlay.path


def test_overlay_resolves_without_the_base_preferences_where_they_cannot_hold(tmp_path):
    uv = FakeUv("transformers==5.0.0\n", INSTALLED, compile_rc=1)
    overlay = ensure_overlay(env_for(), base_venv(tmp_path), installer=Installer("uv"),
                             run=uv, environ={})  # fmt: skip
    compiles = [c for c in uv.calls if "compile" in c.argv]
    assert ["-c" in c.argv for c in compiles] == [True, False]
    assert overlay.packages == {"transformers": "5.0.0"}


def test_a_left_out_companion_is_hidden_with_its_reason(tmp_path):
    env = env_for()
    env = type(env)(**{**env.__dict__, "left_out": {"trl": "no pinned trl accepts it"}})
    uv = FakeUv("transformers==5.0.0\n", INSTALLED)
    overlay = ensure_overlay(env, base_venv(tmp_path), installer=Installer("uv"),
                             run=uv, environ={})  # fmt: skip
    probe = (
        "import pytest\n"
        "try:\n    pytest.importorskip('trl')\n"
        "except pytest.skip.Exception as exc:\n    print('skipped:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], check=False, cwd=overlay.path,
                          capture_output=True, text=True)  # fmt: skip
    assert done.stdout.startswith("skipped:"), done.stderr
    assert "trl is left out of this sweep environment: no pinned trl accepts it" in done.stdout


JUNIT = """<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="canary.runtime.test_grad_accum"
 name="test_window_claim_matches_live_state" time="1.5"/>
<testcase classname="canary.runtime.test_trl_sft" name="test_trl_chunked_nll_matches_default"
 time="0.1"><skipped message="trl 0.25.1 has no loss_type"/></testcase>
<testcase classname="canary.runtime.test_chunked_loss"
 name="test_chunked_matches_dense[lora-llama]" time="2">
 <failure message="AssertionError: 0.25 &gt;= 1e-05">trace</failure></testcase>
</testsuite></testsuites>"""


def test_junit_cases_are_runtime_cases_per_release(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text(JUNIT)
    cases = junit_cases(path, Target(env_for("5.0.0")))
    assert [c.outcome for c in cases] == ["pass", "skip", "fail"]
    assert cases[0].nodeid == (
        "runtime[transformers_5_0_0]::canary/runtime/test_grad_accum.py::"
        "test_window_claim_matches_live_state"
    )
    assert cases[2].check == "runtime test_chunked_loss::test_chunked_matches_dense[lora-llama]"
    assert cases[2].message.startswith("AssertionError")
    assert {c.label for c in cases} == {"5.0.0"}


def test_results_file_folds_into_the_report_and_a_missing_environment_is_an_error(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text(JUNIT)
    ok = Target(env_for("5.0.0"))
    broken = Target(env_for("4.57.5"))
    results = [
        ReleaseResult(ok, Status.FAILED, cases=junit_cases(path, ok)),
        ReleaseResult(broken, Status.NO_ENVIRONMENT, detail="no pinned peft accepts it"),
    ]
    out = tmp_path / "sweep.json"
    write_json(out, results, exitstatus=1)
    run = load([out])
    assert run.columns("transformers") == [("4.57.5", "index"), ("5.0.0", "index")]
    missing = [c for c in run.cases if c.label == "4.57.5"]
    assert [c.outcome for c in missing] == ["error"]
    assert "no pinned peft" in missing[0].message


def test_plan_counts_positions_in_the_whole_list_when_narrowed():
    sets = [make_set("low", transformers="4.57.5"), make_set("high", transformers="5.0.0")]
    full = plan(["transformers"], VERSIONS, sets, no_requirements)
    narrowed = plan(["transformers"], VERSIONS, sets, no_requirements, frozenset({"4.57.6"}))
    assert [t.env.release for t in narrowed] == ["4.57.6"]
    assert narrowed[0].env.base.name == full[1].env.base.name == "low"
    with pytest.raises(ConfigError, match=r"--sweep nothing: not a package of tags\.toml"):
        plan(["nothing"], VERSIONS, sets, no_requirements)


def test_spread_keeps_each_window_ends():
    sets = [make_set("low", transformers="4.57.5"), make_set("high", transformers="5.0.0")]
    versions = {"transformers": ["4.57.4", "4.57.5", "4.57.6", "4.58.0", "5.0.0", "5.1.0"]}
    targets = plan(["transformers"], versions, sets, no_requirements)
    bases = [t.env.base.name for t in targets]
    assert bases == ["low", "low", "low", "high", "high", "high"]
    kept = [t.env.release for t in spread(targets)]
    assert kept == ["4.57.4", "4.57.6", "4.58.0", "5.1.0"]


def test_shards_interleave_and_cover_every_release_once():
    targets = plan(["transformers"], VERSIONS, SETS, no_requirements)
    slices = [shard(targets, f"{k}/2") for k in (1, 2)]
    assert [t.env.release for t in slices[0]] == ["4.57.5", "5.0.0"]
    assert [t.env.release for t in slices[1]] == ["4.57.6"]
    for bad in ("0/2", "3/2", "2", "a/b"):
        with pytest.raises(ConfigError, match="--shard"):
            shard(targets, bad)


def test_local_tree_in_src_layout_with_its_version(tmp_path):
    (tmp_path / "src" / "transformers").mkdir(parents=True)
    (tmp_path / "src" / "transformers" / "__init__.py").write_text('__version__ = "5.1.0.dev0"\n')
    target = local_target(f"transformers={tmp_path}", VERSIONS, SETS, no_requirements,
                          lambda package, tree: "5.1.0.dev0")  # fmt: skip
    assert target.local == (tmp_path / "src").resolve()
    assert target.env.release == "5.1.0.dev0"
    stated = local_target(f"transformers@5.0.0={tmp_path}", VERSIONS, SETS, no_requirements,
                          lambda package, tree: pytest.fail("stated"))  # fmt: skip
    assert stated.env.release == "5.0.0"
    with pytest.raises(ConfigError, match=r"no transformers/__init__\.py"):
        local_target(f"transformers={tmp_path / 'src' / 'transformers'}", VERSIONS, SETS,
                     no_requirements, lambda p, t: "1")  # fmt: skip


def _behaviour_tests() -> set[str]:
    """``<module>.py::<test>`` of every runtime test that carries the behaviour mark: on
    the function, its module (``pytestmark``) or one of its parameters."""
    import ast

    found = set()
    for path in sorted((Path(__file__).parents[1] / "canary" / "runtime").glob("test_*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        module_marked = any(
            isinstance(node, ast.Assign)
            and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
            and "behaviour" in ast.unparse(node.value)
            for node in tree.body
        )
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                marks = " ".join(ast.unparse(d) for d in node.decorator_list)
                if module_marked or "behaviour" in marks:
                    found.add(f"{path.name}::{node.name}")
    return found


def test_every_check_backed_by_a_behaviour_test_names_one_that_exists():
    import ast

    behaviour = _behaviour_tests()
    named = {}
    for path in sorted((Path(__file__).parents[1] / "canary" / "checks").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                for keyword in getattr(decorator, "keywords", []):
                    if keyword.arg == "backed_by":
                        value = ast.literal_eval(keyword.value)
                        tests = (value,) if isinstance(value, str) else value
                        named.update({f"{path.name}::{node.name}::{t}": t for t in tests})
    assert len(named) >= 10  # the annotations are there
    unknown = sorted(key for key, test in named.items() if test not in behaviour)
    assert not unknown
    assert len(behaviour) >= 8


class FakeStack:
    """Plays uv (venv, install, compile), the venv's python and pytest for :func:`sweep`."""

    def __init__(self, junit: str = JUNIT) -> None:
        self.junit = junit
        self.pytest_env: list[dict] = []

    def __call__(self, command: Command) -> Completed:
        argv = command.argv
        if "venv" in argv:
            venv_python(Path(argv[-1])).parent.mkdir(parents=True)
            venv_python(Path(argv[-1])).write_text("")
            return Completed(0, "")
        if "compile" in argv:
            return Completed(0, "transformers==5.0.0\n")
        if "install" in argv:
            if "--target" in argv:
                (Path(argv[argv.index("--target") + 1]) / "transformers").mkdir()
            return Completed(0, "")
        if "-c" in argv:  # the pin probe (names follow the script) or the overlay's listing
            names = argv[argv.index("-c") + 2 :]
            found = {n: v for n, v in SETS[0].pins.items() if not names or n in names}
            return Completed(0, json.dumps(found))
        if "pytest" in argv:
            self.pytest_env.append(dict(command.env or {}))
            junit = next(a for a in argv if a.startswith("--junitxml=")).split("=", 1)[1]
            Path(junit).write_text(self.junit)
            return Completed(1, "1 failed")
        raise AssertionError(argv)


def sweep_context(tmp_path: Path, run, **kw):
    from canary.runtime.sweep import SweepContext
    from canary.runtime.venv import Python

    return SweepContext(
        root=tmp_path / "venvs", reports=tmp_path / "reports", repo=tmp_path,
        python=Python("/usr/bin/python3", "3.11.7"), installer=Installer("uv"),
        project={"name": "canary"}, run=run, environ={}, log=lambda m: None, **kw,
    )  # fmt: skip


def test_sweep_builds_one_base_overlays_each_release_and_reads_the_cases(tmp_path):
    from canary.runtime.sweep import sweep

    run = FakeStack()
    targets = [Target(env_for("5.0.0")), Target(env_for("4.57.5"))]
    results = sweep(targets, sweep_context(tmp_path, run, keep_overlays=False))
    assert [r.status for r in results] == [
        Status.FAILED,
        Status.FAILED,
    ]  # the JUnit holds a failure
    assert [r.base_built for r in results] == [True, False]  # one base for both
    assert "test_chunked_matches_dense[lora-llama]" in results[0].detail
    overlay_path = Path(run.pytest_env[0]["PYTHONPATH"])
    assert overlay_path.parent.name == "overlays"
    assert not overlay_path.exists()  # dropped after its run
    assert run.pytest_env[0]["HF_HUB_OFFLINE"] == "1"


def test_a_release_without_environment_is_reported_not_run(tmp_path):
    from canary.runtime.sweep import sweep

    run = FakeStack()
    env = env_for()
    broken = Target(type(env)(**{**env.__dict__, "problem": "no pinned peft accepts it"}))
    [result] = sweep([broken], sweep_context(tmp_path, run))
    assert result.status is Status.NO_ENVIRONMENT
    assert not run.pytest_env
