"""The surface as pytest cases, end to end through pytester: one item per (target, release)
with the catalog's ids, failing on a reference missing where the target says it works,
skipping outside, never failing on unknown; canary's own fixes gated by their windows.

Extraction and resolution are fakes here (their own tests cover them): the fake resolver
reads the release's file through the run's workspace, from a cache the tests fill.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.version import Version

# Imported before pytester snapshots sys.modules (see tests/test_plugin.py).
import canary.sources.github  # noqa: F401
from canary import cli
from canary.cache import Cache, FileKey
from canary.errors import Subject
from canary.fixes import PROJECT_FIXES
from canary.plugin import surface as surface_plugin
from canary.report.matrix import DASH
from canary.surface.config import ExpectedAbsent, SurfaceConfig
from canary.surface.model import Kind, Outcome, Reference, Site, Target
from canary.tags import load_tags

pytest_plugins = ["pytester"]

TAGS = """
[packages.toy]
repo = "example/toy"
package_dir = "src"
floor = "1.0.0"
anchors = ["1.0.0"]
broken = {}
versions = ["1.0.0", "1.1.0", "1.1.1", "2.0.0", "2.10.0"]

[packages.peft]
repo = "huggingface/peft"
package_dir = "src"
floor = "0.14.0"
anchors = ["0.14.0"]
broken = {}
versions = ["0.14.0", "0.15.0", "0.16.0"]
"""

WITH_ENGINE = b"class Engine:\n    def run(self):\n        pass\n"
WITHOUT = b"class Motor:\n    pass\n"
TUNER = b"class BaseTunerLayer:\n    pass\n"

SURFACE_MODULE = (Path(surface_plugin.__file__).parents[1] / "checks/test_surface.py").read_text()


def ref(target: str, path: str = "proj/patch.py", line: int = 3, **kw) -> Reference:
    package = target.split(".", maxsplit=1)[0]
    return Reference(package, target, kw.pop("kind", Kind.IMPORT), (Site(path, line),), **kw)


PROJECT_REFS = (
    ref("toy.core.Engine"),
    ref("toy.core.dynamic_thing", line=9),  # the fake cannot decide it: unknown
)
OWN_REFS = (ref("peft.tuners.tuners_utils.BaseTunerLayer", "canary/fixes/chunked_loss.py", 201),)


class FakeEngine:
    """Extraction by table, resolution by reading the release's file through the
    workspace: ``toy.core.Engine`` is ok where toy/core.py defines Engine."""

    def __init__(self, own_refs=OWN_REFS, project_refs=PROJECT_REFS) -> None:
        self.own_refs, self.project_refs = own_refs, project_refs
        self.extracted: list[str] = []

    def engine(self) -> surface_plugin.Engine:
        return surface_plugin.Engine(self.open_target, self.extract, self.resolve_case)

    def open_target(self, spec, *, download_dir, offline, **options):
        target = Target("proj", "1.0", {"toy": ">=1.1.0,<2.10"})
        return type(
            "Loaded", (), {"target": target, "root": Path(spec), "files": (), "config": None}
        )

    def extract(self, root, files, *, upstream, **configuration):
        own = (Path(root) / "canary/fixes").is_dir()
        self.extracted.append("canary" if own else "proj")
        assert set(upstream) == {"toy", "peft"}  # tags.toml's packages
        if own:
            assert "canary/fixes/chunked_loss.py" in files
        return self.own_refs if own else self.project_refs

    def resolve_case(self, references, case, workspace):
        decided = {}
        for reference in references:
            module_path, _, name = reference.target.rpartition(".")
            if name == "dynamic_thing":
                decided[reference.key] = (Outcome.UNKNOWN, "built at import time")
                continue
            path = module_path.replace(".", "/") + ".py"
            module = workspace.snapshot(case, [path]).modules[path]
            if module is not None and name in module.classes:
                decided[reference.key] = (Outcome.OK, "")
            else:
                decided[reference.key] = (Outcome.MISSING, f"{path} defines no {name}")
        return decided


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    engine = FakeEngine()
    monkeypatch.setattr(surface_plugin, "default_engine", engine.engine)
    return engine


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path: Path, monkeypatch, fake) -> pytest.Pytester:
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("CANARY_CACHE_DIR", str(cache_dir))
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_surface=SURFACE_MODULE)
    (pytester.path / "proj").mkdir()
    cache = Cache(cache_dir)
    for version in ("1.0.0", "1.1.0", "1.1.1", "2.0.0", "2.10.0"):
        content = WITHOUT if version in ("2.0.0", "2.10.0") else WITH_ENGINE
        cache.write_file(FileKey("index", "toy", version, "toy/core.py"), content)
    for version in ("0.14.0", "0.15.0", "0.16.0"):
        content = WITHOUT if version == "0.16.0" else TUNER
        path = "peft/tuners/tuners_utils.py"
        cache.write_file(FileKey("index", "peft", version, path), content)
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest("-p", "no:cacheprovider", "--canary-offline", "-rsx", *args)


def outcomes_by_id(result: pytest.RunResult) -> dict[str, str]:
    found = {}
    for line in result.outlines:
        for word in ("PASSED", "FAILED", "SKIPPED"):
            if line.startswith("test_surface.py::test_surface[") and f" {word}" in line:
                found[line.split("[", 1)[1].split("]", 1)[0]] = word
    return found


def test_one_case_per_target_and_release_with_the_catalogs_ids(project, fake):
    result = run(project, "--canary-surface", "proj", "--collect-only", "-q")
    ids = [line.split("[", 1)[1].rstrip("]") for line in result.outlines if "[" in line]
    releases = ["toy_1_0_0", "toy_1_1_0", "toy_1_1_1", "toy_2_0_0", "toy_2_10_0"]
    releases += ["peft_0_14_0", "peft_0_15_0", "peft_0_16_0"]
    assert ids == [f"canary-{r}" for r in releases] + [f"proj-{r}" for r in releases]
    assert fake.extracted == []  # collecting extracts nothing: -k and --collect-only stay fast


def test_dash_k_selects_one_series_of_releases(project):
    result = run(project, "--canary-surface", "proj", "-k", "toy_1_1", "--collect-only", "-q")
    assert [line for line in result.outlines if "::" in line] == [
        "test_surface.py::test_surface[canary-toy_1_1_0]",
        "test_surface.py::test_surface[canary-toy_1_1_1]",
        "test_surface.py::test_surface[proj-toy_1_1_0]",
        "test_surface.py::test_surface[proj-toy_1_1_1]",
    ]


def test_a_miss_inside_the_declared_range_fails_naming_site_target_and_what_is_there(
    project, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "160")  # -v cuts a skip's reason to the terminal's width
    result = run(project, "--canary-surface", "proj", "-k", "proj-toy", "-v")
    assert outcomes_by_id(result) == {
        "proj-toy_1_0_0": "SKIPPED",  # below >=1.1.0: not held against it
        "proj-toy_1_1_0": "PASSED",
        "proj-toy_1_1_1": "PASSED",
        "proj-toy_2_0_0": "FAILED",  # inside the range, Engine is gone
        "proj-toy_2_10_0": "SKIPPED",  # above <2.10
    }
    assert result.ret == 1
    # -v shows why a case was skipped: the release is outside the target's declared range.
    result.stdout.fnmatch_lines(["*proj-toy_1_0_0*SKIPPED (toy 1.0.0 is outside proj's decl*"])
    result.stdout.fnmatch_lines(
        [
            "*canary surface: proj 1.0 on toy 2.0.0: 1 reference(s) missing inside its "
            "declared range (toy>=1.1.0,<2.10):",
            "*  proj/patch.py:3 uses toy.core.Engine (import): toy/core.py defines no Engine",
        ]
    )
    # The undecidable reference is never reported as missing.
    assert "dynamic_thing" not in result.stdout.str()
    reasons = skip_reasons(
        project, "--canary-surface", "proj", "-k", "proj-toy_1_0 or proj-toy_2_1"
    )
    assert reasons == {
        "proj-toy_1_0_0": "toy 1.0.0 is outside proj's declared range (toy>=1.1.0,<2.10): "
        "outside the window of its requirement",
        "proj-toy_2_10_0": "toy 2.10.0 is outside proj's declared range (toy>=1.1.0,<2.10): "
        "outside the window of its requirement",
    }


def test_a_package_the_target_declares_nothing_on_counts_on_every_release(project, monkeypatch):
    tuner = ref("peft.tuners.tuners_utils.BaseTunerLayer")
    engine = FakeEngine(project_refs=(tuner,))
    monkeypatch.setattr(surface_plugin, "default_engine", engine.engine)
    result = run(project, "--canary-surface", "proj", "-k", "proj-peft", "-v")
    assert outcomes_by_id(result) == {
        "proj-peft_0_14_0": "PASSED",
        "proj-peft_0_15_0": "PASSED",
        "proj-peft_0_16_0": "FAILED",  # proj requires nothing of peft, and imports it
    }


def skip_reasons(project: pytest.Pytester, *args: str) -> dict[str, str]:
    recorded = project.inline_run("-p", "no:cacheprovider", "--canary-offline", *args)
    return {
        report.nodeid.split("[", 1)[1].rstrip("]"): report.longrepr[2].removeprefix("Skipped: ")
        for report in recorded.getreports("pytest_runtest_logreport")
        if report.skipped
    }


def test_each_target_is_extracted_once_per_run(project, fake):
    run(project, "--canary-surface", "proj", "-k", "toy")
    assert sorted(fake.extracted) == ["canary", "proj"]


def test_canarys_own_fixes_are_checked_inside_each_fixs_window(project):
    result = run(project, "-k", "canary-peft", "-v")
    assert outcomes_by_id(result) == {
        "canary-peft_0_14_0": "SKIPPED",  # below the chunked loss fix's peft window
        "canary-peft_0_15_0": "PASSED",
        "canary-peft_0_16_0": "FAILED",
    }
    result.stdout.fnmatch_lines(
        [
            "*canary surface: canary * on peft 0.16.0: 1 reference(s) missing inside its "
            "fixes' windows:",
            "*  canary/fixes/chunked_loss.py:201 (breaks the fix 'chunked NLL loss') uses "
            "peft.tuners.tuners_utils.BaseTunerLayer (import): peft/tuners/tuners_utils.py "
            "defines no BaseTunerLayer",
        ]
    )
    assert skip_reasons(project, "-k", "canary-peft_0_14") == {
        "canary-peft_0_14_0": "outside the window of every canary fix using peft"
    }


def test_own_code_using_a_package_no_fix_declares_is_a_finding_on_every_release(
    project, monkeypatch
):
    # grad_accum_clamp's fix declares transformers only; here its module reaches into peft.
    stray = ref("peft.tuners.tuners_utils.BaseTunerLayer", "canary/fixes/grad_accum_clamp.py", 7)
    engine = FakeEngine(own_refs=(stray,))
    monkeypatch.setattr(surface_plugin, "default_engine", engine.engine)
    result = run(project, "-k", "canary-peft", "-v")
    assert set(outcomes_by_id(result).values()) == {"FAILED"}  # 0.14.0 too: not a skip
    result.stdout.fnmatch_lines(
        [
            "*canary surface: canary * uses peft outside every fix's window (1 reference(s)); "
            "declare the window in canary/fixes/registry.py:",
            "*  canary/fixes/grad_accum_clamp.py:7: fix 'gradient accumulation clamp' declares "
            "no peft window uses peft.tuners.tuners_utils.BaseTunerLayer (import)",
        ]
    )


def test_a_package_the_target_does_not_use_is_skipped_as_outside_and_not_listed(project):
    result = run(project, "-k", "canary-toy")
    result.assert_outcomes(skipped=5)
    assert "SKIPPED [" not in result.stdout.str()  # window skips are counted, not listed
    assert set(skip_reasons(project, "-k", "canary-toy").values()) == {
        "outside the window of canary: it uses nothing of toy"
    }


def test_a_failing_extraction_is_an_error_of_each_case_tried_once(project, monkeypatch):
    from canary.errors import OfflineMiss

    tried = []

    class Broken(FakeEngine):
        def open_target(self, spec, *, download_dir, offline, **options):
            tried.append(spec)
            raise OfflineMiss(f"--canary-offline: {spec} is not in {download_dir.name}")

    monkeypatch.setattr(surface_plugin, "default_engine", Broken().engine)
    result = run(project, "--canary-surface", "proj==1.0", "-k", "proj-toy_1_1")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["*OfflineMiss: --canary-offline: proj==1.0 is not in surface-targets*"]
    )
    assert tried == ["proj==1.0"]  # the second case fails fast with the same reason


NO_SUCH_VERSION_PIP = """
import sys
requirement = sys.argv[-1]
sys.stderr.write("ERROR: Could not find a version that satisfies the requirement "
                 + requirement + " (from versions: 1.0)\\n"
                 "ERROR: No matching distribution found for " + requirement + "\\n")
