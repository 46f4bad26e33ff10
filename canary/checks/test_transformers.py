"""transformers: what the fixes and the downstream patches rely on, release by release.

Groups, in the order of the fixes they protect: how Trainer decides
``model_accepts_loss_kwargs`` (the shadow and the construction hook), whether
``training_step`` divides the loss by the accumulation steps, the Accelerate plugin (the
clamp and its verified window), how the batch's items are counted and the loss utilities
(the chunked loss), which model classes declare ``accepts_loss_kwargs``, then the symbols
downstream patches touch. Each window was found by running the check over every release.
"""

import pytest

from canary.catalog import (
    assignments_to,
    check,
    drift,
    expect_any_of,
    expect_assignment,
    expect_assignment_where,
    expect_base,
    expect_bound,
    expect_call,
    expect_class_attribute,
    expect_decorated,
    expect_defined,
    expect_flows_into,
    expect_guards,
    expect_hasattr,
    expect_keyword_accepted,
    expect_mentions,
    expect_module_value,
    expect_no_parameter,
    expect_not_declared,
    expect_not_mentioned,
    expect_parameters,
    expect_reaches,
    expect_returns,
    expect_returns_by_branch,
    expect_updated_once,
    row,
)
from canary.fixes.grad_accum_clamp import DOUBLE_DIVISION_WINDOW, in_double_division_window

pytestmark = pytest.mark.upstream("transformers")

TRAINER = "transformers/trainer.py"
TRAINER_UTILS = "transformers/trainer_utils.py"
LOSS_UTILS = "transformers/loss/loss_utils.py"
MODELING_UTILS = "transformers/modeling_utils.py"
BITSANDBYTES = "transformers/integrations/bitsandbytes.py"
FP8 = "transformers/integrations/finegrained_fp8.py"
QUANTIZERS_UTILS = "transformers/quantizers/quantizers_utils.py"
PROCESSING_UTILS = "transformers/processing_utils.py"
AUTO_FACTORY = "transformers/models/auto/auto_factory.py"
CONFIGURATION_UTILS = "transformers/configuration_utils.py"
TOKENIZATION_BASE = "transformers/tokenization_utils_base.py"
CACHE_UTILS = "transformers/cache_utils.py"
TRAINING_ARGS = "transformers/training_args.py"
GEMMA3 = "transformers/models/gemma3/modeling_gemma3.py"
GEMMA3N = "transformers/models/gemma3n/modeling_gemma3n.py"
PALIGEMMA = "transformers/models/paligemma/modeling_paligemma.py"
QWEN2_VL = "transformers/models/qwen2_vl/modeling_qwen2_vl.py"
QWEN2_5_VL = "transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py"
QWEN3_VL = "transformers/models/qwen3_vl/modeling_qwen3_vl.py"
QWEN3_VL_MOE = "transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py"
GPT_OSS = "transformers/models/gpt_oss/modeling_gpt_oss.py"

SHADOW = "accepts_loss_kwargs shadowing"
HOOK = "trainer construction hook"
CLAMP = "gradient accumulation clamp"
CHUNKED = "chunked NLL loss"

ACCEPTS = "self.model_accepts_loss_kwargs"
# Trainer.__init__'s fallback when the model has no accepts_loss_kwargs (normalised text).
VAR_KEYWORD_FALLBACK = (
    "any((k.kind == inspect.Parameter.VAR_KEYWORD for k in forward_params.values()))"
)
STEPS = "self.args.gradient_accumulation_steps"
CURRENT_STEPS = "self.current_gradient_accumulation_steps"
# What makes a change of the loss an accumulation scaling (names or attributes it mentions).
ACCUMULATION = ("gradient_accumulation_steps", "current_gradient_accumulation_steps")
BACKWARD = "self.accelerator.backward"


def _scales_loss_once(step, *, values, guard=None):
    """The loss training_step hands accelerator.backward is scaled for accumulation by
    exactly one statement on every path to it: ``values`` under ``guard``. A second scaling
    on another branch, or the one under another condition, is drift."""
    return expect_updated_once(
        step, "loss", BACKWARD, mentioning=ACCUMULATION, values=values, guard=guard
    )


def _trainer(upstream):
    return upstream.module(TRAINER).cls("Trainer")


def _trainer_method(upstream, name):
    """Trainer's method ``name``, its own or inherited from a base or mixin anywhere in
    transformers: where the code lives does not matter to a fix, what Trainer runs does."""
    return upstream.method(TRAINER, "Trainer", name)


def _init(upstream):
    return _trainer_method(upstream, "__init__")


# -- accepts_loss_kwargs: how Trainer.__init__ decides model_accepts_loss_kwargs --------


@check(reads=TRAINER, inherits="Trainer", fix=HOOK)
def test_init_assigns_model_accepts_loss_kwargs(upstream):
    """Trainer.__init__ assigns self.model_accepts_loss_kwargs: the construction hook sets the
    shadowed value on that same attribute after __init__, which is what every later step
    (compute_loss, get_batch_samples, training_step) reads."""
    expect_assignment(_init(upstream), ACCEPTS)
    expect_mentions(_trainer_method(upstream, "compute_loss"), "model_accepts_loss_kwargs")


