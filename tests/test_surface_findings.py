"""Which misses are held against a project: gated away where no site runs; came later
(before the first release that has it) told from removed; a came-later miss excused only
in a model package the release does not have, used where that model runs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from canary.surface.baseline import load_baseline, write_baseline
from canary.surface.findings import ModelPackages, findings, model_package, with_inherited
from canary.surface.model import (
    NOT_READ,
    TEXT_GONE,
    Kind,
    Outcome,
    Reference,
    Resolved,
    Site,
    Target,
)
from canary.symbols.lookup import member_miss

GEMMA4 = "transformers.models.gemma4.modeling_gemma4.Gemma4ForCausalLM.forward"
LLAMA = "transformers.models.llama.modeling_llama.LlamaRMSNorm"
LOADING = "transformers.core_model_loading.set_param_for_module"
RELEASES = ("4.57.0", "5.0.0", "5.1.0", "5.2.0")
PROJECT = Target("proj", "1.0", {"transformers": ">=5.0.0"})


def site(line: int = 10, *, window: str | None = None, at_import=False, guarded=False) -> Site:
    versions = (("transformers", window),) if window else ()
    return Site("proj/patch.py", line, guarded, versions, at_import)


def resolved(target: str, outcomes: str, *sites: Site, kind: Kind = Kind.PATCH) -> Resolved:
    """``outcomes``: one letter per release of RELEASES: o(k), m(issing), u(nknown)."""
    letters = {"o": Outcome.OK, "m": Outcome.MISSING, "u": Outcome.UNKNOWN}
    reference = Reference("transformers", target, kind, sites or (site(),))
    return Resolved(
        reference,
        {v: letters[c] for v, c in zip(RELEASES, outcomes, strict=True)},
        {
            v: f"no {target.rpartition('.')[2]}"
            for v, c in zip(RELEASES, outcomes, strict=True)
            if c == "m"
        },
    )


def absent_before(first: str, package: str = "transformers.models.gemma4") -> ModelPackages:
    """``package`` arrives in ``first``; every other model is always there."""
    before = RELEASES[: RELEASES.index(first)]
    return ModelPackages(frozenset((package, v) for v in before), frozenset({package}))


EVERY_RELEASE_LACKS_GEMMA4 = ModelPackages(
    frozenset(("transformers.models.gemma4", v) for v in RELEASES)
)


def test_a_site_in_the_branch_a_presence_test_found_absent_does_not_run_where_it_is_there():
    # `if hasattr(m, "LlamaAttention"): ... else: m.LlamaSdpaAttention.forward = f`
    new = resolved(f"{LLAMA}.new", "mmoo", kind=Kind.ATTRIBUTE)
    old = resolved(f"{LLAMA}.old", "oomm", replace(site(), lacks=(f"{LLAMA}.new",)))
    (finding,) = [f for f in findings([new, old], PROJECT) if f.reference.target.endswith("old")]
    assert (finding.gated, finding.new) == (("5.1.0", "5.2.0"), ())
    # an unknown there may be there or not: it may run
    unsure = resolved(f"{LLAMA}.new", "mmuu", kind=Kind.ATTRIBUTE)
    (finding,) = [f for f in findings([unsure, old], PROJECT) if f.reference.target.endswith("old")]
    assert finding.new == ("5.1.0", "5.2.0")


def test_a_miss_where_no_site_runs_is_gated_away_never_held():
    # liger: `if IS_V5: ...MixtralExperts else: ...MixtralBlockSparseTop2MLP`
    (finding,) = findings([resolved(LLAMA, "ommm", site(window="<5.0.0"))], PROJECT)
    assert finding.gated == ("5.0.0", "5.1.0", "5.2.0")
    assert (finding.missing, finding.new, finding.fails) == ({}, (), False)


@pytest.mark.parametrize(
    ("kind", "counted"),
    [(Kind.ATTRIBUTE, ("5.1.0",)), (Kind.PATCH, ("5.1.0",)), (Kind.IMPORT, ("5.1.0", "5.2.0"))],
)
def test_a_miss_inside_a_missing_owner_is_the_owners(kind, counted):
    # fschat: `from transformers import deepspeed` gone, deepspeed.is_..._enabled with it;
    # an import of what lies inside is its own statement, failing at its own site
    owner = resolved(LLAMA, "ooom", kind=Kind.IMPORT)
    _, inside = findings([owner, resolved(f"{LLAMA}.forward", "oomm", kind=kind)], PROJECT)
    assert inside.new == counted
    assert inside.gated == tuple(v for v in ("5.1.0", "5.2.0") if v not in counted)


def test_one_site_that_runs_there_is_enough_to_hold_the_miss():
    gated, everywhere = site(window="<5.0.0"), site(20)
    (finding,) = findings([resolved(LLAMA, "oomm", gated, everywhere)], PROJECT)
    assert finding.new == ("5.1.0", "5.2.0")
    assert finding.gated == ()
    (finding,) = findings([resolved(LLAMA, "oomm", gated, site(20, window=">=5.2.0"))], PROJECT)
    assert (finding.new, finding.gated) == (("5.2.0",), ("5.1.0",))


def test_came_later_is_told_from_removed_by_the_first_release_that_has_it():
    (later,) = findings([resolved(LOADING, "mmoo")], PROJECT)
    assert (later.since, later.came_later, later.removed) == ("5.1.0", ("5.0.0",), ())
    assert later.fails  # core_model_loading is no model: a real break wherever it runs
    (removed,) = findings([resolved(LOADING, "oomm")], PROJECT)
    assert (removed.since, removed.came_later, removed.removed) == (
        "4.57.0",
        (),
        ("5.1.0", "5.2.0"),
    )
    (never,) = findings([resolved(LOADING, "mmmm")], PROJECT)
    assert (never.since, never.came_later, never.removed) == (None, (), RELEASES[1:])
    (both,) = findings([resolved(LOADING, "mmom")], PROJECT)
    assert (both.came_later, both.removed) == (("5.0.0",), ("5.2.0",))


def test_a_came_later_miss_in_a_model_package_the_release_lacks_is_excused():
    (finding,) = findings([resolved(GEMMA4, "mmmo")], PROJECT, absent=absent_before("5.1.0"))
    # 5.0.0 has no gemma4 at all: no user of 5.0.0 runs it. 5.1.0 has the package but not
    # the class yet: a user of gemma4 on 5.1.0 runs the patch, and it misses.
    assert list(finding.excused) == ["5.0.0"]
    assert "transformers.models.gemma4 is not in the release" in finding.excused["5.0.0"]
    assert finding.new == ("5.1.0",)
    assert finding.came_later == ("5.0.0", "5.1.0")


@pytest.mark.parametrize(
    ("where", "counts"),
    [
        (site(at_import=True), True),  # module level, unguarded: fails for every user
        (site(at_import=True, guarded=True), False),  # try/except ImportError around it
        (site(at_import=False), False),  # inside the function that patches gemma4
        (site(at_import=True, window=">=5.2.0"), False),  # module level, but gated off 5.0
    ],
)
def test_a_site_that_runs_at_import_keeps_the_miss_counted(where, counts):
    (finding,) = findings([resolved(GEMMA4, "mmmo", where)], PROJECT, absent=absent_before("5.2.0"))
    assert finding.fails is counts


def test_nothing_is_excused_without_knowing_what_the_release_lacks_or_outside_models():
    (finding,) = findings([resolved(GEMMA4, "mmoo")], PROJECT)  # absent not given
    assert finding.excused == {}
    assert finding.fails
    (finding,) = findings([resolved(LOADING, "mmoo")], PROJECT, absent=EVERY_RELEASE_LACKS_GEMMA4)
    assert finding.excused == {}  # not a model package: runs for everyone
    # removed: gemma4 had it and lost it: always held, whatever the package
    (finding,) = findings([resolved(GEMMA4, "oomm")], PROJECT, absent=EVERY_RELEASE_LACKS_GEMMA4)
    assert finding.excused == {}
    assert finding.new == ("5.1.0", "5.2.0")


def test_the_model_package_of_a_target():
    assert model_package(GEMMA4) == "transformers.models.gemma4"
    assert model_package("transformers.models.gemma4") == "transformers.models.gemma4"
    assert model_package("transformers.models") is None
    assert model_package("transformers.modeling_utils.PreTrainedModel") is None
    assert model_package("trl.models.utils.unwrap_model_for_generation") is None


def test_a_reference_gated_away_everywhere_is_no_baseline_entry(tmp_path):
    gated = findings([resolved(LLAMA, "ommm", site(window="<5.0.0"))], PROJECT)
    held = findings([resolved(LOADING, "oomm")], PROJECT)
    path = tmp_path / "baseline.json"
    write_baseline(path, {"transformers": list(RELEASES)}, gated + held)
    baseline = load_baseline(path)
    assert list(baseline.missing) == [("proj", held[0].reference.key)]
    assert baseline.stale(gated + held) == []


def test_a_came_later_miss_every_running_site_guards_is_excused_a_removed_one_is_not():
    # unsloth: try: from transformers.utils.import_utils import is_tracing
    #          except ImportError: def is_tracing(...): ...  (the 4.x fallback)
    guarded = site(at_import=True, guarded=True)
    (later,) = findings([resolved(LOADING, "mmoo", guarded)], PROJECT)
    assert "guarded: the project expects it absent before 5.1.0" in later.excused["5.0.0"]
    assert not later.fails
    (removed,) = findings([resolved(LOADING, "oomm", guarded)], PROJECT)
    assert (removed.excused, removed.new) == ({}, ("5.1.0", "5.2.0"))  # it used to apply
    # one unguarded site that runs there is enough to count; one gated off there is not
    for other, counts in ((site(20), True), (site(20, window=">=5.1.0"), False)):
        (finding,) = findings([resolved(LOADING, "mmoo", guarded, other)], PROJECT)
        assert finding.fails is counts


INTEGRATIONS = "transformers.integrations.is_deepspeed_zero3_enabled"
DEEPSPEED = "transformers.deepspeed.is_deepspeed_zero3_enabled"


def fallback(*imports: str) -> Site:
    return Site("proj/ds.py", 83, True, fallback_of=imports)


@pytest.mark.parametrize(
    ("first", "counted"),
    [
        ("oooo", ()),  # the import it falls back from works everywhere: it never runs
        ("oomm", ("5.1.0", "5.2.0")),  # where the first import fails too, it runs
        ("uuuu", ("5.0.0", "5.1.0", "5.2.0")),  # unknown may fail: it may run
    ],
)
def test_a_fallback_import_runs_only_where_the_import_it_falls_back_from_fails(first, counted):
    tried = resolved(INTEGRATIONS, first, kind=Kind.IMPORT)
    fell = resolved(DEEPSPEED, "mmmm", fallback(INTEGRATIONS), kind=Kind.IMPORT)
    found = {f.reference.target: f for f in findings([tried, fell], PROJECT)}
    assert found[DEEPSPEED].new == counted
    # Not in a fallback (the try did more than import): it runs everywhere.
    plain = resolved(DEEPSPEED, "mmmm", site(83), kind=Kind.IMPORT)
    (finding,) = [f for f in findings([tried, plain], PROJECT) if f.reference.target == DEEPSPEED]
    assert finding.new == ("5.0.0", "5.1.0", "5.2.0")


def test_a_fallback_read_runs_only_where_the_read_it_falls_back_from_fails():
    # sinq: `try: cls = transformers.New except AttributeError: cls = transformers.Old`
    new, old = "transformers.AutoModelForImageTextToText", "transformers.AutoModelForVision2Seq"
    tried = resolved(new, "mooo", kind=Kind.ATTRIBUTE)
    fell = resolved(old, "oomm", fallback(new), kind=Kind.ATTRIBUTE)
    found = {f.reference.target: f for f in findings([tried, fell], PROJECT)}
    assert found[old].new == ()


BONE = "peft.BoneModel"


def test_a_site_that_requires_what_a_test_found_present_runs_only_where_it_is():
    def bone(target: str, outcomes: str, *sites: Site) -> Resolved:
        item = resolved(target, outcomes, *sites)
        return replace(item, reference=replace(item.reference, package="peft"))

    requiring = Site("proj/tuners.py", 15, True, requires=(BONE,))
    test = bone(BONE, "oomm", Site("proj/tuners.py", 2, True, requires=(BONE,)))
    # BoneModel gone from 5.1.0: the patch under `BoneModel is not None` does not run
    gone = bone(f"{BONE}._create_and_replace", "oomm", requiring)
    # BoneModel still there, its method gone from 5.1.0: the patch runs and stops applying
    stopped = bone(f"{BONE}._create_and_replace", "oomm", requiring)
    stays = bone(BONE, "oooo")
    project = Target("proj", "1.0", {"peft": ">=5.0.0"})
    assert findings([test, gone], project)[0].new == ()
    assert [f.new for f in findings([test, gone], project)] == [(), ()]
    (finding,) = [f for f in findings([stays, stopped], project) if f.reference.target != BONE]
    assert finding.new == ("5.1.0", "5.2.0")


NO_INIT = "transformers.modeling_utils.no_init_weights"
ORIGIN = "transformers.masking_utils.origin_create_causal_mask"
MODELING_UTILS = resolved("transformers.modeling_utils.PreTrainedModel", "oooo", kind=Kind.IMPORT)
MASKING_UTILS = resolved("transformers.masking_utils", "oooo", kind=Kind.IMPORT)
PATCHED = f"patch {NO_INIT}"
INITIALIZATION = "transformers.initialization.no_init_weights"


def binding(line: int = 10, *, window: str | None = None, aliases: str = "") -> Site:
    """A patch site that binds the name (``X.n = v``; ``aliases``: ``v``, upstream's)."""
    return replace(site(line, window=window), replaces=True, aliases=aliases)


def held(*items: Resolved) -> dict[str, tuple[str, ...]]:
    """``"kind target"`` -> the releases held, for each reference missing where it runs."""
    found = findings(items, PROJECT)
    return {
        f"{f.reference.kind} {f.reference.target}": f.new for f in found if f.missing or f.added
    }


def test_a_reexport_bound_only_where_upstream_lacks_the_name_adds_it():
    # auto-round: if version >= 5.0.0: modeling_utils.no_init_weights = initialization.no_...
    shim = resolved(NO_INIT, "ommm", binding(window=">=5.0.0", aliases=INITIALIZATION))
    (finding,) = findings([MODELING_UTILS, shim], PROJECT)
    assert (finding.new, list(finding.added)) == ((), ["5.0.0", "5.1.0", "5.2.0"])
    assert "a compat re-export" in finding.added["5.0.0"]
    # run on 5.0.0 too, which had the name: there it redirected it, and it stopped applying
    alias = binding(aliases=INITIALIZATION)
    assert held(MODELING_UTILS, resolved(NO_INIT, "oomm", alias)) == {PATCHED: RELEASES[2:]}
    # an unknown where it runs may have had it: it may have applied
    assert held(MODELING_UTILS, resolved(NO_INIT, "mumm", alias)) == {PATCHED: ("5.1.0", "5.2.0")}
    # upstream's object under another name: where a test keeps it off the releases that have
    # the name, it redirects no read of upstream's (the name is gone wherever it binds)
    redirect = binding(window=">=5.0.0", aliases="transformers.initialization.skip_init")
    assert held(MODELING_UTILS, resolved(NO_INIT, "ommm", redirect)) == {PATCHED: ()}
    # unguarded, it redirected the name where upstream had it, and stopped applying
    redirect = binding(aliases="transformers.initialization.skip_init")
    assert held(MODELING_UTILS, resolved(NO_INIT, "ommm", redirect)) == {PATCHED: RELEASES[1:]}
    # liger: `modeling_qwen2_vl.CrossEntropyLoss = LigerCrossEntropyLoss` past a floor test
    # the name's last release fails: its own code where upstream dropped the name, a dead
    # patch on every release it runs on
    dead = resolved(NO_INIT, "ommm", binding(window=">=5.0.0"))
    assert held(MODELING_UTILS, dead) == {PATCHED: RELEASES[1:]}


def test_a_reexport_binds_only_where_what_it_binds_is_there():
    # axolotl: from trl.experimental.orpo import ORPOTrainer; trl.trainer.ORPOTrainer = it
    # (the import fails where the new home is missing: the binding never runs there)
    new_home = "transformers.initialization.no_init_weights"
    moved = resolved(new_home, "mmoo", site(5), kind=Kind.IMPORT)
    shim = resolved(NO_INIT, "oomm", binding(aliases=new_home))
    assert held(MODELING_UTILS, moved, shim) == {f"import {new_home}": RELEASES[1:2], PATCHED: ()}
    # where the new home is there while the old name is too, the alias replaced it there
    early = resolved(new_home, "oooo", site(5), kind=Kind.IMPORT)
    assert held(MODELING_UTILS, early, shim) == {PATCHED: RELEASES[2:]}
    # ... unless that was only before the declared range (>=5.0.0): none it supports
    older = resolved(NO_INIT, "ommm", binding(aliases=new_home))
    assert held(MODELING_UTILS, early, older) == {PATCHED: ()}


def test_an_item_assignment_or_a_binding_on_what_may_be_absent_is_held():
    # X.n[k] = v reads X.n first: it raises where upstream lacks it
    assert held(MODELING_UTILS, resolved(NO_INIT, "mmmm", site())) == {PATCHED: RELEASES[1:]}
    # nothing says modeling_utils is there: binding on a missing object raises
    assert held(resolved(NO_INIT, "mmmm", binding())) == {PATCHED: RELEASES[1:]}


def test_the_projects_own_attribute_is_held_neither_where_bound_nor_where_read():
    # ms-swift: masking_utils.origin_create_causal_mask = masking_utils.create_causal_mask,
    # then calls masking_utils.origin_create_causal_mask(...) from its replacement
    bound = resolved(ORIGIN, "mmmm", binding(148))
    read = resolved(ORIGIN, "mmmm", site(133), kind=Kind.ATTRIBUTE)
    inner = resolved(f"{ORIGIN}.__kwdefaults__", "mmmm", site(139), kind=Kind.ATTRIBUTE)
    assert set(held(MASKING_UTILS, bound, read, inner).values()) == {()}
    # where masking_utils itself is missing, that miss is the import's own finding
    older = resolved("transformers.masking_utils", "mmoo", kind=Kind.IMPORT)
    assert held(older, bound, read) == {
        "import transformers.masking_utils": RELEASES[1:2],
        f"patch {ORIGIN}": (),
        f"attribute {ORIGIN}": (),
    }
    # one release had it: a name upstream has, not the project's own; bound and read, held
    assert held(MASKING_UTILS, resolved(ORIGIN, "ommm", binding(148)), read) == {
        f"patch {ORIGIN}": RELEASES[1:],
        f"attribute {ORIGIN}": RELEASES[1:],
    }


LOSS = "transformers.models.llama4.modeling_llama4.CrossEntropyLoss"


def test_a_name_no_release_has_is_the_projects_own_only_on_evidence_that_it_owns_it():
    owner = resolved("transformers.models.llama4.modeling_llama4.Llama4Model", "oooo")
    # liger: modeling_llama4.CrossEntropyLoss = LigerCrossEntropyLoss, never read back: a
    # patch of a name upstream dropped before the oldest release checked, dead everywhere
    assert held(owner, resolved(LOSS, "mmmm", binding())) == {f"patch {LOSS}": RELEASES[1:]}
    # asked for with getattr(..., None) first: how a patch keeps the original, no evidence
    asked = Site("proj/patch.py", 5, True, requires=(LOSS,))
    found = held(
        owner, resolved(LOSS, "mmmm", binding()), resolved(LOSS, "mmmm", asked, kind=Kind.ATTRIBUTE)
    )
    assert found[f"patch {LOSS}"] == RELEASES[1:]
    # upstream's own object kept under a name upstream never had: no code of the project's
    kept = binding(aliases="transformers.loss.ForCausalLMLoss")
    assert held(owner, resolved(LOSS, "mmmm", kept)) == {f"patch {LOSS}": ()}


def test_a_literal_bound_to_a_name_no_release_has_is_only_possible():
    # unsloth_zoo: Llama4TextExperts.has_bias = False, read back as self.has_bias by the
    # forward it installs, or a flag upstream dropped before the oldest release checked
    owner = resolved("transformers.models.llama4.modeling_llama4.Llama4Model", "oooo")
    flag = replace(binding(), constant=True)
    (finding,) = findings([owner, resolved(LOSS, "mmmm", flag)], PROJECT)
    assert (finding.new, finding.fails) == (RELEASES[1:], False)
    assert "no release checked ever had it" in finding.possible
    # a flag upstream had and dropped inside the range silently stops applying: held
    (finding,) = findings([owner, resolved(LOSS, "oomm", flag)], PROJECT)
    assert (finding.new, finding.fails) == (("5.1.0", "5.2.0"), True)


def test_code_bound_on_a_class_under_a_name_no_release_has_is_only_possible():
    # lightning-thunder: LlamaRMSNorm.reset_parameters = RMSNorm_reset_parameters, called by
    # its meta-device materialization through any module that has one
    norm = f"{LLAMA}.reset_parameters"
    owner = resolved(LLAMA, "oooo", kind=Kind.IMPORT)
    member = resolved(norm, "mmmm", binding())
    member = replace(member, why=dict.fromkeys(RELEASES, member_miss("reset_parameters", "A")))
    (finding,) = findings([owner, member], PROJECT)
    assert (finding.fails, "on the class" in finding.possible) == (False, True)
    # a module's name (liger's modeling_llama4.CrossEntropyLoss) stays held: above


def test_a_member_no_release_has_is_judged_on_the_releases_its_class_is_there():
    # trl: GenericForSequenceClassification._keys_to_ignore_on_load_missing = [...]; the
    # mixin came in 4.56, the project's floor: the 4.5x misses before are its module's
    mixin = "transformers.modeling_layers.GenericForSequenceClassification"
    owner = resolved(mixin, "mooo", kind=Kind.IMPORT)
    member = resolved(f"{mixin}.keys", "mmmm", binding())
    why = {v: member_miss("keys", "GenericForSequenceClassification") for v in RELEASES[1:]}
    member = replace(member, why={RELEASES[0]: "modeling_layers does not bind it", **why})
    (finding,) = findings([owner, member], PROJECT)
    assert (finding.fails, "on the class" in finding.possible) == (False, True)


def test_a_private_method_the_project_never_calls_bound_under_a_name_no_release_has_is_held():
    # fastckpt: LlamaModel._prepare_decoder_attention_mask = _prepare_decoder_attention_mask;
    # 4.36 dropped the method, so no release checked calls it: the patch does nothing
    name = "_prepare_decoder_attention_mask"
    owner = resolved(LLAMA, "oooo", kind=Kind.IMPORT)
    uncalled = replace(binding(), exports=True, function=True, uncalled=True)
    member = resolved(f"{LLAMA}.{name}", "mmmm", uncalled)
    member = replace(member, why=dict.fromkeys(RELEASES, member_miss(name, "A")))
    (finding,) = findings([owner, member], PROJECT)
    assert (finding.new, finding.possible, finding.fails) == (RELEASES[1:], "", True)
    # one the project calls itself (through self) is an export, its own: added
    called = replace(
        member, reference=replace(member.reference, sites=(replace(uncalled, uncalled=False),))
    )
    (finding,) = findings([owner, called], PROJECT)
    assert (finding.new, list(finding.added)) == ((), list(RELEASES[1:]))


MIXER = "transformers.models.falcon_h1.modeling_falcon_h1.FalconH1Mixer"


def test_a_binding_the_projects_own_replacement_reads_back_applies_where_that_is_called():
    # axolotl: FalconH1Mixer.cuda_kernels_forward, gone in 5.20, called by the project's
    # own FalconH1Mixer.forward
    kernels = replace(binding(), read_by=(f"{MIXER}.forward",))
    forward = resolved(f"{MIXER}.forward", "oooo", binding())
    assert held(forward, resolved(f"{MIXER}.kernels", "oomm", kernels)) == {
        f"patch {MIXER}.kernels": ()
    }
    # where upstream dropped forward too, neither is called: held
    gone = resolved(f"{MIXER}.forward", "ooom", binding())
    assert held(gone, resolved(f"{MIXER}.kernels", "oomm", kernels)) == {
        f"patch {MIXER}.forward": ("5.2.0",),
        f"patch {MIXER}.kernels": ("5.2.0",),
    }
    # ... and so where the forward binding does not run
    gated = resolved(f"{MIXER}.forward", "oooo", binding(window="<5.2.0"))
    assert held(gated, resolved(f"{MIXER}.kernels", "oomm", kernels)) == {
        f"patch {MIXER}.kernels": ("5.2.0",),
    }


GPT_OSS_VERSION = "transformers.models.gpt_oss.modeling_gpt_oss.Version"


def test_the_projects_own_object_exported_under_its_own_name_upstream_never_had_is_added():
    # unsloth_zoo: m.Version = Version, for compiler-generated modules that resolve it there
    owner = resolved("transformers.models.gpt_oss.modeling_gpt_oss", "oooo", kind=Kind.IMPORT)
    export = replace(binding(), exports=True)
    (finding,) = findings([owner, resolved(GPT_OSS_VERSION, "mmmm", export)], PROJECT)
    assert (finding.new, list(finding.added)) == ((), list(RELEASES[1:]))
    # where upstream had the name, the binding put it back or replaced it: only possible
    (finding,) = findings([owner, resolved(GPT_OSS_VERSION, "oomm", export)], PROJECT)
    assert finding.new == ("5.1.0", "5.2.0")
    assert finding.possible.startswith("it binds the project's own object of that name")
    assert not finding.fails
    # a function of the name is a fixed copy put in upstream's place (nemo-automodel)
    function = replace(export, function=True)
    (finding,) = findings([owner, resolved(GPT_OSS_VERSION, "oomm", function)], PROJECT)
    assert (finding.possible, finding.fails) == ("", True)
    # one site binding another object (liger's CrossEntropyLoss = LigerCrossEntropyLoss)
    mixed = resolved(GPT_OSS_VERSION, "mmmm", export, binding(20))
    assert findings([owner, mixed], PROJECT)[0].new == RELEASES[1:]


def test_a_classs_member_bound_to_the_projects_function_of_its_name_is_a_patch():
    # `Zamba2MambaMixer.torch_forward = torch_forward`: upstream calls its classes' members
    member = f"{GPT_OSS_VERSION}.torch_forward"
    dropped = resolved(member, "oomm", replace(binding(), exports=True))
    dropped = replace(
        dropped, why={v: member_miss("torch_forward", "Mixer -> Module") for v in RELEASES[2:]}
    )
    (finding,) = findings([dropped], PROJECT)
    assert (finding.possible, finding.fails) == ("", True)


def test_a_dunder_binding_takes_effect_whatever_upstream_defines():
    # unsloth: trl.__all__ = [...] (trl has none): `from trl import *` reads it, not trl
    star = resolved("transformers.__all__", "mmmm", binding())
    (finding,) = findings([MODELING_UTILS, star], PROJECT)
    assert (finding.new, list(finding.added)) == ((), list(RELEASES[1:]))
    # a read of it still raises where upstream lacks it
    read = resolved("transformers.__all__", "mmmm", site(), kind=Kind.ATTRIBUTE)
    assert held(MODELING_UTILS, read) == {"attribute transformers.__all__": RELEASES[1:]}


def test_a_patch_whose_object_is_bound_under_its_name_on_an_owner_that_has_it_is_possible():
    # auto-round: conversion_mapping.get_checkpoint_conversion_mapping = ar beside
    # modeling_utils.get_checkpoint_conversion_mapping = ar, which 5.x no longer imports
    home, importer = "transformers.conversion_mapping.f", "transformers.modeling_utils.f"
    beside = replace(binding(), elsewhere=(home,))
    (finding,) = findings([resolved(home, "mooo"), resolved(importer, "mmmm", beside)], PROJECT)
    assert finding.possible.startswith(f"the project binds the same object as {home}")
    assert not finding.fails
    # where the other owner lacks the name too, the miss is the patch's alone
    findings_ = findings([resolved(home, "moom"), resolved(importer, "mmmm", beside)], PROJECT)
    assert [f.fails for f in findings_ if f.reference.target == importer] == [True]


# --- alternatives of an anchor (Site.alternatives, canary.surface.anchortests) -----------

FORWARD = "transformers.Trainer.compute_loss"


def spelling(text: str, outcomes: str, *alternatives: str, guarded: bool = False) -> Resolved:
    """An anchor ``text`` on FORWARD whose one site tries ``alternatives`` instead."""
    item = resolved(FORWARD, outcomes, kind=Kind.ANCHOR)
    sites = (replace(site(guarded=guarded), alternatives=alternatives),)
    return replace(item, reference=replace(item.reference, anchor=text, sites=sites))


def held_anchors(*items: Resolved) -> dict[str, tuple[str, ...]]:
    return {f.reference.anchor: f.new for f in findings(items, PROJECT) if f.fails}


def test_a_spelling_is_not_missed_where_its_alternative_is_there():
    assert held_anchors(spelling("a=1", "oomm", "a = 1"), spelling("a = 1", "oooo", "a=1")) == {}
    assert held_anchors(spelling("a=1", "oomm"), spelling("a = 1", "oooo")) == {"a=1": RELEASES[2:]}


def test_where_every_spelling_vanished_the_rewrite_silently_stops_applying():
    first = spelling("a=1", "oomm", "a = 1")
    both = held_anchors(first, spelling("a = 1", "oomm", "a=1"))
    assert both == {"a=1": ("5.1.0", "5.2.0"), "a = 1": ("5.1.0", "5.2.0")}
    # the spelling the project tests for first is only possible: it goes on without it
    tested = spelling("a=1", "oomm", "a = 1", guarded=True)
    assert held_anchors(tested, spelling("a = 1", "oomm", "a=1")) == {"a = 1": ("5.1.0", "5.2.0")}


def test_an_anchor_only_releases_below_the_floor_have_is_only_possible():
    # unsloth's 4.46 gradient-accumulation rewrite of training_step, floor 4.52.4
    (finding,) = findings([spelling("loss *= ga", "ommm")], PROJECT)
    assert (finding.new, finding.fails) == (RELEASES[1:], False)
    assert "only on releases below the declared range (4.57.0 the last)" in finding.possible
    # there on a release of the range, then gone: the rewrite silently stops applying
    assert held_anchors(spelling("loss *= ga", "oomm")) == {"loss *= ga": ("5.1.0", "5.2.0")}


def test_an_anchor_no_release_of_the_range_or_below_has_is_only_possible():
    # unsloth's 4.46 training_step rewrite whose pattern lacks re.DOTALL: it matches nowhere
    (finding,) = findings([spelling("loss *= ga", "mmmm")], PROJECT)
    assert (finding.new, finding.fails) == (RELEASES[1:], False)
    assert "on no release checked inside the declared range or below it" in finding.possible
    # one the project raises without breaks on every release it supports
    raising = spelling("loss *= ga", "mmmm")
    raising = replace(
        raising,
        reference=replace(raising.reference, sites=(replace(site(), raises=True),)),
    )
    (finding,) = findings([raising], PROJECT)
    assert (finding.new, finding.fails) == (RELEASES[1:], True)


def test_releases_where_another_source_is_read_say_nothing_of_an_anchor_that_never_matched():
    # unsloth's KTO rewrite of trl.trainer's _compute_kl_logps: read up to 0.25 and from 1.8
    # on; in between unsloth reads trl.experimental's class, and this one is not read
    item = spelling("shift_logits = completion_logits", "mmoo")
    item = replace(item, why={**item.why, **dict.fromkeys(RELEASES[2:], NOT_READ)})
    (finding,) = findings([item], PROJECT)
    assert (finding.new, finding.fails) == (RELEASES[1:2], False)
    assert "on no release checked inside the declared range or below it" in finding.possible


def test_a_tested_spelling_that_never_existed_alone_came_later_with_the_first_that_did():
    # "a=1" is never there; the group first is in 5.1.0: a tested miss before it is expected
    later = (spelling("a=1", "mmmm", "a = 1", guarded=True), spelling("a = 1", "mmoo", "a=1"))
    new = {f.reference.anchor: (f.new, f.confidence) for f in findings(later, PROJECT) if f.new}
    # and a text that came later is only possible before it (_anchor_came_later)
    assert new == {"a = 1": (("5.0.0",), "possible")}


def test_an_anchor_missing_only_before_its_text_came_is_possible_unless_it_raises():
    # unsloth's CPO rewrite of `if processing_class.pad_token is None:`, trl 0.28's text
    (finding,) = findings([spelling("pad = 0", "mmoo")], PROJECT)
    assert (finding.new, finding.fails) == (("5.0.0",), False)
    assert finding.possible.startswith("the text came in 5.1.0: before it the rewrite")
    # there, then gone, then back: a release where it stopped applying counts
    assert held_anchors(spelling("pad = 0", "omoo")) == {"pad = 0": ("5.0.0",)}
    # a check the project raises without breaks before it came
    raising = spelling("pad = 0", "mmoo")
    sites = (replace(site(), raises=True),)
    raising = replace(raising, reference=replace(raising.reference, sites=sites))
    assert findings([raising], PROJECT)[0].fails


def test_an_alternative_that_cannot_be_decided_makes_the_miss_only_possible():
    (finding,) = findings([spelling("a=1", "oomm", "a = 1")], PROJECT)  # "a = 1" unresolved
    assert finding.fails
    items = [spelling("a=1", "oomm", "a = 1"), spelling("a = 1", "uuuu")]
    (finding,) = [f for f in findings(items, PROJECT) if f.reference.anchor == "a=1"]
    assert (finding.fails, finding.confidence) == (False, "possible")
    assert "alternative anchor" in finding.possible


def test_a_sites_alternatives_survive_the_json_contract():
    tried = replace(site(guarded=True), alternatives=("a = 1", "a=1"))
    assert Site.from_json(tried.to_json()) == tried
    assert "alternatives" not in site().to_json()  # only where there are some


GEMMA4_CLASS = "transformers.models.gemma4.modeling_gemma4.Gemma4Model"


def after(*imports: str, at_import=False) -> Site:
    """A site reached after its function imported ``imports``."""
    return replace(site(30, at_import=at_import), after=imports)


@pytest.mark.parametrize(
    ("dominating", "import_outcomes", "new"),
    [
        (GEMMA4_CLASS, "mmoo", ("5.1.0",)),  # gemma4 arrives in 5.1.0: reached from there
        (LOADING, "mmoo", ("5.0.0", "5.1.0")),  # no model: both misses break, both count
        (GEMMA4_CLASS, "oomo", ("5.0.0", "5.1.0")),  # removed, not came later: held
    ],
)
def test_a_site_after_an_import_from_a_model_the_release_lacks_is_unreached(
    dominating, import_outcomes, new
):
    used = resolved(LLAMA, "ommo", after(dominating), kind=Kind.ATTRIBUTE)
    imported = resolved(dominating, import_outcomes, site(29), kind=Kind.IMPORT)
    found = findings([used, imported], PROJECT, absent=absent_before("5.1.0"))
    assert found[0].new == new


def test_a_site_after_a_model_import_is_unreached_where_the_model_is_absent_ok_or_not():
    used = resolved(LLAMA, "mmmm", after(GEMMA4_CLASS), kind=Kind.ATTRIBUTE)
    imported = resolved(GEMMA4_CLASS, "mmoo", site(29), kind=Kind.IMPORT)
    (finding, _) = findings([used, imported], PROJECT, absent=absent_before("5.1.0"))
    # never ok, so not came later: still not reached where the import raises first
    assert (finding.gated, finding.new) == (("5.0.0",), ("5.1.0", "5.2.0"))


def test_a_release_of_another_package_says_nothing_of_the_models_it_lacks():
    used = resolved(LLAMA, "ommo", after(GEMMA4_CLASS), kind=Kind.ATTRIBUTE)
    used = replace(used, reference=replace(used.reference, package="peft"))
    imported = resolved(GEMMA4_CLASS, "mmoo", site(29), kind=Kind.IMPORT)
    project = Target("proj", "1.0", {"peft": ">=5.0.0"})
    found = findings([used, imported], project, absent=absent_before("5.1.0"))
    assert found[0].new == ("5.0.0", "5.1.0")  # peft 5.0.0 is no transformers release


TRAINING_STEP = "transformers.Trainer.training_step"


def test_a_removed_anchor_every_running_site_tests_for_is_possible_an_assumed_one_counts():
    # unsloth: `if "loss *=" in function: function = function.replace("loss *=", ...)`:
    # where the text is gone the rewrite stops applying, which the project provides for
    (tested,) = findings(
        [resolved(TRAINING_STEP, "oomm", site(guarded=True), kind=Kind.ANCHOR)], PROJECT
    )
    assert tested.new == ("5.1.0", "5.2.0")
    assert (tested.confidence, tested.fails) == ("possible", False)
    assert "tests for this text (proj/patch.py:10)" in tested.possible
    # a plain `function.replace(...)` assumes the text: its rewrite silently stops applying
    (assumed,) = findings([resolved(TRAINING_STEP, "oomm", site(), kind=Kind.ANCHOR)], PROJECT)
    assert (assumed.confidence, assumed.fails) == ("proven", True)
    # one site that assumes it, running there, is enough; a guarded use of a name is no anchor
    both = resolved(TRAINING_STEP, "oomm", site(guarded=True), site(20), kind=Kind.ANCHOR)
    assert findings([both], PROJECT)[0].fails
    (patch,) = findings([resolved(TRAINING_STEP, "oomm", site(guarded=True))], PROJECT)
    assert (patch.confidence, patch.fails) == ("proven", True)


def test_the_proof_names_the_site_that_makes_the_miss_count():
    # unsloth: transformers.conversion_mapping, imported in four try/except-return blocks
    # (handled) and once bare in mistral_format.py, which is what makes it count
    handled = replace(site(5, guarded=True), handled="its ImportError leaves silently")
    (finding,) = findings([resolved(LOADING, "oomm", handled, site(612))], PROJECT)
    assert finding.proof == "no set_param_for_module; proj/patch.py:612 runs on 5.1.0"


QWEN2_NORM = "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl.Qwen2RMSNorm"
QWEN25_NORM = "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl.Qwen2_5_VLRMSNorm"


def norm_patches(old: str, new: str) -> list[Resolved]:
    """liger: ``vl.Qwen2RMSNorm = LigerRMSNorm; vl.Qwen2_5_VLRMSNorm = LigerRMSNorm``."""
    return [
        resolved(QWEN2_NORM, old, replace(binding(), alternatives=(QWEN25_NORM,))),
        resolved(QWEN25_NORM, new, replace(binding(20), alternatives=(QWEN2_NORM,))),
    ]


def test_a_renamed_name_is_not_missed_where_the_object_is_bound_to_its_new_name_too():
    # upstream renamed it in 5.1.0: the patch applies through the new name from then on
    assert held(*norm_patches("oomm", "mmoo")) == {}
    # where neither is there, the patch stops applying (through either name)
    gone = ("5.2.0",)
    assert held(*norm_patches("oomm", "mmom")) == {
        f"patch {QWEN2_NORM}": gone,
        f"patch {QWEN25_NORM}": gone,
    }


def test_two_names_upstream_has_side_by_side_are_two_patches():
    # vision and text norms, both there until one goes: that one's patch stopped applying
    assert held(*norm_patches("oomm", "oooo")) == {f"patch {QWEN2_NORM}": ("5.1.0", "5.2.0")}


MAPPING = "transformers.conversion_mapping.get_checkpoint_conversion_mapping"
QWEN35, QWEN35_MOE = "transformers.models.qwen3_5", "transformers.models.qwen3_5_moe"


def model_branch(*packages: str) -> Site:
    """A site in ``if config.model_type in (...):`` of those packages' types."""
    return replace(site(), requires=("|".join(packages),))


@pytest.mark.parametrize(
    ("first", "second", "held"),
    [
        ("mmoo", "mmoo", ("5.1.0", "5.2.0")),  # both came in 5.1.0: it runs from there
        ("mmmo", "mmoo", ("5.1.0", "5.2.0")),  # one of the two types is enough
        ("mmoo", "mmmm", RELEASES[1:]),  # a type no release has may be remote code: anywhere
    ],
)
def test_a_model_types_branch_runs_where_one_of_its_model_packages_is_there(first, second, held):
    # llamafactory: if model_type in ["qwen3_5", "qwen3_5_moe"]: patch_qwen3_5_forward(model)
    packages = [
        resolved(QWEN35, first, kind=Kind.IMPORT),
        resolved(QWEN35_MOE, second, kind=Kind.IMPORT),
    ]
    used = resolved(MAPPING, "mmmm", model_branch(QWEN35, QWEN35_MOE), kind=Kind.IMPORT)
    found = {f.reference.target: f for f in findings([*packages, used], PROJECT)}
    assert found[MAPPING].new == held


def test_a_model_types_branch_reads_packages_the_project_never_imports_as_resolved():
    # ipex-llm: `elif model.config.model_type == "qwen2_5_omni":` imports its own module
    used = resolved(MAPPING, "mmmm", model_branch(QWEN35), kind=Kind.IMPORT)
    (found,) = findings([used], PROJECT, absent=absent_before("5.1.0", QWEN35))
    assert found.new == ("5.1.0", "5.2.0")
    # never there on any release checked: a checkpoint's own code may have that type
    remote = ModelPackages(frozenset((QWEN35, v) for v in RELEASES))
    (found,) = findings([used], PROJECT, absent=remote)
    assert found.new == RELEASES[1:]


def registered_for(*packages: str) -> Site:
    """A site reached only through ``@register_x("type")`` of those packages' types."""
    return replace(site(), registered=("|".join(packages),))


@pytest.mark.parametrize(
    ("model", "possible"),
    [
        ("mmmo", True),  # every release it misses on lacks the type: only possible
        ("mmoo", False),  # 5.1.0 has the type and still misses: a checkpoint of it breaks
        ("mmmm", False),  # a type no release has may be remote code: no excuse
    ],
)
def test_a_miss_reached_only_through_a_model_types_registration_is_possible_where_it_lacks_it(
    model, possible
):
    # arctic-platform: @register_loader("qwen3_5_moe", ...) imports its qwen35 implementation
    package = resolved(QWEN35_MOE, model, kind=Kind.IMPORT)
    used = resolved(MAPPING, "mmmo", registered_for(QWEN35_MOE), kind=Kind.IMPORT)
    found = {f.reference.target: f for f in findings([package, used], PROJECT)}
    assert found[MAPPING].new == ("5.0.0", "5.1.0")  # it may run: nothing is gated
    assert bool(found[MAPPING].possible) == possible
    if possible:
        assert "registration under model type qwen3_5_moe" in found[MAPPING].possible


def test_a_registered_site_beside_one_reached_otherwise_is_proven():
    package = resolved(QWEN35_MOE, "mmmo", kind=Kind.IMPORT)
    sites = (registered_for(QWEN35_MOE), site(20))
    used = resolved(MAPPING, "mmmo", *sites, kind=Kind.IMPORT)
    found = {f.reference.target: f for f in findings([package, used], PROJECT)}
    assert (found[MAPPING].new, found[MAPPING].possible) == (("5.0.0", "5.1.0"), "")


@pytest.mark.parametrize(("model", "possible"), [("mmmo", True), ("oooo", False)])
def test_a_miss_in_a_module_named_for_a_model_is_possible_where_the_release_lacks_it(
    model, possible
):
    # flashrt-structures' graph_lowering/qwen3_vl.py imports masking_utils (4.53+)
    package = resolved(QWEN35_MOE, model, kind=Kind.IMPORT)
    named = replace(site(), named_for=QWEN35_MOE)
    used = resolved(MAPPING, "mmmo", named, kind=Kind.IMPORT)
    found = {f.reference.target: f for f in findings([package, used], PROJECT)}
    assert found[MAPPING].new == ("5.0.0", "5.1.0")
    assert bool(found[MAPPING].possible) == possible
    if possible:
        assert "in a module named for model qwen3_5_moe" in found[MAPPING].possible
    # a site elsewhere runs wherever it is called: proven
    elsewhere = resolved(MAPPING, "mmmo", named, site(20), kind=Kind.IMPORT)
    found = {f.reference.target: f for f in findings([package, elsewhere], PROJECT)}
    counted = found[MAPPING]
    assert counted.possible == ""


RFDETR = Target(
    "proj", "1.0", {"transformers": ">=5.0.0"}, extras={"rf-detr": {"transformers": ">=5.2.0"}}
)


@pytest.mark.parametrize(
    ("path", "possible"),
    [
        ("proj/rf_detr/loss.py", True),  # in the extra's modules: its range leaves 5.0, 5.1 out
        ("proj/models/rf_detr.py", True),
        ("proj/shared/loss.py", False),  # any install may run it
        ("proj/rf_detr_tools/loss.py", False),  # another name
    ],
)
def test_a_miss_only_in_modules_named_for_an_extra_whose_range_leaves_it_out_is_possible(
    path, possible
):
    # autovision-framework: its [rfdetr] extra needs transformers>=5.9, the others >=4.56
    used = resolved(LOADING, "mmmo", replace(site(), path=path), kind=Kind.IMPORT)
    (found,) = findings([used], RFDETR)
    assert found.new == ("5.0.0", "5.1.0")
    assert bool(found.possible) == possible
    if possible:
        assert "extra [rf-detr] (transformers>=5.2.0)" in found.possible


def test_an_extra_whose_range_holds_the_release_excuses_nothing():
    used = resolved(LOADING, "mmmm", replace(site(), path="proj/rf_detr/loss.py"), kind=Kind.IMPORT)
    (found,) = findings([used], RFDETR)
    assert (found.new, found.possible) == (RELEASES[1:], "")


GENERATE = "transformers.modeling_utils.PreTrainedModel.generate"
MIXIN = {"4.57.0": Outcome.OK, "5.0.0": Outcome.OK, "5.1.0": Outcome.OK, "5.2.0": Outcome.OK}


@pytest.mark.parametrize(
    ("binds", "mixin", "possible"),
    [
        (True, MIXIN, True),  # the class inherited it; the mixin still has it
        (True, {**MIXIN, "5.2.0": Outcome.MISSING}, False),  # gone there too: nothing calls it
        (False, MIXIN, False),  # `X.n += v` reads X.n first: that raises
    ],
)
def test_a_patch_of_a_member_its_class_only_inherited_is_possible_while_the_base_has_it(
    binds, mixin, possible
):
    patched = resolved(GENERATE, "ommm", replace(site(), replaces=binds))
    inherited = {GENERATE: ("transformers.generation.utils.GenerationMixin.generate", mixin)}
    (found,) = with_inherited(findings([patched], PROJECT), inherited)
    assert found.new == RELEASES[1:]
    assert bool(found.possible) == possible


def deletion(outcomes: str, *sites: Site, gone: bool = True) -> Resolved:
    """An anchor on TRAINING_STEP the project deletes at ``sites``; where it is missing,
    ``gone`` says no spelling of it is left (none of its names is in the source)."""
    item = resolved(TRAINING_STEP, outcomes, *sites, kind=Kind.ANCHOR)
    if gone:
        item = replace(
            item,
            why={
                v: f"{w}; {TEXT_GONE} (none of its names is in it: 'x')"
                for v, w in item.why.items()
            },
        )
    return item


def test_a_deleted_text_no_spelling_of_which_is_left_is_only_possible_not_a_reformatted_one():
    # unsloth: re.sub(r"truncation\s*=\s*True,", "", function) for trl 0.24-0.25 only; trl
    # 0.26 dropped the kwargs: nothing is left to delete (or upstream renamed it: undecided)
    deleting = replace(site(), deletes=True)
    (dropped,) = findings([deletion("oomm", deleting)], PROJECT)
    assert (dropped.confidence, dropped.fails) == ("possible", False)
    assert "deletes this text (proj/patch.py:10), and on 5.1.0" in dropped.possible
    # a name of it still there: reformatted or edited, the text it deletes may be there
    (reformatted,) = findings([deletion("oomm", deleting, gone=False)], PROJECT)
    assert (reformatted.confidence, reformatted.fails) == ("proven", True)
    # a site that puts something in its place needs the text: it counts
    both = deletion("oomm", deleting, site(20))
    assert findings([both], PROJECT)[0].fails
    assert findings([deletion("oomm", site())], PROJECT)[0].fails


def test_a_sites_deletion_survives_the_json_contract():
    deleting = replace(site(), deletes=True)
    assert Site.from_json(deleting.to_json()) == deleting
    assert "deletes" not in site().to_json()
