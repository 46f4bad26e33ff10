"""accepts_loss_kwargs: what the real Trainer decides, with and without the fix.

The fix promises: the first ``accepts_loss_kwargs`` a wrapper level's own class declares,
shadowed on every level (so ``trainer.model_accepts_loss_kwargs`` is that value whatever
level the release inspects); True when the chunked-loss forward is in use; Trainer's own
detection otherwise.
"""

from __future__ import annotations

from typing import Any

import pytest

from canary.fixes.accepts_loss_kwargs import (
    ATTR,
    apply_accepts_loss_kwargs_fix,
    declared_value,
    trainer_detection,
    wrapper_chain,
)
from canary.fixes.chunked_loss import patch_chunked_loss
from canary.fixes.trainer_hooks import trainer_hooks
from canary.runtime.models import VISION_WRAPPERS, tiny_causal_lm, tiny_vision_wrapper

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
    outer_declares = ATTR in type(model.get_base_model() if how == "lora" else model).__dict__

    promised = declared_value(model)
    assert promised is False, f"{name}: upstream declares accepts_loss_kwargs=False on .model"
    with trainer_hooks():
        fixed_model = wrap(build_wrapper(name), how)
        trainer = make_trainer(fixed_model, tmp_path)
    assert trainer.model_accepts_loss_kwargs is promised
    for level in wrapper_chain(fixed_model):
        assert level.__dict__.get(ATTR) is promised, type(level).__name__
    # Where the outer class declares nothing, Trainer sees the outer **kwargs and says True:
    # exactly the releases/classes where the fix matters.
    assert (unfixed is not promised) is (not outer_declares), (name, unfixed, outer_declares)


def test_peft_wrapped_after_loading_is_covered(tmp_path: Any) -> None:
    model = build_wrapper("PaliGemmaForConditionalGeneration")
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
    build_wrapper("Qwen2VLForConditionalGeneration")  # skip early if it cannot be built
    with trainer_hooks():
        trainer = make_trainer(
            None,
            tmp_path,
            model_init=lambda: tiny_vision_wrapper("Qwen2VLForConditionalGeneration"),
        )
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


def test_hook_keeps_the_false_trainer_forces_under_deepspeed_sequence_parallel(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """transformers 5.0+ forces False under DeepSpeed sequence parallelism (it counts its
    own tokens); the hook must not shadow True over it."""
    from types import SimpleNamespace

    from canary.fixes.trainer_hooks import apply_to_trainer

    model = build_wrapper("Gemma3ForConditionalGeneration")
    patch_chunked_loss(model)  # the shadow would say True
    trainer = make_trainer(model, tmp_path)
    # Accelerate's parallelism_config is read-only: stand in an accelerator that has it.
    trainer.accelerator = SimpleNamespace(
        parallelism_config=SimpleNamespace(sp_backend="deepspeed", sp_enabled=True),
        distributed_type=trainer.accelerator.distributed_type,
        gradient_accumulation_steps=1,
    )
    trainer.model_accepts_loss_kwargs = False  # what such a Trainer decided in __init__
    with caplog.at_level("WARNING", logger="canary.fixes"):
        assert apply_to_trainer(trainer)["accepts_loss_kwargs"] is True
    assert trainer.model_accepts_loss_kwargs is False
    assert "left model_accepts_loss_kwargs False: DeepSpeed sequence parallelism" in caplog.text


def test_hook_says_when_the_trainer_class_decides_the_division(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A Trainer subclass declaring loss_is_scaled_for_ga (transformers 5.19+) decides the
    accumulation division itself: the hook warns that its shadow does not."""
    from canary.fixes.trainer_hooks import apply_to_trainer

    class ScaledTrainer(transformers.Trainer):
        loss_is_scaled_for_ga = True

    model = build_wrapper("PaliGemmaForConditionalGeneration")
    args = transformers.TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True)
    trainer = ScaledTrainer(model=model, args=args)
    with caplog.at_level("WARNING", logger="canary.fixes"):
        assert apply_to_trainer(trainer)["accepts_loss_kwargs"] is False
    assert trainer.model_accepts_loss_kwargs is False
    assert "ScaledTrainer declares loss_is_scaled_for_ga = True" in caplog.text


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the fixes' once-only warnings afresh."""
    from canary.fixes import _log

    monkeypatch.setattr(_log, "_seen", set())