@check(reads=TRAINER, inherits="Trainer", fix=HOOK, until="4.48.0")
def test_init_reads_only_the_forward_signature(upstream):
    """Before 4.48 Trainer.__init__ decides model_accepts_loss_kwargs from
    inspect.signature(forward) alone and asks no object for accepts_loss_kwargs, so the
    instance shadow reaches nothing there: only the hook's assignment after __init__ applies."""
    init = _init(upstream)
    expect_call(init, "inspect.signature")
    # Unique: the absence of a call, with any object asked.
    asked = [c for c in init.calls_to("hasattr") if "accepts_loss_kwargs" in c.literal_args[1:2]]
    if asked:
        raise drift(
            init,
            f"{init.qualname} now asks {', '.join(c.source for c in asked)} (line "
            f"{asked[0].line}): the shadow applies here too, widen the hasattr checks' window",
        )


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=SHADOW,
    since="4.48.0",
    until="4.53.0",
    backed_by="test_accepts_loss_kwargs.py::test_vision_wrapper",
)
def test_init_asks_the_model_itself(upstream):
    """4.48-4.52: Trainer.__init__ calls hasattr(model, "accepts_loss_kwargs") on the model it
    was given (PEFT wrapper included, answered through PeftModel.__getattr__) and takes
    model.accepts_loss_kwargs: the shadow on the outermost level is the one read."""
    init = _init(upstream)
    expect_hasattr(init, "accepts_loss_kwargs", only_on="model")
    expect_assignment_where(
        init,
        ACCEPTS,
        guard="hasattr(model, 'accepts_loss_kwargs')",
        values=["model.accepts_loss_kwargs"],
    )


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=SHADOW,
    since="4.53.0",
    backed_by="test_accepts_loss_kwargs.py::test_vision_wrapper",
)
def test_init_asks_the_unwrapped_model(upstream):
    """From 4.53 Trainer.__init__ calls hasattr(unwrapped_model, "accepts_loss_kwargs") on the
    accelerate- and PEFT-unwrapped model and takes its value: the shadow on the HF model level
    (PeftModel.get_base_model()) is the one read."""
    init = _init(upstream)
    expect_hasattr(init, "accepts_loss_kwargs", only_on="unwrapped_model")
    expect_assignment_where(
        init,
        ACCEPTS,
        guard="hasattr(unwrapped_model, 'accepts_loss_kwargs')",
        values=["unwrapped_model.accepts_loss_kwargs"],
    )


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=SHADOW,
    since="4.53.0",
    until="5.2.0",
    backed_by="test_accepts_loss_kwargs.py::test_vision_wrapper",
)
def test_init_unwraps_peft_inline(upstream):
    """4.53-5.1: Trainer.__init__ replaces unwrapped_model by unwrapped_model.get_base_model()
    when _is_peft_model(unwrapped_model), and that is the object it then asks for
    accepts_loss_kwargs: the level the fix's _trainer_unwrap mirrors."""
    expect_flows_into(
        _init(upstream),
        "unwrapped_model",
        "hasattr",
        args=["unwrapped_model", "'accepts_loss_kwargs'"],
        guard="_is_peft_model(unwrapped_model)",
        values=["unwrapped_model.get_base_model()"],
    )


@check(
    reads=[TRAINER, TRAINER_UTILS],
    fix=SHADOW,
    since="5.2.0",
    backed_by="test_accepts_loss_kwargs.py::test_vision_wrapper",
)
def test_init_unwraps_peft_with_the_helper(upstream):
    """From 5.2 Trainer.__init__ asks unwrapped_model = unwrap_peft_model(accelerator-unwrapped
    model) for accepts_loss_kwargs, and trainer_utils.unwrap_peft_model returns the model
    itself when it is not a PEFT model and model.get_base_model() when it is one that has
    get_base_model: the level the fix's _trainer_unwrap mirrors."""
    expect_flows_into(
        _init(upstream),
        "unwrapped_model",
        "hasattr",
        args=["unwrapped_model", "'accepts_loss_kwargs'"],
        values=["unwrap_peft_model(self.accelerator.unwrap_model(model))"],
    )
    helper = upstream.module(TRAINER_UTILS).function("unwrap_peft_model")
    expect_returns(helper, "model", when="not _is_peft_model(model)")
    expect_returns(
        helper,
        "model.get_base_model()",
        when="_is_peft_model(model) and hasattr(model, 'get_base_model')",
    )


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=SHADOW,
    since="4.47.0",
    backed_by="test_accepts_loss_kwargs.py::test_text_lm_is_left_to_trainer",
)
def test_init_falls_back_to_var_keyword_forward(upstream):
    """From 4.47, without an accepts_loss_kwargs attribute Trainer.__init__ sets
    model_accepts_loss_kwargs to whether forward takes **kwargs: the fix leaves text LMs
    (nothing declared) to exactly this default."""
    expect_assignment_where(_init(upstream), ACCEPTS, values=[VAR_KEYWORD_FALLBACK])


