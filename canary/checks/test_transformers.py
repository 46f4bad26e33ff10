"""transformers: what the fixes rely on in Trainer and the loss utilities."""

import pytest

from canary.catalog import check, expect_parameters

pytestmark = pytest.mark.upstream("transformers")

TRAINER = "transformers/trainer.py"
LOSS_UTILS = "transformers/loss/loss_utils.py"


@check(reads=TRAINER, fix="accepts_loss_kwargs shadowing", since="4.46.0")
def test_compute_loss_takes_num_items_in_batch(upstream):
    """Trainer.compute_loss takes num_items_in_batch, so a loss that honours it is not divided
    again by the Trainer (the shadowed accepts_loss_kwargs promises exactly that)."""
    trainer = upstream.module(TRAINER).cls("Trainer")
    expect_parameters(trainer.method("compute_loss"), "num_items_in_batch")


@check(reads=TRAINER, fix="gradient accumulation clamp", since="4.46.0")
def test_training_step_takes_num_items_in_batch(upstream):
    """Trainer.training_step takes num_items_in_batch, the count it divides the loss by."""
    trainer = upstream.module(TRAINER).cls("Trainer")
    expect_parameters(trainer.method("training_step"), "num_items_in_batch")


@check(reads=LOSS_UTILS, fix="chunked NLL loss", since="4.46.0")
def test_for_causal_lm_loss_parameters(upstream):
    """ForCausalLMLoss takes num_items_in_batch and ignore_index: the chunked loss mirrors
    its contract (sum over valid tokens divided by num_items_in_batch)."""
    loss = upstream.module(LOSS_UTILS).function("ForCausalLMLoss")
    expect_parameters(loss, "num_items_in_batch", "ignore_index")
