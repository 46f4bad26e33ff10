"""The surface command: targets' references checked on every release, findings per target,
the baseline, the verdict and the exit status (0 / 1 / 2, as ``report``'s)."""

from __future__ import annotations

import json
import zipfile
from dataclasses import replace

import pytest
from surface_fakes import FakeTree, ReexportingTree, workspace

from canary import cli
from canary.surface.baseline import load_baseline, write_baseline
from canary.surface.command import Surface, SurfaceRun, check_surfaces, render, verdict
from canary.surface.model import Kind, Reference, Site, SurfaceResult, Target
from canary.workspace import Case

TRAINER = b"class Trainer:\n    def compute_loss(self, model, inputs):\n        return 1\n"
RENAMED = TRAINER.replace(b"compute_loss", b"_compute_loss")
TREES = {
    "1.0": {"toy/__init__.py": b"", "toy/trainer.py": TRAINER},
    "2.0": {"toy/__init__.py": b"", "toy/trainer.py": RENAMED},
}
CASES = {"toy": [Case("toy", label, "index") for label in TREES]}


@pytest.fixture(autouse=True)
def _count_lookups():
    FakeTree.lookups = []


def ref(target: str, path: str, line: int, kind: Kind = Kind.PATCH) -> Reference:
    return Reference("toy", target, kind, (Site(path, line),))


LOSS = "toy.trainer.Trainer.compute_loss"
OLD = Surface(Target("old", "1", {"toy": "<2"}), (ref(LOSS, "old/patch.py", 3),))
NEW = Surface(Target("new", "1", {"toy": ">=1"}), (ref(LOSS, "new/patch.py", 7),))


def check(tmp_path, surfaces, failing=(), **kwargs) -> SurfaceRun:
    ws = workspace(tmp_path, TREES, failing)
    return check_surfaces(surfaces, ws, CASES.__getitem__, make_tree=FakeTree, **kwargs)


def test_one_reference_of_two_targets_is_resolved_once_and_judged_by_each_range(tmp_path):
    run = check(tmp_path, [OLD, NEW])
    (resolved,) = run.result.references
    assert [site.path for site in resolved.reference.sites] == ["new/patch.py", "old/patch.py"]
    # one per release, not per target; and one where the removed patch's member was last
    # there, to read whether the class had it itself or inherited it (remembered after)
    assert FakeTree.lookups == [LOSS, LOSS, LOSS]
    FakeTree.lookups = []
    check(tmp_path, [OLD, NEW])
    assert FakeTree.lookups == []  # a release's answers are kept
    # Gone in 2.0: outside old's range (<2), inside new's.
    assert [(f.target, f.new) for f in run.findings] == [("new", ("2.0",))]
    assert run.exit_status == 1
    assert run.result.packages == {"toy": ("1.0", "2.0")}
    assert verdict(run)[-1].startswith("canary: surface broken: 1 reference(s) missing")


def test_all_clear_is_zero(tmp_path):
    run = check(tmp_path, [OLD])
    assert run.findings == ()
    assert run.exit_status == 0
    assert verdict(run) == ["canary: all clear"]


def test_a_release_that_cannot_be_read_means_not_everything_was_checked(tmp_path):
    run = check(tmp_path, [OLD], failing={"1.0"})
    assert run.result.packages == {"toy": ("2.0",)}
    assert run.exit_status == 2
    lines = verdict(run)
    assert lines[0] == "1 error: toy 1.0 from the test: connection reset: toy 1.0"
    assert lines[-1] == "canary: not everything was checked"
    # A finding wins over errors: it is what the run found.
    assert check(tmp_path, [NEW], failing={"1.0"}).exit_status == 1