@check(reads=TRAINER, inherits="Trainer", fix=HOOK, since="5.0.0")
def test_init_forces_false_under_deepspeed_sequence_parallel(upstream):
    """From 5.0 Trainer.__init__ forces model_accepts_loss_kwargs = False under DeepSpeed
    sequence parallelism (it counts its own tokens); the construction hook reads this branch
    and keeps Trainer's False instead of shadowing over it."""
    expect_assignment_where(
        _init(upstream),
        ACCEPTS,
        guard="pc is not None and pc.sp_backend == 'deepspeed' and pc.sp_enabled",
        values=["False"],
    )


@check(reads=MODELING_UTILS, fix=SHADOW)
def test_pretrained_model_has_no_accepts_loss_kwargs_default(upstream):
    """PreTrainedModel declares no accepts_loss_kwargs: a default there would make Trainer's
    hasattr true for every model, and the **kwargs fallback the fix leaves to text LMs would
    never run."""
    expect_not_declared(
        upstream.module(MODELING_UTILS).cls("PreTrainedModel"), "accepts_loss_kwargs"
    )


@check(reads=MODELING_UTILS, fix=SHADOW)
def test_pretrained_model_base_model_is_a_property(upstream):
    """PreTrainedModel.base_model is a property: the fix's wrapper walk follows .base_model
    (it is found on the class, so the walk does not go through PEFT's __getattr__)."""
    base_model = upstream.module(MODELING_UTILS).cls("PreTrainedModel").method("base_model")
    expect_decorated(base_model, "property")


# -- accepts_loss_kwargs: compute_loss hands num_items_in_batch to the model ----------------


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix="accepts_loss_kwargs shadowing",
    since="4.46.0",
    backed_by="test_grad_accum.py::test_accumulation_matches_full_batch_with_fix",
)
def test_compute_loss_takes_num_items_in_batch(upstream):
    """Trainer.compute_loss takes num_items_in_batch by keyword (training_step and TRL's
    SFTTrainer pass num_items_in_batch=...), so a loss that honours it is not divided again
    by the Trainer (the shadowed accepts_loss_kwargs promises exactly that)."""
    compute_loss = _trainer_method(upstream, "compute_loss")
    expect_parameters(compute_loss, "num_items_in_batch", keyword=True)


def _passes_num_items(upstream, kwargs_name):
    # The count must reach the model call (through inputs = {**inputs, **kwargs}) as the
    # parameter compute_loss was given, with nothing replacing either on the way.
    expect_flows_into(
        _trainer_method(upstream, "compute_loss"),
        f"{kwargs_name}['num_items_in_batch']",
        "model",
        guard=ACCEPTS,
        values=["num_items_in_batch"],
        carrying="num_items_in_batch",
    )


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=CHUNKED,
    until="4.54.0",
    backed_by="test_accepts_loss_kwargs.py::test_chunked_forward_is_trusted_with_num_items",
)
def test_compute_loss_passes_num_items_in_loss_kwargs(upstream):
    """Until 4.53 compute_loss puts its num_items_in_batch into loss_kwargs only if
    self.model_accepts_loss_kwargs, and those reach the model(...) call unreplaced: the
    shadowed True is what hands the chunked forward the count it divides by."""
    _passes_num_items(upstream, "loss_kwargs")


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=CHUNKED,
    since="4.54.0",
    backed_by="test_accepts_loss_kwargs.py::test_chunked_forward_is_trusted_with_num_items",
)
def test_compute_loss_passes_num_items_in_kwargs(upstream):
    """From 4.54 compute_loss puts its num_items_in_batch into kwargs only if
    self.model_accepts_loss_kwargs, and those reach the model(...) call unreplaced: the
    shadowed True is what hands the chunked forward the count it divides by."""
    _passes_num_items(upstream, "kwargs")


# -- accepts_loss_kwargs: whether training_step divides by the accumulation steps ---------


