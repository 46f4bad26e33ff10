"""trl: the trainers the fixes run under, TRL's own chunked loss, and what downstream
patches reach into.

Windows were found by running every check over every release in tags.toml; where code
moved (``trl/trainer`` <-> ``trl/experimental``) or changed shape, the check is split
exactly at the release that changed it, so a check's id and window say which shape a
release has.
"""

from __future__ import annotations

import ast

import pytest

from canary.catalog import (
    check,
    drift,
    expect_any_of,
    expect_assigned_after,
    expect_assignment,
    expect_assignment_where,
    expect_base,
    expect_bound,
    expect_call,
    expect_class_attribute,
    expect_decorated,
    expect_defined,
    expect_guarded,
    expect_mentions,
    expect_module_value,
    expect_never_assigns,
    expect_not_bound,
    expect_not_declared,
    expect_parameter_kind,
    expect_parameters,
    expect_reaches,
    row,
)
from canary.checks.contracts import TRAINER_COMPUTE_LOSS
from canary.codeindex import VAR_KEYWORD, Class, Function
from canary.workspace import Snapshot

pytestmark = pytest.mark.upstream("trl")

TRL_INIT = "trl/__init__.py"
DATA_UTILS = "trl/data_utils.py"
MODELS_UTILS = "trl/models/utils.py"
VLLM_GENERATION = "trl/generation/vllm_generation.py"
TRAINER_UTILS = "trl/trainer/utils.py"
BASE_TRAINER = "trl/trainer/base_trainer.py"
SFT_TRAINER = "trl/trainer/sft_trainer.py"
SFT_CONFIG = "trl/trainer/sft_config.py"
GRPO_TRAINER = "trl/trainer/grpo_trainer.py"
RLOO_TRAINER = "trl/trainer/rloo_trainer.py"
DPO_TRAINER = "trl/trainer/dpo_trainer.py"
KTO_TRAINER = "trl/trainer/kto_trainer.py"
CPO_TRAINER = "trl/trainer/cpo_trainer.py"
ORPO_TRAINER = "trl/trainer/orpo_trainer.py"
BCO_TRAINER = "trl/trainer/bco_trainer.py"
REWARD_TRAINER = "trl/trainer/reward_trainer.py"
DISTILLATION_TRAINER = "trl/trainer/distillation_trainer.py"
EXPERIMENTAL_KTO = "trl/experimental/kto/kto_trainer.py"
EXPERIMENTAL_CPO = "trl/experimental/cpo/cpo_trainer.py"
EXPERIMENTAL_ORPO = "trl/experimental/orpo/orpo_trainer.py"
EXPERIMENTAL_BCO = "trl/experimental/bco/bco_trainer.py"
EXPERIMENTAL_DISTILLATION = "trl/experimental/distillation/distillation_trainer.py"
ASYNC_GRPO = "trl/experimental/async_grpo/async_grpo_trainer.py"
ASYNC_DISTILLATION = "trl/experimental/async_distillation/async_distillation_trainer.py"
SDFT_TRAINER = "trl/experimental/sdft/sdft_trainer.py"
SDPO_TRAINER = "trl/experimental/sdpo/sdpo_trainer.py"
SSD_TRAINER = "trl/experimental/ssd/ssd_trainer.py"
SELF_DISTILLATION = "trl/experimental/self_distillation/base_self_distillation_trainer.py"

MODEL_ACCEPTS_LOSS_KWARGS = "self.model_accepts_loss_kwargs"
# TRL 1.15 replaced the per-trainer assignment with this class attribute, read by
# _BaseTrainer.__init__ (and by Trainer itself from transformers 5.19).
LOSS_IS_SCALED = "loss_is_scaled_for_ga"