def test_a_target_without_upstream_references_was_not_checked(tmp_path):
    run = check(tmp_path, [OLD, Surface(Target("empty", None), ())])
    assert run.exit_status == 2
    said = "empty: no reference to toy found in its code: nothing of it was checked"
    assert any(line.startswith(said) for line in verdict(run))
    assert verdict(run)[-1] == "canary: not everything was checked"  # the other one was
    alone = check(tmp_path, [Surface(Target("empty", None), ())])
    assert alone.exit_status == 2
    assert verdict(alone)[-1] == (
        "canary: nothing was checked: no target references an upstream package"
    )


def test_expected_absent_and_the_baseline_accept_misses(tmp_path):
    def expected_absent(reference, version):
        return "renamed upstream, patched elsewhere" if reference.target == LOSS else None

    accepted = Surface(NEW.target, NEW.references, expected_absent)
    run = check(tmp_path, [accepted])
    assert run.exit_status == 0
    assert run.findings[0].accepted == {"2.0": "renamed upstream, patched elsewhere"}
    assert verdict(run) == ["canary: all clear (1 accepted finding(s))"]

    path = tmp_path / "baseline.json"
    write_baseline(path, {"toy": ["1.0", "2.0"]}, check(tmp_path, [NEW]).findings)
    run = check(tmp_path, [NEW], baseline=load_baseline(path))
    assert run.exit_status == 0
    gone = Surface(NEW.target, (ref("toy.trainer.Trainer.train", "new/patch.py", 9),))
    run = check(tmp_path, [NEW, gone], baseline=load_baseline(path))
    assert [f.reference.target for f in run.failing] == ["toy.trainer.Trainer.train"]


def test_a_baseline_entry_no_finding_matches_is_named(tmp_path):
    path = tmp_path / "baseline.json"
    write_baseline(path, {"toy": ["1.0", "2.0"]}, check(tmp_path, [NEW]).findings)
    run = check(tmp_path, [OLD], baseline=load_baseline(path))
    assert run.stale == 1
    assert "1 baseline entries no longer missing" in verdict(run)[-1]


def test_a_release_that_cannot_be_installed_beside_the_target_is_not_held(tmp_path):
    # diffusers 0.42.1 needs huggingface-hub>=1.32; transformers 4.x needs it <1.0
    hub = b"Name: toy\nRequires-Dist: hub<1.0,>=0.3\n"
    trees = {label: dict(files) for label, files in TREES.items()}
    trees["2.0"]["toy-2.0.dist-info/METADATA"] = hub
    ws = workspace(tmp_path, trees)
    pinned = Surface(replace(NEW.target, dependencies={"hub": ">=1.32"}), NEW.references)
    run = check_surfaces([pinned], ws, CASES.__getitem__, make_tree=FakeTree)
    assert run.findings == ()
    why = "toy 2.0 cannot be installed beside new: hub: >=1.32 against <1.0,>=0.3"
    assert run.result.targets[0].uninstallable == {"toy": {"2.0": why}}
    assert "canary: 2.0 of toy cannot be installed beside new (hub: >=1.32 against" in (
        "\n".join(verdict(run))
    )
    # what a release requires is kept; a kept reading that does not read is read again
    kept = list((tmp_path / "cache" / "blobs" / "surface-requirements").rglob("*.entry"))
    assert kept
    for entry in kept:
        entry.write_bytes(b"not json")
    again = check_surfaces([pinned], ws, CASES.__getitem__, make_tree=FakeTree)
    assert again.result.targets[0].uninstallable == {"toy": {"2.0": why}}
    # where both can hold, or the release says nothing, the miss counts as before
    for dependencies in ({"hub": ">=0.5"}, {"other": ">=1.32"}):
        kept = Surface(replace(NEW.target, dependencies=dependencies), NEW.references)
        run = check_surfaces([kept], ws, CASES.__getitem__, make_tree=FakeTree)
        assert [f.new for f in run.findings] == [("2.0",)]


