"""accepts_loss_kwargs: what the real Trainer decides, with and without the fix.

The fix promises (``canary.fixes.accepts_loss_kwargs.decide``): True when the chunked-loss
forward is in use; else what the loss-computing level declares; else True where its forward
hands num_items_in_batch to ``self.loss_function``; else the first inner declaration;
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


def make_trainer(model: Any = None, tmp_path: Any = None, **kw: Any) -> Any:
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), report_to=[], use_cpu=True, gradient_accumulation_steps=2
    )
    return transformers.Trainer(model=model, args=args, **kw)


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
        assert decision.value is declared_value(model) is False, (name, decision)
    promised = forwards
    with trainer_hooks():
        fixed_model = wrap(build_wrapper(name), how)
        trainer = make_trainer(fixed_model, tmp_path)
    assert trainer.model_accepts_loss_kwargs is promised
    for level in wrapper_chain(fixed_model):
        assert level.__dict__.get(ATTR) is decision.value, type(level).__name__
    # Trainer's detection (True wherever the outer class declares nothing: forward takes
    # **kwargs) is wrong exactly where the outer forward builds its own loss.
    assert (unfixed is not promised) is (not outer_declares and not forwards), (
        name,
        unfixed,
        outer_declares,
    )


@pytest.mark.parametrize("how", ["full", "lora"])
def test_own_loss_wrapper_inherits_the_inner_false(how: str, tmp_path: Any) -> None:
    """The pre-4.57.1 shape (outer builds nn.CrossEntropyLoss(), declares nothing; inner
    declares False): the inner False, where Trainer alone would say True (#4982)."""
    model = wrap(tiny_own_loss_wrapper(), how)
    assert make_trainer(model, tmp_path).model_accepts_loss_kwargs is True
    decision = decide(model)
    assert decision.value is False
    assert decision.reason.startswith("inner InnerDeclaresFalse declares"), decision.reason
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
    expected = ["Gemma3ForConditionalGeneration", "Gemma3Model"]
    assert names == (["PeftModel", "LoraModel", *expected] if how == "lora" else expected)
    assert all(level.__dict__.get(ATTR) is True for level in chain)


@pytest.mark.parametrize("how", ["full", "lora"])
def test_text_lm_is_left_to_trainer(how: str, tmp_path: Any) -> None:
    model = wrap(tiny_causal_lm("qwen3"), how)
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


@pytest.mark.parametrize(("version", "warns"), [("4.47.1", True), ("4.48.0", False)])
def test_hook_warns_where_the_release_never_divides(
    version: str,
    warns: bool,
    tmp_path: Any,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """4.46.2-4.47.1 never divide in training_step: a shadowed False cannot help there.
    (No pin set has such a release; the window is data, checked against the version.)"""
    from canary.fixes import trainer_hooks as hooks

    trainer = make_trainer(tiny_own_loss_wrapper(), tmp_path)  # accumulation steps 2
    monkeypatch.setattr(hooks, "_transformers_version", lambda: version)
    with caplog.at_level("WARNING", logger="canary.fixes"):
        assert apply_to_trainer(trainer)["accepts_loss_kwargs"] is False
    assert ("never divides the loss" in caplog.text) is warns, caplog.text


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the fixes' once-only warnings afresh."""
    from canary.fixes import _log

    monkeypatch.setattr(_log, "_seen", set())