def _string_constants(expression: str) -> set[str]:
    """The string literals inside a normalised expression (``a if b else 'chunked_nll'``)."""
    return {
        node.value
        for node in ast.walk(ast.parse(expression, mode="eval"))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


# -- SFTTrainer and its base classes: where the accepts_loss_kwargs shadow is read ------


@check(reads=SFT_TRAINER, fix="chunked NLL loss")
def test_sft_trainer_exists(upstream):
    """trl/trainer/sft_trainer.py defines SFTTrainer with its own compute_loss, the step the
    chunked loss is patched under."""
    sft_trainer = upstream.module(SFT_TRAINER).cls("SFTTrainer")
    sft_trainer.method("compute_loss")


@check(reads=SFT_TRAINER, fix="accepts_loss_kwargs shadowing", until="0.24.0")
def test_sft_trainer_derives_from_trainer(upstream):
    """SFTTrainer derives directly from transformers' Trainer, whose __init__ reads the
    shadowed accepts_loss_kwargs."""
    expect_base(upstream.module(SFT_TRAINER).cls("SFTTrainer"), "Trainer")


@check(
    reads=(SFT_TRAINER, BASE_TRAINER),
    fix="accepts_loss_kwargs shadowing",
    since="0.24.0",
)
def test_sft_trainer_derives_from_trl_base_trainer(upstream):
    """SFTTrainer derives from TRL's BaseTrainer (0.24-0.29) or _BaseTrainer (1.0+), which
    derives directly from transformers' Trainer."""
    base = expect_base(
        upstream.module(SFT_TRAINER).cls("SFTTrainer"), "BaseTrainer", "_BaseTrainer"
    )
    expect_base(upstream.module(BASE_TRAINER).cls(base), "Trainer")


@check(reads=SFT_TRAINER, fix="accepts_loss_kwargs shadowing", inherits="SFTTrainer")
def test_sft_trainer_never_sets_model_accepts_loss_kwargs(upstream):
    """SFTTrainer, and every class it puts before TRL's base trainer in its MRO (a mixin,
    wherever it lives), neither declares nor assigns model_accepts_loss_kwargs, in its
    methods or through a module-level helper of its own file they call: Trainer's own
    detection, which the shadow fix corrects, decides it."""
    for cls in _sft_trainer_and_its_mixins(upstream):
        expect_not_declared(cls, "model_accepts_loss_kwargs")
        # A class's helpers live in its own file, which its MRO had read.
        expect_never_assigns(cls, MODEL_ACCEPTS_LOSS_KWARGS, helpers=upstream.module(cls.path))


def _sft_trainer_and_its_mixins(upstream: Snapshot) -> list[Class]:
    """SFTTrainer's MRO up to TRL's base trainer (checked on its own) or the first class
    outside trl (transformers' Trainer)."""
    mine = []
    for cls in upstream.mro(SFT_TRAINER, "SFTTrainer"):
        if isinstance(cls, str) or cls.name in ("BaseTrainer", "_BaseTrainer"):
            break
        mine.append(cls)
    return mine


@check(
    reads=(SFT_TRAINER, BASE_TRAINER),
    fix="accepts_loss_kwargs shadowing",
    since="0.24.0",
    until="1.15.0",
)
def test_base_trainer_never_sets_model_accepts_loss_kwargs(upstream):
    """TRL's base trainer under SFTTrainer never assigns model_accepts_loss_kwargs (nor does
    a module-level helper it calls), so SFTTrainer inherits Trainer's detection unchanged."""
    base = expect_base(
        upstream.module(SFT_TRAINER).cls("SFTTrainer"), "BaseTrainer", "_BaseTrainer"
    )
    module = upstream.module(BASE_TRAINER)
    expect_never_assigns(module.cls(base), MODEL_ACCEPTS_LOSS_KWARGS, helpers=module)


@check(reads=BASE_TRAINER, fix="accepts_loss_kwargs shadowing", since="1.15.0")
def test_base_trainer_disables_loss_kwargs_only_for_trainers_that_scale(upstream):
    """_BaseTrainer.loss_is_scaled_for_ga defaults to None and __init__ sets
    model_accepts_loss_kwargs = False after super().__init__ only when a trainer declares
    it (self.loss_is_scaled_for_ga is not None is a part of the condition), so a trainer
    that leaves it None (SFTTrainer) keeps Trainer's detection."""
    module = upstream.module(BASE_TRAINER)
    base = module.cls("_BaseTrainer")
    expect_class_attribute(base, LOSS_IS_SCALED, None)
    # The test may be one part of a longer condition (a transformers version gate), never
    # negated or or-ed; itself or through a module-level helper __init__ calls with self.
    expect_assignment_where(
        base.method("__init__"),
        MODEL_ACCEPTS_LOSS_KWARGS,
        when=f"self.{LOSS_IS_SCALED} is not None",
        values=["False"],
        after="super().__init__",
        helpers=module,
    )


@check(
    reads=SFT_TRAINER, fix="accepts_loss_kwargs shadowing", since="1.15.0", inherits="SFTTrainer"
)
def test_sft_trainer_leaves_loss_is_scaled_for_ga_unset(upstream):
    """Neither SFTTrainer nor a class it puts before _BaseTrainer in its MRO (a mixin)
    declares loss_is_scaled_for_ga, so _BaseTrainer leaves model_accepts_loss_kwargs to
    Trainer's detection."""
    for cls in _sft_trainer_and_its_mixins(upstream):
        expect_not_declared(cls, LOSS_IS_SCALED)


@check(
    reads=SFT_TRAINER,
    fix="accepts_loss_kwargs shadowing",
    inherits="SFTTrainer",
    backed_by="test_trl_sft.py::test_project_chunked_loss_matches_default",
)
def test_sft_compute_loss_hands_num_items_in_batch_to_trainer(upstream):
    """SFTTrainer.compute_loss (its own, or inherited from a mixin or base in trl) takes
    num_items_in_batch by keyword (how Trainer.training_step passes it) and hands it,
    unreplaced on every path, to each super().compute_loss call as num_items_in_batch= (or
    at its position in Trainer.compute_loss), so a forward that honours it (what the shadow
    promises) gets it."""
    compute_loss = upstream.method(SFT_TRAINER, "SFTTrainer", "compute_loss")
    expect_parameters(compute_loss, "num_items_in_batch", keyword=True)
    expect_reaches(
        compute_loss,
        "num_items_in_batch",
        "super().compute_loss",
        keyword="num_items_in_batch",
        positions=TRAINER_COMPUTE_LOSS,
    )


# -- RL and preference trainers: the shadow fix is a no-op where they override ----------
# Each sets self.model_accepts_loss_kwargs = False after super().__init__ (up to 1.14), or
# declares loss_is_scaled_for_ga for _BaseTrainer to do it (1.15+). One check per trainer
# and location; the windows are where each trainer lives.


SHADOW = "accepts_loss_kwargs shadowing"


@check.each(
    row("test_grpo_trainer_disables_loss_kwargs", path=GRPO_TRAINER, until="1.15.0",
        name="GRPOTrainer"),
    row("test_rloo_trainer_disables_loss_kwargs", path=RLOO_TRAINER, since="0.22.0",
        until="1.15.0", name="RLOOTrainer"),
    # DPOTrainer 0.29.0-1.3.0 (the rewrite on BaseTrainer) sets nothing: the shadow reaches it.
    row("test_dpo_trainer_disables_loss_kwargs", path=DPO_TRAINER, until="0.29.0",
        name="DPOTrainer"),
    row("test_dpo_trainer_disables_loss_kwargs_again", path=DPO_TRAINER, since="1.4.0",
        until="1.15.0", name="DPOTrainer"),
    row("test_kto_trainer_disables_loss_kwargs", path=KTO_TRAINER, until="0.26.0",
        name="KTOTrainer"),
    row("test_experimental_kto_trainer_disables_loss_kwargs", path=EXPERIMENTAL_KTO,
        since="0.26.0", until="1.8.0", name="KTOTrainer"),
    row("test_kto_trainer_back_in_trainer_disables_loss_kwargs", path=KTO_TRAINER,
        since="1.8.0", until="1.15.0", name="KTOTrainer"),
    row("test_cpo_trainer_disables_loss_kwargs", path=CPO_TRAINER, until="0.26.0",
        name="CPOTrainer"),
    row("test_experimental_cpo_trainer_disables_loss_kwargs", path=EXPERIMENTAL_CPO,
        since="0.26.0", until="1.15.0", name="CPOTrainer"),
    # ORPOTrainer 0.18.2-0.19.1 sets nothing: the shadow does reach it there.
    row("test_orpo_trainer_disables_loss_kwargs", path=ORPO_TRAINER, since="0.20.0",
        until="0.26.0", name="ORPOTrainer"),
    row("test_experimental_orpo_trainer_disables_loss_kwargs", path=EXPERIMENTAL_ORPO,
        since="0.26.0", until="1.15.0", name="ORPOTrainer"),
    row("test_bco_trainer_disables_loss_kwargs", path=BCO_TRAINER, until="0.25.0",
        name="BCOTrainer"),
    row("test_experimental_bco_trainer_disables_loss_kwargs", path=EXPERIMENTAL_BCO,
        since="0.25.0", until="1.14.0", name="BCOTrainer"),
    row("test_reward_trainer_disables_loss_kwargs", path=REWARD_TRAINER, since="1.4.0",
        until="1.15.0", name="RewardTrainer"),
    row("test_experimental_distillation_trainer_disables_loss_kwargs",
        path=EXPERIMENTAL_DISTILLATION, since="1.9.0", until="1.10.0",
        name="DistillationTrainer"),
    row("test_distillation_trainer_disables_loss_kwargs", path=DISTILLATION_TRAINER,
        since="1.10.0", until="1.15.0", name="DistillationTrainer"),
    row("test_async_grpo_trainer_disables_loss_kwargs", path=ASYNC_GRPO, since="1.0.0",
        until="1.15.0", name="AsyncGRPOTrainer"),
    row("test_async_distillation_trainer_disables_loss_kwargs", path=ASYNC_DISTILLATION,
        since="1.11.0", until="1.15.0", name="AsyncDistillationTrainer"),
    row("test_sdft_trainer_disables_loss_kwargs", path=SDFT_TRAINER, since="1.0.0",
        until="1.15.0", name="SDFTTrainer"),
    row("test_self_distillation_base_disables_loss_kwargs", path=SELF_DISTILLATION,
        since="1.0.0", until="1.6.0", name="BaseSelfDistillationTrainer"),
    row("test_sdpo_trainer_disables_loss_kwargs", path=SDPO_TRAINER, since="1.6.0",
        until="1.15.0", name="SDPOTrainer"),
    row("test_ssd_trainer_disables_loss_kwargs", path=SSD_TRAINER, since="1.2.0",
        until="1.15.0", name="SSDTrainer"),
    fix=SHADOW,
)  # fmt: skip
def disables_loss_kwargs(upstream, name, path):
    """{name}.__init__ ({path}) sets self.model_accepts_loss_kwargs = False after
    super().__init__ (itself or through a module-level helper it calls with self), so the
    accepts_loss_kwargs shadow never changes its loss scaling."""
    module = upstream.module(path)
    init = module.cls(name).method("__init__")
    expect_assigned_after(init, MODEL_ACCEPTS_LOSS_KWARGS, "super().__init__", helpers=module)
    expect_assignment_where(
        init,
        MODEL_ACCEPTS_LOSS_KWARGS,
        values=["False"],
        unguarded=True,
        after="super().__init__",
        helpers=module,
    )


@check.each(
    row("test_grpo_trainer_declares_loss_scaling", path=GRPO_TRAINER, since="1.15.0",
        name="GRPOTrainer"),
    row("test_rloo_trainer_declares_loss_scaling", path=RLOO_TRAINER, since="1.15.0",
        name="RLOOTrainer"),
    row("test_dpo_trainer_declares_loss_scaling", path=DPO_TRAINER, since="1.15.0",
        name="DPOTrainer"),
    row("test_kto_trainer_declares_loss_scaling", path=KTO_TRAINER, since="1.15.0",
        name="KTOTrainer"),
    row("test_cpo_trainer_declares_loss_scaling", path=EXPERIMENTAL_CPO, since="1.15.0",
        name="CPOTrainer"),
    row("test_orpo_trainer_declares_loss_scaling", path=EXPERIMENTAL_ORPO, since="1.15.0",
        name="ORPOTrainer"),
    row("test_reward_trainer_declares_loss_scaling", path=REWARD_TRAINER, since="1.15.0",
        name="RewardTrainer"),
    row("test_distillation_trainer_declares_loss_scaling", path=DISTILLATION_TRAINER,
        since="1.15.0", name="DistillationTrainer"),
    row("test_async_grpo_trainer_declares_loss_scaling", path=ASYNC_GRPO, since="1.15.0",
        name="AsyncGRPOTrainer"),
    row("test_async_distillation_trainer_declares_loss_scaling", path=ASYNC_DISTILLATION,
        since="1.15.0", name="AsyncDistillationTrainer"),
    row("test_sdft_trainer_declares_loss_scaling", path=SDFT_TRAINER, since="1.15.0",
        name="SDFTTrainer"),
    row("test_sdpo_trainer_declares_loss_scaling", path=SDPO_TRAINER, since="1.15.0",
        name="SDPOTrainer"),
    row("test_ssd_trainer_declares_loss_scaling", path=SSD_TRAINER, since="1.15.0",
        until="1.16.0", name="SSDTrainer"),
    fix=SHADOW,
)  # fmt: skip
def declares_loss_scaling(upstream, name, path):
    """{name} ({path}) declares loss_is_scaled_for_ga True or False, so _BaseTrainer sets
    model_accepts_loss_kwargs = False and the accepts_loss_kwargs shadow is a no-op."""
    expect_class_attribute(upstream.module(path).cls(name), LOSS_IS_SCALED, True, False)


# -- TRL's chunked NLL: the loss the project's chunked loss mirrors and is compared with -


@check(reads=SFT_CONFIG, fix="chunked NLL loss", since="0.23.0")
def test_sft_config_has_loss_type(upstream):
    """SFTConfig declares the loss_type field (the runtime tier selects TRL's own losses
    with it)."""
    expect_class_attribute(upstream.module(SFT_CONFIG).cls("SFTConfig"), "loss_type")


@check(
    reads=SFT_TRAINER,
    fix="chunked NLL loss",
    since="1.4.0",
    until="1.15.0",
    backed_by="test_trl_sft.py::test_trl_chunked_nll_matches_default",
)
def test_sft_trainer_patches_chunked_nll_on_peft_base_model(upstream):
    """For loss_type == "chunked_nll" SFTTrainer.__init__ patches the forward of
    get_base_model() under PEFT (so adapters stay in the decoder), as the project's
    patch_chunked_loss does."""
    init = upstream.module(SFT_TRAINER).cls("SFTTrainer").method("__init__")
    (patch, *_) = expect_call(init, "_patch_chunked_ce_lm_head")
    # The loss_type test may be one part of a longer condition, never negated or or-ed.
    expect_guarded(init, patch, "args.loss_type == 'chunked_nll'")
    # Unique and textual: the patched model is one expression among others.
    target = patch.arg(0)
    values = [a.value for a in expect_assignment(init, str(target))]
    if not any("get_base_model()" in value for value in values):
        raise drift(
            init,
            f"SFTTrainer.__init__ patches {target}, which is no longer the PEFT base model: "
            f"{target} = {' / '.join(values)}",
        )


_TUNER_LAYER_TARGETS = (
    "target.lm_head",
    "target.get_output_embeddings()",
    "model.get_output_embeddings()",
)


@check(reads=SFT_TRAINER, fix="chunked NLL loss", since="1.4.0")
def test_sft_trainer_refuses_a_peft_lm_head(upstream):
    """SFTTrainer.__init__ refuses an lm_head that is a PEFT BaseTunerLayer (isinstance on
    lm_head or get_output_embeddings()): the chunked loss reads lm_head.weight, so an
    adapter there would get no gradient. The project's check_lm_head mirrors it."""
    init = upstream.module(SFT_TRAINER).cls("SFTTrainer").method("__init__")
    expect_any_of(
        *(
            lambda target=target: expect_call(init, "isinstance", args=(target, "BaseTunerLayer"))
            for target in _TUNER_LAYER_TARGETS
        )
    )


@check(reads=SFT_TRAINER, fix="chunked NLL loss", since="1.4.0", until="1.15.0")
def test_chunked_cross_entropy_signature(upstream):
    """_chunked_cross_entropy_loss takes hidden states, lm_head weight and bias, labels or
    shift_labels, num_items_in_batch, logit scale and softcapping: the contract the
    project's chunked_cross_entropy mirrors."""
    loss = upstream.module(SFT_TRAINER).function("_chunked_cross_entropy_loss")
    expect_parameters(
        loss,
        "hidden_states",
        "lm_head_weight",
        "chunk_size",
        "labels",
        "shift_labels",
        "num_items_in_batch",
        "logit_scale",
        "final_logit_softcapping",
        "lm_head_bias",
    )


@check(
    reads=SFT_TRAINER,
    fix="chunked NLL loss",
    since="1.4.0",
    until="1.15.0",
    backed_by="test_trl_sft.py::test_trl_chunked_nll_matches_default",
)
def test_chunked_cross_entropy_returns_valid_token_count(upstream):
    """_chunked_cross_entropy_loss returns the count of scored (non-ignored) tokens last,
    a tensor counted from the valid-label mask; the project returns the same count."""
    loss = upstream.module(SFT_TRAINER).function("_chunked_cross_entropy_loss")
    returned = [ast.parse(r, mode="eval").body for r in loss.returns]
    tuples = [r for r in returned if isinstance(r, ast.Tuple) and r.elts]
    if not tuples:
        raise drift(loss, f"{loss.qualname} returns {', '.join(loss.returns)}, no tuple")
    last = ast.unparse(tuples[-1].elts[-1])
    # n_valid (1.4-1.7: torch.tensor(n_valid)) or the label mask (1.8+: valid.sum()).
    count = [a for a in expect_assignment(loss, last) if "valid" in a.value]
    if not count:
        raise drift(loss, f"{loss.qualname} returns {last} last, not a count of the valid labels")


@check(reads=SFT_TRAINER, fix="chunked NLL loss", since="1.4.0", until="1.15.0")
def test_sft_compute_loss_reads_num_valid_tokens(upstream):
    """SFTTrainer.compute_loss reads outputs.num_valid_tokens from the chunked forward for
    its token metrics; the project's forward returns the same field."""
    compute_loss = upstream.module(SFT_TRAINER).cls("SFTTrainer").method("compute_loss")
    expect_mentions(compute_loss, "num_valid_tokens")


@check(reads=SFT_CONFIG, fix="chunked NLL loss", since="1.7.0", until="1.15.0")
def test_sft_config_defaults_to_chunked_nll(upstream):
    """SFTConfig leaves loss_type None and __post_init__ resolves it to "chunked_nll" (TRL's
    chunked loss is the SFT default), so the project's chunked loss replaces TRL's."""
    config = upstream.module(SFT_CONFIG).cls("SFTConfig")
    field = expect_class_attribute(config, "loss_type")
    if "None" not in _default_of(field.value):
        raise drift(config, f"SFTConfig.loss_type defaults to {_default_of(field.value)}, not None")
    post_init = config.method("__post_init__")
    resolved = expect_assignment(post_init, "self.loss_type")
    if not any("chunked_nll" in _string_constants(a.value) for a in resolved):
        values = " / ".join(a.value for a in resolved)
        raise drift(
            post_init,
            f"SFTConfig.__post_init__ no longer resolves loss_type to chunked_nll: {values}",
        )


def _default_of(field_value: str | None) -> str:
    node = ast.parse(field_value or "None", mode="eval").body
    if isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg == "default":
                return ast.unparse(keyword.value)
    return ast.unparse(node)


@check(reads=SFT_CONFIG, fix="chunked NLL loss", since="1.15.0")
def test_chunked_nll_is_a_deprecated_alias_of_nll(upstream):
    """SFTConfig.__post_init__ rewrites loss_type "chunked_nll" to "nll" (TRL's chunked loss
    became the fused LM head of every nll run)."""
    post_init = upstream.module(SFT_CONFIG).cls("SFTConfig").method("__post_init__")
    expect_assignment_where(
        post_init, "self.loss_type", when="self.loss_type == 'chunked_nll'", values=["'nll'"]
    )


@check(reads=(SFT_TRAINER, TRAINER_UTILS), fix="chunked NLL loss", since="1.15.0")
def test_sft_trainer_asks_for_the_fused_lm_head(upstream):
    """SFTTrainer adds TRL's fused LM head (trl/trainer/utils.py add_fused_lm_head) to the
    PEFT base model and calls the model with fused_lm_head=True; the project's chunked
    forward hands such calls to the original forward."""
    expect_defined(upstream.module(TRAINER_UTILS), "add_fused_lm_head")
    sft_trainer = upstream.module(SFT_TRAINER).cls("SFTTrainer")
    init = sft_trainer.method("__init__")
    (add, *_) = expect_call(init, "add_fused_lm_head")
    if "get_base_model()" not in str(add.arg(0)):
        message = f"SFTTrainer adds the fused LM head to {add.arg(0)}, not the PEFT base model"
        raise drift(init, message)
    compute_loss = sft_trainer.method("compute_loss")
    # Unique: the callee is whatever the model is called through, so any call will do; the
    # flag must be True, not merely passed.
    if not any(c.keyword("fused_lm_head") == "True" for c in compute_loss.calls):
        message = "SFTTrainer.compute_loss no longer calls the model with fused_lm_head=True"
        raise drift(compute_loss, message)


# -- version gate -------------------------------------------------------------------------


@check(reads=TRL_INIT, fix="trl version gate", until="0.22.0")
def test_version_is_a_literal(upstream):
    """trl/__init__.py assigns __version__ the release's own version as a string literal."""
    expect_module_value(upstream.module(TRL_INIT), "__version__", literals=[str(upstream.version)])


@check(reads=TRL_INIT, fix="trl version gate", since="0.22.0", until="0.22.1")
def test_version_read_from_version_file(upstream):
    """trl/__init__.py reads __version__ from the repository's VERSION file
    (Path(__file__).parent.parent / "VERSION"), else "unknown": the wheel does not ship that
    file, so the gate must fall back to the installed distribution's metadata."""
    init = upstream.module(TRL_INIT)
    version_file = init.assignment("_version_file")
    if "VERSION" not in _string_constants(version_file.value):
        message = f"_version_file = {version_file.value} no longer locates a VERSION file"
        raise drift(init, message)
    expect_module_value(init, "__version__", values=["f.read().strip()"])


@check(reads=TRL_INIT, fix="trl version gate", since="0.22.1")
def test_version_from_package_metadata(upstream):
    """trl/__init__.py sets __version__ = version("trl") from importlib.metadata."""
    init = upstream.module(TRL_INIT)
    expect_module_value(init, "__version__", values=["version('trl')"])
    expect_bound(init, "version", imported_from="importlib.metadata")


# -- datasets and chat templates --------------------------------------------------------


@check(reads=DATA_UTILS, fix="trl dataset format detection")
def test_is_conversational(upstream):
    """trl/data_utils.py defines is_conversational(example), which the patch calls with the
    example by position."""
    data_utils = upstream.module(DATA_UTILS)
    expect_defined(data_utils, "is_conversational")
    expect_parameters(data_utils.function("is_conversational"), "example", positional=0)


@check(reads=DATA_UTILS, fix="chat template propagation")
def test_maybe_apply_chat_template_delegates(upstream):
    """maybe_apply_chat_template (the legacy entry point) hands conversational examples to
    apply_chat_template, so wrapping either reaches the template."""
    data_utils = upstream.module(DATA_UTILS)
    expect_call(data_utils.function("maybe_apply_chat_template"), "apply_chat_template")


@check(reads=DATA_UTILS, fix="chat template propagation", until="1.3.0")
def test_apply_chat_template_takes_tokenizer(upstream):
    """apply_chat_template and maybe_apply_chat_template take (example, tokenizer, tools)."""
    data_utils = upstream.module(DATA_UTILS)
    for name in ("apply_chat_template", "maybe_apply_chat_template"):
        expect_parameters(data_utils.function(name), "example", "tokenizer", "tools")


@check(reads=DATA_UTILS, fix="chat template propagation", since="1.3.0")
def test_apply_chat_template_takes_processing_class(upstream):
    """apply_chat_template and maybe_apply_chat_template take (example, processing_class,
    tools): the tokenizer parameter was renamed in 1.3.0."""
    data_utils = upstream.module(DATA_UTILS)
    for name in ("apply_chat_template", "maybe_apply_chat_template"):
        expect_parameters(data_utils.function(name), "example", "processing_class", "tools")


@check(reads=DATA_UTILS, fix="chat template propagation", since="0.21.0")
def test_apply_chat_template_forwards_template_kwargs(upstream):
    """apply_chat_template and maybe_apply_chat_template take **template_kwargs, and the
    legacy one passes them on."""
    data_utils = upstream.module(DATA_UTILS)
    for name in ("apply_chat_template", "maybe_apply_chat_template"):
        expect_parameter_kind(data_utils.function(name), "template_kwargs", VAR_KEYWORD)
    expect_call(
        data_utils.function("maybe_apply_chat_template"),
        "apply_chat_template",
        keywords={"**": "template_kwargs"},
    )


@check(reads=DATA_UTILS, fix="chat template propagation", since="0.24.0")
def test_apply_chat_template_reads_example_chat_template_kwargs(upstream):
    """apply_chat_template reads the example's own "chat_template_kwargs" column (the
    successor path for per-example template arguments)."""
    function = upstream.module(DATA_UTILS).function("apply_chat_template")
    expect_call(function, "example.get", args=["'chat_template_kwargs'"])


# -- NEFTune --------------------------------------------------------------------------------


@check(reads=SFT_TRAINER, fix="NEFTune hook patch")
def test_sft_trainer_leaves_neftune_to_trainer(upstream):
    """SFTTrainer brings no NEFTune hook of its own (no _activate_neftune override, no
    neftune_post_forward_hook in sft_trainer.py): transformers' hook, which the patch
    replaces, is the one that runs."""
    sft_module = upstream.module(SFT_TRAINER)
    sft_trainer = sft_module.cls("SFTTrainer")
    for name in ("_activate_neftune", "_deactivate_neftune"):
        expect_not_declared(sft_trainer, name)
    expect_not_bound(sft_module, "neftune_post_forward_hook")


# -- GRPO -----------------------------------------------------------------------------------


def _grpo(upstream: Snapshot) -> Class:
    return upstream.module(GRPO_TRAINER).cls("GRPOTrainer")


@check(reads=GRPO_TRAINER, fix="GRPO trainer patch")
def test_grpo_trainer_methods(upstream):
    """GRPOTrainer defines _prepare_inputs, _generate_and_score_completions, compute_loss and
    _compute_loss, the methods the patch rewrites."""
    grpo = _grpo(upstream)
    for name in (
        "_prepare_inputs",
        "_generate_and_score_completions",
        "compute_loss",
        "_compute_loss",
    ):
        grpo.method(name)


@check(reads=GRPO_TRAINER, fix="GRPO trainer patch", until="0.20.0")
def test_grpo_per_token_logps(upstream):
    """GRPOTrainer._get_per_token_logps(model, input_ids, attention_mask, logits_to_keep)
    is the per-token log-prob helper (the legacy name)."""
    expect_parameters(
        _grpo(upstream).method("_get_per_token_logps"),
        "model",
        "input_ids",
        "attention_mask",
        "logits_to_keep",
    )


_LOGPS_PARAMETERS = ("model", "input_ids", "attention_mask", "logits_to_keep")


def _require_logps_and_entropies(grpo: Class) -> None:
    expect_parameters(grpo.method("_get_per_token_logps_and_entropies"), *_LOGPS_PARAMETERS)
    expect_not_declared(grpo, "_get_per_token_logps")


@check(reads=GRPO_TRAINER, fix="GRPO trainer patch", since="0.20.0", until="1.14.0")
def test_grpo_per_token_logps_and_entropies(upstream):
    """GRPOTrainer._get_per_token_logps_and_entropies(model, input_ids, attention_mask,
    logits_to_keep) replaced _get_per_token_logps."""
    _require_logps_and_entropies(_grpo(upstream))


@check(reads=GRPO_TRAINER, fix="GRPO trainer patch", since="1.14.0", until="1.15.0")
def test_grpo_per_token_logps_dispatch(upstream):
    """GRPOTrainer._get_per_token_logps_and_entropies(model, *args, **kwargs) hands its
    arguments to _full_logits_logps(model, input_ids, attention_mask, logits_to_keep) (the
    1.14 shape, between a Liger chunked path and the full-logits one)."""
    grpo = _grpo(upstream)
    dispatch = grpo.method("_get_per_token_logps_and_entropies")
    if dispatch.signature.var_positional is None:
        raise drift(dispatch, f"{dispatch.qualname} takes no *args: {dispatch.signature}")
    expect_call(dispatch, "self._full_logits_logps")
    expect_parameters(grpo.method("_full_logits_logps"), *_LOGPS_PARAMETERS)


@check(reads=GRPO_TRAINER, fix="GRPO trainer patch", since="1.15.0")
def test_grpo_per_token_logps_and_entropies_named_again(upstream):
    """GRPOTrainer._get_per_token_logps_and_entropies names (model, input_ids,
    attention_mask, logits_to_keep) again from 1.15.0."""
    _require_logps_and_entropies(_grpo(upstream))


@check(reads=GRPO_TRAINER, fix="GRPO trainer patch", until="0.19.0")
def test_grpo_scores_under_inference_mode_in_generate(upstream):
    """GRPOTrainer._generate_and_score_completions opens torch.inference_mode()."""
    expect_call(_grpo(upstream).method("_generate_and_score_completions"), "torch.inference_mode")


@check(reads=GRPO_TRAINER, fix="GRPO trainer patch", since="0.19.0")
def test_grpo_rewards_under_inference_mode(upstream):
    """GRPOTrainer._calculate_rewards opens torch.inference_mode() (moved there from
    _generate_and_score_completions in 0.19.0)."""
    expect_call(_grpo(upstream).method("_calculate_rewards"), "torch.inference_mode")


@check(reads=GRPO_TRAINER, fix="GRPO trainer patch", until="1.15.0")
def test_grpo_compute_loss_unwraps_model(upstream):
    """GRPOTrainer.compute_loss calls self.accelerator.unwrap_model."""
    expect_call(_grpo(upstream).method("compute_loss"), "self.accelerator.unwrap_model")


@check(reads=GRPO_TRAINER, fix="GRPO trainer patch", since="0.19.0")
def test_grpo_generation_unwraps_model(upstream):
    """GRPOTrainer._generate_and_score_completions calls self.accelerator.unwrap_model."""
    expect_call(
        _grpo(upstream).method("_generate_and_score_completions"), "self.accelerator.unwrap_model"
    )


# -- KTO --------------------------------------------------------------------------------


def _require_get_batch_logps(function: Function) -> None:
    expect_parameters(function, "logits", "labels")


@check(reads=KTO_TRAINER, fix="KTO batch logps patch", until="0.26.0")
def test_kto_get_batch_logps(upstream):
    """KTOTrainer.get_batch_logps(logits, labels, ...) in trl/trainer/kto_trainer.py."""
    _require_get_batch_logps(
        upstream.module(KTO_TRAINER).cls("KTOTrainer").method("get_batch_logps")
    )


@check(reads=EXPERIMENTAL_KTO, fix="KTO batch logps patch", since="0.26.0", until="1.6.0")
def test_experimental_kto_get_batch_logps(upstream):
    """KTOTrainer.get_batch_logps(logits, labels, ...) in trl/experimental/kto (moved there
    in 0.26.0; the 1.6.0 rewrite dropped it)."""
    kto = upstream.module(EXPERIMENTAL_KTO).cls("KTOTrainer")
    _require_get_batch_logps(kto.method("get_batch_logps"))


# -- generation ---------------------------------------------------------------------------


@check(reads=MODELS_UTILS, fix="generation unwrap patch")
def test_unwrap_model_for_generation(upstream):
    """trl/models/utils.py defines unwrap_model_for_generation(model, accelerator, ...) as a
    contextmanager."""
    models_utils = upstream.module(MODELS_UTILS)
    expect_defined(models_utils, "unwrap_model_for_generation")
    unwrap = models_utils.function("unwrap_model_for_generation")
    expect_parameters(unwrap, "model", "accelerator")
    expect_decorated(unwrap, "contextmanager", "contextlib.contextmanager")


@check(reads=VLLM_GENERATION, fix="vLLM generation patch", since="0.28.0")
def test_vllm_generation(upstream):
    """trl/generation/vllm_generation.py defines VLLMGeneration with _init_vllm,
    sync_weights and generate."""
    vllm = upstream.module(VLLM_GENERATION).cls("VLLMGeneration")
    for name in ("_init_vllm", "sync_weights", "generate"):
        vllm.method(name)
