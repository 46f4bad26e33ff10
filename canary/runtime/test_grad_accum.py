"""Gradient accumulation through the real Trainer: batch 1 x accumulation 4 == batch 4 x 1.

On transformers inside the Accelerate double-division window (verified:
``canary.fixes.grad_accum_clamp.DOUBLE_DIVISION_WINDOW``) the unclamped run gets gradients
1/4 too small; with the clamp it matches. Outside the window the unclamped run matches too.

The same equivalence proves the accepts_loss_kwargs rule on vision wrappers: where the outer
forward hands num_items_in_batch to its loss (True), variable lengths match exactly, and the
inherited inner False (the rule before) weights tokens per micro-batch; where it builds its
own mean loss (False), equal lengths match exactly and a True would be 4 times too large.
On 4.46-4.47 (``NO_DIVISION_WINDOW``) such a loss stays 4 times too large whatever the flag,
and the hook refuses to train it (``NoDivisionError``). SGD, not Adam: Adam's update is
nearly invariant to a uniform gradient scale and would hide the bug in the weights.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
import torch

from canary.fixes import grad_accum_clamp
from canary.fixes.accepts_loss_kwargs import (
    COUNT_WITHHELD_WINDOW,
    NO_DIVISION_WINDOW,
    declared_value,
)
from canary.fixes.trainer_hooks import (
    NoDivisionError,
    apply_to_trainer,
    hooks_installed,
    trainer_hooks,
)
from canary.runtime.models import (
    OWN_LOSS_WRAPPER,
    VISION_WRAPPERS,
    VOCAB,
    forwards_num_items_to_loss,
    tiny_causal_lm,
    tiny_own_loss_wrapper,
    tiny_vision_wrapper,
)
from canary.versions import Window

transformers = pytest.importorskip("transformers")
# The behaviour sweep runs every case here but the costlier vision wrappers: one (Qwen2-VL,
# in transformers from before the floor) and the own-loss wrapper stand for the rule.
behaviour = pytest.mark.behaviour
SWEPT_WRAPPERS = ("Qwen2VLForConditionalGeneration", OWN_LOSS_WRAPPER)

LENGTHS = [5, 17, 9, 30, 12, 3, 22, 8]  # variable lengths: token-count normalisation matters
EQUAL_LENGTHS = [12] * 8  # a mean of micro-batch means is then the full-batch mean
TOL = 1e-5
# 4.46.1 hands Accelerate the real step count and multiplies the loss by it first, so
# Accelerate holds 4 steps there without a double division (grad_accum_clamp's docstring).
PREMULTIPLIES = Window("4.46.1", "4.46.2")
# Below the vision wrappers' image/video/boi/eoi token ids (VOCAB-3 .. VOCAB-1): text only.
TEXT_VOCAB = VOCAB - 8


class _Examples(torch.utils.data.Dataset):
    """Rows of ``lengths`` tokens; with ``width``, rows of ``width`` tokens of which only the
    last ``lengths[i]`` are labelled (prompt masking): the token count varies without padding.
    """

    def __init__(
        self,
        lengths: list[int] = LENGTHS,
        vocab: int = VOCAB,
        width: int | None = None,
        token_types: bool = False,
    ) -> None:
        gen = torch.Generator().manual_seed(3)
        self.rows = [torch.randint(7, vocab, (width or n,), generator=gen) for n in lengths]
        self.labels = [
            row if width is None else row.clone().index_fill_(0, torch.arange(width - n), -100)
            for row, n in zip(self.rows, lengths, strict=True)
        ]
        # Gemma3/PaliGemma 5.x insist on token_type_ids in training (0: text, no image).
        self.token_types = token_types

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        row = {"input_ids": self.rows[i], "labels": self.labels[i]}
        if self.token_types:
            row["token_type_ids"] = torch.zeros_like(self.rows[i])
        return row


def _collate(rows: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    width = max(len(r["input_ids"]) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    labels = torch.full_like(ids, -100)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        n = len(r["input_ids"])
        ids[i, :n] = r["input_ids"]
        labels[i, :n] = r["labels"]
        mask[i, :n] = 1
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    if "token_type_ids" in rows[0]:
        batch["token_type_ids"] = torch.zeros_like(ids)
    return batch


class _Logs(transformers.TrainerCallback):
    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        if logs and "loss" in logs:
            self.rows.append(dict(logs))


def train(
    tmp_path: Any,
    batch: int,
    accum: int,
    *,
    clamp: bool,
    build: Callable[[], Any] = lambda: tiny_causal_lm("llama", seed=0),
    dataset: torch.utils.data.Dataset | None = None,
    accepts_loss_kwargs: Callable[[Any], bool] | None = None,
) -> dict[str, Any]:
    """Two optimizer steps over the 8 examples; returns losses, grad norms, weights, state.

    ``clamp`` applies the construction hook's fixes (as the hook does after ``__init__``);
    ``accepts_loss_kwargs`` then overrides the trainer's decision (a rule under comparison).
    """
    tag = f"b{batch}a{accum}{clamp}{accepts_loss_kwargs is not None}"
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / tag),
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=accum,
        max_steps=2,
        learning_rate=0.5,
        optim="sgd",
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=1e9,  # grad norm is computed and logged, never clipped
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=7,
        dataloader_num_workers=0,
        use_cpu=True,
        disable_tqdm=True,
    )
    logs = _Logs()
    trainer = transformers.Trainer(
        model=build(),
        args=args,
        train_dataset=dataset if dataset is not None else _Examples(),
        data_collator=_collate,
        callbacks=[logs],
    )
    accel_steps_before = trainer.accelerator.gradient_accumulation_steps
    needed = grad_accum_clamp.needs_clamp(trainer)
    clamped = apply_to_trainer(trainer)["clamped"] if clamp else False
    if accepts_loss_kwargs is not None:
        trainer.model_accepts_loss_kwargs = accepts_loss_kwargs(trainer.model)
    decided = trainer.model_accepts_loss_kwargs
    trainer.train()
    return {
        "loss": [r["loss"] for r in logs.rows],
        "grad_norm": [float(r["grad_norm"]) for r in logs.rows],
        "weights": {n: p.detach().clone() for n, p in trainer.model.named_parameters()},
        "accel_steps_before": accel_steps_before,
        "needed": needed,
        "clamped": clamped,
        "accepts_loss_kwargs": decided,
    }


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), 1e-30)


def mismatch(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """Largest relative differences in loss, grad norm and weights after the steps."""
    weights = max(
        float((a["weights"][n] - b["weights"][n]).norm() / a["weights"][n].norm())
        for n in a["weights"]
    )
    return {
        "loss": max(_rel(x, y) for x, y in zip(a["loss"], b["loss"], strict=True)),
        "grad_norm": max(_rel(x, y) for x, y in zip(a["grad_norm"], b["grad_norm"], strict=True)),
        "weights": weights,
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("ga")
    found: dict[str, Any] = {
        "reference": train(tmp, batch=4, accum=1, clamp=False),
        "unfixed": train(tmp, batch=1, accum=4, clamp=False),
    }
    try:
        found["fixed"] = train(tmp, batch=1, accum=4, clamp=True)
    except NoDivisionError as exc:  # 4.47.0, 4.48.0: the expected outcome, checked below
        found["fixed"] = exc
    return found


def _withheld() -> bool:
    """4.47.0 and 4.48.0 give a text LM no token count and leave its mean loss undivided
    (COUNT_WITHHELD_WINDOW)."""
    return COUNT_WITHHELD_WINDOW.contains(transformers.__version__)


@behaviour
def test_accumulation_matches_full_batch_with_fix(runs: dict[str, dict[str, Any]]) -> None:
    ref, fixed = runs["reference"], runs["fixed"]
    if _withheld():
        # Nothing can make it right: the hook refuses, and the unfixed gradients are a sum
        # of per-micro-batch means (5.5x the full batch's with these lengths).
        assert isinstance(fixed, NoDivisionError), fixed
        assert _grad_ratio(runs["unfixed"], ref) > 2
        return
    assert len(ref["loss"]) == len(fixed["loss"]) == 2
    worst = mismatch(ref, fixed)
    assert all(v < TOL for v in worst.values()), worst
    assert fixed["clamped"] == fixed["needed"]


@behaviour
def test_window_claim_matches_live_state(runs: dict[str, dict[str, Any]]) -> None:
    """The version window (data) and the live accelerator state agree, both ways."""
    in_window = grad_accum_clamp.in_double_division_window(transformers.__version__)
    unfixed = runs["unfixed"]
    assert unfixed["needed"] is in_window, (transformers.__version__, unfixed)
    premultiplies = PREMULTIPLIES.contains(transformers.__version__)
    assert (unfixed["accel_steps_before"] == 4) is (in_window or premultiplies)
    # With accumulation 1 there is nothing to divide twice, in every release.
    assert runs["reference"]["needed"] is False


@behaviour
def test_unclamped_accumulation_shows_the_bug_only_inside_window(
    runs: dict[str, dict[str, Any]],
) -> None:
    in_window = grad_accum_clamp.in_double_division_window(transformers.__version__)
    worst = mismatch(runs["reference"], runs["unfixed"])
    if in_window:
        # Accelerate divides the already-normalised loss by 4 again: grads are 1/4.
        ratio = runs["reference"]["grad_norm"][0] / runs["unfixed"]["grad_norm"][0]
        assert ratio == pytest.approx(4.0, rel=1e-4), runs["unfixed"]["grad_norm"]
        assert worst["weights"] > 1e-3
    elif _withheld():
        assert _grad_ratio(runs["unfixed"], runs["reference"]) > 2
    else:
        assert all(v < TOL for v in worst.values()), worst


@behaviour
def test_hook_clamps_at_construction(tmp_path: Any) -> None:
    assert not hooks_installed()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), gradient_accumulation_steps=4, report_to=[], use_cpu=True
    )
    with trainer_hooks():
        assert hooks_installed()
        if _withheld():  # 4.47.0, 4.48.0: accumulation cannot be right, the hook refuses
            with pytest.raises(NoDivisionError, match="withholds num_items_in_batch"):
                transformers.Trainer(model=tiny_causal_lm("llama"), args=args)
            return
        trainer = transformers.Trainer(model=tiny_causal_lm("llama"), args=args)
        with trainer_hooks():  # nested install is a no-op and does not uninstall early
            pass
        assert hooks_installed()
    assert not hooks_installed()
    # Where Trainer multiplies before Accelerate divides, a clamp would leave the loss 4x.
    steps = 4 if PREMULTIPLIES.contains(transformers.__version__) else 1
    assert trainer.accelerator.gradient_accumulation_steps == steps
    assert trainer.accelerator.gradient_state.plugin_kwargs.get("num_steps", 1) == steps
    assert grad_accum_clamp.needs_clamp(trainer) is False


# -- accepts_loss_kwargs: the decision, proven by the equivalence ---------------------------


def _expected(name: str) -> bool:
    if name == OWN_LOSS_WRAPPER:
        return False
    return forwards_num_items_to_loss(name, transformers.__version__)


def _builder(name: str) -> Callable[[], Any]:
    if name == OWN_LOSS_WRAPPER:
        return tiny_own_loss_wrapper
    if not hasattr(transformers, name):
        pytest.skip(f"transformers {transformers.__version__} has no {name}")
    try:
        tiny_vision_wrapper(name)
    except ImportError as exc:  # e.g. Gemma3n's timm vision tower without timm/PIL
        pytest.skip(f"{name} cannot be built here: {str(exc).strip().splitlines()[0]}")
    return lambda: tiny_vision_wrapper(name)


def _grad_ratio(a: dict[str, Any], b: dict[str, Any]) -> float:
    return a["grad_norm"][0] / b["grad_norm"][0]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[behaviour] if name in SWEPT_WRAPPERS else [])
        for name in [*VISION_WRAPPERS, OWN_LOSS_WRAPPER]
    ],
)
def test_accepts_loss_kwargs_decision_makes_accumulation_exact(name: str, tmp_path: Any) -> None:
    build = _builder(name)
    expected = _expected(name)
    # True is exact only with the token count; False only where micro-batches weigh alike.
    # No padding: PaliGemma 5.x's output for a row depends on the padding beside it.
    lengths = LENGTHS if expected else EQUAL_LENGTHS
    token_types = "token_type_ids" in inspect.signature(build().forward).parameters
    data = _Examples(lengths, vocab=TEXT_VOCAB, width=max(lengths), token_types=token_types)
    run: dict[str, Any] = {"build": build, "dataset": data, "clamp": True}
    reference = train(tmp_path, batch=4, accum=1, **run)
    if not expected and NO_DIVISION_WINDOW.contains(transformers.__version__):
        # 4.46-4.47 never divide: the per-micro-batch mean stays 4 times too large, and the
        # hook refuses to train that way instead of pretending to fix it.
        with pytest.raises(NoDivisionError, match="never divides the loss"):
            train(tmp_path, batch=1, accum=4, **run)
        unfixed = train(tmp_path, batch=1, accum=4, **{**run, "clamp": False})
        assert _grad_ratio(unfixed, reference) == pytest.approx(4.0, rel=1e-4), (name, unfixed)
        return
    fixed = train(tmp_path, batch=1, accum=4, **run)
    assert fixed["accepts_loss_kwargs"] is expected, (name, transformers.__version__)
    worst = mismatch(reference, fixed)
    assert all(v < TOL for v in worst.values()), (name, worst)

    if expected:
        # A False here (the inner .model's False where one is declared, inherited past an
        # outer forward that normalises by num_items_in_batch: the rule before): right
        # scale, per-micro-batch token weighting.
        assert declared_value(build()) in (False, None)
        old = train(tmp_path, batch=1, accum=4, accepts_loss_kwargs=lambda m: False, **run)
        assert old["accepts_loss_kwargs"] is False
        assert mismatch(reference, old)["grad_norm"] > 1e-3, (name, reference, old)
    elif _takes_var_keyword(build().forward):
        # A True here (Trainer's own **kwargs detection where the outer class declares
        # nothing) leaves the per-micro-batch mean undivided: gradients 4 times too large.
        # (A forward without **kwargs cannot take num_items_in_batch: Trainer says False.)
        wrong = train(tmp_path, batch=1, accum=4, accepts_loss_kwargs=lambda m: True, **run)
        assert _grad_ratio(wrong, reference) == pytest.approx(4.0, rel=1e-4), (name, wrong)


def _takes_var_keyword(function: Any) -> bool:
    parameters = inspect.signature(function).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