@check(reads=TRAINER, inherits="Trainer", fix="gradient accumulation clamp", since="4.46.0")
def test_training_step_takes_num_items_in_batch(upstream):
    """Trainer.training_step takes num_items_in_batch, the count it divides the loss by."""
    expect_parameters(_trainer_method(upstream, "training_step"), "num_items_in_batch")


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=SHADOW,
    since="4.48.0",
    until="4.48.1",
    backed_by=(
        "test_grad_accum.py::test_accumulation_matches_full_batch_with_fix",
        "test_grad_accum.py::test_accepts_loss_kwargs_decision_makes_accumulation_exact",
    ),
)
def test_training_step_divides_when_no_items_were_counted(upstream):
    """4.48.0: the loss training_step hands accelerator.backward is divided by the
    accumulation steps once, when num_items_in_batch is None, and get_batch_samples returns
    (batch_samples, None) exactly when not self.model_accepts_loss_kwargs (the count
    otherwise): the shadowed value still decides the division."""
    _scales_loss_once(
        _trainer_method(upstream, "training_step"),
        values=[f"loss / {STEPS}"],
        guard="num_items_in_batch is None",
    )
    expect_returns_by_branch(
        _trainer_method(upstream, "get_batch_samples"),
        {
            "not self.model_accepts_loss_kwargs": "(batch_samples, None)",
            "self.model_accepts_loss_kwargs": "(batch_samples, num_items_in_batch)",
        },
    )


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=SHADOW,
    since="4.48.1",
    until="5.19.0",
    backed_by=(
        "test_grad_accum.py::test_accumulation_matches_full_batch_with_fix",
        "test_grad_accum.py::test_accepts_loss_kwargs_decision_makes_accumulation_exact",
    ),
)
def test_training_step_divides_unless_model_accepts_loss_kwargs(upstream):
    """4.48.1-5.18: the loss training_step hands accelerator.backward is divided by the
    accumulation steps once, exactly when not self.model_accepts_loss_kwargs (from 4.53 also
    when num_items_in_batch is None) and no compute_loss_func is set, and on no other path:
    the shadowed value decides whether the loss is divided."""
    guards = (
        "not self.model_accepts_loss_kwargs and self.compute_loss_func is None",
        "(not self.model_accepts_loss_kwargs or num_items_in_batch is None) "
        "and self.compute_loss_func is None",
    )
    step = _trainer_method(upstream, "training_step")
    divisions = [f"loss / {STEPS}", f"loss / {CURRENT_STEPS}"]
    expect_any_of(
        *(
            lambda guard=guard: _scales_loss_once(step, values=divisions, guard=guard)
            for guard in guards
        )
    )


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=SHADOW,
    since="5.19.0",
    backed_by=(
        "test_grad_accum.py::test_accumulation_matches_full_batch_with_fix",
        "test_grad_accum.py::test_accepts_loss_kwargs_decision_makes_accumulation_exact",
    ),
)
def test_training_step_division_follows_loss_is_scaled_for_ga(upstream):
    """From 5.19 training_step divides the loss it hands accelerator.backward once, unless
    loss_is_scaled_for_ga, which is the class
    attribute Trainer.loss_is_scaled_for_ga when set, else model_accepts_loss_kwargs and a
    counted batch (or a compute_loss_func): the shadow decides only while the attribute stays
    None, its default."""
    trainer = _trainer(upstream)
    expect_class_attribute(trainer, "loss_is_scaled_for_ga", None)
    step = _trainer_method(upstream, "training_step")
    expect_assignment_where(
        step,
        "loss_is_scaled_for_ga",
        guard="not (self.loss_is_scaled_for_ga is not None)",
        values=[
            "self.model_accepts_loss_kwargs and num_items_in_batch is not None "
            "or self.compute_loss_func is not None"
        ],
    )
    _scales_loss_once(step, values=[f"loss / {CURRENT_STEPS}"], guard="not loss_is_scaled_for_ga")


# -- gradient accumulation clamp: Accelerate's GradientAccumulationPlugin ---------------


def _plugin_num_steps(upstream):
    """(builds a plugin, the num_steps values create_accelerator_and_postprocess assigns)."""
    create = _trainer_method(upstream, "create_accelerator_and_postprocess")
    builds = bool(create.calls_to("GradientAccumulationPlugin"))
    steps = tuple(a.value for a in assignments_to(create, "grad_acc_kwargs['num_steps']"))
    return create, builds, steps


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=CLAMP,
    since="4.46.2",
    backed_by=(
        "test_grad_accum.py::test_window_claim_matches_live_state",
        "test_grad_accum.py::test_unclamped_accumulation_shows_the_bug_only_inside_window",
    ),
)
def test_accelerate_plugin_matches_double_division_window(upstream):
    """Releases inside DOUBLE_DIVISION_WINDOW (canary.fixes.grad_accum_clamp) hand
    GradientAccumulationPlugin num_steps=args.gradient_accumulation_steps while training_step
    divides by current_gradient_accumulation_steps (the name the clamp's live check reads);
    releases outside pass num_steps=1 or build no plugin. Verifies the fix's window."""
    create, builds, steps = _plugin_num_steps(upstream)
    version = upstream.version
    inside = version is not None and in_double_division_window(str(version))
    assigned = ", ".join(steps) or "never"
    found = f"GradientAccumulationPlugin built: {builds}; grad_acc_kwargs['num_steps'] = {assigned}"
    if inside:
        if not builds or STEPS not in steps:
            raise drift(
                create,
                f"{upstream.case} is inside DOUBLE_DIVISION_WINDOW {DOUBLE_DIVISION_WINDOW} but "
                f"{create.qualname} does not hand Accelerate the accumulation steps ({found}): "
                "narrow the window",
            )
        expect_mentions(
            _trainer_method(upstream, "training_step"), "current_gradient_accumulation_steps"
        )
    elif builds and steps != ("1",):
        raise drift(
            create,
            f"{upstream.case} is outside DOUBLE_DIVISION_WINDOW {DOUBLE_DIVISION_WINDOW} but "
            f"{create.qualname} does not pin Accelerate to 1 step ({found}): widen the window",
        )