sys.exit(1)
"""


def test_a_targets_failed_download_is_grouped_under_the_targets_name(
    project, monkeypatch, tmp_path
):
    # every case of the target errs with it: the group must not read as toy's failure
    from fake_pip import install_fake_pip

    from canary.surface.targets import open_target

    install_fake_pip(tmp_path, monkeypatch, NO_SUCH_VERSION_PIP)

    class Real(FakeEngine):
        def open_target(self, spec, **options):
            return open_target(spec, **options)

    monkeypatch.setattr(surface_plugin, "default_engine", Real().engine)
    result = project.runpytest(
        "-p", "no:cacheprovider", "--canary-surface", "proj==9.9", "-k", "proj-toy_1_1"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "2 errors: target proj==9.9: no wheel of that version of proj on the package "
            f"index: toy 1.1.0{DASH}1.1.1 (2 versions)"
        ]
    )


def test_a_site_whose_version_test_excludes_the_release_is_not_held_there(project, monkeypatch):
    # `if toy_version < Version("2.0"): from toy.core import Engine`: 2.0 never runs it.
    gated = Reference(
        "toy", "toy.core.Engine", Kind.IMPORT, (Site("proj/p.py", 3, True, (("toy", "<2.0"),)),)
    )
    monkeypatch.setattr(surface_plugin, "default_engine", FakeEngine(project_refs=(gated,)).engine)
    result = run(project, "--canary-surface", "proj", "-k", "proj-toy_1_1_0 or proj-toy_2_0", "-v")
    assert outcomes_by_id(result) == {"proj-toy_1_1_0": "PASSED", "proj-toy_2_0_0": "PASSED"}


class Judging(FakeEngine):
    """A fake whose judge (the whole surface over every release, as the surface command
    judges it) counts the misses of ``counted`` only, and records each call."""

    def __init__(self, counted: dict) -> None:
        super().__init__()
        self.counted, self.judged = counted, []

    def engine(self) -> surface_plugin.Engine:
        return surface_plugin.Engine(
            self.open_target, self.extract, self.resolve_case, judge=self.judge
        )

    def judge(self, surface, workspace, cases_of, selected):
        read = [c.label for c in cases_of("toy") if selected is None or c in selected]
        self.judged.append((surface.target.name, tuple(read)))
        return self.counted


def test_a_miss_the_whole_surface_does_not_count_passes_and_the_judge_runs_once(
    project, monkeypatch
):
    # Its misses on 2.0.0 judged over every release count nowhere (it came later, say).
    engine = Judging({})
    monkeypatch.setattr(surface_plugin, "default_engine", engine.engine)
    result = run(project, "--canary-surface", "proj", "-k", "proj-toy")
    result.assert_outcomes(passed=3, skipped=2)
    # Asked once, by the case that missed, over every release of the package (all selected).
    assert engine.judged == [("proj", ("1.0.0", "1.1.0", "1.1.1", "2.0.0", "2.10.0"))]


def test_a_target_is_judged_over_the_releases_the_run_selected_only(project, monkeypatch):
    engine = Judging({})
    monkeypatch.setattr(surface_plugin, "default_engine", engine.engine)
    run(project, "--canary-surface", "proj", "-k", "proj-toy_1_1_1 or proj-toy_2_0")
    assert engine.judged == [("proj", ("1.1.1", "2.0.0"))]  # no other release is read


def test_a_miss_the_whole_surface_counts_on_that_release_fails(project, monkeypatch):
    engine_key = ref("toy.core.Engine").key
    engine = Judging({engine_key: ("2.0.0",)})
    monkeypatch.setattr(surface_plugin, "default_engine", engine.engine)
    result = run(project, "--canary-surface", "proj", "-k", "proj-toy_2_0")
    result.assert_outcomes(failed=1)


def test_a_miss_the_targets_configuration_accepts_does_not_fail(project, monkeypatch):
    class Accepting(FakeEngine):
        def open_target(self, spec, *, download_dir, offline, **options):
            loaded = super().open_target(
                spec, download_dir=download_dir, offline=offline, **options
            )

            entry = ExpectedAbsent("toy.core.Engine", "renamed Motor in 2.0", versions=">=2.0")
            loaded.config = SurfaceConfig(expected_absent=(entry,))
            return loaded

    monkeypatch.setattr(surface_plugin, "default_engine", Accepting().engine)
    result = run(project, "--canary-surface", "proj", "-k", "proj-toy_2_0")
    result.assert_outcomes(passed=1)


def results_of(project: pytest.Pytester, *args: str) -> tuple[Path, dict[str, dict]]:
    """The --canary-json file of a run, and its cases by test id (the part in brackets)."""
    path = project.path / "results.json"
    run(project, f"--canary-json={path}", *args)
    cases = json.loads(path.read_text())["cases"]
    return path, {case["nodeid"].split("[", 1)[1].rstrip("]"): case for case in cases}


def report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()  # drop what the pytester run printed
    status = cli.main(["report", "--offline", *args])
    return status, capsys.readouterr().out


def test_results_file_records_each_surface_case_as_its_targets_row(project, capsys):
    path, cases = results_of(project, "--canary-surface", "proj", "-k", "toy")
    assert {case["check"] for case in cases.values()} == {"surface[canary]", "surface[proj]"}
    outcomes = {i: c["outcome"] for i, c in cases.items() if i.startswith("proj-")}
    assert outcomes == {
        "proj-toy_1_0_0": "skip",
        "proj-toy_1_1_0": "pass",
        "proj-toy_1_1_1": "pass",
        "proj-toy_2_0_0": "fail",
        "proj-toy_2_10_0": "skip",
    }
    failed = cases["proj-toy_2_0_0"]
    assert (failed["package"], failed["label"], failed["version"]) == ("toy", "2.0.0", "2.0.0")
    assert failed["fix"] == "proj"  # a target's drift names the target
    missing = "proj/patch.py:3 uses toy.core.Engine (import): toy/core.py defines no Engine"
    assert missing in failed["message"]

    status, out = report(capsys, str(path))
    assert status == 1  # a surface failure is drift
    assert re.search(
        rf"surface\[proj\] +1\.0\.0: skip, 1\.1\.0{DASH}1\.1\.1: pass \(2\), 2\.0\.0: FAIL, "
        r"2\.10\.0: skip",
        out,
    )
    assert re.search(rf"surface\[canary\] +1\.0\.0{DASH}2\.10\.0: skip \(5\)", out)
    assert "DRIFT toy surface[proj]: last pass 1.1.1, first fail 2.0.0" in out
    assert "  fix at risk: proj" in out
    _, markdown = report(capsys, str(path), "--format", "markdown")
    assert "| `surface[proj]` | proj |" in markdown
    _, github = report(capsys, str(path), "--format", "github")
    # The annotation points at test_surface's def (line 6): the row is that test's.
    title = "canary drift%3A toy 2.0.0 breaks the fix 'proj'"
    assert f"::error file=test_surface.py,line=6,title={title}::surface[proj]: " in github


def test_one_located_miss_records_its_subject_and_the_report_diffs_it(project, capsys, monkeypatch):
    class Locating(FakeEngine):
        def engine(self) -> surface_plugin.Engine:
            return surface_plugin.Engine(
                self.open_target, self.extract, self.resolve_case, self.locate
            )

        def locate(self, reference, case, workspace):
            # As for an anchor: the function it is applied to, on the failing release.
            assert (reference.target, case.label) == ("toy.core.Engine", "2.0.0")
            return Subject("toy/core.py", "Engine")

    monkeypatch.setattr(surface_plugin, "default_engine", Locating().engine)
    path, cases = results_of(project, "--canary-surface", "proj", "-k", "proj-toy")
    assert cases["proj-toy_2_0_0"]["subject"] == {"path": "toy/core.py", "qualname": "Engine"}
    assert all(c["subject"] is None for i, c in cases.items() if i != "proj-toy_2_0_0")
    _, out = report(capsys, str(path))
    assert "upstream: Engine is gone from toy/core.py in 2.0.0" in out
    assert "-class Engine:" in out


def test_a_miss_in_canarys_own_surface_reports_the_fix_it_breaks(project, capsys):
    path, cases = results_of(project, "-k", "canary-peft")
    assert [c["outcome"] for c in cases.values()] == ["skip", "pass", "fail"]
    assert {c["check"] for c in cases.values()} == {"surface[canary]"}
    assert cases["canary-peft_0_16_0"]["fix"] == "chunked NLL loss"
    status, out = report(capsys, str(path))
    assert status == 1
    assert "DRIFT peft surface[canary]: last pass 0.15.0, first fail 0.16.0" in out
    assert "  fix at risk: chunked NLL loss" in out
    assert "(breaks the fix 'chunked NLL loss') uses peft.tuners.tuners_utils.BaseTunerLayer" in out


def test_a_surface_error_is_recorded_and_reported_as_not_checked(project, capsys, monkeypatch):
    from canary.errors import OfflineMiss

    class Broken(FakeEngine):
        def open_target(self, spec, *, download_dir, offline, **options):
            raise OfflineMiss(f"--canary-offline: {spec} is not in {download_dir.name}")

    monkeypatch.setattr(surface_plugin, "default_engine", Broken().engine)
    path, cases = results_of(project, "--canary-surface", "proj==1.0", "-k", "proj-toy_1_1")
    assert [(c["check"], c["outcome"]) for c in cases.values()] == [("surface[proj]", "error")] * 2
    status, out = report(capsys, str(path))
    assert status == 2  # nothing was checked there: never drift, never clear
    assert "OfflineMiss: --canary-offline: proj==1.0 is not in surface-targets" in out


@pytest.mark.parametrize(
    ("specs", "ids"),
    [
        (["unsloth_zoo==2025.1.1"], ["unsloth-zoo"]),
        (["dist/Liger_Kernel-0.5.0-py3-none-any.whl"], ["liger-kernel"]),
        (["src/axolotl", "axolotl==0.9.0"], ["axolotl", "axolotl-2"]),
        (["trl==0.20.0"], ["trl"]),  # never trl_0...: -k trl_0 keeps selecting trl's cases
    ],
)
def test_target_ids_are_normalised_project_names(specs, ids):
    assert surface_plugin.target_ids(specs) == ids


def test_every_fix_declares_a_window_from_tags_floor_through_the_newest_release():
    tags = load_tags(Path(__file__).parents[1] / "tags.toml")
    for fix in PROJECT_FIXES:
        assert fix.windows, f"{fix.name} declares no window"
        for package, window in fix.windows.items():
            listed = tags.package(package)
            assert window.since is not None, f"{fix.name}: its {package} window has no floor"
            assert Version(window.since) >= Version(str(listed.floor)), fix.name
            newest = Version(listed.versions[-1])
            assert fix.supports(package, newest), fix.name
            assert fix.supports(package, Version(f"{newest}.dev0")), fix.name
            assert fix.supports(package, None), f"{fix.name}: main is newer than every release"


def test_canarys_own_fixes_use_upstream_only_where_a_fix_declares_a_window():
    """The real extraction of canary/fixes: every reference sits in a fix's module whose
    window covers its package (what the static tier would otherwise fail on everywhere)."""
    from canary.surface.extract import extract

    root = Path(surface_plugin.__file__).parents[2]
    files = sorted(p.relative_to(root).as_posix() for p in (root / "canary/fixes").glob("*.py"))
    references = extract(root, files, upstream=("transformers", "trl", "peft"))
    assert {r.package for r in references} == {"transformers", "peft"}
    for package in ("transformers", "peft"):
        mine = [r for r in references if r.package == package]
        due, unowned = surface_plugin.own_gate(mine, package, Version("99.0"))
        assert unowned == []
        assert due == mine
