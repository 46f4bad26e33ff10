"""The expectations checks are written with: each passes on the right shape and raises
Drift saying what upstream has instead."""

from __future__ import annotations

import pytest

from canary.catalog import expect_call, expect_keyword_accepted, expect_parameters
from canary.codeindex import parse_module
from canary.errors import Drift

SOURCE = """
class Trainer:
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        loss = model(**inputs)
        self.accelerator.backward(loss)
        return loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        return self.compute_loss(model, inputs)
"""


@pytest.fixture
def trainer():
    return parse_module(SOURCE, path="pkg/trainer.py", origin="pkg 1.0.0").cls("Trainer")


def test_expect_parameters_wants_named_parameters_not_kwargs(trainer):
    expect_parameters(trainer.method("training_step"), "num_items_in_batch")
    with pytest.raises(Drift, match=r"has no parameter 'num_items_in_batch'; its signature is"):
        expect_parameters(trainer.method("compute_loss"), "num_items_in_batch")


def test_expect_keyword_accepted_counts_kwargs(trainer):
    expect_keyword_accepted(trainer.method("compute_loss"), "num_items_in_batch")
    with pytest.raises(Drift, match=r"Trainer\.training_step cannot take labels=\.\.\."):
        expect_keyword_accepted(trainer.method("training_step"), "labels")


def test_expect_call_returns_the_calls_or_lists_what_is_called(trainer):
    (call,) = expect_call(trainer.method("compute_loss"), "self.accelerator.backward")
    assert call.args == ("loss",)
    with pytest.raises(Drift, match=r"no longer calls self\.backward; it calls: model, self"):
        expect_call(trainer.method("compute_loss"), "self.backward")