def test_a_release_a_pinned_dependency_rules_out_is_not_held(tmp_path, monkeypatch):
    # rapid-mlx pins mlx-vlm==0.7.2, which requires transformers>=5.14.0
    asked = []

    def index(pins, **_):
        asked.append(dict(pins))
        return {"vlmkit": {"toy": "<2"}}

    monkeypatch.setattr("canary.surface.resolve.index_requirements", index)
    pinned = Surface(replace(NEW.target, dependencies={"vlmkit": "==0.7.2"}), NEW.references)
    run = check(tmp_path, [pinned])
    assert run.findings == ()
    why = "toy 2.0 cannot be installed beside new: its pin vlmkit==0.7.2 requires toy<2"
    assert run.result.targets[0].uninstallable == {"toy": {"2.0": why}}
    assert asked == [{"vlmkit": "0.7.2"}]
    check(tmp_path, [pinned])
    assert len(asked) == 1  # what a pin requires is kept
    # a range is no pin: the resolver may pick a release that requires less
    ranged = Surface(replace(NEW.target, dependencies={"vlmkit": ">=0.7"}), NEW.references)
    assert [f.new for f in check(tmp_path, [ranged]).findings] == [("2.0",)]


def test_json_is_the_contract(tmp_path):
    data = json.loads(render(check(tmp_path, [OLD, NEW]), "json"))
    assert set(data) == {"targets", "packages", "references", "findings"}
    assert data["targets"][0] == {"name": "old", "version": "1", "requires": {"toy": "<2"}}
    assert data["packages"] == {"toy": ["1.0", "2.0"]}
    (reference,) = data["references"]
    assert reference["outcomes"] == {"1.0": "ok", "2.0": "missing"}
    assert reference["kind"] == "patch"
    assert reference["sites"][0] == {
        "path": "new/patch.py",
        "line": 7,
        "guarded": False,
        "versions": {},  # no version test around it: every release
        "at_import": False,
    }
    (finding,) = data.pop("findings")  # each finding with its proof
    assert finding["target"] == "new"
    assert finding["reference"] == LOSS
    assert finding["releases"] == ["2.0"]
    assert finding["confidence"] == "proven"
    assert finding["why"].endswith("new/patch.py:7 runs on 2.0")
    assert SurfaceResult.from_json(data).to_json() == data


def test_a_finding_whose_site_a_test_canary_cannot_evaluate_decides_is_possible(tmp_path):
    undecided = "runs only where is_new_version() allows, which canary cannot evaluate"
    site = Site("maybe/patch.py", 4, undecided=undecided)
    maybe = Surface(
        Target("maybe", "1", {"toy": ">=1"}), (Reference("toy", LOSS, Kind.PATCH, (site,)),)
    )
    run = check(tmp_path, [maybe])
    (finding,) = run.findings
    assert (finding.confidence, finding.possible) == ("possible", undecided)
    assert run.exit_status == 0  # reported, never counted
    assert "1 possible finding(s)" in verdict(run)[-1]
    assert json.loads(render(run, "json"))["findings"][0]["confidence"] == "possible"
    run.strict = True
    assert run.exit_status == 1
    # Beside a site that certainly runs, it is proven.
    both = Surface(maybe.target, (Reference("toy", LOSS, Kind.PATCH, (site, Site("m/p.py", 9))),))
    (finding,) = check(tmp_path, [both]).findings
    assert finding.confidence == "proven"


def test_a_handled_import_beside_an_undecided_site_leaves_the_finding_possible(tmp_path):
    # auto-round's disable_moe_conversion_mapping beside its try/except ImportError imports
    undecided = Site("maybe/patch.py", 4, undecided="convert() is public")
    handled = Site("maybe/other.py", 9, guarded=True, handled="its ImportError is handled")
    maybe = Surface(
        Target("maybe", "1", {"toy": ">=1"}),
        (Reference("toy", LOSS, Kind.IMPORT, (undecided, handled)),),
    )
    (finding,) = check(tmp_path, [maybe]).findings
    assert (finding.confidence, finding.possible) == ("possible", "convert() is public")