@check(
    reads=TRAINER,
    inherits="Trainer",
    fix=CLAMP,
    until="4.46.2",
    backed_by=(
        "test_grad_accum.py::test_window_claim_matches_live_state",
        "test_grad_accum.py::test_unclamped_accumulation_shows_the_bug_only_inside_window",
    ),
)
def test_training_step_undoes_accelerate_division(upstream):
    """4.46.1 hands GradientAccumulationPlugin the accumulation steps too, but training_step
    multiplies the loss by them (once, on every path) before accelerator.backward divides:
    no double division, and
    the clamp (whose live check looks for current_gradient_accumulation_steps) stays off."""
    create = _trainer_method(upstream, "create_accelerator_and_postprocess")
    expect_call(create, "GradientAccumulationPlugin")
    expect_assignment_where(create, "grad_acc_kwargs['num_steps']", values=[STEPS])
    step = _trainer_method(upstream, "training_step")
    _scales_loss_once(step, values=[f"loss * {STEPS}"])
    expect_not_mentioned(step, "current_gradient_accumulation_steps")  # the clamp would fire


# -- chunked NLL loss: how num_items_in_batch is counted -----------------------------------


def _counting_function(upstream):
    # The count moved from get_batch_samples into its own helper in 4.57.
    trainer = _trainer(upstream)
    if trainer.has_method("_get_num_items_in_batch"):
        return _trainer_method(upstream, "_get_num_items_in_batch")
    return _trainer_method(upstream, "get_batch_samples")


# The tests the count runs under: whether the batch has labels (until 4.50), then a flag
# made of that test and whether anything reads the count (from 4.51). Any other ``if``
# around it leaves the chunked forward without the count it divides by.
COUNT_GUARDS = (
    ("len(batch_samples) > 0 and 'labels' in batch_samples[0]",),
    ("count_num_items_in_batch",),
)


def _counts(upstream, values):
    """The count is one of ``values``, under the expected tests only, and is what the
    counting function returns (nothing replaces it on the way)."""
    counting = _counting_function(upstream)
    count = expect_flows_into(counting, "num_items_in_batch", None, values=values)
    expect_guards(counting, count, *COUNT_GUARDS)
    return counting


@check(reads=TRAINER, inherits="Trainer", fix=CHUNKED, until="4.46.2")
def test_num_items_counts_shifted_labels(upstream):
    """4.46.1 counts num_items_in_batch over labels[..., 1:] (the positions a causal LM
    scores) whenever the batch has labels, and returns that count: a loss dividing by it
    matches exactly."""
    _counts(
        upstream,
        [
            "sum([data_batch['labels'][..., 1:].ne(-100).sum().item() "
            "for data_batch in batch_samples])"
        ],
    )


@check(reads=TRAINER, inherits="Trainer", fix=CHUNKED, since="4.46.2", until="5.10.1")
def test_num_items_counts_unshifted_labels(upstream):
    """4.46.2-5.9: num_items_in_batch counts every label != -100 of the unshifted labels
    (one more per sequence than are scored) whenever it is counted at all, and that count
    is returned; the chunked loss divides by that same count, like ForCausalLMLoss, so it
    equals upstream's loss."""
    _counts(
        upstream,
        [
            "sum([batch['labels'].ne(-100).sum() for batch in batch_samples])",
            "sum((batch['labels'].ne(-100).sum() for batch in batch_samples))",
        ],
    )


@check(reads=TRAINER, inherits="Trainer", fix=CHUNKED, since="5.10.1")
def test_num_items_counts_shift_labels_or_shifted_labels(upstream):
    """From 5.10.1 num_items_in_batch counts batch['shift_labels'] when present, else
    labels[..., 1:] when the loss shifts: the chunked forward scores shift_labels when given,
    so it divides by a count of the same labels."""
    counting = _counts(upstream, ["sum((labels.ne(-100).sum() for labels in labels_for_count))"])
    expect_flows_into(
        counting,
        "labels_for_count",
        None,
        values=[
            "[batch['shift_labels'] if 'shift_labels' in batch else batch['labels'][..., 1:] "
            "if self._loss_shifts_labels else batch['labels'] for batch in batch_samples]"
        ],
    )


# -- chunked NLL loss: the loss utilities it mirrors ---------------------------------------


@check(reads=LOSS_UTILS, fix=CHUNKED, backed_by="test_chunked_loss.py::test_chunked_matches_dense")
def test_fixed_cross_entropy_sums_then_divides_by_num_items(upstream):
    """fixed_cross_entropy(source, target, num_items_in_batch, ignore_index=-100) hands
    cross_entropy reduction 'sum' when given num_items_in_batch, and returns that sum
    divided by it: the reduction the chunked loss reproduces, skipping the same -100 labels
    it skips by default."""
    fixed = upstream.module(LOSS_UTILS).function("fixed_cross_entropy")
    expect_parameters(fixed, "num_items_in_batch")
    expect_parameters(fixed, "ignore_index", default=-100)
    expect_flows_into(
        fixed,
        "reduction",
        "nn.functional.cross_entropy",
        values=["'sum' if num_items_in_batch is not None else 'mean'"],
    )
    expect_flows_into(
        fixed, "loss", None, guard="reduction == 'sum'", values=["loss / num_items_in_batch"]
    )


