"""Gradient accumulation through the real Trainer: batch 1 x accumulation 4 == batch 4 x 1.

On transformers inside the Accelerate double-division window (verified:
``canary.fixes.grad_accum_clamp.DOUBLE_DIVISION_WINDOW``) the unclamped run gets gradients
1/4 too small; with the clamp it matches. Outside the window the unclamped run matches too.
SGD, not Adam: Adam's update is nearly invariant to a uniform gradient scale and would hide
the bug in the weights.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from canary.fixes import grad_accum_clamp
from canary.fixes.trainer_hooks import apply_to_trainer, hooks_installed, trainer_hooks
from canary.runtime.models import VOCAB, tiny_causal_lm

transformers = pytest.importorskip("transformers")

LENGTHS = [5, 17, 9, 30, 12, 3, 22, 8]  # variable lengths: token-count normalisation matters
TOL = 1e-5


class _Examples(torch.utils.data.Dataset):
    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(3)
        self.rows = [torch.randint(7, VOCAB, (n,), generator=gen) for n in LENGTHS]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.rows[i]}


def _collate(rows: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    width = max(len(r["input_ids"]) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r["input_ids"])] = r["input_ids"]
        mask[i, : len(r["input_ids"])] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}


class _Logs(transformers.TrainerCallback):
    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        if logs and "loss" in logs:
            self.rows.append(dict(logs))


def train(tmp_path: Any, batch: int, accum: int, *, clamp: bool) -> dict[str, Any]:
    """Two optimizer steps over the 8 examples; returns losses, grad norms, weights, state."""
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / f"b{batch}a{accum}{clamp}"),
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
        model=tiny_causal_lm("llama", seed=0),
        args=args,
        train_dataset=_Examples(),
        data_collator=_collate,
        callbacks=[logs],
    )
    accel_steps_before = trainer.accelerator.gradient_accumulation_steps
    needed = grad_accum_clamp.needs_clamp(trainer)
    clamped = apply_to_trainer(trainer)["clamped"] if clamp else False
    trainer.train()
    return {
        "loss": [r["loss"] for r in logs.rows],
        "grad_norm": [float(r["grad_norm"]) for r in logs.rows],
        "weights": {n: p.detach().clone() for n, p in trainer.model.named_parameters()},
        "accel_steps_before": accel_steps_before,
        "needed": needed,
        "clamped": clamped,
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
    return {
        "reference": train(tmp, batch=4, accum=1, clamp=False),
        "fixed": train(tmp, batch=1, accum=4, clamp=True),
        "unfixed": train(tmp, batch=1, accum=4, clamp=False),
    }


def test_accumulation_matches_full_batch_with_fix(runs: dict[str, dict[str, Any]]) -> None:
    ref, fixed = runs["reference"], runs["fixed"]
    assert len(ref["loss"]) == len(fixed["loss"]) == 2
    worst = mismatch(ref, fixed)
    assert all(v < TOL for v in worst.values()), worst
    assert fixed["clamped"] == fixed["needed"]


def test_window_claim_matches_live_state(runs: dict[str, dict[str, Any]]) -> None:
    """The version window (data) and the live accelerator state agree, both ways."""
    in_window = grad_accum_clamp.in_double_division_window(transformers.__version__)
    unfixed = runs["unfixed"]
    assert unfixed["needed"] is in_window, (transformers.__version__, unfixed)
    assert (unfixed["accel_steps_before"] == 4) is in_window
    # With accumulation 1 there is nothing to divide twice, in every release.
    assert runs["reference"]["needed"] is False


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
    else:
        assert all(v < TOL for v in worst.values()), worst


def test_hook_clamps_at_construction(tmp_path: Any) -> None:
    assert not hooks_installed()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), gradient_accumulation_steps=4, report_to=[], use_cpu=True
    )
    with trainer_hooks():
        assert hooks_installed()
        trainer = transformers.Trainer(model=tiny_causal_lm("llama"), args=args)
        with trainer_hooks():  # nested install is a no-op and does not uninstall early
            pass
        assert hooks_installed()
    assert not hooks_installed()
    assert trainer.accelerator.gradient_accumulation_steps == 1
    assert trainer.accelerator.gradient_state.plugin_kwargs.get("num_steps", 1) == 1
    assert grad_accum_clamp.needs_clamp(trainer) is False