def test_update_baseline_needs_the_file_to_write(capsys):
    assert cli.main(["surface", "proj", "--update-baseline"]) == 2
    assert "--update-baseline needs --baseline FILE" in capsys.readouterr().err


def test_a_missing_baseline_says_how_to_write_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tags.toml").write_text(
        '[packages.toy]\nrepo = "o/toy"\npackage_dir = ""\nfloor = "1.0"\nversions = ["1.0"]\n'
    )
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    status = cli.main(
        ["surface", str(tmp_path), "--baseline", "b.json", "--offline", "--tags-file", "tags.toml"]
    )
    assert status == 2
    assert "no such file; write it with --baseline b.json --update-baseline" in (
        capsys.readouterr().err
    )


# -- the command, end to end: a project folder against toy releases kept as wheels --------

TAGS = """\
[packages.toy]
repo = "o/toy"
package_dir = ""
floor = "1.0"
versions = [{versions}]
"""
PATCH = """\
from toy.trainer import Trainer


def compute_loss(self, model, inputs):
    return 0


Trainer.compute_loss = compute_loss
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project patching toy's Trainer.compute_loss, toy 1.0 and 2.0 kept as wheels
    (2.0 renamed the method), tags.toml listing them, and the cwd there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    for version, files in TREES.items():
        wheel = tmp_path / "cache" / "wheels" / "toy" / f"toy-{version}.whl"
        wheel.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel, "w") as archive:
            for name, content in files.items():
                archive.writestr(name, content)
    (tmp_path / "tags.toml").write_text(TAGS.format(versions='"1.0", "2.0"'))
    root = tmp_path / "proj"
    (root / "proj").mkdir(parents=True)
    (root / "proj" / "__init__.py").write_text("")
    (root / "proj" / "patch.py").write_text(PATCH)
    requires(root, ">=1.0")
    return root


def requires(root, specifier: str) -> None:
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "proj"\nversion = "0.1"\ndependencies = ["toy{specifier}"]\n'
    )


def surface(*args: str) -> int:
    return cli.main(["surface", "proj", "--offline", "--tags-file", "tags.toml", *args])


def test_the_command_finds_a_patch_target_upstream_renamed(project, capsys):
    assert surface("--format", "json", "-o", "out.json") == 1
    data = json.loads((project.parent / "out.json").read_text())
    assert data["targets"] == [{"name": "proj", "version": "0.1", "requires": {"toy": ">=1.0"}}]
    assert data["packages"] == {"toy": ["1.0", "2.0"]}
    patch = next(r for r in data["references"] if r["kind"] == "patch")
    assert patch["target"] == LOSS
    assert patch["sites"] == [
        {
            "path": "proj/patch.py",
            "line": 8,
            "guarded": False,
            "versions": {},
            "at_import": True,
            "replaces": True,  # it binds the name: a miss does nothing, it does not raise
            "exports": True,  # its own function of that name: an export where never there
            "function": True,  # ... and code: where upstream had the name, a patch of it
        }
    ]
    assert patch["outcomes"] == {"1.0": "ok", "2.0": "missing"}
    assert "_compute_loss" in patch["why"]["2.0"]
    assert "canary: surface broken: 1 reference(s)" in capsys.readouterr().err


def test_one_run_writes_annotations_the_json_and_the_markdown(project, capsys):
    assert surface("--format", "github", "--json", "r.json", "--markdown", "r.md") == 1
    assert capsys.readouterr().out.startswith("::error file=proj/patch.py,line=8,")
    data = json.loads((project.parent / "r.json").read_text())
    assert data["packages"] == {"toy": ["1.0", "2.0"]}
    assert (project.parent / "r.md").read_text().startswith("## canary surface of proj 0.1")


def test_a_release_outside_the_declared_range_is_not_held_against_it(project):
    requires(project, "<2")
    assert surface() == 0


def test_a_baseline_written_then_compared(project, capsys):
    assert surface("--baseline", "b.json", "--update-baseline") == 0
    err = capsys.readouterr().err
    # What it wrote, as the last line; the findings it accepts are no "surface broken".
    assert err.splitlines()[-1] == (
        "canary: wrote b.json: 1 finding(s) accepted from now on, over 2 release(s) of toy"
    )
    assert "surface broken" not in err
    assert surface("--baseline", "b.json") == 0
    assert "canary: all clear (1 accepted finding(s))" in capsys.readouterr().err


def test_expected_absent_in_the_project_accepts_a_miss(project):
    with (project / "pyproject.toml").open("a") as toml:
        toml.write(
            '[[tool.canary.surface.expected_absent]]\ntarget = "toy.trainer.Trainer.*"\n'
            'versions = ">=2"\nreason = "renamed in 2.0, patched elsewhere"\n'
        )
    assert surface() == 0


def test_a_baseline_written_from_a_run_that_missed_releases_says_so_and_exits_2(project, capsys):
    (project.parent / "tags.toml").write_text(TAGS.format(versions='"1.0", "2.0", "3.0"'))
    assert surface("--baseline", "b.json", "--update-baseline") == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("canary: wrote b.json: 1 finding(s) accepted from now on")
    assert last.endswith("not everything was checked: the releases above are not in it")


def test_a_release_not_in_the_cache_offline_is_not_checked(project, capsys):
    (project.parent / "tags.toml").write_text(TAGS.format(versions='"1.0", "2.0", "3.0"'))
    requires(project, "<2")
    assert surface("--format", "json", "-o", "out.json") == 2
    err = capsys.readouterr().err
    assert "1 error: not in the cache (offline): toy 3.0" in err
    assert err.rstrip().endswith("canary: not everything was checked")
    assert json.loads((project.parent / "out.json").read_text())["packages"] == {
        "toy": ["1.0", "2.0"]
    }


# -- came later than the floor: a model package the release lacks -------------------------

LLAMA_PY = b"class LlamaRMSNorm:\n    pass\n"
GEMMA4_PY = b"class Gemma4ForCausalLM:\n    def forward(self):\n        return 1\n"
MODELS = {
    "1.0": {
        "transformers/__init__.py": b"",
        "transformers/models/__init__.py": b"",
        "transformers/models/llama/__init__.py": b"",
        "transformers/models/llama/modeling_llama.py": LLAMA_PY,
    },
}
MODELS["2.0"] = {
    **MODELS["1.0"],
    "transformers/models/llama/modeling_llama.py": LLAMA_PY + b"class LlamaNew:\n    pass\n",
    "transformers/models/gemma4/__init__.py": b"",
    "transformers/models/gemma4/modeling_gemma4.py": GEMMA4_PY,
}
GEMMA4_FORWARD = "transformers.models.gemma4.modeling_gemma4.Gemma4ForCausalLM.forward"
LLAMA_NEW = "transformers.models.llama.modeling_llama.LlamaNew"


def check_models(tmp_path, *references: Reference, trees=MODELS, tree=FakeTree) -> SurfaceRun:
    ws = workspace(tmp_path, trees)
    cases = {"transformers": [Case("transformers", label, "index") for label in trees]}
    project = Surface(Target("proj", "1", {"transformers": ">=1.0"}), references)
    return check_surfaces([project], ws, cases.__getitem__, make_tree=tree)


def in_function(target: str, *, at_import: bool = False) -> Reference:
    return Reference(
        "transformers", target, Kind.PATCH, (Site("proj/m.py", 3, False, (), at_import),)
    )


def test_a_patch_of_a_model_the_floor_lacks_came_later_and_does_not_fail(tmp_path):
    run = check_models(tmp_path, in_function(GEMMA4_FORWARD))
    (finding,) = run.findings
    assert (finding.since, finding.came_later, finding.new) == ("2.0", ("1.0",), ())
    assert "transformers.models.gemma4 is not in the release" in finding.excused["1.0"]
    assert run.exit_status == 0
    assert "1 reference(s) came later than the declared floor" in verdict(run)[-1]
    # the model package was resolved to decide it, and is no reference of the project
    assert [r.reference.target for r in run.result.references] == [GEMMA4_FORWARD]
    text = render(run, "terminal")
    assert "Came later than the declared floor" in text
    assert "needs transformers>=2.0; not counted on 1.0" in text


@pytest.mark.parametrize(
    "reference",
    [
        in_function(LLAMA_NEW),  # llama is in 1.0: its users run the patch, and it misses
        in_function(GEMMA4_FORWARD, at_import=True),  # imported with its module: everyone
    ],
)
def test_a_came_later_miss_that_runs_on_the_floor_fails(tmp_path, reference):
    run = check_models(tmp_path, reference)
    (finding,) = run.findings
    assert (finding.came_later, finding.new, finding.excused) == (("1.0",), ("1.0",), {})
    assert run.exit_status == 1
    assert "needs transformers>=2.0; counts on 1.0: fails the run" in render(run, "terminal")


@pytest.mark.parametrize(("module", "possible"), [("gemma4", True), ("llama", False)])
def test_a_miss_in_a_module_named_for_a_model_the_release_lacks_is_possible(
    tmp_path, module, possible
):
    # flashrt-structures' graph_lowering/qwen3_vl.py: LlamaNew is a 2.0 name, used in code
    # for a model 1.0 does not have; the model package is asked only to decide it
    named = replace(in_function(LLAMA_NEW).sites[0], path=f"proj/{module}.py")
    named = replace(named, named_for=f"transformers.models.{module}")
    run = check_models(tmp_path, Reference("transformers", LLAMA_NEW, Kind.PATCH, (named,)))
    (finding,) = run.findings
    assert finding.new == ("1.0",)
    assert bool(finding.possible) == possible
    assert run.exit_status == (0 if possible else 1)
    assert [r.reference.target for r in run.result.references] == [LLAMA_NEW]


def test_an_output_on_a_full_disk_is_one_line_and_keeps_the_previous_file(
    project, capsys, monkeypatch
):
    from test_atomic import full_disk

    (project.parent / "out.json").write_text("previous\n")
    (project.parent / "b.json").write_text("previous baseline\n")
    full_disk(monkeypatch, project.parent)
    assert surface("--format", "json", "-o", "out.json") == 2
    err = capsys.readouterr().err
    assert "canary: error: cannot write out.json: No space left on device" in err
    assert "Traceback" not in err
    assert surface("--baseline", "b.json", "--update-baseline") == 2
    assert "cannot write b.json: No space left on device" in capsys.readouterr().err
    assert (project.parent / "out.json").read_text() == "previous\n"
    assert (project.parent / "b.json").read_text() == "previous baseline\n"


GEMMA4_TOP = {
    **MODELS["2.0"],
    "transformers/__init__.py": b"from .models.gemma4.modeling_gemma4 import Gemma4ForCausalLM\n"
    b"from .trainer_new import NewTrainer\n",
    "transformers/trainer_new.py": b"class NewTrainer:\n    pass\n",
}


@pytest.mark.parametrize(
    ("target", "counted"),
    [
        # exported at the top level, defined in models/gemma4, which 1.0 lacks: excused
        ("transformers.Gemma4ForCausalLM", False),
        ("transformers.Gemma4ForCausalLM.forward", False),
        # exported at the top level, defined outside any model package: a real miss
        ("transformers.NewTrainer", True),
    ],
)
def test_a_top_level_name_of_a_model_the_floor_lacks_came_later(tmp_path, target, counted):
    trees = {"1.0": MODELS["1.0"], "2.1": GEMMA4_TOP}
    run = check_models(tmp_path, in_function(target), trees=trees, tree=ReexportingTree)
    (finding,) = run.findings
    assert finding.since == "2.1"
    assert finding.fails is counted
    if not counted:
        assert "transformers.models.gemma4 is not in the release" in finding.excused["1.0"]


def test_a_top_level_name_in_a_module_named_for_its_model_is_excused_not_possible(tmp_path):
    # lmdeploy's vl/model/qwen3_5.py: a model-named module first made the miss possible,
    # and a possible finding's home package was never asked: it lost its excuse
    trees = {"1.0": MODELS["1.0"], "2.1": GEMMA4_TOP}
    site = replace(in_function("").sites[0], path="proj/gemma4.py")
    site = replace(site, named_for="transformers.models.gemma4")
    reference = Reference("transformers", "transformers.Gemma4ForCausalLM", Kind.PATCH, (site,))
    # a use in models/gemma4 too: the package is known absent on 1.0 from the first pass
    also = in_function(GEMMA4_FORWARD)
    run = check_models(tmp_path, reference, also, trees=trees, tree=ReexportingTree)
    (finding,) = [f for f in run.findings if f.reference == reference]
    assert finding.new == ()
    assert "transformers.models.gemma4 is not in the release" in finding.excused["1.0"]


def test_the_imports_a_site_comes_after_are_in_its_json_only_where_there_are_some():
    site = Site("proj/load.py", 3, after=("transformers.Gemma4Model",))
    assert site.to_json()["after"] == ["transformers.Gemma4Model"]
    assert Site.from_json(site.to_json()) == site
    assert "after" not in Site("proj/load.py", 3).to_json()


def test_a_declared_floor_below_the_oldest_release_checked_is_said(tmp_path):
    # smolagents: transformers>=4.0.0, where canary's list starts at 4.46.1
    old_floor = Surface(Target("old-floor", "1", {"toy": ">=0.5,<3"}), (ref(LOSS, "p.py", 3),))
    said = (
        "canary: old-floor allows toy>=0.5,<3, and the oldest release checked is 1.0: "
        "older ones are not checked (list them in a tags file to check them)"
    )
    assert said in verdict(check(tmp_path, [old_floor]))
    # no floor, or one the list covers: nothing to say
    assert not [line for line in verdict(check(tmp_path, [OLD, NEW])) if "oldest" in line]


MIXED_IN = b"class Mixin:\n    def generate(self):\n        pass\n\n\n"
INHERITED = {
    "1.0": MIXED_IN + b"class Base(Mixin):\n    pass\n",
    # Base no longer derives from Mixin; its subclasses list both, Base first
    "2.0": MIXED_IN + b"class Base:\n    pass\n\n\nclass Llama(Base, Mixin):\n    pass\n",
    "3.0": b"class Mixin:\n    pass\n\n\nclass Base:\n    pass\n",  # generate gone
}


@pytest.mark.parametrize(
    ("releases", "possible"), [(("1.0", "2.0"), True), (("1.0", "3.0"), False)]
)
def test_a_patched_member_its_class_inherited_from_a_class_that_still_has_it_is_possible(
    tmp_path, releases, possible
):
    # transformers-stream-generator: PreTrainedModel.generate = NewGenerationMixin.generate,
    # which models still find first where they derive from PreTrainedModel, then the mixin
    from canary import symbols

    trees = {v: {"toy/__init__.py": b"", "toy/model.py": INHERITED[v]} for v in releases}
    ws = workspace(tmp_path, trees)
    cases = {"toy": [Case("toy", label, "index") for label in trees]}
    patch = Reference(
        "toy", "toy.model.Base.generate", Kind.PATCH, (Site("p.py", 3, replaces=True),)
    )
    project = Surface(Target("proj", "1", {"toy": ">=1.0"}), (patch,))
    run = check_surfaces([project], ws, cases.__getitem__, make_tree=symbols.PackageTree)
    (finding,) = run.findings
    assert finding.new == (releases[1],)
    assert bool(finding.possible) == possible
    assert run.exit_status == (0 if possible else 1)