@check(reads=LOSS_UTILS, fix=CHUNKED, since="4.46.0")
def test_for_causal_lm_loss_parameters(upstream):
    """ForCausalLMLoss takes num_items_in_batch by keyword (the models hand it over in
    **kwargs, and the fix's rule 3 looks the name up in the loss's signature) and
    ignore_index defaulting to -100: the chunked loss mirrors its contract (sum over the
    labels != -100 divided by num_items_in_batch) and never passes ignore_index, so
    upstream's default must be its own."""
    loss = upstream.module(LOSS_UTILS).function("ForCausalLMLoss")
    expect_parameters(loss, "num_items_in_batch", keyword=True)
    expect_parameters(loss, "ignore_index", default=-100)


@check(reads=LOSS_UTILS, fix=CHUNKED, backed_by="test_chunked_loss.py::test_chunked_matches_dense")
def test_for_causal_lm_loss_scores_the_next_token(upstream):
    """ForCausalLMLoss hands fixed_cross_entropy labels[..., 1:] to score against the logits
    of the positions before them: the alignment the chunked loss copies (position i predicts
    labels[i + 1])."""
    loss = upstream.module(LOSS_UTILS).function("ForCausalLMLoss")
    expect_flows_into(
        loss, "shift_labels", "fixed_cross_entropy", values=["labels[..., 1:].contiguous()"]
    )


@check(reads=LOSS_UTILS, fix=CHUNKED, since="4.50.0")
def test_for_causal_lm_loss_takes_shift_labels(upstream):
    """From 4.50 ForCausalLMLoss takes already-aligned shift_labels and shifts labels itself
    only when shift_labels is None, handing fixed_cross_entropy whichever it has: the
    chunked forward takes shift_labels the same way."""
    loss = upstream.module(LOSS_UTILS).function("ForCausalLMLoss")
    expect_parameters(loss, "shift_labels")
    expect_flows_into(
        loss,
        "shift_labels",
        "fixed_cross_entropy",
        guard="shift_labels is None",
        values=["labels[..., 1:].contiguous()"],
    )
    expect_reaches(
        loss, "shift_labels", "fixed_cross_entropy", origins=["labels[..., 1:].contiguous()"]
    )


# -- accepts_loss_kwargs: which model classes declare it ----------------------------------
# The fix decides at the loss level (the outermost HF model): its own declaration; else
# Trainer's True where its forward hands **kwargs to loss_function; else the first value an
# inner .model declares (vision wrappers that build their own loss).


@check.each(
    row("test_gemma3_model_declares_no_loss_kwargs", path=GEMMA3, since="4.53.0",
        declare=["Gemma3Model"],
        doc="From 4.53 Gemma3Model declares accepts_loss_kwargs = False in its class body: the "
        "value the fix finds one level below Gemma3ForConditionalGeneration."),
    row("test_gemma3_for_conditional_generation_declares_no_loss_kwargs", path=GEMMA3,
        since="4.57.1", until="5.17.0", declare=["Gemma3ForConditionalGeneration"],
        doc="4.57-5.16: Gemma3ForConditionalGeneration itself declares accepts_loss_kwargs = "
        "False, the same value the fix shadows from the inner Gemma3Model."),
    row("test_gemma3n_model_declares_no_loss_kwargs", path=GEMMA3N, since="4.53.0",
        declare=["Gemma3nModel"],
        doc="From 4.53 Gemma3nModel declares accepts_loss_kwargs = False: the value the fix "
        "shadows on Gemma3nForConditionalGeneration, whose own class is silent before 5.6."),
    row("test_gemma3n_for_conditional_generation_declares_no_loss_kwargs", path=GEMMA3N,
        since="5.6.0", declare=["Gemma3nForConditionalGeneration"],
        doc="From 5.6 Gemma3nForConditionalGeneration declares accepts_loss_kwargs = False "
        "itself, agreeing with the inner Gemma3nModel the fix reads."),
    row("test_paligemma_model_declares_no_loss_kwargs", path=PALIGEMMA, since="4.53.0",
        declare=["PaliGemmaModel"], silent=["PaliGemmaForConditionalGeneration"],
        doc="From 4.53 PaliGemmaModel declares accepts_loss_kwargs = False; the outer "
        "PaliGemmaForConditionalGeneration never does, so the fix decides from the outer "
        "forward (inheriting that False only where the forward builds its own loss)."),
    row("test_qwen2_vl_model_declares_no_loss_kwargs", path=QWEN2_VL, since="4.56.0",
        declare=["Qwen2VLModel"], silent=["Qwen2VLForConditionalGeneration"],
        doc="From 4.56 Qwen2VLModel declares accepts_loss_kwargs = False; the outer "
        "Qwen2VLForConditionalGeneration never does, so only the fix's walk finds it."),
    row("test_qwen2_5_vl_declares_no_loss_kwargs", path=QWEN2_5_VL, since="4.56.0",
        declare=["Qwen2_5_VLModel", "Qwen2_5_VLForConditionalGeneration"],
        doc="From 4.56 Qwen2_5_VLModel and Qwen2_5_VLForConditionalGeneration both declare "
        "accepts_loss_kwargs = False."),
    row("test_qwen3_vl_declares_no_loss_kwargs", path=QWEN3_VL, since="4.57.1",
        declare=["Qwen3VLModel", "Qwen3VLForConditionalGeneration"],
        doc="Qwen3VLModel and Qwen3VLForConditionalGeneration (from their first release, "
        "4.57.1) both declare accepts_loss_kwargs = False."),
    row("test_qwen3_vl_moe_declares_no_loss_kwargs", path=QWEN3_VL_MOE, since="4.57.1",
        declare=["Qwen3VLMoeModel", "Qwen3VLMoeForConditionalGeneration"],
        doc="Qwen3VLMoeModel and Qwen3VLMoeForConditionalGeneration (from their first "
        "release, 4.57.1) both declare accepts_loss_kwargs = False."),
    fix=SHADOW,
)  # fmt: skip
def declares_no_loss_kwargs(upstream, path, declare, silent=()):
    """The classes in {path} that each row names declare accepts_loss_kwargs = False in their
    own class body, and the silent ones declare nothing (each row's doc says why)."""
    module = upstream.module(path)
    for name in declare:
        expect_class_attribute(module.cls(name), "accepts_loss_kwargs", False)
    for name in silent:
        expect_not_declared(module.cls(name), "accepts_loss_kwargs")


