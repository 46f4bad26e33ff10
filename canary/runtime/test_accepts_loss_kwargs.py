"""accepts_loss_kwargs: what the real Trainer decides, with and without the fix.

The fix promises (``canary.fixes.accepts_loss_kwargs.decide``): True when the chunked-loss
forward is in use; else what the loss-computing level declares; else True where its forward
hands num_items_in_batch to ``self.loss_function``; False where it builds its own
cross-entropy mean (4.50.0's Gemma3, PaliGemma, Qwen2-VL); else the first inner declaration;
shadowed on every level (so ``trainer.model_accepts_loss_kwargs`` is that value whatever
level the release inspects); Trainer's own detection where nothing declares anything.
test_grad_accum.py proves each value by gradient-accumulation equivalence.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from packaging.version import Version

from canary.fixes.accepts_loss_kwargs import (
    ATTR,
    COUNT_WITHHELD_WINDOW,
    apply_accepts_loss_kwargs_fix,
    decide,
    declared_value,
    forwards_num_items_to_loss,
    trainer_detection,
    wrapper_chain,
)
from canary.fixes.chunked_loss import patch_chunked_loss
from canary.fixes.trainer_hooks import (
    apply_to_trainer,
    init_forces_for_sequence_parallel,
    trainer_hooks,
)
from canary.runtime import models
from canary.runtime.models import (
    OWN_LOSS_WRAPPER,
    VISION_WRAPPERS,
    tiny_causal_lm,
    tiny_own_loss_wrapper,
    tiny_vision_wrapper,
)

transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")


def build_wrapper(name: str) -> Any:
    if not hasattr(transformers, name):
        pytest.skip(f"transformers {transformers.__version__} has no {name}")
    try:
        return tiny_vision_wrapper(name)
    except ImportError as exc:  # e.g. Gemma3n's timm vision tower without timm/PIL
        pytest.skip(f"{name} cannot be built here: {str(exc).strip().splitlines()[0]}")


def wrap(model: Any, how: str) -> Any:
    if how == "full":
        return model
    config = peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    return peft.get_peft_model(model, config)


def make_trainer(model: Any = None, tmp_path: Any = None, accumulation: int = 1, **kw: Any) -> Any:
    # No accumulation by default: on 4.46-4.47 the hook refuses it for a False (tested below).
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        report_to=[],
        use_cpu=True,
        gradient_accumulation_steps=accumulation,
    )
    return transformers.Trainer(model=model, args=args, **kw)


@pytest.mark.behaviour
@pytest.mark.parametrize("how", ["full", "lora"])
@pytest.mark.parametrize("name", list(VISION_WRAPPERS))
def test_vision_wrapper(name: str, how: str, tmp_path: Any) -> None:
    # Without the fix: Trainer's own detection (and our mirror of it agrees).
    model = wrap(build_wrapper(name), how)
    unfixed = make_trainer(model, tmp_path).model_accepts_loss_kwargs
    assert unfixed is trainer_detection(model)
    hf_model = model.get_base_model() if how == "lora" else model
    outer_declares = ATTR in type(hf_model).__dict__

    # The live rule agrees with the release data the catalog verifies.
    forwards = models.forwards_num_items_to_loss(name, transformers.__version__)
    assert forwards_num_items_to_loss(hf_model) is forwards, (name, transformers.__version__)
    decision = decide(model)
    if forwards:
        # The forward normalises by num_items_in_batch: Trainer's own detection (True, its
        # forward takes **kwargs) is right, and the inner .model's False is not inherited.
        assert decision.value is None, (name, decision)
        assert unfixed is True
    else:
        # Its loss never sees num_items_in_batch: declared False (Gemma3 4.57.1-5.16), or
        # computed without it and nothing declared anywhere (4.50.0's Gemma3, PaliGemma and
        # Qwen2-VL: their own CrossEntropyLoss; 4.52.4's Qwen2-VL: loss_function without
        # **kwargs).
        assert decision.value is False, (name, decision)
    promised = forwards
    with trainer_hooks():
        fixed_model = wrap(build_wrapper(name), how)
        trainer = make_trainer(fixed_model, tmp_path)
    assert trainer.model_accepts_loss_kwargs is promised
    for level in wrapper_chain(fixed_model):
        assert level.__dict__.get(ATTR) is decision.value, type(level).__name__
    # Where Trainer alone goes wrong, it says True over a loss that never sees
    # num_items_in_batch (4.50.0: Gemma3 and PaliGemma take **lm_kwargs and build their own
    # CrossEntropyLoss); where the loss does see it, Trainer is already right.
    assert (unfixed is not promised) is (unfixed and not forwards), (name, unfixed)
    if unfixed and not forwards:
        assert not outer_declares, name


@pytest.mark.parametrize("how", ["full", "lora"])
def test_own_loss_wrapper_inherits_the_inner_false(how: str, tmp_path: Any) -> None:
    """The pre-4.57.1 shape (outer builds nn.CrossEntropyLoss(), declares nothing; inner
    declares False): False, where Trainer alone would say True from 4.47 (#4982)."""
    model = wrap(tiny_own_loss_wrapper(), how)
    # True from 4.47 (forward takes **kwargs); 4.46 asks for **loss_kwargs by name: False.
    assert make_trainer(model, tmp_path).model_accepts_loss_kwargs is trainer_detection(model)
    decision = decide(model)
    assert decision.value is False
    assert decision.reason.startswith(
        "OwnLossWrapper.forward computes its loss without num_items_in_batch"
    ), decision.reason
    with trainer_hooks():
        trainer = make_trainer(model, tmp_path)
    assert trainer.model_accepts_loss_kwargs is False


def test_peft_wrapped_after_loading_is_covered(tmp_path: Any) -> None:
    model = tiny_own_loss_wrapper()
    # A loader-time call on the bare model ...
    assert apply_accepts_loss_kwargs_fix(model) is False
    # ... then PEFT wraps it: the new outer levels carry nothing of their own.
    wrapped = wrap(model, "lora")
    assert ATTR not in wrapped.__dict__
    with trainer_hooks():
        trainer = make_trainer(wrapped, tmp_path)
    assert trainer.model_accepts_loss_kwargs is False
    assert wrapped.__dict__[ATTR] is False
    assert wrapped.base_model.__dict__[ATTR] is False


def test_model_init_is_covered(tmp_path: Any) -> None:
    def model_init() -> Any:  # no parameter: Trainer would pass its trial as the seed
        return tiny_own_loss_wrapper()

    with trainer_hooks():
        trainer = make_trainer(None, tmp_path, model_init=model_init)
    assert type(trainer.model).__name__ == OWN_LOSS_WRAPPER
    assert trainer.model_accepts_loss_kwargs is False
    assert trainer.model.__dict__[ATTR] is False


@pytest.mark.behaviour
@pytest.mark.parametrize("how", ["full", "lora"])
def test_chunked_forward_is_trusted_with_num_items(how: str, tmp_path: Any) -> None:
    """A class that declares False but runs the chunked loss (which divides by
    num_items_in_batch itself) must get True, or Trainer divides a second time."""
    model = wrap(build_wrapper("Gemma3ForConditionalGeneration"), how)
    patch_chunked_loss(model)
    with trainer_hooks():
        trainer = make_trainer(model, tmp_path)
    assert trainer.model_accepts_loss_kwargs is True
    chain = wrapper_chain(model)
    names = [type(level).__name__ for level in chain]
    # Below the wrapper: Gemma3Model from 4.52; before, base_model_prefix "language_model"
    # leads to Gemma3ForCausalLM and its Gemma3TextModel.
    outer = ["PeftModel", "LoraModel"] if how == "lora" else []
    assert names[: len(outer) + 1] == [*outer, "Gemma3ForConditionalGeneration"]
    assert len(names) > len(outer) + 1, names  # the inner levels are reached and shadowed
    assert all(level.__dict__.get(ATTR) is True for level in chain)


@pytest.mark.behaviour
@pytest.mark.parametrize("how", ["full", "lora"])
@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_text_lm_is_left_to_trainer(arch: str, how: str, tmp_path: Any) -> None:
    if reason := models.missing_family(arch):
        pytest.skip(reason)
    model = wrap(tiny_causal_lm(arch), how)
    assert declared_value(model) is None
    with trainer_hooks():
        trainer = make_trainer(model, tmp_path)
    # Nothing declared: the fix leaves Trainer's **kwargs inference (True) alone.
    assert trainer.model_accepts_loss_kwargs is True
    assert all(ATTR not in level.__dict__ for level in wrapper_chain(model))


def _with_parallelism(trainer: Any, *, sp_enabled: bool) -> Any:
    # Accelerate's parallelism_config is read-only: stand in an accelerator that has it.
    trainer.accelerator = SimpleNamespace(
        parallelism_config=SimpleNamespace(sp_backend="deepspeed", sp_enabled=sp_enabled),
        distributed_type=trainer.accelerator.distributed_type,
        gradient_accumulation_steps=1,
    )
    return trainer


@pytest.mark.parametrize("sp_enabled", [True, False])
def test_hook_respects_the_false_trainer_forces_under_deepspeed_sequence_parallel(
    sp_enabled: bool, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """transformers 5.0+ forces False under DeepSpeed sequence parallelism (it counts its
    own tokens); the hook must not shadow True over it, and must still shadow where the
    release has no such branch (4.x) or sequence parallelism is off."""
    forces = Version(transformers.__version__) >= Version("5.0.0")  # verified by the catalog
    with trainer_hooks():  # read through the hook's own wrapper of __init__
        assert init_forces_for_sequence_parallel() is forces
    model = build_wrapper("Gemma3ForConditionalGeneration")
    patch_chunked_loss(model)  # the shadow says True
    trainer = _with_parallelism(make_trainer(model, tmp_path), sp_enabled=sp_enabled)
    trainer.model_accepts_loss_kwargs = False  # what a 5.x Trainer decided in __init__
    with caplog.at_level("WARNING", logger="canary.fixes"):
        assert apply_to_trainer(trainer)["accepts_loss_kwargs"] is True
    kept = forces and sp_enabled
    assert trainer.model_accepts_loss_kwargs is not kept
    warned = "left model_accepts_loss_kwargs False: DeepSpeed sequence parallelism"
    assert (warned in caplog.text) is kept, caplog.text


@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("where", ["class", "instance"])
def test_hook_warns_when_loss_is_scaled_for_ga_overrides_the_shadow(
    scaled: bool, where: str, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A trainer setting loss_is_scaled_for_ga (read by training_step from 5.19) decides
    the accumulation division itself. Its author knows its compute_loss, so it is respected;
    the hook warns only where it contradicts the shadow (here False: divide)."""
    reads = Version(transformers.__version__) >= Version("5.19.0")  # verified by the catalog

    class ScaledTrainer(transformers.Trainer):
        if where == "class":
            loss_is_scaled_for_ga = scaled

    args = transformers.TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True)
    trainer = ScaledTrainer(model=tiny_own_loss_wrapper(), args=args)
    if where == "instance":
        trainer.loss_is_scaled_for_ga = scaled
    with caplog.at_level("WARNING", logger="canary.fixes"):
        assert apply_to_trainer(trainer)["accepts_loss_kwargs"] is False
    assert trainer.model_accepts_loss_kwargs is False
    assert trainer.loss_is_scaled_for_ga is scaled  # respected, never rewritten
    warning = "ScaledTrainer sets loss_is_scaled_for_ga = True, which decides"
    assert (warning in caplog.text) is (reads and scaled), caplog.text


@pytest.mark.parametrize(
    ("version", "refuses"),
    [("4.46.1", True), ("4.47.1", True), ("4.48.0", False), ("4.48.1", False)],
)
def test_hook_refuses_accumulation_where_the_release_never_divides(
    version: str, refuses: bool, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """4.46.x-4.47.x never divide the loss by the accumulation steps: a False cannot be made
    right there, so the hook raises rather than train with gradients N times too large.
    The live release is proven in test_grad_accum.py (the floor pin set)."""
    from canary.fixes import trainer_hooks as hooks

    monkeypatch.setattr(hooks, "_transformers_version", lambda: version)
    trainer = make_trainer(tiny_own_loss_wrapper(), tmp_path, accumulation=2)
    if refuses:
        with pytest.raises(hooks.NoDivisionError, match=rf"transformers {version} never divides"):
            apply_to_trainer(trainer)
    else:
        assert apply_to_trainer(trainer)["accepts_loss_kwargs"] is False
    # Without accumulation, or with a loss that divides by num_items_in_batch itself, the
    # release is right as it is.
    assert apply_to_trainer(make_trainer(tiny_own_loss_wrapper(), tmp_path))[ATTR] is False
    if version in COUNT_WITHHELD_WINDOW:
        return  # a True model is refused there: the test below
    chunked = tiny_causal_lm("llama")
    patch_chunked_loss(chunked)
    assert apply_to_trainer(make_trainer(chunked, tmp_path, accumulation=2))[ATTR] is True


@pytest.mark.parametrize(("withheld", "fixed"), [("4.47.0", "4.47.1"), ("4.48.0", "4.48.1")])
def test_hook_refuses_accumulation_where_the_release_withholds_the_count(
    withheld: str, fixed: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """4.47.0 and 4.48.0 hand num_items_in_batch only to models that do not accept it
    (found by the sweep): a True model with accumulation is refused there; the next patch
    release is right."""
    from canary.fixes import trainer_hooks as hooks

    chunked = tiny_causal_lm("llama")
    patch_chunked_loss(chunked)
    monkeypatch.setattr(hooks, "_transformers_version", lambda: withheld)
    with pytest.raises(hooks.NoDivisionError, match="withholds num_items_in_batch"):
        apply_to_trainer(make_trainer(chunked, tmp_path, accumulation=2))
    assert apply_to_trainer(make_trainer(chunked, tmp_path))[ATTR] is True  # no accumulation
    monkeypatch.setattr(hooks, "_transformers_version", lambda: fixed)
    assert apply_to_trainer(make_trainer(chunked, tmp_path, accumulation=2))[ATTR] is True


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the fixes' once-only warnings afresh."""
    from canary.fixes import _log

    monkeypatch.setattr(_log, "_seen", set())