@check(reads=GEMMA3, fix=SHADOW, since="5.17.0")
def test_gemma3_for_conditional_generation_uses_the_loss_function(upstream):
    """From 5.17 Gemma3ForConditionalGeneration declares no accepts_loss_kwargs and computes
    its loss with self.loss_function(..., **<forward's kwargs>) (unreplaced on the way), which
    honours num_items_in_batch,
    while Gemma3Model still declares False: the fix's rule 3 leaves Trainer's True here."""
    outer = upstream.module(GEMMA3).cls("Gemma3ForConditionalGeneration")
    expect_not_declared(outer, "accepts_loss_kwargs")
    forward = outer.method("forward")
    # The loss must get forward's own **kwargs (lm_kwargs in 5.17, kwargs from 5.18), the
    # mapping Trainer's num_items_in_batch arrives in, unreplaced on the way.
    var_keyword = forward.signature.var_keyword
    if var_keyword is None:
        raise drift(forward, f"{forward.qualname}{forward.signature} takes no **kwargs")
    expect_call(forward, "self.loss_function", keywords={"**": var_keyword})
    expect_reaches(forward, var_keyword, "self.loss_function")


# -- downstream patches ----------------------------------------------------------------


@check(reads=MODELING_UTILS, fix="modeling_utils checkpoint alias")
def test_modeling_utils_binds_torch_checkpoint(upstream):
    """transformers.modeling_utils binds checkpoint by importing it from torch.utils.checkpoint,
    the module-level name the patch replaces."""
    expect_bound(
        upstream.module(MODELING_UTILS), "checkpoint", imported_from="torch.utils.checkpoint"
    )


@check(reads=BITSANDBYTES, fix="bitsandbytes Linear4bit replacement", until="5.0.0")
def test_bitsandbytes_replacement_builds_linear4bit_in_helper(upstream):
    """Until 5.0 integrations/bitsandbytes.py's replace_with_bnb_linear delegates to
    _replace_with_bnb_linear, which builds bnb.nn.Linear4bit."""
    module = upstream.module(BITSANDBYTES)
    expect_call(module.function("replace_with_bnb_linear"), "_replace_with_bnb_linear")
    expect_mentions(module.function("_replace_with_bnb_linear"), "Linear4bit")


@check(reads=BITSANDBYTES, fix="bitsandbytes Linear4bit replacement", since="5.0.0")
def test_bitsandbytes_replacement_builds_linear4bit(upstream):
    """From 5.0 integrations/bitsandbytes.py's replace_with_bnb_linear builds bnb.nn.Linear4bit
    itself (the private helper is gone)."""
    expect_mentions(upstream.module(BITSANDBYTES).function("replace_with_bnb_linear"), "Linear4bit")


@check(reads=QUANTIZERS_UTILS, fix="quantizers should_convert_module", since="5.0.0")
def test_should_convert_module_signature(upstream):
    """From 5.0 quantizers/quantizers_utils.py defines should_convert_module(full_name,
    patterns=None), called by the patch with both by position (a keyword-only patterns
    breaks that call)."""
    function = upstream.module(QUANTIZERS_UTILS).function("should_convert_module")
    expect_parameters(function, "full_name", "patterns", positional=0)


@check(reads=FP8, fix="FP8Linear construction", since="4.49.0", until="5.4.0")
def test_fp8_linear_takes_bias(upstream):
    """4.49-5.3: FP8Linear.__init__ takes the bias flag as bias=."""
    init = upstream.module(FP8).cls("FP8Linear").method("__init__")
    expect_parameters(init, "in_features", "out_features")
    expect_parameters(init, "bias", keyword=True)


@check(reads=FP8, fix="FP8Linear construction", since="5.4.0")
def test_fp8_linear_takes_has_bias(upstream):
    """From 5.4 FP8Linear.__init__ takes the bias flag as has_bias= (bias= is gone)."""
    init = upstream.module(FP8).cls("FP8Linear").method("__init__")
    expect_parameters(init, "in_features", "out_features")
    expect_parameters(init, "has_bias", keyword=True)
    expect_no_parameter(init, "bias")


@check(reads=PROCESSING_UTILS, fix="processing_utils Unpack")
def test_processing_utils_binds_unpack(upstream):
    """transformers.processing_utils binds Unpack at module level (an assignment from
    typing/typing_extensions, from 5.21 an import from typing), so importing it from there
    works."""
    expect_bound(upstream.module(PROCESSING_UTILS), "Unpack")


@check(reads=GEMMA3, fix="Gemma3Attention patch", since="4.50.0")
def test_gemma3_attention_has_forward(upstream):
    """From 4.50 (Gemma3's first release) modeling_gemma3.py defines Gemma3Attention with its
    own forward."""
    upstream.module(GEMMA3).cls("Gemma3Attention").method("forward")


@check(reads=GPT_OSS, fix="GptOssModel patch", since="4.55.0")
def test_gpt_oss_model_has_forward(upstream):
    """From 4.55 (gpt-oss's first release) modeling_gpt_oss.py defines GptOssModel with its
    own forward."""
    upstream.module(GPT_OSS).cls("GptOssModel").method("forward")


@check(reads=AUTO_FACTORY, fix="auto mapping registration")
def test_lazy_auto_mapping_private_api(upstream):
    """_LazyAutoMapping keeps its tables in self._model_mapping and self._extra_content and
    has register(key, value, exist_ok) and _load_attr_from_module(model_type, attr)."""
    mapping = upstream.module(AUTO_FACTORY).cls("_LazyAutoMapping")
    init = mapping.method("__init__")
    expect_assignment(init, "self._model_mapping")
    expect_assignment(init, "self._extra_content")
    expect_parameters(mapping.method("register"), "key", "value", "exist_ok")
    expect_parameters(mapping.method("_load_attr_from_module"), "model_type", "attr")


@check(reads=CONFIGURATION_UTILS, fix="PretrainedConfig import", until="5.0.0")
def test_pretrained_config_is_the_class(upstream):
    """Until 5.0 configuration_utils.py defines the class PretrainedConfig."""
    expect_defined(upstream.module(CONFIGURATION_UTILS), "PretrainedConfig")
    upstream.module(CONFIGURATION_UTILS).cls("PretrainedConfig")


@check(reads=CONFIGURATION_UTILS, fix="PretrainedConfig import", since="5.0.0")
def test_pretrained_config_is_an_alias(upstream):
    """From 5.0 configuration_utils.py defines PreTrainedConfig and keeps
    PretrainedConfig = PreTrainedConfig as an alias."""
    module = upstream.module(CONFIGURATION_UTILS)
    module.cls("PreTrainedConfig")
    expect_module_value(module, "PretrainedConfig", values=["PreTrainedConfig"])


@check(reads=TOKENIZATION_BASE, fix="apply_chat_template call")
def test_apply_chat_template_keywords(upstream):
    """PreTrainedTokenizerBase.apply_chat_template takes conversation, chat_template,
    add_generation_prompt and tokenize, each as name= (how the patch passes them), and
    return_dict=."""
    method = (
        upstream.module(TOKENIZATION_BASE)
        .cls("PreTrainedTokenizerBase")
        .method("apply_chat_template")
    )
    expect_parameters(
        method, "conversation", "chat_template", "add_generation_prompt", "tokenize", keyword=True
    )
    expect_keyword_accepted(method, "return_dict")


@check(reads=CACHE_UTILS, fix="KV cache classes")
def test_cache_and_dynamic_cache(upstream):
    """cache_utils.py defines Cache and DynamicCache, a direct subclass of Cache."""
    module = upstream.module(CACHE_UTILS)
    module.cls("Cache")
    expect_base(module.cls("DynamicCache"), "Cache")


@check(reads=TRAINING_ARGS, fix="training_args ParallelMode")
def test_parallel_mode_members(upstream):
    """training_args.py defines the enum ParallelMode with NOT_PARALLEL, NOT_DISTRIBUTED and
    DISTRIBUTED."""
    parallel_mode = upstream.module(TRAINING_ARGS).cls("ParallelMode")
    for member in ("NOT_PARALLEL", "NOT_DISTRIBUTED", "DISTRIBUTED"):
        expect_class_attribute(parallel_mode, member)
